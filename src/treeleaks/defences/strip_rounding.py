"""``strip --round-values K``: a scikit-learn regressor's leaf values rounded to K significant
digits. A regression tree's leaf value is the mean of its rows' targets (a leaf of one row:
that row's target), so the exact values give the targets away; rounded, they give them to K
digits. Classifiers are refused: their leaves hold class fractions (or a booster's log-odds
steps), which rounding would change without hiding a target.

The prediction moves by at most the sum over trees of each tree's weight in the prediction
(1 for a tree or a histogram booster's predictor, 1/T for a forest of T trees, the learning
rate for ``GradientBoostingRegressor``) times its largest leaf change: `RoundedValues.bound`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from treeleaks.runtime.errors import UnsupportedModelError


@dataclass(frozen=True)
class RoundedValues:
    """The digits kept, the leaves rounded, and the most any prediction can move."""

    digits: int
    n_leaves: int
    bound: float

    def summary(self) -> str:
        return (f"{self.n_leaves:,} leaf values rounded to {self.digits} significant digits: "
                f"a prediction moves by at most {self.bound:.3g}")


def round_significant(values: np.ndarray, digits: int) -> np.ndarray:
    """``values`` rounded to ``digits`` significant digits (zero stays zero)."""
    values = np.asarray(values, dtype=np.float64)
    magnitude = np.floor(np.log10(np.abs(np.where(values == 0, 1.0, values))))
    scale = 10.0 ** (digits - 1 - magnitude)
    return np.where(values == 0, 0.0, np.round(values * scale) / scale)


def round_leaf_values(estimator: Any, digits: int) -> RoundedValues:
    """Round every leaf value of a fitted scikit-learn regressor in place (see the module
    doc); raises `UnsupportedModelError` for a classifier or ``digits`` below 1."""
    kind = type(estimator).__name__
    if "Regressor" not in kind:
        raise UnsupportedModelError(
            f"--round-values rounds a regressor's leaf values; a {kind}'s leaves hold class "
            "fractions or log-odds steps, not targets: drop --round-values")
    if digits < 1:
        raise UnsupportedModelError(f"--round-values {digits}: keep at least 1 significant "
                                    "digit")
    if hasattr(estimator, "_predictors"):
        return _round_histogram(estimator, digits)
    members = list(np.asarray(getattr(estimator, "estimators_", [estimator])).ravel())
    weight = (estimator.learning_rate if hasattr(estimator, "learning_rate")
              else 1.0 / len(members))
    bound, n_leaves = 0.0, 0
    for member in members:
        state = member.tree_.__getstate__()
        values = np.array(state["values"], dtype=np.float64)
        leaf = state["nodes"]["left_child"] < 0
        rounded = round_significant(values[leaf], digits)
        bound += weight * float(np.abs(rounded - values[leaf]).max(initial=0.0))
        values[leaf] = rounded
        n_leaves += int(leaf.sum())
        member.tree_.__setstate__({**state, "values": np.ascontiguousarray(values)})
    return RoundedValues(digits, n_leaves, bound)


def _round_histogram(estimator: Any, digits: int) -> RoundedValues:
    bound, n_leaves = 0.0, 0
    for per_round in estimator._predictors:
        for predictor in per_round:
            nodes = predictor.nodes.copy()
            leaf = nodes["is_leaf"] == 1
            rounded = round_significant(nodes["value"][leaf], digits)
            bound += float(np.abs(rounded - nodes["value"][leaf]).max(initial=0.0))
            nodes["value"][leaf] = rounded
            n_leaves += int(leaf.sum())
            predictor.nodes = nodes
    return RoundedValues(digits, n_leaves, bound)
