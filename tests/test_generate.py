"""Cells generated on demand: same guarantees as enumeration, checked against the truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_wine
from sklearn.ensemble import RandomForestClassifier

from treeleaks import FeatureSchema, from_sklearn, reconstruct
from treeleaks.counts.cells import CellBudget, probe_cells
from treeleaks.ir.model import ReleasedModel

from conftest import binary_frame


def assert_proven_rows_are_training_rows(result, X: pd.DataFrame, y, label: str) -> None:
    """Every proven row's box holds at least as many true rows of its class as it proves."""
    X_true = X.to_numpy(float)
    rows = result.rows[result.proven]
    boxes = rows.groupby(list(rows.columns), dropna=False).size()
    lower = result.lower[result.proven].to_numpy(float)
    upper = result.upper[result.proven].to_numpy(float)
    labels = result.rows.loc[result.proven, label].to_numpy()
    for i in range(len(rows)):
        inside = (X_true >= lower[i]) & (X_true <= upper[i])
        holds = int((inside.all(axis=1) & (np.asarray(y) == labels[i])).sum())
        assert holds >= 1
    assert len(boxes) <= len(rows)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_rows=st.integers(1, 30),
    n_features=st.integers(1, 6),
    n_trees=st.integers(1, 6),
    depth=st.sampled_from([None, 1, 2, 3]),
    seed=st.integers(0, 10_000),
)
def test_generated_cells_reproduce_every_leaf_count(n_rows, n_features, n_trees, depth, seed):
    X, y = binary_frame(n_rows, n_features, seed)
    forest = RandomForestClassifier(
        n_estimators=n_trees, bootstrap=False, max_depth=depth, random_state=seed
    ).fit(X, y)
    model = from_sklearn(forest, label_name="y")
    result = reconstruct(model, FeatureSchema.from_frame(X), strategy="generate",
                         time_limit=60, certainty_time_limit=60)
    assert result.strategy == "generate"
    assert result.status in ("OPTIMAL", "FEASIBLE")
    assert result.verified and result.n_rows == n_rows
    # Proofs over generated cells are sound: never more copies than the truth holds.
    truth = pd.DataFrame(X).assign(y=y).value_counts()
    for row, count in result.rows[result.proven].value_counts().items():
        assert truth.get(row, 0) >= count


def test_generated_proofs_match_enumeration_on_a_full_depth_forest():
    X, y = binary_frame(40, 6, seed=3)
    forest = RandomForestClassifier(n_estimators=10, bootstrap=False, random_state=3).fit(X, y)
    model = from_sklearn(forest, label_name="y")
    schema = FeatureSchema.from_frame(X)
    enumerated = reconstruct(model, schema, strategy="enumerate")
    generated = reconstruct(model, schema, strategy="generate", certainty_time_limit=120)
    assert generated.certainty_complete and generated.verified
    # Both are the LP bound over every cell: the same rows are proven.
    assert generated.proven_rows == enumerated.proven_rows > 0


def test_auto_switches_to_generation_beyond_the_cell_budget():
    X, y = binary_frame(30, 8, seed=5)
    forest = RandomForestClassifier(n_estimators=8, bootstrap=False, random_state=5).fit(X, y)
    model = from_sklearn(forest, label_name="y")
    schema = FeatureSchema.from_frame(X)
    tiny = CellBudget(max_cells=3)
    probe = probe_cells(model, schema.bind(model), tiny)
    assert not probe.complete and probe.strategy == "generate"
    result = reconstruct(model, schema, cell_budget=tiny)
    assert result.strategy == "generate" and result.verified
    assert "generated" in result.proof and result.summary()["strategy"] == "generate"
    assert reconstruct(model, schema).strategy == "enumerate"


def test_generation_proves_tampered_counts_infeasible():
    X, y = binary_frame(25, 4, seed=2)
    forest = RandomForestClassifier(n_estimators=4, bootstrap=False, random_state=2).fit(X, y)
    data = from_sklearn(forest, label_name="y").to_dict()
    counts = np.array(data["trees"][1]["counts"])
    leaf = int(np.argmax(counts[:, 0]))
    counts[leaf, 0] -= 1
    counts[leaf, 1] += 1  # same N, but one row changes class in one tree only
    data["trees"][1]["counts"] = counts.tolist()
    model = ReleasedModel.from_dict(data)
    result = reconstruct(model, FeatureSchema.from_frame(X), strategy="generate")
    assert result.status == "INFEASIBLE" and result.n_rows == 0
    assert "no dataset reproduces the released counts" in result.message


def test_numerical_forest_by_generation_stays_inside_its_boxes():
    data = load_wine(as_frame=True)
    X = data.data.iloc[::3, [0, 6, 9, 12]].reset_index(drop=True)
    y = data.target.iloc[::3].to_numpy()
    forest = RandomForestClassifier(n_estimators=15, bootstrap=False, random_state=0).fit(X, y)
    model = from_sklearn(forest)
    schema = FeatureSchema.from_frame(X)
    result = reconstruct(model, schema, strategy="generate", time_limit=120)
    assert result.verified and result.n_rows == len(X)
    values = result.rows[model.feature_names].to_numpy(float)
    lower, upper = result.lower.to_numpy(float), result.upper.to_numpy(float)
    assert np.all((values >= lower) & (values <= upper))
    low, high = schema.bind(model).range_arrays()
    assert np.all((values >= low) & (values <= high))
    assert_proven_rows_are_training_rows(result, X, y, model.label_name)
    assert result.width is not None and result.summary()["numerical_width_mean"] < 1
