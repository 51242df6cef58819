"""One naming rule for the boosters' readers (issue 42, item 5): ``load_*`` reads a file,
``from_*`` a fitted object, and both give what the older ``read_*`` give."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_diabetes

import treeleaks
from treeleaks.runtime.errors import TreeleaksError, UnsupportedModelError

X, Y = load_diabetes(return_X_y=True)
X, Y = X[:120], Y[:120]


def _same(a: treeleaks.ReleasedModel, b: treeleaks.ReleasedModel) -> None:
    assert a.n_trees == b.n_trees and a.task == b.task
    for one, two in zip(a.trees, b.trees, strict=True):
        assert (one.counts == two.counts).all()
        assert np.array_equal(one.threshold, two.threshold, equal_nan=True)


def test_lightgbm_file_and_object_give_the_same_model(tmp_path) -> None:
    lightgbm = pytest.importorskip("lightgbm")
    from treeleaks.frontends.lightgbm import read_lightgbm

    fitted = lightgbm.LGBMRegressor(n_estimators=5, verbose=-1).fit(X, Y)
    path = tmp_path / "m.txt"
    fitted.booster_.save_model(str(path))
    _same(treeleaks.load_lightgbm(path), treeleaks.from_lightgbm(fitted))
    _same(treeleaks.from_lightgbm(fitted.booster_), read_lightgbm(path))


def test_xgboost_file_and_object_give_the_same_model(tmp_path) -> None:
    xgboost = pytest.importorskip("xgboost")
    from treeleaks.frontends.xgboost import read_xgboost

    fitted = xgboost.XGBRegressor(n_estimators=5).fit(X, Y)
    for name in ("m.json", "m.ubj"):
        path = tmp_path / name
        fitted.get_booster().save_model(str(path))
        _same(treeleaks.load_xgboost(path), treeleaks.from_xgboost(fitted))
    _same(treeleaks.from_xgboost(fitted.get_booster()), read_xgboost(tmp_path / "m.json"))


def test_the_wrong_kind_of_input_is_named(tmp_path) -> None:
    with pytest.raises(UnsupportedModelError, match=r"treeleaks\.io\.load_lightgbm"):
        treeleaks.from_lightgbm(tmp_path / "m.txt")
    with pytest.raises(UnsupportedModelError, match="not dict"):
        treeleaks.from_xgboost({})
    with pytest.raises(TreeleaksError, match="load_xgboost reads an XGBoost model file"):
        treeleaks.load_xgboost(tmp_path / "m.txt")
    plain = tmp_path / "forest.json"
    plain.write_text('{"trees": []}')
    with pytest.raises(TreeleaksError, match="not an XGBoost model file"):
        treeleaks.load_xgboost(plain)
