"""A gap the file cannot tell the table held (XGBoost's native categories, issue 49): the
input map marks it a fallback, and a rebuilt row comes back "(missing)" only where its box
admits no category."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeleaks import reconstruct
from treeleaks.counts.materialize import cell_values
from treeleaks.frontends.xgboost import read_xgboost
from treeleaks.ir.schema import FeatureSchema

xgb = pytest.importorskip("xgboost")

ISLANDS = ["A", "B", "C", "D", "E"]
MEMBERS = [f"island={c}" for c in ISLANDS] + ["island=(missing)"]


def _schema() -> FeatureSchema:
    frame = pd.DataFrame(np.eye(len(MEMBERS)), columns=MEMBERS)
    return FeatureSchema.from_frame(frame, one_hot_groups=[MEMBERS])


@settings(max_examples=60, deadline=None)
@given(allowed=st.lists(st.booleans(), min_size=len(MEMBERS), max_size=len(MEMBERS)).filter(any),
       weight=st.integers(1, 5))
def test_a_fill_takes_the_fallback_only_where_the_box_allows_nothing_else(allowed, weight
                                                                          ) -> None:
    """A cell's box leaves some members free to be 1 (upper 1) and the others at 0."""
    can_one = np.asarray(allowed)
    lower = np.full((1, len(MEMBERS)), -np.inf)
    upper = np.where(can_one, np.inf, 0.5)[None, :]
    fallback = np.zeros(len(MEMBERS), dtype=bool)
    fallback[-1] = True
    values = cell_values(_schema(), lower, upper, np.array([weight]), fallback=fallback)
    row = values.value[0]
    assert row.sum() == 1 and can_one[int(row.argmax())]
    assert (row[-1] == 1) == (not can_one[:-1].any())


def _table(seed: int, n: int, gaps: float) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    island = rng.choice(ISLANDS, n).astype(object)
    mass = rng.normal(size=n).round(2)
    y = ((island == "B") | (mass > 0.5)).astype(int) ^ (rng.random(n) < 0.1)
    missing = rng.random(n) < gaps
    island[missing] = None
    y[missing] = 1  # the gap rows tell their label apart: a split sends them a way alone
    return pd.DataFrame({"island": pd.Categorical(island, categories=ISLANDS),
                         "mass": mass}), y


def _rebuilt(frame: pd.DataFrame, y: np.ndarray):
    fitted = xgb.XGBClassifier(n_estimators=5, max_depth=3, enable_categorical=True,
                               random_state=0).fit(frame, y)
    model = read_xgboost(fitted)
    rec = reconstruct(model, time_limit=30, threads=1, seed=0)
    assert rec.verified and len(rec.rows) == len(frame)
    return model, rec, model.inputs.decode(rec.rows)


def test_a_table_without_gaps_comes_back_in_its_categories() -> None:
    frame, y = _table(0, 200, 0.0)
    model, rec, rows = _rebuilt(frame, y)
    assert model.inputs.fallbacks() == ["island=(missing)"]
    assert "island (5 categories, gaps possible)" in model.inputs.summary()
    categories = [f"island={c}" for c in ISLANDS]
    admits_category = (rec.upper[categories] >= 1).any(axis=1).to_numpy()
    missing = rows["island"].isna().to_numpy()
    assert not (missing & admits_category).any()  # "(missing)" only where nothing else fits
    # a gap routes as a category no split lists, so most boxes admit one: before the
    # fallback, 53 of these 200 rows came back "(missing)"
    assert missing.sum() <= 0.05 * len(frame)
    assert set(rows["island"].dropna()) <= set(ISLANDS)


def test_rows_of_a_leaf_that_holds_only_gaps_come_back_missing() -> None:
    frame, y = _table(2, 200, 0.2)
    model, rec, rows = _rebuilt(frame, y)
    # the first split sends the gaps right, which a column without any never does: the
    # column held gaps, no fallback
    assert model.inputs.fallbacks() == [] and "gaps)" in model.inputs.summary()
    first = model.trees[0]
    encoded = model.inputs.encode(frame)[model.feature_names].to_numpy()
    leaf = first.apply(encoded)
    gap_only = [v for v in np.unique(leaf) if frame["island"].isna()[leaf == v].all()]
    assert gap_only  # the first tree gives the gap rows a leaf of their own
    held = int(np.isin(leaf, gap_only).sum())
    rebuilt = first.apply(rec.rows[model.feature_names].to_numpy())
    assert int(np.isin(rebuilt, gap_only).sum()) == held
    assert rows["island"][np.isin(rebuilt, gap_only)].isna().all()
