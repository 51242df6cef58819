"""Issue 39, step 1: a bootstrap RandomForestRegressor with its draws gives back every
training row with its target, in training order; what step 1 does not read is refused."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import (
    RandomForestRegressor,
)
from typer.testing import CliRunner

from treeleaks import from_sklearn, reconstruct
from treeleaks.cli import app
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.runtime.vocabulary import Formulation, Status


def regression_data(n_rows: int, n_features: int, seed: int,
                    integer: bool) -> tuple[pd.DataFrame, np.ndarray]:
    """Continuous features (no two rows alike) and a target: small integers (many ties)
    or continuous values with a few ties."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n_rows, n_features)),
                     columns=[f"x{j}" for j in range(n_features)])
    signal = X.to_numpy().sum(axis=1) + rng.normal(0, 0.5, n_rows)
    if integer:
        y = np.round(3 * signal)
    else:
        y = np.round(signal, 3)
        y[: n_rows // 10] = y[n_rows // 10: 2 * (n_rows // 10)]  # ties
    return X, y


def forest(X: pd.DataFrame, y: np.ndarray, **params) -> RandomForestRegressor:
    params = {"n_estimators": 15, "random_state": 0, **params}
    return RandomForestRegressor(**params).fit(X, y)


def reproduces(estimator: RandomForestRegressor, rows: pd.DataFrame, names: list[str]) -> bool:
    """Independently of treeleaks: every tree's leaves get back their distinct rows,
    weighted rows and value from ``rows`` (training order, counted by their draws)."""
    X = rows[names].to_numpy(dtype=np.float32)
    y = rows["label"].to_numpy(dtype=float)
    for member, drawn in zip(estimator.estimators_, estimator.estimators_samples_):
        draws = np.bincount(drawn, minlength=len(rows))
        tree, leaf = member.tree_, member.tree_.apply(X)
        size = tree.node_count
        weighted = np.bincount(leaf, weights=draws, minlength=size)
        distinct = np.bincount(leaf, weights=draws > 0, minlength=size)
        total = np.bincount(leaf, weights=draws * y, minlength=size)
        leaves = tree.children_left < 0
        value = total[leaves] / np.maximum(weighted[leaves], 1)
        if not (np.array_equal(weighted[leaves], tree.weighted_n_node_samples[leaves])
                and np.array_equal(distinct[leaves], tree.n_node_samples[leaves])
                and np.allclose(value, tree.value[leaves, 0, 0], rtol=1e-9, atol=1e-9)):
            return False
    return True


@pytest.mark.parametrize("integer", [True, False])
def test_default_forest_gives_back_every_target_in_training_order(integer: bool) -> None:
    X, y = regression_data(90, 4, seed=1, integer=integer)
    estimator = forest(X, y, n_estimators=20)
    rec = reconstruct(from_sklearn(estimator, allow_regression=True), time_limit=30)
    assert rec.status == Status.OPTIMAL and rec.verified
    assert rec.formulation == Formulation.REGRESSION_BOOTSTRAP_KNOWN
    assert np.array_equal(rec.rows["label"].to_numpy(dtype=float), y)  # row k is row k
    assert rec.regression.targets_exact == rec.summary()["targets_exact"] == len(y)
    names = list(X.columns)
    x = X.to_numpy()
    assert ((rec.lower[names].to_numpy() <= x) & (x <= rec.upper[names].to_numpy())).all()
    assert reproduces(estimator, rec.rows, names)


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(n_rows=st.integers(10, 40), n_features=st.integers(1, 4), n_trees=st.integers(3, 12),
       seed=st.integers(0, 10_000), integer=st.booleans())
def test_random_forests_verified_results_reproduce_every_leaf(
        n_rows: int, n_features: int, n_trees: int, seed: int, integer: bool) -> None:
    X, y = regression_data(n_rows, n_features, seed, integer)
    estimator = forest(X, y, n_estimators=n_trees, random_state=seed)
    rec = reconstruct(from_sklearn(estimator, allow_regression=True), time_limit=20)
    assert rec.status != Status.INFEASIBLE  # the released model has its training set
    if rec.verified:
        assert reproduces(estimator, rec.rows, list(X.columns))
        proven = rec.proven
        assert np.array_equal(rec.rows["label"].to_numpy(dtype=float)[proven], y[proven])


def test_an_edited_leaf_value_is_never_verified() -> None:
    X, y = regression_data(60, 3, seed=2, integer=False)
    model = from_sklearn(forest(X, y), allow_regression=True)
    tree = model.trees[4]
    leaf = int(np.flatnonzero(tree.n_samples == 1)[0])
    values = tree.values.copy()
    values[leaf] += 100.0
    edited = replace(model, trees=[*model.trees[:4], replace(tree, values=values),
                                   *model.trees[5:]])
    rec = reconstruct(edited, time_limit=20)
    assert not rec.verified
    assert rec.status == Status.INFEASIBLE and "tree 4" in rec.message


def _model(estimator) -> object:
    X, y = regression_data(40, 3, seed=3, integer=True)
    return from_sklearn(estimator.fit(X, y), allow_regression=True)


@pytest.mark.parametrize(("estimator", "named"), [
    (RandomForestRegressor(n_estimators=3, criterion="absolute_error"), "absolute_error"),
])
def test_what_step_one_does_not_read_is_refused(estimator, named: str) -> None:
    # boosted regressors and growth limits have their own routes
    # (tests/test_boosted_regression_reconstruct.py, tests/test_regression_leaves.py)
    with pytest.raises(UnsupportedModelError, match=named) as caught:
        reconstruct(_model(estimator))
    assert "not supported yet" in str(caught.value) and "\n" not in str(caught.value)


def test_a_forest_without_its_draws_is_refused() -> None:
    model = _model(RandomForestRegressor(n_estimators=3))
    bare = replace(model, trees=[replace(tree, draws=None) for tree in model.trees])
    with pytest.raises(UnsupportedModelError, match="draws are not in this file"):
        reconstruct(bare)
    with pytest.raises(UnsupportedModelError, match="ignore_draws"):
        reconstruct(model, ignore_draws=True)


def test_cli_reconstructs_a_regressor_file(tmp_path) -> None:
    X, y = regression_data(50, 3, seed=4, integer=True)
    path = tmp_path / "regressor.skops"
    sio.dump(forest(X, y, n_estimators=10), path)
    out = tmp_path / "rows.csv"
    result = CliRunner().invoke(app, ["reconstruct", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Targets given away exactly" in result.output
    assert np.array_equal(pd.read_csv(out)["label"].to_numpy(dtype=float), y)


def test_continuous_targets_come_back_by_their_draws_alone() -> None:
    """Every row of its own target is the training row whose draws are its target's
    leaves' draws: no solver, every target at its training position, verified; rows
    sharing a target (the ties) are the one set of rows whose draws sum to its leaves'."""
    X, y = regression_data(300, 5, seed=11, integer=False)
    estimator = forest(X, y, n_estimators=40)
    rec = reconstruct(from_sklearn(estimator, allow_regression=True), time_limit=30)
    assert rec.status == Status.OPTIMAL and rec.verified, rec.message
    assert "read off the leaves whose draws" in rec.message
    assert np.array_equal(rec.rows["label"].to_numpy(dtype=float), y)
    assert reproduces(estimator, rec.rows, list(X.columns))
