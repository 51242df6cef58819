"""Regression forests grown with limits: every row's target within the interval its leaf's
mean and variance allow (issue 39, ``min_samples_leaf=5``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor
from test_regression_reconstruct import regression_data

from treeleaks import from_sklearn, reconstruct
from treeleaks.attacks.reconstruction.regression_leaves import leaf_intervals
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.runtime.vocabulary import Formulation


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_rows=st.integers(20, 80), seed=st.integers(0, 10_000), leaf=st.integers(2, 8),
       bootstrap=st.booleans(), integer=st.booleans())
def test_property_every_training_target_lies_in_its_leaf_interval(
        n_rows: int, seed: int, leaf: int, bootstrap: bool, integer: bool) -> None:
    X, y = regression_data(n_rows, 3, seed=seed, integer=integer)
    kind = RandomForestRegressor if bootstrap else ExtraTreesRegressor
    model = from_sklearn(kind(n_estimators=4, min_samples_leaf=leaf, random_state=seed)
                         .fit(X, y), allow_regression=True)
    leaves = model.apply(X.to_numpy())
    for t, tree in enumerate(model.trees):
        low, high = leaf_intervals(tree)
        drawn = tree.draws > 0 if tree.draws is not None else np.ones(len(y), dtype=bool)
        at = leaves[drawn, t]
        scale = 1e-9 * max(1.0, float(np.abs(y).max()))
        assert (low[at] - scale <= y[drawn]).all() and (y[drawn] <= high[at] + scale).all()
        exact = low == high  # a leaf of one target gives it exactly
        assert np.allclose(y[drawn][exact[at]], tree.values[at][exact[at]])


@pytest.mark.parametrize("kind", [ExtraTreesRegressor, DecisionTreeRegressor])
def test_every_row_comes_back_in_its_leaf_with_an_interval(kind: type) -> None:
    X, y = regression_data(60, 3, seed=4, integer=False)
    params = {"min_samples_leaf": 5, "random_state": 0}
    if kind is ExtraTreesRegressor:
        params["n_estimators"] = 10
    model = from_sklearn(kind(**params).fit(X, y), allow_regression=True)
    rec = reconstruct(model, time_limit=20)
    assert rec.formulation == Formulation.REGRESSION_LEAVES and rec.partial
    assert rec.n_rows == len(y) and rec.proven_pattern.all()
    low, high = rec.regression.target_bounds
    assert (low <= high).all() and rec.regression.targets_exact == int((low == high).sum())
    # each true row pairs with a returned row of its leaf in the tree used, in its interval
    used = int(rec.message.split("tree ")[1].split(",")[0])
    tree = model.trees[used]
    got = tree.apply(rec.rows[list(model.feature_names)].to_numpy(float))
    truth = tree.apply(X.to_numpy())
    assert sorted(got) == sorted(truth)
    for leaf in np.unique(truth):
        mine = np.flatnonzero(got == leaf)
        assert (low[mine[0]] - 1e-9 <= y[truth == leaf]).all()
        assert (y[truth == leaf] <= high[mine[0]] + 1e-9).all()


def test_a_limited_forest_with_another_strategy_is_refused() -> None:
    X, y = regression_data(40, 3, seed=5, integer=True)
    model = from_sklearn(ExtraTreesRegressor(n_estimators=3, min_samples_leaf=5).fit(X, y),
                         allow_regression=True)
    with pytest.raises(UnsupportedModelError, match="leave strategy at 'auto'"):
        reconstruct(model, strategy="enumerate")
