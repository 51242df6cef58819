"""``strip --thresholds simplest``: every threshold of a scikit-learn tree model moved to the
decimal with the fewest significant digits inside the gap it sits in, so that it no longer
is the midpoint of two training values (scikit-learn splits at ``(a + b) / 2``).

The gap, per feature: with the training rows, from the largest training value at or below
the threshold to the smallest above it (open at both ends: a threshold on a training value
would give that value away); every training row then stays on its side of every split.
Without them, halfway to the neighbouring thresholds of the same feature across the whole
model: weaker, as a training row (or any input) between the old and the new threshold
changes side. A tree compares ``float32(x) <= threshold``, so its training values are read
as float32; a histogram booster compares float64 values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from typing import Any

import numpy as np

_DEEPEST = -330  # below the smallest float64: no finer decimal grid exists


@dataclass
class MovedThresholds:
    """What moving the thresholds did: every (old, new) pair per feature, the thresholds
    kept (no gap known on one side), and whether the gaps came from the training rows."""

    with_data: bool
    moves: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    n_moved: int = 0
    n_kept: int = 0

    def summary(self) -> str:
        """One line: how many thresholds moved, from which gaps, and what it costs."""
        kept = f" ({self.n_kept:,} kept: no gap known on one side)" if self.n_kept else ""
        if self.with_data:
            return (f"{self.n_moved:,} thresholds moved to the shortest decimal between the "
                    f"training values they separate{kept}: every training row stays on its "
                    "side; an unseen input between a threshold's old and new place changes "
                    "side")
        return (f"{self.n_moved:,} thresholds moved to the shortest decimal halfway to their "
                f"neighbouring thresholds{kept}, without the training rows (weaker: a "
                "training row or unseen input between a threshold's old and new place "
                "changes side, so predictions on those change; give --data to keep every "
                "training row's prediction)")


def simplest_between(low: float, high: float, near: float) -> float:
    """The decimal with the fewest significant digits strictly between ``low`` and
    ``high`` (the one nearest ``near`` when several have as few), as a float; ``near``
    when the gap holds no other float."""
    if low < 0.0 < high:
        return 0.0
    exact_low = Decimal(low)
    top = int(np.floor(np.log10(max(abs(low), abs(high))))) + 1
    for exponent in range(top, _DEEPEST, -1):
        step = Decimal(1).scaleb(exponent)
        first = (exact_low / step).to_integral_value(ROUND_FLOOR) + 1
        inside = []
        for k in range(int(first), int(first) + 11):
            value = float(Decimal(k) * step)
            if value >= high:
                break
            if value > low:
                inside.append(value)
        if inside:
            return min(inside, key=lambda v: abs(v - near))
    return near


def significant_digits(value: float) -> int:
    """The significant digits of a float's shortest decimal form (0 for zero)."""
    digits = np.format_float_scientific(value, unique=True, trim="-").split("e")[0]
    return len(digits.lstrip("-").replace(".", "").strip("0")) if value else 0


def move_thresholds(estimator: Any, rows: np.ndarray | None) -> MovedThresholds:
    """Move every numerical threshold of a fitted scikit-learn tree model (trees, forests,
    ``GradientBoosting*``, ``HistGradientBoosting*``) in place, to the shortest decimal in
    its gap (see the module doc); ``rows`` the training rows, or None."""
    histogram = hasattr(estimator, "_predictors")
    splits = _splits(estimator, histogram)
    n_features = int(estimator.n_features_in_)
    values = None if rows is None else _training_values(rows, n_features, histogram)
    every = [np.unique(np.concatenate([t[f == j] for f, t in splits] or [np.zeros(0)]))
             for j in range(n_features)]
    moved = MovedThresholds(with_data=rows is not None)
    new_of: dict[tuple[int, float], float] = {}
    for j in range(n_features):
        new_of.update(_new_places(j, every[j], None if values is None else values[j], moved))
    moved.n_moved = sum(len(m) for m in moved.moves.values())
    for features, thresholds in splits:
        for i, (j, old) in enumerate(zip(features, thresholds)):
            thresholds[i] = new_of.get((int(j), float(old)), old)
    _write_back(estimator, splits, histogram)
    return moved


def _training_values(rows: np.ndarray, n_features: int, histogram: bool) -> list[np.ndarray]:
    """Each feature's distinct training values as the model compares them (float32 for a
    tree, float64 for a histogram booster), sorted, as float64."""
    dtype = np.float64 if histogram else np.float32
    return [np.unique(rows[:, j].astype(dtype).astype(np.float64)) for j in range(n_features)]


def _new_places(j: int, thresholds: np.ndarray, values: np.ndarray | None,
                moved: MovedThresholds) -> dict[tuple[int, float], float]:
    """The new place of each finite threshold of feature ``j`` (in the gap between the
    training ``values`` around it, or halfway to its neighbours without them), counted
    into ``moved``."""
    new_of: dict[tuple[int, float], float] = {}
    for old in thresholds[np.isfinite(thresholds)]:
        gap = _gap(values, old) if values is not None else _halfway(thresholds, old)
        new = float(old) if gap is None else simplest_between(*gap, float(old))
        new_of[j, float(old)] = new
        if gap is None:
            moved.n_kept += 1
        elif new != old:
            moved.moves.setdefault(j, []).append((float(old), new))
    return new_of


def _gap(values: np.ndarray, threshold: float) -> tuple[float, float] | None:
    """The training values around ``threshold``: the largest at or below it and the
    smallest above it (None when either is missing)."""
    above = int(np.searchsorted(values, threshold, side="right"))
    if above == 0 or above == len(values):
        return None
    return float(values[above - 1]), float(values[above])


def _halfway(thresholds: np.ndarray, threshold: float) -> tuple[float, float] | None:
    """Halfway to the neighbouring thresholds of the same feature (the outermost ones
    mirror their one neighbour); None for a feature's only threshold."""
    finite = thresholds[np.isfinite(thresholds)]
    if len(finite) < 2:
        return None
    i = int(np.searchsorted(finite, threshold))
    below = (threshold - finite[i - 1]) / 2 if i > 0 else (finite[1] - threshold) / 2
    above = (finite[i + 1] - threshold) / 2 if i + 1 < len(finite) else below
    return float(threshold - below), float(threshold + above)


def _splits(estimator: Any, histogram: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """(feature, threshold) arrays of every internal numerical node, one pair per tree
    (copies, written back by `_write_back`)."""
    if histogram:
        out = []
        for per_round in estimator._predictors:
            for predictor in per_round:
                nodes = predictor.nodes
                inner = (nodes["is_leaf"] == 0) & (nodes["is_categorical"] == 0)
                out.append((nodes["feature_idx"][inner].copy(),
                            nodes["num_threshold"][inner].copy()))
        return out
    out = []
    for member in _members(estimator):
        inner = member.tree_.children_left >= 0
        out.append((member.tree_.feature[inner].copy(), member.tree_.threshold[inner].copy()))
    return out


def _write_back(estimator: Any, splits: list[tuple[np.ndarray, np.ndarray]],
                histogram: bool) -> None:
    if histogram:
        predictors = [p for per_round in estimator._predictors for p in per_round]
        for predictor, (_, thresholds) in zip(predictors, splits, strict=True):
            nodes = predictor.nodes.copy()
            inner = (nodes["is_leaf"] == 0) & (nodes["is_categorical"] == 0)
            nodes["num_threshold"][inner] = thresholds
            predictor.nodes = nodes
        return
    for member, (_, thresholds) in zip(_members(estimator), splits, strict=True):
        state = member.tree_.__getstate__()
        nodes = state["nodes"].copy()
        nodes["threshold"][nodes["left_child"] >= 0] = thresholds
        member.tree_.__setstate__({**state, "nodes": nodes})


def _members(estimator: Any) -> list[Any]:
    return list(np.asarray(getattr(estimator, "estimators_", [estimator])).ravel())
