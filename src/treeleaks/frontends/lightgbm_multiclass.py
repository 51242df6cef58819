"""LightGBM's multiclass softmax booster (objective ``multiclass``): its first round's
class counts.

Tree k of round one fits class k: every row starts at the score s_k = log(π_k) (π_k the
class's share; 0 for every class without ``boost_from_average``, so π_k = 1/K), its
float32 gradient is g = p_k - [y = k] and its hessian h = K/(K-1)·p_k(1 - p_k). The leaf
value is v = s_k - η·G/(H + λ), so G = -(v - s_k)(H + λ)/η and a leaf of n rows holding P
of class k has G = (n - P)·float32(p_k) + P·float32(p_k - 1). π_k(1 - π_k) = ΣH/(N·K/(K-1))
has two roots; the wrong one (or the wrong start) leaves the counts off whole numbers.
"""

from __future__ import annotations

import math

import numpy as np

from treeleaks.frontends.boosting import float32_positives, whole_positives
from treeleaks.runtime.errors import UnsupportedModelError

WHOLE_TOLERANCE = 1e-4  # as the binary reader: 17 digits kept, float32 gradients


def class_counts(count: np.ndarray, hessian: np.ndarray, value: np.ndarray, n_classes: int,
                 eta: float, l2: float, cls: int) -> np.ndarray:
    """The count of class ``cls`` in each leaf of its first-round tree (see the module
    doc), refused unless whole and within the leaf."""
    n_rows = int(count.sum())
    q = float(hessian.sum()) / (n_rows * n_classes / (n_classes - 1))
    disc = max(1.0 - 4.0 * q, 0.0)
    roots = {round((0.5 + sign * math.sqrt(disc) / 2) * n_rows) / n_rows for sign in (-1, 1)}
    starts = [(p0, math.log(p0)) for p0 in sorted(roots) if 0.0 < p0 < 1.0]
    worst = math.inf
    for p0, start in [*starts, (1.0 / n_classes, 0.0)]:
        derived = float32_positives(count, -(value - start) * (hessian + l2) / eta, p0)
        whole = whole_positives(derived, count, WHOLE_TOLERANCE)
        if whole is not None:
            return whole
        outside = np.maximum(np.maximum(-derived, derived - count), 0.0)
        worst = min(worst, float((np.abs(derived - np.rint(derived)) + outside).max()))
    raise UnsupportedModelError(
        f"the first-round LightGBM tree of class {cls} gives no whole class counts (they "
        f"miss whole counts within the leaf by up to {worst:.3g}): trained with sample "
        "weights, an initial score, L1, max_delta_step or path smoothing, or an edited "
        "file; treeleaks refuses to guess its classes")
