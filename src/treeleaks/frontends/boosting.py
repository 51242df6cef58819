"""What every binary booster's frontend shares: the IR's trees and the wholeness check.

A booster trained on every row without weights keeps each tree's row counts (pooled over
the classes) and, in its first tree, enough to derive each leaf's positives: every row
starts at the same score, so a leaf's value is a known function of its positive count. The
frontends derive that count as a real number; it must be whole, or the model was trained
with an option the derivation leaves out, and it is refused rather than rounded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treeleaks.ir.model import SQUARED_ERROR, LeafGradients, ModelFormatError, Tree
from treeleaks.ir.node_stats import COUNT_RTOL, NodeStats

SOLVER_SLACK = 1e-4  # the least half-width of a gradient sum's interval
# the largest split threshold read: past 2^53, float64 no longer holds every whole number,
# so neither a reconstructed value nor its routing can be trusted (and 1e30 is no data)
MAX_THRESHOLD = 2.0**53
# what a squared-error booster's leaf values say, in its facts
LEAF_VALUES = ("tree 0: each leaf's target mean (a leaf of one row gives that row's "
               "target); every tree: each leaf's sum of residuals (targets minus the earlier "
               "trees' prediction)")
Nodes = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def check_thresholds(values: np.ndarray, where: str, field: str) -> None:
    """Refuse a split threshold that is NaN, infinite or beyond ±2^53 (`MAX_THRESHOLD`),
    naming the node: an edited file, never a value to route rows by."""
    bad = ~(np.abs(np.asarray(values, dtype=np.float64)) <= MAX_THRESHOLD)
    if bad.any():
        node = int(np.argmax(bad))
        value = float(values[node])
        why = ("a threshold past ±2^53, where float64 stops holding every whole number: "
               "an edited file, or a feature whose values are that large, which no row can be "
               "routed by exactly"
               if np.isfinite(value) else "not a finite threshold: an edited file?")
        raise ModelFormatError(f"{where}: field {field!r} holds {value:g} at node {node}, "
                               f"{why}")


def check_node_sums(left: np.ndarray, right: np.ndarray, per_node: np.ndarray, where: str,
                    field: str, rtol: float = COUNT_RTOL) -> None:
    """Refuse a tree whose stored per-node sum (rows, hessians) at an internal node is not
    its children's, naming the tree and the node: an edited file.

    ``left``/``right`` are -1 at a leaf; ``field`` says what ``per_node`` holds.
    """
    stats = NodeStats(np.asarray(per_node, dtype=np.float64)[:, None], count_rtol=rtol)
    if (why := stats.contradiction(np.asarray(left), np.asarray(right), [field])):
        raise ModelFormatError(f"{where} {why}: the file was edited after training, and no "
                               "training gives it")


def whole_positives(derived: np.ndarray, rows: np.ndarray, tolerance: float
                    ) -> np.ndarray | None:
    """``derived`` as whole counts within each leaf's rows, or None when they are not."""
    whole = np.rint(derived)
    if (np.abs(derived - whole).max(initial=0.0) <= tolerance and (whole >= 0).all()
            and (whole <= rows).all()):
        return whole.astype(np.int64)
    return None


def float32_positives(rows: np.ndarray, gradient: np.ndarray, p0: float) -> np.ndarray:
    """A first-tree leaf's positives from its gradient sum, every row starting at p0 with
    its gradient kept in float32 (LightGBM, HistGradientBoosting): G = (n - P)·a + P·b with
    a = float32(p0), b = float32(p0 - 1), so P = (n·a - G)/(a - b). Real: check it whole."""
    a, b = float(np.float32(p0)), float(np.float32(p0 - 1.0))
    return (rows * a - gradient) / (a - b)


def booster_trees(nodes: list[Nodes], rows: list[np.ndarray], positives: np.ndarray
                  ) -> list[Tree]:
    """The IR's trees: the first with its class counts, the rest pooled over the classes."""
    trees = []
    for index, (shape, count) in enumerate(zip(nodes, rows, strict=True)):
        count = np.asarray(count, dtype=np.int64)
        counts = np.zeros((count.size, 2), dtype=np.int64)
        if index == 0:
            counts[:, 0], counts[:, 1] = count - positives, positives
        else:
            counts[:, 0] = count
        trees.append(Tree(*shape, counts, n_samples=count.copy(), pooled=index > 0))
    return trees


def sum_rows(a: np.ndarray | float, b: np.ndarray | float, c: np.ndarray,
             tolerance: np.ndarray) -> np.ndarray:
    """One `LeafGradients` row per leaf: ``a·Σg + b·Σh`` within ``tolerance`` of ``c``, and
    never closer than `SOLVER_SLACK`: HiGHS declared the true rows infeasible at 1e-6 (a
    30-tree GradientBoostingClassifier on the demo data), not at 1e-5 and above."""
    n = c.size
    tolerance = np.maximum(tolerance, SOLVER_SLACK)
    return np.column_stack([np.arange(n, dtype=np.float64), np.broadcast_to(a, n),
                            np.broadcast_to(b, n), c - tolerance, c + tolerance])


def no_sums() -> np.ndarray:
    """The first tree's rows: its class counts already say what its gradients would."""
    return np.zeros((0, 5))


def squared_error_gradients(start: float, added: list[np.ndarray], rows: list[np.ndarray],
                            eta: float, l2: float, row_precision: float) -> LeafGradients:
    """A squared-error booster's sums, every tree's (the first's too): each leaf adds
    u = -η·G/(H + λ) to its rows' scores, with G = Σ(score - y) and H = n (a hessian of 1
    a row), so ``G + (u/η)·n = -u·λ/η``. scikit-learn's GradientBoostingRegressor is the
    case λ = 0 with u = η·(mean residual). The interval allows ``row_precision`` of each
    row's gradient, at the scale of the targets (the first tree's leaf means, `_scale`)."""
    scale = _scale(start, added[0], rows[0], eta, l2)
    sums = []
    for u, n in zip(added, rows, strict=True):
        c = -u * l2 / eta
        sums.append(sum_rows(1.0, u / eta, c, row_precision * (n * scale + np.abs(c))))
    return LeafGradients(start, added, sums, loss=SQUARED_ERROR)


def _scale(start: float, first: np.ndarray, rows: np.ndarray, eta: float, l2: float) -> float:
    """How large a row's gradient can be, for the sums' interval: twice the largest target
    mean of the first tree's leaves (the start and the leaf means bound no single row; the
    factor covers the rows beyond their leaf's mean), and at least 1."""
    means = start + first * (rows + l2) / (eta * np.maximum(rows, 1))
    return 2.0 * float(np.abs(means).max(initial=0.0)) + abs(start) + 1.0


def wrapped_booster(source: Any, attribute: str) -> tuple[Any, list[Any]]:
    """A fitted scikit-learn wrapper's booster (its ``attribute``: LightGBM's ``booster_``,
    XGBoost's ``get_booster``, called) and labels; anything else as it is, with the labels
    0 and 1."""
    if not hasattr(source, attribute):
        return source, [0, 1]
    booster = getattr(source, attribute)
    return (booster() if callable(booster) else booster), np.asarray(
        getattr(source, "classes_", [0, 1])).tolist()
