"""scikit-learn's gradient-boosted classifiers of more than two classes: their first
round's class counts.

Both grow K trees a round, tree k fitting class k, and start every row at the same
probabilities π (the class shares; 1/K for ``GradientBoostingClassifier(init="zero")``):

- ``GradientBoostingClassifier`` stores a leaf's step v = (K-1)/K · Σ(y_k - π_k) /
  Σ π_k(1-π_k), so a leaf of n rows holding P of class k has P = n·π_k + v·K/(K-1)·n·π_k(1-π_k).
- ``HistGradientBoostingClassifier`` stores v = -η·G/(H + λ) over float32 gradients
  g = π_k - y_k and hessians h = float32(π_k(1-π_k)), so P follows as for two classes
  (`treeleaks.frontends.boosting.float32_positives`).

Later rounds' leaf values give each leaf's softmax gradient sums in the same way as a binary
booster's (`treeleaks.frontends.sklearn_boosting`), p from the softmax of every class's
score.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from treeleaks.frontends.boosting import Nodes, float32_positives, no_sums, sum_rows
from treeleaks.frontends.hist_routing import hist_routing, routed_columns
from treeleaks.frontends.multiclass import (
    check_round,
    multiclass_facts,
    multiclass_trees,
    softmax,
)
from treeleaks.frontends.sklearn_boosting import (
    FLOAT32_ROW,
    FLOAT64_ROW,
    _gradient_boosting_trees,
    _same_rows,
    _whole,
    check_classifier,
    predictor_tree,
)
from treeleaks.frontends.stored import sklearn_booster_fields
from treeleaks.ir.description import describe
from treeleaks.ir.model import LeafGradients, ReleasedModel
from treeleaks.runtime.errors import UnsupportedModelError

GB, HGB = "GradientBoostingClassifier", "HistGradientBoostingClassifier"
# nodes, row counts, the first round's class counts, the gradient sums, more facts
_Read = tuple[list[Nodes], list[np.ndarray], list[np.ndarray], LeafGradients, dict[str, Any]]


def multiclass_booster_model(estimator: Any, names: list[str], label_name: str,
                             gaps: frozenset[str] = frozenset()) -> ReleasedModel:
    """The `ReleasedModel` of a fitted scikit-learn booster of K > 2 classes."""
    kind = type(estimator).__name__
    check_classifier(estimator, kind)
    classes = [c.item() if isinstance(c, np.generic) else c for c in estimator.classes_]
    read = _gradient_boosting if kind == GB else partial(_hist_gradient_boosting, gaps=gaps)
    nodes, rows, derived, gradients, more = read(estimator, names, len(classes))
    _same_rows(rows, kind)
    check_round(derived, int(rows[0].sum()), kind)
    facts = multiclass_facts(len(classes), len(nodes), objective="log_loss",
                             learning_rate=float(estimator.learning_rate), **more)
    features, inputs = routed_columns(estimator, names, gaps)
    model = ReleasedModel(multiclass_trees(nodes, list(rows), derived), classes, features,
                          inputs=inputs,
                          label_name=label_name, source=f"sklearn.{kind}",
                          gradients=gradients, facts=facts)
    model.validate()
    model.description = describe(model, "scikit-learn", kind,
                                 sklearn_booster_fields(kind == HGB, False, multiclass=True))
    return model


def _gradient_boosting(estimator: Any, names: list[str], n_classes: int) -> _Read:
    """GradientBoostingClassifier's trees, first-round class counts and later sums."""
    nodes, rows, steps = _gradient_boosting_trees(estimator, GB)
    start = _gb_start(estimator, n_classes)
    scale = n_classes / (n_classes - 1)
    derived = [_whole(n * p + v * scale * n * p * (1.0 - p), n, GB)
               for n, v, p in zip(rows[:n_classes], steps, start)]
    eta = float(estimator.learning_rate)
    # a later leaf's step v = (K-1)/K·Σ(y - p)/Σp(1 - p): Σg + v·K/(K-1)·Σh = 0
    sums = [sum_rows(1.0, v * scale, np.zeros(v.size),
                     n * (1.0 + np.abs(v * scale)) * FLOAT64_ROW)
            for v, n in zip(steps[n_classes:], rows[n_classes:])]
    gradients = LeafGradients(np.log(start), [eta * v for v in steps],
                              [no_sums()] * n_classes + sums)
    return nodes, rows, derived, gradients, {}


def _hist_gradient_boosting(estimator: Any, names: list[str], n_classes: int,
                            gaps: frozenset[str] = frozenset()) -> _Read:
    """HistGradientBoostingClassifier's trees, first-round class counts and later sums."""
    nodes, rows, values = _predictor_rounds(estimator, names, gaps)
    scores = np.ravel(estimator._baseline_prediction).astype(np.float64)
    eta, l2 = float(estimator.learning_rate), float(estimator.l2_regularization)
    derived = []
    for n, v, p in zip(rows[:n_classes], values, softmax(scores)):
        hessian = n * float(np.float32(p * (1.0 - p)))
        derived.append(_whole(float32_positives(n, -v * (hessian + l2) / eta, p), n, HGB))
    # a later leaf's value v = -η·G/(H + λ): Σg + (v/η)·Σh = -v·λ/η, float32 per row
    sums = [sum_rows(1.0, v / eta, -v * l2 / eta, n * (1.0 + np.abs(v / eta)) * FLOAT32_ROW)
            for v, n in zip(values[n_classes:], rows[n_classes:])]
    gradients = LeafGradients(scores, values, [no_sums()] * n_classes + sums)
    return nodes, rows, derived, gradients, {"l2_regularization": l2}


def _gb_start(estimator: Any, n_classes: int) -> np.ndarray:
    """Every row's starting probabilities: the class prior of the default initial
    estimator, or 1/K for ``init="zero"``."""
    init = getattr(estimator, "init_", None)
    if isinstance(init, str) and init == "zero":
        return np.full(n_classes, 1.0 / n_classes)
    prior = getattr(init, "class_prior_", None)
    if type(init).__name__ != "DummyClassifier" or prior is None or (
            getattr(init, "strategy", "prior") != "prior"):
        raise UnsupportedModelError(
            f"this {GB} starts from an initial estimator of its own (init=...), so its rows "
            "start at different scores; treeleaks derives class counts for the default start "
            "(init=None) or init='zero'")
    return np.asarray(prior, dtype=np.float64)


def _predictor_rounds(estimator: Any, names: list[str], gaps: frozenset[str] = frozenset()
                      ) -> tuple[list[Nodes], list[np.ndarray], list[np.ndarray]]:
    """Every histogram-boosting predictor's IR nodes, leaf row counts and leaf values,
    round after round."""
    routing = hist_routing(estimator, names, gaps)
    read = [predictor_tree(p, t, names, routing)
            for t, p in enumerate(p for round_ in estimator._predictors for p in round_)]
    return [r[0] for r in read], [r[1] for r in read], [r[2] for r in read]
