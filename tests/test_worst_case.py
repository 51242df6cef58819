"""The custodian's worst case: sound per-row bounds, checked against datasets that do
reproduce the model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier
from typer.testing import CliRunner

from treeleaks import FeatureSchema, TreeleaksError, UnsupportedModelError, from_sklearn
from treeleaks import reconstruct as reconstruct_rows
from treeleaks.attacks.worst_case import worst_case
from treeleaks.cli import app
from treeleaks.io import save_model
from treeleaks.ir.schema_columns import feature_scales

from conftest import binary_frame


def _bagged(n_rows: int, n_features: int, seed: int, depth: int | None, n_trees: int):
    X, y = binary_frame(n_rows, n_features, seed)
    forest = RandomForestClassifier(n_estimators=n_trees, max_depth=depth,
                                    random_state=seed).fit(X, y)
    return from_sklearn(forest, label_name="label"), X.assign(label=y), forest


def _row_errors(rows: pd.DataFrame, truth: pd.DataFrame, model) -> np.ndarray:
    schema = FeatureSchema.infer(model).bind(model)
    names, scale = feature_scales(truth, schema, "label")
    gap = np.abs(rows[names].to_numpy(dtype=float) - truth[names].to_numpy(dtype=float))
    return np.nan_to_num(np.minimum(gap / scale, 1.0), nan=1.0).mean(axis=1)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(n_rows=st.integers(10, 40), n_features=st.integers(3, 7), seed=st.integers(0, 10**6),
       depth=st.sampled_from([1, 2, 3, None]), n_trees=st.integers(2, 12))
def test_no_consistent_reconstruction_exceeds_the_row_bounds(n_rows, n_features, seed, depth,
                                                            n_trees):
    model, truth, _ = _bagged(n_rows, n_features, seed, depth, n_trees)
    worst = worst_case(model, truth=truth, time_limit=30)
    assert worst.row_bound.shape == (n_rows,)
    assert ((worst.row_bound >= 0) & (worst.row_bound <= 1)).all()
    assert worst.mean_found <= worst.mean_bound + 1e-9
    assert worst.mean_found <= worst.row_bound.mean() + 1e-9
    rec = reconstruct_rows(model, time_limit=30)
    if rec.status == "OPTIMAL":  # one more dataset that reproduces the model
        assert rec.verified
        errors = _row_errors(rec.rows, truth, model)
        assert (errors <= worst.row_bound + 1e-9).all()
    assert 0.0 <= worst.guaranteed_recovery <= 1.0


def test_columns_no_tree_splits_on_count_against_every_row():
    model, truth, _ = _bagged(30, 6, 2, 1, 3)  # three stumps: at most three columns split
    split = {f for tree in model.trees for f in tree.feature[tree.feature >= 0]}
    worst = worst_case(model, truth=truth)
    assert worst.status == "OPTIMAL"
    assert (worst.row_bound >= (6 - len(split)) / 6 - 1e-12).all()
    assert worst.guaranteed_recovery <= len(split) / 6 + 1e-12


def test_a_full_depth_forest_pins_every_row_of_clean_data():
    model, truth, _ = _bagged(40, 5, 1, None, 30)
    worst = worst_case(model, truth=truth)
    rec = reconstruct_rows(model)
    errors = _row_errors(rec.rows, truth, model)
    assert (errors <= worst.row_bound + 1e-9).all()
    assert worst.row_settled.all() and worst.status == "OPTIMAL"


def test_rows_out_of_order_or_of_another_forest_are_refused():
    model, truth, _ = _bagged(30, 5, 0, None, 5)
    with pytest.raises(TreeleaksError, match="fitted on"):
        worst_case(model, truth=truth.iloc[::-1].reset_index(drop=True))
    with pytest.raises(TreeleaksError, match="20 training rows given, but the forest drew from 30"):
        worst_case(model, truth=truth.iloc[:20])
    with pytest.raises(TreeleaksError, match="lack column 'label'"):
        worst_case(model, truth=truth.drop(columns="label"))


def test_a_forest_that_saw_every_row_once_points_to_the_proofs():
    X, y = binary_frame(20, 4, 0)
    forest = RandomForestClassifier(n_estimators=3, bootstrap=False, random_state=0).fit(X, y)
    with pytest.raises(UnsupportedModelError, match="proven rows"):
        worst_case(from_sklearn(forest, label_name="label"), truth=X.assign(label=y))


def test_the_cli_prints_the_guarantee_and_writes_json(tmp_path: Path):
    model, truth, forest = _bagged(30, 6, 2, 1, 3)
    path = save_model(forest, tmp_path / "bagged.skops")
    truth.to_csv(tmp_path / "train.csv", index=False)
    result = CliRunner().invoke(app, ["worst-case", str(path), "--truth",
                                      str(tmp_path / "train.csv"), "--json",
                                      str(tmp_path / "worst.json")])
    assert result.exit_code == 0, result.output
    assert "Guaranteed recovery" in result.stdout
    summary = json.loads((tmp_path / "worst.json").read_text())
    expected = worst_case(model, truth=truth).guaranteed_recovery
    assert summary["guaranteed_recovery"] == pytest.approx(expected)
