"""`treeleaks.defences.strip` per model kind: the stripped file, loaded back by its own
framework, predicts exactly as the original on the training rows and on 10,000 random
inputs; the fields it removes are gone; treeleaks refuses it saying the counts were
removed, and reads its structure for single-out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lightgbm
import numpy as np
import pytest
import skops.io
import xgboost
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import (
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
)
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from treeleaks.defences.strip import strip
from treeleaks.io import load_model
from treeleaks.runtime.errors import CountsRemovedError

N_RANDOM = 10_000


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_breast_cancer(return_X_y=True)
    return X[:300, :6], y[:300]


def random_inputs(X: np.ndarray, seed: int = 1) -> np.ndarray:
    """10,000 inputs: each feature uniform over the training range widened by a tenth on
    each side, half of them set to training values (where the thresholds sit between)."""
    rng = np.random.default_rng(seed)
    low, high = X.min(axis=0), X.max(axis=0)
    margin = 0.1 * (high - low)
    inputs = rng.uniform(low - margin, high + margin, (N_RANDOM, X.shape[1]))
    exact = rng.random(inputs.shape) < 0.5
    inputs[exact] = X[rng.integers(0, len(X), inputs.shape), np.arange(X.shape[1])][exact]
    return inputs


def sklearn_outputs(estimator: Any, X: np.ndarray) -> list[np.ndarray]:
    outputs = [estimator.predict(X)]
    if hasattr(estimator, "predict_proba"):
        outputs.append(estimator.predict_proba(X))
    return outputs


def tree_arrays(estimator: Any) -> list[Any]:
    """Every scikit-learn tree of a model (its ``tree_`` objects)."""
    members = np.asarray(getattr(estimator, "estimators_", [estimator])).ravel()
    return [m.tree_ for m in members]


def refused_as_stripped(path: Path, forest: bool = False) -> None:
    with pytest.raises(CountsRemovedError) as caught:
        load_model(path, trust_pickle=True, allow_regression=True)
    message = str(caught.value)
    assert "counts were removed" in message and "single-out" in message
    assert ("random states neutralised" in message) == forest
    structure = load_model(path, trust_pickle=True, allow_regression=True,
                           counts_removed_ok=True)
    assert not structure.counts_released
    assert all(tree.draws is None for tree in structure.trees)


SKLEARN = {
    "tree classifier": lambda: DecisionTreeClassifier(max_depth=6, random_state=0),
    "tree regressor": lambda: DecisionTreeRegressor(max_depth=6, random_state=0),
    "bootstrap forest": lambda: RandomForestClassifier(8, max_depth=5, oob_score=True,
                                                       random_state=0),
    "extra trees regressor": lambda: ExtraTreesRegressor(4, max_depth=5, random_state=0),
    "gradient boosting": lambda: GradientBoostingClassifier(n_estimators=5, max_depth=2,
                                                            random_state=0),
    "gradient boosting regressor": lambda: GradientBoostingRegressor(
        n_estimators=8, subsample=0.7, n_iter_no_change=3, random_state=0),
    "histogram boosting": lambda: HistGradientBoostingClassifier(max_iter=5,
                                                                 random_state=0),
    "histogram boosting regressor": lambda: HistGradientBoostingRegressor(
        max_iter=10, early_stopping=True, validation_fraction=0.2, random_state=0),
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("kind", list(SKLEARN))
def test_stripped_sklearn_model_predicts_as_before_and_keeps_no_counts(
        kind: str, data: tuple[np.ndarray, np.ndarray], tmp_path: Path) -> None:
    X, y = data
    estimator = SKLEARN[kind]().fit(X, y)
    result = strip(estimator, "skops", X)
    assert (result.n_rows, result.n_random) == (len(X), N_RANDOM)
    back = skops.io.loads(result.content,
                          trusted=skops.io.get_untrusted_types(data=result.content))
    for inputs in (X, random_inputs(X)):
        for before, after in zip(sklearn_outputs(estimator, inputs),
                                 sklearn_outputs(back, inputs), strict=True):
            np.testing.assert_array_equal(before, after)
    assert back.random_state == 0
    assert not any(hasattr(back, name) for name in (
        "oob_score_", "oob_decision_function_", "oob_improvement_", "_n_samples"))
    if hasattr(back, "_predictors"):
        nodes = [p.nodes for per_round in back._predictors for p in per_round]
        assert all(not n["count"].any() and not n["gain"].any() for n in nodes)
        assert not back.train_score_.size and not back._bin_mapper.n_bins_non_missing_.any()
    else:
        for sk_tree in tree_arrays(back):
            assert not sk_tree.n_node_samples.any()
            assert not sk_tree.weighted_n_node_samples.any() and not sk_tree.impurity.any()
            internal = sk_tree.children_left >= 0
            assert not sk_tree.value[internal].any()
        members = np.asarray(getattr(back, "estimators_", [back])).ravel()
        assert all(m.random_state == 0 for m in members)
    path = tmp_path / "stripped.skops"
    path.write_bytes(result.content)
    refused_as_stripped(path, forest=kind == "bootstrap forest")


def test_stripped_pickle_stays_a_pickle(data: tuple[np.ndarray, np.ndarray],
                                        tmp_path: Path) -> None:
    import pickle

    X, y = data
    forest = RandomForestClassifier(4, max_depth=4, random_state=0).fit(X, y)
    result = strip(forest, "pickle", X)
    back = pickle.loads(result.content)
    np.testing.assert_array_equal(back.predict_proba(random_inputs(X)),
                                  forest.predict_proba(random_inputs(X)))
    path = tmp_path / "stripped.pkl"
    path.write_bytes(result.content)
    refused_as_stripped(path, forest=True)


def test_stripped_lightgbm_file_predicts_as_before_without_counts(
        data: tuple[np.ndarray, np.ndarray], tmp_path: Path) -> None:
    X, y = data
    booster = lightgbm.train({"objective": "binary", "num_leaves": 8, "verbose": -1,
                              "bagging_seed": 7}, lightgbm.Dataset(X, y), 6)
    result = strip(booster.model_to_string(), "lightgbm", X)
    text = result.content.decode("utf-8")
    back = lightgbm.Booster(model_str=text)
    for inputs in (X, random_inputs(X)):
        np.testing.assert_array_equal(back.predict(inputs, raw_score=True),
                                      booster.predict(inputs, raw_score=True))
    for field in ("leaf_count=", "leaf_weight=", "internal_count=", "internal_weight=",
                  "internal_value=", "split_gain="):
        assert field not in text
    assert "[bagging_seed: 0]" in text and "feature_infos=none none" in text
    path = tmp_path / "stripped.txt"
    path.write_text(text)
    refused_as_stripped(path)


def test_stripped_xgboost_file_predicts_as_before_without_covers(
        data: tuple[np.ndarray, np.ndarray], tmp_path: Path) -> None:
    X, y = data
    model = xgboost.XGBClassifier(n_estimators=4, max_depth=3).fit(X, y)
    original = json.loads(bytes(model.get_booster().save_raw(raw_format="json")))
    result = strip(original, "xgboost", X)
    back = xgboost.Booster(model_file=bytearray(result.content))
    for inputs in (X, random_inputs(X)):
        matrix = xgboost.DMatrix(inputs)
        np.testing.assert_array_equal(back.predict(matrix, output_margin=True),
                                      model.get_booster().predict(matrix, output_margin=True))
    trees = json.loads(result.content)["learner"]["gradient_booster"]["model"]["trees"]
    for tree in trees:
        for field in ("sum_hessian", "loss_changes", "base_weights"):
            assert not any(tree[field])
    path = tmp_path / "stripped.json"
    path.write_bytes(result.content)
    refused_as_stripped(path)
