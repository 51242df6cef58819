"""Stripping scikit-learn tree models: every tree's row counts, weighted counts and
impurities zeroed through the tree's own ``__getstate__``/``__setstate__``, internal nodes'
values zeroed (a parent's class fractions weigh its children's sizes), every random state
set to a constant (a bootstrap forest's draws are recomputed from its trees' states), and
every fitted attribute sized or scored on the training rows removed. Prediction reads only
the splits and the leaves' values, so the stripped estimator predicts as before."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from treeleaks.runtime.errors import UnsupportedModelError

FORESTS = ("RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier",
           "ExtraTreesRegressor")
TREES = ("DecisionTreeClassifier", "DecisionTreeRegressor", "ExtraTreeClassifier",
         "ExtraTreeRegressor")
BOOSTERS = ("GradientBoostingClassifier", "GradientBoostingRegressor")
HIST_BOOSTERS = ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor")
STRIPPABLE = TREES + FORESTS + BOOSTERS + HIST_BOOSTERS
CONSTANT_SEED = 0
_LEAF = -1
_NODE_COUNTS = ("n_node_samples", "weighted_n_node_samples", "impurity")
# fitted attributes computed on the training or out-of-bag rows, and what each gives away
_ROW_ATTRIBUTES = {
    "oob_decision_function_": "every training row's out-of-bag class fractions",
    "oob_prediction_": "every training row's out-of-bag prediction",
    "oob_score_": "the out-of-bag score", "oob_improvement_": "the out-of-bag improvements",
    "oob_scores_": "the out-of-bag scores", "_n_samples": "the number of training rows",
    "_n_samples_bootstrap": "the bootstrap sample's size",
    "_sample_weight": "the training rows' weights"}
_PREDICTOR_COUNTS = ("count", "gain", "bin_threshold")


def strip_estimator(estimator: Any) -> tuple[Any, list[str]]:
    """A stripped copy of a fitted scikit-learn tree model (the input is left untouched),
    and the fields removed or neutralised."""
    kind = type(estimator).__name__
    _check_strippable(estimator, kind)
    stripped = copy.deepcopy(estimator)
    removed = []
    for name, what in _ROW_ATTRIBUTES.items():
        if hasattr(stripped, name):
            delattr(stripped, name)
            removed.append(f"{name}, {what} (removed)")
    stripped.random_state = CONSTANT_SEED
    if kind in HIST_BOOSTERS:
        return stripped, _strip_hist(stripped) + removed
    return stripped, _strip_members(stripped, kind) + removed


def _check_strippable(estimator: Any, kind: str) -> None:
    """One line for a model `strip_estimator` does not strip, or one not fitted."""
    if kind not in STRIPPABLE:
        raise UnsupportedModelError(
            f"cannot strip a {kind}; treeleaks strips {', '.join(STRIPPABLE)}")
    if not (hasattr(estimator, "tree_") or hasattr(estimator, "estimators_")
            or hasattr(estimator, "_predictors")):
        raise UnsupportedModelError(f"the {kind} is not fitted: call fit(X, y) before stripping")


def _strip_members(stripped: Any, kind: str) -> list[str]:
    """Strip a tree, forest or gradient boosting's trees (and a booster's scores and random
    generator) in place; the fields neutralised."""
    classifier = "Classifier" in kind and kind not in BOOSTERS  # a booster's trees regress
    members = [stripped] if kind in TREES else list(np.asarray(stripped.estimators_).ravel())
    for member in members:
        member.tree_ = stripped_tree(member.tree_, classifier)
        member.random_state = CONSTANT_SEED
    fields = ["n_node_samples, weighted_n_node_samples and impurity of every node (set to 0)",
              "internal nodes' values (set to 0)"]
    if classifier:
        fields.append("leaf values kept as class fractions (no weighted counts)")
    fields.append(f"random_state of the model and of every tree (set to {CONSTANT_SEED})")
    if kind in BOOSTERS:
        stripped.train_score_ = np.zeros_like(stripped.train_score_)
        stripped._rng = np.random.RandomState(CONSTANT_SEED)
        fields.append("train_score_ (set to 0) and the internal random generator (reset)")
    fields.append("feature_importances_ (computed from the impurities: now undefined)")
    return fields


def kept_fields(estimator: Any) -> list[str]:
    """What a stripped scikit-learn model still holds of its training rows because every
    prediction starts from it (a booster's initial estimate)."""
    regressor = "Regressor" in type(estimator).__name__
    start = "the training targets' mean" if regressor else (
        "each class's share of the training rows: the class balance")
    if hasattr(estimator, "_baseline_prediction"):
        return [f"_baseline_prediction, {start}: every prediction starts from it"]
    if hasattr(estimator, "init_") and not isinstance(estimator.init_, str):
        return [f"init_, {start}: every prediction starts from it"]
    return []


def stripped_tree(sk_tree: Any, classifier: bool) -> Any:
    """A new ``sklearn.tree._tree.Tree`` with the same splits and leaf values, its nodes'
    counts and impurities zeroed and its internal nodes' values zeroed."""
    state = sk_tree.__getstate__()
    nodes = state["nodes"].copy()
    for name in _NODE_COUNTS:
        nodes[name] = 0
    values = np.array(state["values"], dtype=np.float64)
    leaf = nodes["left_child"] == _LEAF
    if classifier:
        sums = values[leaf].sum(axis=-1, keepdims=True)
        if not np.allclose(sums, 1.0):  # scikit-learn before 1.4 stored weighted counts
            values[leaf] = values[leaf] / np.where(sums > 0, sums, 1.0)
    values[~leaf] = 0.0
    cls, args = sk_tree.__reduce__()[:2]
    tree = cls(*args)
    tree.__setstate__({**state, "nodes": np.ascontiguousarray(nodes),
                       "values": np.ascontiguousarray(values)})
    return tree


def _strip_hist(estimator: Any) -> list[str]:
    """Zero a histogram booster's per-node counts, gains and bins, internal values, scores,
    random generators and the training data's bin edges, in place."""
    for per_round in estimator._predictors:
        for predictor in per_round:
            nodes = predictor.nodes.copy()
            for name in _PREDICTOR_COUNTS:
                nodes[name] = 0
            nodes["value"][nodes["is_leaf"] == 0] = 0.0
            predictor.nodes = nodes
    mapper = estimator._bin_mapper
    categorical = np.zeros(len(mapper.bin_thresholds_), dtype=bool) if (
        mapper.is_categorical_ is None) else np.asarray(mapper.is_categorical_, dtype=bool)
    mapper.bin_thresholds_ = [edges if categorical[f] else np.zeros(0)
                              for f, edges in enumerate(mapper.bin_thresholds_)]
    mapper.n_bins_non_missing_ = np.zeros_like(mapper.n_bins_non_missing_)
    mapper.random_state = CONSTANT_SEED
    estimator.train_score_ = np.zeros(0)
    estimator.validation_score_ = np.zeros(0)
    estimator._random_seed = np.uint64(CONSTANT_SEED)
    estimator._feature_subsample_rng = np.random.default_rng(CONSTANT_SEED)
    return ["count, gain and bin_threshold of every predictor node (set to 0)",
            "internal nodes' values (set to 0)",
            "the bin edges of the training data's numerical features, and its distinct "
            "counts (n_bins_non_missing_)",
            "train_score_ and validation_score_ (emptied)",
            f"random_state and the random seeds and generators (set to {CONSTANT_SEED})"]
