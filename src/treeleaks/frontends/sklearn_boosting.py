"""scikit-learn's gradient-boosted classifiers: binary ``GradientBoostingClassifier`` and
``HistGradientBoostingClassifier`` (more classes: `treeleaks.frontends.sklearn_multiclass`).

Both keep each node's training rows (``n_node_samples``; a predictor node's ``count``):
without subsampling every tree's leaves hold all N rows, pooled over the classes. The first
tree also gives each leaf's positives, since every row starts at the same probability p0
(the positive share of the rows it was fitted on; 1/2 with ``init="zero"``):

- ``GradientBoostingClassifier`` stores a leaf's Newton step v = Σ(y - p0) / Σ p0(1-p0)
  (the learning rate is applied when predicting), so P = n·p0 + v·n·p0(1-p0).
- ``HistGradientBoostingClassifier`` stores v = -η·G/(H + λ) with G and H summed over the
  rows' float32 gradients g = p0 - y and hessians h = p0(1-p0); with a = float32(p0) and
  b = float32(p0 - 1), G = (n - P)·a + P·b, so P = (n·a - G)/(a - b).

A derived count that is not whole means an option the derivation leaves out (sample or
class weights, monotonic constraints): the model is refused rather than rounded. Early
stopping on a held-out share (``HistGradientBoostingClassifier``'s default above 10,000
rows) leaves the counts of the rows the booster trained on, which the facts say.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from treeleaks.frontends.boosting import (
    Nodes,
    booster_trees,
    check_node_sums,
    float32_positives,
    no_sums,
    squared_error_gradients,
    sum_rows,
    whole_positives,
)
from treeleaks.frontends.hist_routing import HistRouting, hist_routing, routed_columns
from treeleaks.frontends.stored import sklearn_booster_fields
from treeleaks.ir.description import describe
from treeleaks.ir.model import LeafGradients, ReleasedModel, Tree
from treeleaks.runtime.errors import UnsupportedModelError

BOOSTERS = ("GradientBoostingClassifier", "HistGradientBoostingClassifier")
REGRESSION_BOOSTERS = ("GradientBoostingRegressor", "HistGradientBoostingRegressor")
# nodes, row counts, the first tree's positives, the later trees' gradient sums, the facts
_Read = tuple[list[Nodes], list[np.ndarray], np.ndarray, LeafGradients, dict[str, Any]]
WHOLE_TOLERANCE = 1e-4  # float32 gradients: derived counts this close to whole are whole
FLOAT32_ROW, FLOAT64_ROW = 1e-6, 1e-9  # precision of a gradient sum per row and unit of |b|


def booster_model(estimator: Any, names: list[str], label_name: str,
                  gaps: frozenset[str] = frozenset()) -> ReleasedModel:
    """The `ReleasedModel` of a fitted binary scikit-learn booster (see the module doc)."""
    kind = type(estimator).__name__
    classes = [c.item() if isinstance(c, np.generic) else c for c in estimator.classes_]
    if len(classes) != 2:
        raise UnsupportedModelError(
            f"this {kind} has {len(classes)} classes: booster_model reads two "
            "(sklearn_multiclass.multiclass_booster_model reads more)")
    check_classifier(estimator, kind)
    read = _gradient_boosting if kind == "GradientBoostingClassifier" else partial(
        _hist_gradient_boosting, gaps=gaps)
    nodes, rows, positives, gradients, facts = read(estimator, names)
    _same_rows(rows, kind)
    features, inputs = routed_columns(estimator, names, gaps)
    model = ReleasedModel(booster_trees(nodes, rows, positives), classes, features,
                          label_name=label_name, source=f"sklearn.{kind}", gradients=gradients,
                          facts={"objective": "log_loss",
                                 "learning_rate": float(estimator.learning_rate), **facts},
                          inputs=inputs)
    model.validate()
    model.description = describe(model, "scikit-learn", kind,
                                 sklearn_booster_fields(kind != "GradientBoostingClassifier",
                                                        False))
    return model


def check_classifier(estimator: Any, kind: str) -> None:
    """Refuse a booster trained with a loss or class weights its leaf values do not
    give class counts for."""
    if getattr(estimator, "loss", "log_loss") != "log_loss":
        raise UnsupportedModelError(
            f"this {kind} was trained with loss={estimator.loss!r}; treeleaks derives class "
            "counts for loss='log_loss' (the default)")
    if getattr(estimator, "class_weight", None) is not None:
        raise UnsupportedModelError(
            f"this {kind} was trained with class_weight, which its leaf values mix into the "
            "class counts; treeleaks needs unweighted training")


def booster_regression_model(estimator: Any, names: list[str], label_name: str,
                             gaps: frozenset[str] = frozenset()) -> ReleasedModel:
    """A fitted squared-error ``GradientBoostingRegressor`` or
    ``HistGradientBoostingRegressor``: every tree's row counts, and the first tree's leaf
    values turned into each leaf's target mean (every row starts at the same prediction
    b): b + v for GradientBoosting's mean residual v, b + v(n + λ)/(η·n) for
    HistGradientBoosting's v = -η·G/(n + λ). Later trees' values are steps, not targets."""
    kind = type(estimator).__name__
    if getattr(estimator, "loss", "squared_error") != "squared_error":
        raise UnsupportedModelError(
            f"this {kind} was trained with loss={estimator.loss!r}; treeleaks reads "
            "loss='squared_error' (the default)")
    eta = float(estimator.learning_rate)
    if kind == "GradientBoostingRegressor":
        init = getattr(estimator, "init_", None)
        start = 0.0 if isinstance(init, str) and init == "zero" else float(
            np.ravel(getattr(init, "constant_", [np.nan]))[0])
        nodes, rows, steps = _gradient_boosting_trees(estimator, kind)
        means = start + steps[0]
        gradients = squared_error_gradients(start, [eta * v for v in steps], rows, eta, 0.0,
                                            FLOAT64_ROW)
    else:
        l2 = float(estimator.l2_regularization)
        start = float(np.ravel(estimator._baseline_prediction)[0])
        nodes, rows, values = _predictor_trees(estimator, names, gaps)
        means = start + values[0] * (rows[0] + l2) / (eta * rows[0])
        gradients = squared_error_gradients(start, values, rows, eta, l2, FLOAT32_ROW)
        # unweighted, the start is the mean target: the leaves' means add up to N times it
        total, scale = float(rows[0] @ means), float(rows[0] @ np.abs(means))
        if abs(total - rows[0].sum() * start) > 1e-5 * (scale + 1.0):
            raise UnsupportedModelError(
                f"this {kind}'s first leaf values do not average to its start: it was "
                "trained with sample_weight, which its values mix into the targets; "
                "treeleaks needs unweighted training")
    if not np.isfinite(start):
        raise UnsupportedModelError(f"this {kind} starts from an initial estimator of its "
                                    "own (init=...); treeleaks reads the default start")
    _same_rows(rows, kind)
    trees = [Tree(*shape, count[:, None].copy(), n_samples=count.copy(),
                  values=means if t == 0 else None)
             for t, (shape, count) in enumerate(zip(nodes, rows))]
    features, inputs = routed_columns(estimator, names, gaps)
    model = ReleasedModel(trees, [], features, label_name=label_name, inputs=inputs,
                          source=f"sklearn.{kind}",
                          task="regression", gradients=gradients,
                          facts={"learning_rate": eta})
    model.validate()
    model.description = describe(model, "scikit-learn", kind, sklearn_booster_fields(
        kind != "GradientBoostingRegressor", True))
    return model


def tree_nodes(sk_tree: Any) -> Nodes:
    """A fitted scikit-learn tree's nodes in the IR: features, thresholds, children and
    each node's leaf index (leaves: feature -1, no children)."""
    is_leaf = np.asarray(sk_tree.children_left) < 0
    feature = np.asarray(sk_tree.feature, dtype=np.int64).copy()
    feature[is_leaf] = -1
    leaf_of_node = np.full(len(feature), -1, dtype=np.int64)
    leaf_of_node[is_leaf] = np.arange(int(is_leaf.sum()))
    threshold = np.asarray(sk_tree.threshold, dtype=np.float64).copy()
    threshold[is_leaf] = np.nan
    left = np.asarray(sk_tree.children_left, dtype=np.int64).copy()
    right = np.asarray(sk_tree.children_right, dtype=np.int64).copy()
    left[is_leaf] = -1
    right[is_leaf] = -1
    return feature, threshold, left, right, leaf_of_node


def _gradient_boosting(estimator: Any, names: list[str]) -> _Read:
    p0 = _start_probability(estimator)
    nodes, rows, steps = _gradient_boosting_trees(estimator, "GradientBoostingClassifier")
    derived = rows[0] * p0 + steps[0] * rows[0] * p0 * (1.0 - p0)
    positives = _whole(derived, rows[0], "GradientBoostingClassifier")
    eta = float(estimator.learning_rate)
    # a later leaf's step v = Σ(y - p) / Σp(1 - p), so Σg + v·Σh = 0 (float64 throughout)
    gradients = LeafGradients(float(np.log(p0 / (1.0 - p0))), [eta * v for v in steps],
                              [no_sums()] + [sum_rows(1.0, v, np.zeros(v.size),
                                                      n * (1.0 + np.abs(v)) * FLOAT64_ROW)
                                             for v, n in zip(steps[1:], rows[1:])])
    facts: dict[str, Any] = {}
    if getattr(estimator, "n_iter_no_change", None) is not None:
        facts["early stopping"] = (f"validation_fraction={estimator.validation_fraction} of "
                                   "the rows held out: the counts are of the rest")
    return nodes, rows, positives, gradients, facts


def _gradient_boosting_trees(estimator: Any, kind: str
                             ) -> tuple[list[Nodes], list[np.ndarray], list[np.ndarray]]:
    """Every tree's IR nodes, leaf row counts and leaf values (each a Newton step or mean
    residual, before the learning rate), refused for subsamples and sample weights."""
    if float(estimator.subsample) < 1.0:
        raise UnsupportedModelError(
            f"this {kind} fit each tree on a subsample (subsample={estimator.subsample}), "
            "whose rows it does not keep; treeleaks audits boosters trained on every row "
            "(subsample=1.0)")
    nodes, rows, steps = [], [], []
    for member in np.asarray(estimator.estimators_).ravel():
        sk_tree = member.tree_
        is_leaf = np.asarray(sk_tree.children_left) < 0
        count = np.asarray(sk_tree.n_node_samples, dtype=np.int64)[is_leaf]
        weighted = np.asarray(sk_tree.weighted_n_node_samples, dtype=np.float64)[is_leaf]
        if np.abs(weighted - count).max(initial=0.0) > 1e-6:
            raise UnsupportedModelError(
                f"this {kind} was trained with sample_weight, which its leaf values mix "
                "into what they say of the rows; treeleaks needs unweighted training")
        for field in ("n_node_samples", "weighted_n_node_samples"):
            check_node_sums(sk_tree.children_left, sk_tree.children_right,
                            getattr(sk_tree, field), f"tree {len(nodes)} of this {kind}",
                            f"rows ({field})")
        nodes.append(tree_nodes(sk_tree))
        rows.append(count)
        steps.append(np.asarray(sk_tree.value, dtype=np.float64)[is_leaf, 0, 0])
    return nodes, rows, steps


def _start_probability(estimator: Any) -> float:
    """The probability every row starts at: the prior of the default initial estimator,
    or 1/2 for ``init="zero"``."""
    init = getattr(estimator, "init_", None)
    if isinstance(init, str) and init == "zero":
        return 0.5
    prior = getattr(init, "class_prior_", None)
    if type(init).__name__ != "DummyClassifier" or prior is None or (
            getattr(init, "strategy", "prior") != "prior"):
        raise UnsupportedModelError(
            "this GradientBoostingClassifier starts from an initial estimator of its own "
            "(init=...), so its rows start at different scores; treeleaks derives class counts "
            "for the default start (init=None) or init='zero'")
    return float(prior[1])


def _hist_gradient_boosting(estimator: Any, names: list[str],
                            gaps: frozenset[str] = frozenset()) -> _Read:
    if int(estimator.n_trees_per_iteration_) != 1:
        raise UnsupportedModelError("this HistGradientBoostingClassifier fits several trees "
                                    "per round; treeleaks reads binary boosters so far")
    nodes, rows, values = _predictor_trees(estimator, names, gaps)
    p0 = float(1.0 / (1.0 + np.exp(-float(np.ravel(estimator._baseline_prediction)[0]))))
    eta, l2 = float(estimator.learning_rate), float(estimator.l2_regularization)
    hessian = rows[0] * float(np.float32(p0 * (1.0 - p0)))
    gradient = -values[0] * (hessian + l2) / eta
    positives = _whole(float32_positives(rows[0], gradient, p0), rows[0],
                       "HistGradientBoostingClassifier")
    # a later leaf's value v = -η·G/(H + λ), so Σg + (v/η)·Σh = -v·λ/η; float32 per row
    gradients = LeafGradients(float(np.ravel(estimator._baseline_prediction)[0]), values,
                              [no_sums()] + [sum_rows(1.0, v / eta, -v * l2 / eta,
                                                      n * (1.0 + np.abs(v / eta)) * FLOAT32_ROW)
                                             for v, n in zip(values[1:], rows[1:])])
    facts: dict[str, Any] = {"l2_regularization": l2}
    if getattr(estimator, "do_early_stopping_", False) and getattr(
            estimator, "_use_validation_data", False):
        facts["early stopping"] = (f"validation_fraction={estimator.validation_fraction} of "
                                   "the rows held out: the counts are of the rest")
    return nodes, rows, positives, gradients, facts


def _predictor_trees(estimator: Any, names: list[str], gaps: frozenset[str] = frozenset()
                     ) -> tuple[list[Nodes], list[np.ndarray], list[np.ndarray]]:
    """Every histogram-boosting predictor's IR nodes, leaf row counts and leaf values."""
    routing = hist_routing(estimator, names, gaps)
    read = [predictor_tree(p, t, names, routing) for t, (p,) in enumerate(estimator._predictors)]
    return [r[0] for r in read], [r[1] for r in read], [r[2] for r in read]


def predictor_tree(predictor: Any, index: int, names: list[str],
                   routing: HistRouting | None = None) -> tuple[Nodes, np.ndarray, np.ndarray]:
    """One histogram-boosting predictor's IR nodes, leaf row counts and leaf values.

    With ``routing`` (`hist_routing`), its gap and category splits spelled out.
    """
    table = predictor.nodes
    is_leaf = table["is_leaf"].astype(bool)
    check_node_sums(np.where(is_leaf, -1, table["left"].astype(np.int64)),
                    np.where(is_leaf, -1, table["right"].astype(np.int64)), table["count"],
                    f"tree {index}", "rows (count)")
    if routing is not None:
        nodes, kept = routing.tree(predictor, table, index)
        return nodes, table["count"][is_leaf][kept].astype(np.int64), table["value"][is_leaf][kept]
    feature = np.where(is_leaf, -1, table["feature_idx"].astype(np.int64))
    for node in np.flatnonzero(~is_leaf & table["is_categorical"].astype(bool)):
        name = names[feature[node]] if 0 <= feature[node] < len(names) else str(feature[node])
        raise UnsupportedModelError(
            f"tree {index} of this HistGradientBoostingClassifier splits feature {name!r} as a "
            "category; treeleaks reads numerical splits only (encode categories as numbers)")
    leaf_of_node = np.full(len(table), -1, dtype=np.int64)
    leaf_of_node[is_leaf] = np.arange(int(is_leaf.sum()))
    nodes = (feature, np.where(is_leaf, np.nan, table["num_threshold"].astype(np.float64)),
             np.where(is_leaf, -1, table["left"].astype(np.int64)),
             np.where(is_leaf, -1, table["right"].astype(np.int64)), leaf_of_node)
    return nodes, table["count"][is_leaf].astype(np.int64), table["value"][is_leaf]


def _same_rows(rows: list[np.ndarray], kind: str) -> None:
    """Every tree holds the first tree's rows, or the counts are not the model's rows."""
    total = int(rows[0].sum())
    for index, count in enumerate(rows):
        if int(count.sum()) != total:
            raise UnsupportedModelError(
                f"tree {index} of this {kind} counts {int(count.sum())} rows but tree 0 counts "
                f"{total}: its trees were fit on different rows, which treeleaks does not model")


def _whole(derived: np.ndarray, rows: np.ndarray, kind: str) -> np.ndarray:
    """The first tree's positives, or a refusal naming the options that break them."""
    whole = whole_positives(derived, rows, WHOLE_TOLERANCE)
    if whole is None:
        off = float(np.abs(derived - np.rint(derived)).max(initial=0.0))
        raise UnsupportedModelError(
            f"the first tree of this {kind} gives no whole class counts (they miss whole "
            f"numbers by up to {off:.3g}): it was trained with an option the derivation leaves "
            "out (sample_weight, monotonic_cst, a custom init); treeleaks refuses to guess "
            "its classes")
    return whole
