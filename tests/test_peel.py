"""Rows pinned by narrowing boxes from single-row leaves: only ever true training rows."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier
from typer.testing import CliRunner

from treeleaks import FeatureSchema, from_sklearn, reconstruct
from treeleaks.cli import app
from treeleaks.counts.cells import CellBudget, enumerate_cells
from treeleaks.counts.peel import peel_rows, without_pinned

from conftest import binary_frame


def one_hot_frame(n_rows: int, levels: list[int], seed: int) -> tuple[pd.DataFrame, np.ndarray,
                                                                      list[list[str]]]:
    """Categorical attributes one-hot encoded (one group each) and a label tied to them."""
    rng = np.random.default_rng(seed)
    columns, groups = {}, []
    for a, k in enumerate(levels):
        pick = rng.integers(0, k, size=n_rows)
        names = [f"a{a}:{v}" for v in range(k)]
        for v, name in enumerate(names):
            columns[name] = (pick == v).astype(int)
        groups.append(names)
    X = pd.DataFrame(columns)
    y = ((X.iloc[:, 0] + X.iloc[:, levels[0]]) % 2 ^ (rng.random(n_rows) < 0.2)).to_numpy()
    return X, y.astype(int), groups


def fitted(X: pd.DataFrame, y: np.ndarray, n_trees: int, seed: int, depth=None):
    forest = RandomForestClassifier(n_estimators=n_trees, bootstrap=False, max_depth=depth,
                                    random_state=seed).fit(X, y)
    return from_sklearn(forest, label_name="y")


def true_cells(model, X: pd.DataFrame, y: np.ndarray) -> Counter:
    leaves = model.apply(X.to_numpy(float))
    return Counter((int(c), row.astype(np.int64).tobytes())
                   for c, row in zip(model.class_index(y), leaves))


def pinned_cells(peeled) -> Counter:
    return Counter((int(c), row.tobytes()) for c, row in zip(peeled.cls, peeled.leaves))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_rows=st.integers(1, 40),
    n_features=st.integers(1, 6),
    n_trees=st.integers(1, 8),
    depth=st.sampled_from([None, 2, 4]),
    numerical=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_pinned_rows_are_training_rows(n_rows, n_features, n_trees, depth, numerical, seed):
    X, y = binary_frame(n_rows, n_features, seed)
    if numerical:  # raw measurements: values in [0, 10) around the binary pattern
        X = X + np.random.default_rng(seed).random(X.shape) * 9
    model = fitted(X, y, n_trees, seed, depth)
    schema = FeatureSchema.from_frame(X).bind(model)
    peeled = peel_rows(model, schema, time.perf_counter() + 60)
    assert peeled.complete
    # Every pinned row is a training row, with no more copies than the truth holds.
    assert not pinned_cells(peeled) - true_cells(model, X, y)


def test_one_hot_forest_pins_most_rows_and_they_are_proven():
    X, y, groups = one_hot_frame(60, [6, 5, 7, 4, 8, 6], seed=1)
    model = fitted(X, y, n_trees=40, seed=1)
    schema = FeatureSchema.from_frame(X, one_hot_groups=groups)
    peeled = peel_rows(model, schema.bind(model), time.perf_counter() + 60)
    assert len(peeled) >= 30 and not pinned_cells(peeled) - true_cells(model, X, y)
    events = []
    result = reconstruct(model, schema, strategy="generate", time_limit=60,
                         certainty_time_limit=1, progress=events.append)
    assert result.verified and result.timings["peeled_rows"] == len(peeled)
    pins = [event for event in events if event.stage == "pin"]
    assert pins and pins[-1].done == len(peeled) and pins[-1].total == 60
    assert result.strategy == "generate" and "single-row leaves" in result.proof
    # The pinned rows are proven without an LP, even when the proofs' time is short.
    assert int(result.proven_pattern.sum()) >= len(peeled)
    truth = X.assign(y=y).value_counts()
    for row, count in result.rows[result.proven].value_counts().items():
        assert truth.get(row, 0) >= count


def test_narrowing_stops_at_its_deadline():
    X, y, groups = one_hot_frame(60, [6, 5, 7, 4, 8, 6], seed=1)
    model = fitted(X, y, n_trees=40, seed=1)
    schema = FeatureSchema.from_frame(X, one_hot_groups=groups).bind(model)
    peeled = peel_rows(model, schema, time.perf_counter())
    assert not peeled.complete and len(peeled) == 0


def test_bootstrap_forests_are_left_alone():
    X, y = binary_frame(30, 4, seed=2)
    forest = RandomForestClassifier(n_estimators=5, random_state=2).fit(X, y)
    model = from_sklearn(forest, label_name="y")
    peeled = peel_rows(model, FeatureSchema.from_frame(X).bind(model), time.perf_counter() + 5)
    assert len(peeled) == 0 and peeled.complete


def test_every_row_pinned_leaves_no_cells_to_list_and_is_verified():
    X, y, groups = one_hot_frame(40, [6, 5, 7, 4, 8, 6, 5, 7], seed=4)
    model = fitted(X, y, n_trees=60, seed=4)
    schema = FeatureSchema.from_frame(X, one_hot_groups=groups)
    peeled = peel_rows(model, schema.bind(model), time.perf_counter() + 60)
    assert len(peeled) == 40
    rest = enumerate_cells(without_pinned(model, peeled), schema.bind(model))
    assert len(rest) == 0
    result = reconstruct(model, schema, cell_budget=CellBudget(max_cells=10))
    assert result.verified and result.timings["peeled_rows"] == 40
    # the other rows' cells (none) were listed: proofs of enumeration, complete
    assert result.strategy == "enumerate" and "enumeration complete" in result.proof
    assert result.certainty_complete
    assert int(result.proven_pattern.sum()) == 40


def test_cli_says_how_many_rows_were_pinned(tmp_path: Path):
    X, y, groups = one_hot_frame(60, [6, 5, 7, 4, 8, 6], seed=1)
    path, schema = tmp_path / "forest.json", tmp_path / "schema.json"
    path.write_text(json.dumps(fitted(X, y, n_trees=40, seed=1).to_dict()))
    schema.write_text(json.dumps(FeatureSchema.from_frame(X, one_hot_groups=groups).to_dict()))
    result = CliRunner().invoke(app, ["reconstruct", str(path), "--schema", str(schema),
                                      "--strategy", "generate"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "rows pinned by single-row leaves first; for the rest, cells generated" in \
        result.output
