"""Strategy ``per-row``: bootstrap forests with known draws on numerical data, rebuilt one
leaf per (row, drawing tree) without listing cells."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier

from treeleaks import TreeleaksError, from_sklearn, reconstruct
from treeleaks.counts.verify import verify


def numerical_forest(n_rows: int, n_features: int, n_trees: int, seed: int,
                     max_depth: int | None = None):
    """A default-style bootstrap forest on integer-valued numerical columns."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.integers(0, 12, size=(n_rows, n_features)).astype(float),
                     columns=[f"x{j}" for j in range(n_features)])
    y = ((X["x0"] + rng.normal(0, 3, n_rows)) > 6).astype(int).to_numpy()
    forest = RandomForestClassifier(n_estimators=n_trees, max_depth=max_depth,
                                    random_state=seed).fit(X, y)
    return from_sklearn(forest, label_name="label"), X.assign(label=y)


def _inside(rec, truth: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Whether each of ``rows`` (training order) lies inside its reconstructed box."""
    names = [c for c in truth.columns if c != "label"]
    x = truth[names].to_numpy(dtype=float)[rows]
    lower = rec.lower[names].to_numpy(dtype=float)[rows]
    upper = rec.upper[names].to_numpy(dtype=float)[rows]
    return ((lower <= x) & (x <= upper)).all(axis=1)


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(n_rows=st.integers(12, 40), n_features=st.integers(2, 5), n_trees=st.integers(5, 25),
       seed=st.integers(0, 10_000), depth=st.sampled_from([None, 3]))
def test_rows_reproduce_every_count_and_proven_rows_hold_the_truth(
        n_rows: int, n_features: int, n_trees: int, seed: int, depth: int | None) -> None:
    model, truth = numerical_forest(n_rows, n_features, n_trees, seed, depth)
    rec = reconstruct(model, time_limit=30, strategy="per-row")
    assert rec.status == "OPTIMAL", rec.message
    assert rec.strategy == "per-row" and rec.formulation == "bootstrap-known"
    assert rec.n_rows == n_rows
    check = verify(model, rec.rows)  # every weighted and distinct-row count, in row order
    assert check.verified and rec.verified, check.first_mismatch
    proven = np.flatnonzero(rec.proven_pattern)
    assert _inside(rec, truth, proven).all()
    assert (rec.rows["label"].to_numpy()[proven] == truth["label"].to_numpy()[proven]).all()


def test_per_row_and_cells_both_reproduce_a_forest_small_enough_for_both() -> None:
    model, _ = numerical_forest(30, 3, 20, seed=5)
    by_rows = reconstruct(model, time_limit=30, strategy="per-row")
    by_cells = reconstruct(model, time_limit=30)
    assert by_rows.verified and by_cells.verified
    assert by_cells.strategy != "per-row"
    # both put every row in training order: same classes, row by row
    assert (by_rows.rows["label"].to_numpy() == by_cells.rows["label"].to_numpy()).all()


def test_draws_that_contradict_the_counts_are_infeasible() -> None:
    model, _ = numerical_forest(25, 3, 10, seed=2)
    draws = model.trees[3].draws
    k = int(np.flatnonzero(draws > 0)[0])
    draws[k] += 3  # tree 3 now claims three more draws of row k than its leaves hold
    rec = reconstruct(model, time_limit=20, strategy="per-row")
    assert rec.status == "INFEASIBLE" and rec.n_rows == 0
    assert "no dataset reproduces the released counts with these draws" in rec.message
    assert "tree 3's draws add up to" in rec.message  # names the tree that disagrees


@pytest.mark.parametrize("case", ["no bootstrap", "draws set aside"])
def test_per_row_needs_the_draws(case: str) -> None:
    model, _ = numerical_forest(20, 3, 5, seed=1)
    if case == "no bootstrap":
        X, y = np.random.default_rng(0).integers(0, 5, (20, 3)), np.arange(20) % 2
        model = from_sklearn(RandomForestClassifier(n_estimators=3, bootstrap=False,
                                                    random_state=0).fit(X, y))
    with pytest.raises(TreeleaksError, match="strategy 'per-row' places each row by how often"):
        reconstruct(model, strategy="per-row", ignore_draws=case == "draws set aside")


def test_the_command_line_writes_each_rows_box_and_says_how_tight_they_are(tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from treeleaks.cli import app

    model, _ = numerical_forest(30, 3, 20, seed=7)
    path = tmp_path / "forest.json"
    path.write_text(model.to_json())
    out, details, summary = (tmp_path / name for name in ("r.csv", "d.csv", "s.json"))
    result = CliRunner().invoke(app, ["reconstruct", str(path), "--strategy", "per-row",
                                      "--out", str(out), "--details", str(details),
                                      "--json", str(summary)])
    assert result.exit_code == 0, result.output
    assert "per-row" in result.output and "within 5%" in result.output
    rows, table = pd.read_csv(out), pd.read_csv(details)
    for name in ("x0", "x1", "x2"):  # each filled value inside its box, and its width
        assert ((table[f"{name}:lower"] <= rows[name]) & (rows[name] <= table[f"{name}:upper"])
                ).all()
        assert table[f"{name}:width"].between(0, 1).all()
    s = json.loads(summary.read_text())
    width = table[[f"{n}:width" for n in ("x0", "x1", "x2")]].to_numpy().ravel()
    assert s["numerical_pinned_within"]["5%"] == pytest.approx((width <= 0.05).mean())
    assert s["strategy"] == "per-row" and s["certificate"]["verified"]


def test_auto_places_rows_of_raw_measurements_first_and_lists_no_cells() -> None:
    from treeleaks.attacks.reconstruct import raw_measurements

    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(60, 6)), columns=[f"x{j}" for j in range(6)])
    y = (X["x0"] + X["x1"] + rng.normal(0, 0.5, 60) > 0).astype(int).to_numpy()
    model = from_sklearn(RandomForestClassifier(n_estimators=20, random_state=3).fit(X, y))
    assert raw_measurements(model)  # continuous columns, finely split
    rec = reconstruct(model, time_limit=30)
    assert rec.status == "OPTIMAL" and rec.verified and rec.n_rows == 60
    assert rec.strategy == "per-row" and "cells" not in rec.timings
    proven = np.flatnonzero(rec.proven_pattern)
    assert (rec.rows["label"].to_numpy()[proven] == y[proven]).all()


def test_binarized_data_is_not_raw_measurements() -> None:
    from treeleaks.attacks.reconstruct import raw_measurements

    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.integers(0, 2, size=(80, 30)), columns=[f"b{j}" for j in range(30)])
    y = (X["b0"] ^ X["b1"]).to_numpy()
    model = from_sklearn(RandomForestClassifier(n_estimators=20, random_state=4).fit(X, y))
    assert not raw_measurements(model)  # one threshold a column, however many columns


def test_a_smaller_bootstrap_size_is_placed_row_by_row_too() -> None:
    rng = np.random.default_rng(6)
    X = pd.DataFrame(rng.integers(0, 12, size=(40, 3)).astype(float), columns=["a", "b", "c"])
    y = ((X["a"] + rng.normal(0, 3, 40)) > 6).astype(int).to_numpy()
    forest = RandomForestClassifier(n_estimators=15, max_samples=0.6, random_state=6).fit(X, y)
    model = from_sklearn(forest)
    assert all(tree.draws.sum() == 24 for tree in model.trees)  # 60% of N draws a tree
    rec = reconstruct(model, time_limit=30, strategy="per-row")
    assert rec.status == "OPTIMAL" and rec.n_rows == 40
    assert verify(model, rec.rows).verified


def test_a_run_out_of_time_says_so_within_its_limit() -> None:
    import time

    model, _ = numerical_forest(150, 6, 60, seed=11)  # solved in about 2.5 s
    start = time.perf_counter()
    rec = reconstruct(model, time_limit=0.2, strategy="per-row")
    assert time.perf_counter() - start < 5  # the limit plus building the placements
    assert rec.status == "UNKNOWN" and rec.n_rows == 0
    assert "within the time limit of 0.2 s" in rec.message and "Raise" in rec.message


def test_too_many_candidate_placements_stop_before_they_are_built(monkeypatch) -> None:
    import treeleaks.attacks.reconstruction.per_row as per_row

    monkeypatch.setattr(per_row, "MAX_CANDIDATES", 50)
    model, _ = numerical_forest(30, 3, 10, seed=2)
    rec = reconstruct(model, time_limit=20, strategy="per-row")
    assert rec.status == "UNKNOWN" and rec.n_rows == 0
    assert rec.message.startswith("more than 50 candidate placements of rows in leaves")
