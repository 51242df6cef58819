"""The draw search for partial datasets of bootstrap forests with known draws
(`counts/draw_search.py`, `attacks/reconstruction/draw_search_stage.py`, issue 38): every partial
dataset offered fits every weighted and distinct count, its rows sit at training positions whose
draws they carry, and the command line writes it to the partial files only."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier

from treeleaks import from_sklearn, reconstruct
from treeleaks.attacks.reconstruction.draw_search_stage import (
    landed_rows,
    reconstruct_drawn_partial,
)
from treeleaks.attacks.reconstruction.options import RunOptions
from treeleaks.counts.draw_search import search_drawn_rows
from treeleaks.counts.verify import verify, verify_within_draws
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.runtime.errors import UnsupportedModelError


def bootstrap_forest(n_rows: int, n_features: int, n_trees: int, seed: int,
                     **params: object) -> tuple[ReleasedModel, pd.DataFrame, np.ndarray]:
    """A two-class bootstrap forest over raw numerical columns, with its draws."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n_rows, n_features)).round(3),
                     columns=[f"x{j}" for j in range(n_features)])
    y = ((X["x0"] + rng.normal(0, 0.7, n_rows)) > 0).astype(int).to_numpy()
    forest = RandomForestClassifier(n_estimators=n_trees, random_state=seed, **params)
    return from_sklearn(forest.fit(X, y), label_name="label"), X, y


def check_partial(model: ReleasedModel, rec) -> None:
    """Rows at distinct training positions, within every weighted and distinct count; all
    N of them reproduce every count."""
    assert rec.bootstrap.positions is not None and len(rec.bootstrap.positions) == rec.n_rows
    assert len(np.unique(rec.bootstrap.positions)) == rec.n_rows
    assert verify_within_draws(model, rec.rows, rec.bootstrap.positions).verified
    if rec.n_rows == len(model.trees[0].draws):
        assert ((rec.bootstrap.positions == np.arange(rec.n_rows)).all()
                and verify(model, rec.rows).verified)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_rows=st.integers(15, 70), n_features=st.integers(2, 5), n_trees=st.integers(2, 12),
       seed=st.integers(0, 10_000), leaf=st.sampled_from([1, 1, 3]))
def test_every_partial_dataset_fits_every_count(n_rows: int, n_features: int, n_trees: int,
                                                seed: int, leaf: int) -> None:
    model, _, _ = bootstrap_forest(n_rows, n_features, n_trees, seed, min_samples_leaf=leaf)
    schema = FeatureSchema.infer(model).bind(model)
    rec = reconstruct_drawn_partial(model, schema, RunOptions(time_limit=0.5, seed=seed))
    check_partial(model, rec)
    assert rec.status == ("FEASIBLE" if rec.n_rows else "UNKNOWN")


def test_the_search_reports_larger_partial_datasets_as_it_finds_them() -> None:
    model, _, _ = bootstrap_forest(150, 5, 30, seed=3)
    told: list[int] = []
    found = search_drawn_rows(model, time.perf_counter() + 2, seed=1,
                              on_better=lambda rows: told.append(len(rows)))
    assert told and told == sorted(told) and told[-1] == len(found)
    assert len(found) > 0
    schema = FeatureSchema.infer(model).bind(model)
    frames, positions = landed_rows(model, schema, found)
    assert verify_within_draws(model, frames["rows"], positions).verified
    draws = np.vstack([tree.draws for tree in model.trees]).T[positions] > 0
    leaves = model.apply(frames["rows"][list(model.feature_names)].to_numpy(dtype=float))
    kept = np.isin(found.positions, positions)
    assert ((leaves == found.paths[kept]) | ~draws).all()  # one path a leaf here


def test_an_easy_forest_comes_back_complete_and_verified() -> None:
    model, X, _ = bootstrap_forest(30, 2, 3, seed=5, max_depth=2)
    schema = FeatureSchema.infer(model).bind(model)
    rec = reconstruct_drawn_partial(model, schema, RunOptions(time_limit=20))
    assert rec.n_rows == len(X) and not rec.partial and rec.verified
    assert "complete dataset" in rec.message


def test_the_certificate_catches_a_row_given_the_wrong_class() -> None:
    model, X, y = bootstrap_forest(60, 3, 10, seed=2)
    rows = X.assign(label=y)
    positions = np.arange(len(X))
    assert verify_within_draws(model, rows, positions).verified  # the truth fits
    drawn = np.flatnonzero(model.trees[0].draws > 0)
    wrong = rows.copy()
    wrong.loc[drawn[0], "label"] = 1 - y[drawn[0]]  # pure leaves: the other class is absent
    certificate = verify_within_draws(model, wrong, positions)
    assert not certificate.verified and "draws" in certificate.first_mismatch
    twice = verify_within_draws(model, rows.iloc[[0, 0]], np.array([0, 0]))
    assert not twice.verified and "same training position" in twice.first_mismatch


def stop_per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Row by row refuses at once (as on breast cancer, whose classes are not settled)."""
    import treeleaks.attacks.reconstruction.per_row as per_row

    monkeypatch.setattr(per_row, "MAX_CANDIDATES", 10)


def test_auto_hands_raw_measurements_to_the_draw_search_when_per_row_gives_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    stop_per_row(monkeypatch)
    from treeleaks.attacks.reconstruct import raw_measurements

    model, _, _ = bootstrap_forest(120, 6, 25, seed=4)
    assert raw_measurements(model)
    rec = reconstruct(model, time_limit=6)
    assert rec.n_rows > 0 and rec.status == "FEASIBLE" and rec.solver == "draw-search"
    assert rec.message.startswith("row by row: more than 10 candidate placements")
    assert "within every count, found by the draw search" in rec.message or not rec.partial
    check_partial(model, rec)
    assert rec.time_s < 6 + 1  # the search takes what row by row leaves of the limit


def test_a_smaller_bootstrap_size_is_searched_too(monkeypatch: pytest.MonkeyPatch) -> None:
    stop_per_row(monkeypatch)
    from treeleaks.attacks.reconstruct import raw_measurements

    model, _, _ = bootstrap_forest(150, 6, 25, seed=6, max_samples=0.6)
    assert all(tree.draws.sum() == 90 for tree in model.trees) and raw_measurements(model)
    rec = reconstruct(model, time_limit=4)
    assert rec.n_rows > 0
    check_partial(model, rec)


def test_a_limit_too_short_for_any_row_says_which_limit_would_help() -> None:
    model, _, _ = bootstrap_forest(150, 6, 60, seed=11)
    rec = reconstruct(model, time_limit=0.2)
    assert rec.status == "UNKNOWN" and rec.n_rows == 0
    assert "Raise the time limit" in rec.message
    assert "this run's --time-limit: 0.2 s" in rec.message
    assert not rec.verified and rec.summary()["verified"] is False  # no rows check nothing


def test_class_weights_per_bootstrap_sample_are_refused_with_the_reason() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0.5).astype(int)
    forest = RandomForestClassifier(n_estimators=5, class_weight="balanced_subsample",
                                    random_state=0).fit(X, y)
    with pytest.raises(UnsupportedModelError, match="class_weight"):
        from_sklearn(forest)


def test_the_command_line_writes_a_partial_dataset_under_the_names_asked_with_positions(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from treeleaks.cli import app

    stop_per_row(monkeypatch)
    model, X, _ = bootstrap_forest(150, 6, 40, seed=8)  # raw measurements: rows first
    path = tmp_path / "forest.json"
    path.write_text(model.to_json())
    out, details, draws = (tmp_path / name for name in ("r.csv", "d.csv", "w.csv"))
    result = CliRunner().invoke(app, ["reconstruct", str(path), "--time-limit", "3",
                                      "--out", str(out), "--details", str(details),
                                      "--draws", str(draws)])
    if result.exit_code == 0:  # every row found: a complete dataset
        assert out.exists()
        return
    assert result.exit_code == 5, result.output  # a partial result, under the names asked for
    rows, table, written = pd.read_csv(out), pd.read_csv(details), pd.read_csv(draws)
    assert 0 < len(rows) < len(X) and len(table) == len(rows) == len(written)
    positions = table["row"].to_numpy()
    assert (written["row"].to_numpy() == positions).all()
    assert (written["tree_0"].to_numpy() == model.trees[0].draws[positions]).all()
    assert verify_within_draws(model, rows, positions).verified


def test_the_report_lists_the_partial_rows_draw_columns_and_claims_no_positions(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from treeleaks.report.rebuilt import rebuilt_headline, rebuilt_rows

    stop_per_row(monkeypatch)
    model, X, _ = bootstrap_forest(150, 6, 40, seed=8)
    rec = reconstruct(model, time_limit=3)
    rebuilt = rebuilt_rows(rec, len(X))
    assert rebuilt["at_positions"]
    positions = rec.bootstrap.positions
    assert [r["row"] for r in rebuilt["rows"]] == positions[:len(rebuilt["rows"])].tolist()
    if rec.partial:  # a reconstruction is a multiset: the draws' columns prove no position
        assert "position" not in rebuilt_headline(rebuilt)
