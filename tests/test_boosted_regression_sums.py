"""Boosted regressors of all four frameworks: every count and every leaf's sum of residuals
the frontends derive equals what the training rows give (issue 39, boosters)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor

from treeleaks.counts.gradient_rows import largest_gradient_miss
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.ir.model import SQUARED_ERROR, ReleasedModel
from treeleaks.runtime.errors import UnsupportedModelError

X, Y = load_diabetes(return_X_y=True)
X, Y = X[:200], Y[:200]


def _lightgbm(fine: bool) -> ReleasedModel:
    lightgbm = pytest.importorskip("lightgbm")
    from treeleaks.frontends.lightgbm import read_lightgbm

    extra = {"min_child_samples": 1, "min_child_weight": 0} if fine else {}
    booster = lightgbm.LGBMRegressor(n_estimators=40, verbose=-1, **extra).fit(X, Y)
    return read_lightgbm(booster.booster_.model_to_string())


def _xgboost(fine: bool) -> ReleasedModel:
    xgboost = pytest.importorskip("xgboost")
    from treeleaks.frontends.xgboost import read_xgboost

    extra = {"min_child_weight": 0, "learning_rate": 0.1, "reg_lambda": 3.0} if fine else {}
    return read_xgboost(xgboost.XGBRegressor(n_estimators=40, **extra).fit(X, Y).get_booster())


def _sklearn(kind: type, fine: bool) -> ReleasedModel:
    extra = ({"max_depth": None, "max_leaf_nodes": 31} if kind is GradientBoostingRegressor
             else {"min_samples_leaf": 1}) if fine else {}
    return from_sklearn(_fit(kind, extra), allow_regression=True)


def _fit(kind: type, extra: dict) -> object:
    size = {"max_iter": 40} if kind is HistGradientBoostingRegressor else {"n_estimators": 40}
    return kind(random_state=0, **size, **extra).fit(X, Y)


READERS = {
    "gb": lambda fine: _sklearn(GradientBoostingRegressor, fine),
    "hgb": lambda fine: _sklearn(HistGradientBoostingRegressor, fine),
    "lightgbm": _lightgbm,
    "xgboost": _xgboost,
}


@pytest.mark.parametrize("fine", [False, True], ids=["default", "fine"])
@pytest.mark.parametrize("framework", list(READERS))
def test_every_derived_count_mean_and_sum_is_the_training_rows(framework: str,
                                                               fine: bool) -> None:
    model = READERS[framework](fine)
    leaves = model.apply(X)
    for t, tree in enumerate(model.trees):
        routed = np.bincount(leaves[:, t], minlength=tree.n_leaves)
        assert (tree.counts[:, 0] == routed).all(), f"tree {t}'s counts"
    first = model.trees[0]
    held = first.counts[:, 0] > 0
    true_means = np.bincount(leaves[:, 0], weights=Y, minlength=first.n_leaves)[held] / (
        first.counts[held, 0])
    assert np.allclose(first.values[held], true_means, rtol=1e-5, atol=1e-4)
    assert model.gradients is not None and model.gradients.loss == SQUARED_ERROR
    miss, where = largest_gradient_miss(model, leaves, Y)
    assert miss <= 1.0, where
    nudged = Y.copy()
    nudged[7] += 0.05 * Y.std()
    assert largest_gradient_miss(model, leaves, nudged)[0] > 1.0


def test_xgboost_learning_rate_and_penalty_come_back() -> None:
    model = _xgboost(True)
    assert model.facts["learning rate (recovered)"] == pytest.approx(0.1)
    assert model.facts["L2 penalty (recovered)"] == pytest.approx(3.0)


def test_xgboost_with_a_base_score_of_its_own_is_refused() -> None:
    xgboost = pytest.importorskip("xgboost")
    from treeleaks.frontends.xgboost import read_xgboost

    booster = xgboost.XGBRegressor(n_estimators=20, base_score=10.0).fit(X, Y).get_booster()
    with pytest.raises(UnsupportedModelError, match="base score of its own"):
        read_xgboost(booster)


def test_a_lightgbm_regressor_whose_trees_never_split_is_read_with_its_mean() -> None:
    """40 noisy rows: LightGBM grows no split and keeps no hessian sum (``leaf_weight=``);
    squared error gives every row h = 1, so the file still says N and the mean target."""
    lightgbm = pytest.importorskip("lightgbm")
    from treeleaks.frontends.lightgbm import read_lightgbm

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = X[:, 0] + rng.normal(size=40)
    booster = lightgbm.LGBMRegressor(n_estimators=3, verbose=-1).fit(X, y).booster_
    assert booster.dump_model()["tree_info"][0]["num_leaves"] == 1
    model = read_lightgbm(booster.model_to_string())
    assert model.is_regression and int(model.trees[0].counts.sum()) == 40
    assert model.trees[0].values[0] == pytest.approx(y.mean(), rel=1e-6)
