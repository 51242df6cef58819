"""Boosted regressors reconstructed (issue 39, boosters): a verified dataset where the
trees' cells can be listed, and the rows single-row leaves prove where they cannot."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor

from treeleaks import reconstruct
from treeleaks.counts.gradient_rows import largest_gradient_miss
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.ir.model import ReleasedModel
from treeleaks.runtime.vocabulary import Formulation, Status


def _small_table(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Three columns of three values, a noisy linear target: every cell listable."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(120, 3)).astype(float)
    return X, X @ [3.0, -2.0, 5.0] + rng.normal(0, 1, 120).round(2)


def _read(framework: str, X: np.ndarray, y: np.ndarray) -> ReleasedModel:
    if framework == "gb":
        return from_sklearn(GradientBoostingRegressor(n_estimators=30, random_state=0)
                            .fit(X, y), allow_regression=True)
    if framework == "hgb":
        return from_sklearn(HistGradientBoostingRegressor(max_iter=30, random_state=0)
                            .fit(X, y), allow_regression=True)
    if framework == "lightgbm":
        lightgbm = pytest.importorskip("lightgbm")
        from treeleaks.frontends.lightgbm import read_lightgbm

        booster = lightgbm.LGBMRegressor(n_estimators=30, verbose=-1).fit(X, y)
        return read_lightgbm(booster.booster_.model_to_string())
    xgboost = pytest.importorskip("xgboost")
    from treeleaks.frontends.xgboost import read_xgboost

    return read_xgboost(xgboost.XGBRegressor(n_estimators=30).fit(X, y).get_booster())


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("framework", ["gb", "hgb", "lightgbm", "xgboost"])
def test_listed_cells_give_a_dataset_that_reproduces_the_booster(framework: str,
                                                                 seed: int) -> None:
    X, y = _small_table(seed)
    model = _read(framework, X, y)
    rec = reconstruct(model, time_limit=60)
    assert rec.formulation == Formulation.REGRESSION_BOOSTED
    assert rec.status == Status.FEASIBLE and rec.certificate.verified, rec.message
    assert rec.n_rows == len(X) and rec.regression.targets_exact == 0
    rows = rec.rows[list(model.feature_names)].to_numpy(dtype=float)
    leaves = model.apply(rows)
    for t, tree in enumerate(model.trees):  # every count, routed independently
        assert (np.bincount(leaves[:, t], minlength=tree.n_leaves) == tree.counts[:, 0]).all()
    targets = rec.rows[model.label_name].to_numpy(dtype=float)
    assert largest_gradient_miss(model, leaves, targets)[0] <= 1.0
    # every sum of the booster's leaves holds, so the leaves' target totals do too
    first = model.trees[0]
    assert np.allclose(np.bincount(leaves[:, 0], weights=targets, minlength=first.n_leaves),
                       np.bincount(model.apply(X)[:, 0], weights=y,
                                   minlength=first.n_leaves), atol=1e-3)


def test_single_row_leaves_prove_rows_and_their_targets_on_raw_columns() -> None:
    X, y = load_diabetes(return_X_y=True)
    model = from_sklearn(GradientBoostingRegressor(
        n_estimators=20, max_depth=None, max_leaf_nodes=31, random_state=0).fit(X, y),
        allow_regression=True)
    rec = reconstruct(model, time_limit=60)
    assert rec.partial and rec.n_rows > 0 and rec.proven_pattern.all(), rec.message
    assert rec.certificate.verified and rec.regression is not None
    low, high = rec.regression.target_bounds
    # a true row in every box, its target in the interval (sex, a scaled column of two
    # values cut at 0.003, is numerical: its box holds the true value too)
    features = X
    for i in range(rec.n_rows):
        low_i, high_i = rec.lower.iloc[i].to_numpy(), rec.upper.iloc[i].to_numpy()
        inside = ((low_i < features) & (features <= high_i)).all(axis=1)
        assert inside.sum() == 1, i
        truth = float(y[inside][0])
        assert low[i] - 1e-6 <= truth <= high[i] + 1e-6
        if low[i] == high[i]:
            assert truth == pytest.approx(low[i], abs=1e-6)


@pytest.mark.parametrize("framework", ["hgb", "lightgbm"])
def test_leaves_of_twenty_rows_give_the_first_trees_group_means(framework: str) -> None:
    X, y = load_diabetes(return_X_y=True)
    model = _read(framework, X, y)  # the frameworks' defaults: 20 rows a leaf or more
    rec = reconstruct(model, time_limit=60)
    assert rec.partial and rec.n_rows == len(X) and rec.regression.targets_exact == 0, (
        rec.message)
    assert "no row is given away on its own" in rec.message
    first = model.trees[0]
    truth = model.apply(X)[:, 0]
    rows = rec.rows[list(model.feature_names)].to_numpy(dtype=float)
    placed = model.apply(rows)[:, 0]
    targets = rec.rows[model.label_name].to_numpy(dtype=float)
    for leaf in np.flatnonzero(first.counts[:, 0]):  # each group: its rows and mean target
        assert (placed == leaf).sum() == (truth == leaf).sum()
        assert targets[placed == leaf] == pytest.approx(y[truth == leaf].mean(), rel=1e-4)


def test_the_details_carry_each_targets_interval(tmp_path) -> None:
    from typer.testing import CliRunner

    from treeleaks.cli.app import app
    from treeleaks.io import save_model

    X, y = load_diabetes(return_X_y=True)
    path = save_model(GradientBoostingRegressor(n_estimators=10, max_depth=None,
                                                max_leaf_nodes=31, random_state=0).fit(X, y),
                      tmp_path / "gb.skops")
    details = tmp_path / "details.csv"
    result = CliRunner().invoke(app, ["reconstruct", str(path), "--out",
                                      str(tmp_path / "rows.csv"), "--details", str(details),
                                      "--time-limit", "30"])
    assert result.exit_code == 5, result.output  # a partial dataset: the proven rows only
    frame = pd.read_csv(details)
    label = pd.read_csv(tmp_path / "rows.csv").columns[-1]
    assert {f"{label}:lower", f"{label}:upper", f"{label}:exact"} <= set(frame.columns)
    assert (frame[f"{label}:lower"] <= frame[f"{label}:upper"]).all()


def test_options_the_route_does_not_take_are_refused() -> None:
    from treeleaks.ir.knowledge import Knowledge
    from treeleaks.runtime.errors import UnsupportedModelError

    X, y = _small_table(0)
    model = _read("gb", X, y)
    with pytest.raises(UnsupportedModelError, match="leave strategy at 'auto'"):
        reconstruct(model, strategy="per-row")
    known = Knowledge(columns=pd.DataFrame({"x0": X[:, 0]}))
    with pytest.raises(UnsupportedModelError, match="side knowledge on a boosted regressor"):
        reconstruct(model, knowledge=known)


def test_the_audit_reconstructs_a_boosted_regressor(tmp_path) -> None:
    """The audit of a booster runs its reconstruction: the rows its single-row leaves
    prove, and the targets among them given away exactly, in the verdict."""
    import json

    from typer.testing import CliRunner

    from treeleaks.cli.app import app
    from treeleaks.io import save_model

    X, y = load_diabetes(return_X_y=True)
    path = save_model(GradientBoostingRegressor(n_estimators=20, max_depth=None,
                                                max_leaf_nodes=31, random_state=0).fit(X, y),
                      tmp_path / "gb.skops")
    result = CliRunner().invoke(app, ["audit", str(path), "--budget", "40", "--out",
                                      str(tmp_path / "audit")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "audit" / "report.json").read_text())
    reconstruction = next(a for a in report["attacks"] if a["name"] == "reconstruct")
    assert reconstruction["status"] == "partial"
    assert reconstruction["figures"]["formulation"] == "regression-boosted"
    verdict = report["verdict"]
    assert verdict["rows_reconstructed"] > 0 and verdict["rows_reconstructed_partial"]
    assert verdict["targets_given_away"] is not None
