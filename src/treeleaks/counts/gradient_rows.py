"""A booster's leaf values as linear rows over the count variables.

Every row of a cell lies in the same leaf of every tree, so for a class it has one raw
score before each tree, one probability p and one gradient g = p - y and hessian
h = p(1 - p) (`treeleaks.ir.model.LeafGradients`). A booster's later trees say, per leaf,
that ``low <= a·Σg + b·Σh <= high`` over its rows: over the variables ``n[cell, class]``
that is ``low <= Σ n·(a·g + b·h) <= high``, real coefficients beside the integer count
equations. They carry what pooled counts lose, the labels of every later leaf's rows.
Propagation and the proofs leave them out (their bounds hold without them); the solver
and the certificate use them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from treeleaks.ir.model import SQUARED_ERROR, LeafGradients, ReleasedModel


@dataclass
class SideRows:
    """``lower <= matrix @ n <= upper`` over a count system's variables."""

    matrix: sp.csr_matrix
    lower: np.ndarray
    upper: np.ndarray

    def restricted(self, columns: np.ndarray, fixed: np.ndarray) -> SideRows:
        """The rows over ``columns`` only, the other variables held at ``fixed``."""
        shift = self.matrix @ fixed
        return SideRows(self.matrix[:, columns].tocsr(), self.lower - shift,
                        self.upper - shift)


def leaf_added(gradients: LeafGradients, leaves: np.ndarray) -> np.ndarray:
    """Per row (its leaf in every tree, ``(n, T)``), the value each tree adds, ``(n, T)``."""
    n_trees = leaves.shape[1]
    return np.column_stack([gradients.values[t][leaves[:, t]] for t in range(n_trees)])


def scores_before(gradients: LeafGradients, leaves: np.ndarray) -> np.ndarray:
    """Per row (its leaf in every tree, ``(n, T)``), its raw score before each tree (one
    start score: a binary classifier's or a regressor's)."""
    added = leaf_added(gradients, leaves)
    return gradients.start + np.cumsum(added, axis=1) - added


def gradient_terms(gradients: LeafGradients, leaves: np.ndarray, label: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per row (its leaf in every tree, ``(n, T)``, and its label: its class index under
    log_loss, its target under squared_error), the gradient and hessian it adds in each
    tree, both ``(n, T)``."""
    if np.ndim(gradients.start):
        return softmax_terms(np.asarray(gradients.start, dtype=np.float64),
                             leaf_added(gradients, leaves), label)
    before = scores_before(gradients, leaves)
    if gradients.loss == SQUARED_ERROR:
        return before - np.asarray(label, dtype=np.float64)[:, None], np.ones_like(before)
    p = expit(before)
    return p - (np.asarray(label) == 1)[:, None], p * (1.0 - p)


def softmax_terms(start: np.ndarray, added: np.ndarray, cls: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """A softmax booster's gradients and hessians (`LeafGradients`): ``added`` ``(n, R·K)``,
    each row's leaf value in every tree, round after round of K."""
    n, n_classes = added.shape[0], start.size
    steps = added.reshape(n, added.shape[1] // n_classes, n_classes)
    scores = start + np.cumsum(steps, axis=1) - steps  # (n, rounds, K) before each round
    p = np.exp(scores - scores.max(axis=2, keepdims=True))
    p /= p.sum(axis=2, keepdims=True)
    own = np.arange(n_classes) == np.asarray(cls)[:, None, None]
    return (p - own).reshape(added.shape), (p * (1.0 - p)).reshape(added.shape)


def gradient_rows(model: ReleasedModel, leaves: np.ndarray, label: np.ndarray
                  ) -> SideRows | None:
    """The model's gradient sums over variables given by their leaves ``(n_vars, T)`` and
    label (class index, or target of a regressor), or None when the model has none."""
    gradients = model.gradients
    if gradients is None or not any(rows.size for rows in gradients.sums):
        return None
    g, h = gradient_terms(gradients, leaves, label)
    entries, lower, upper = [], [], []
    first = 0
    for t, rows in enumerate(gradients.sums):
        if not rows.size:
            continue
        leaf = rows[:, 0].astype(np.int64)
        # variable j enters the rows of its leaf in tree t
        by_leaf = sp.csr_matrix((np.ones(leaves.shape[0]), (leaves[:, t], np.arange(
            leaves.shape[0]))), shape=(model.trees[t].n_leaves, leaves.shape[0]))
        member = by_leaf[leaf].tocoo()
        coefficient = rows[member.row, 1] * g[member.col, t] + rows[member.row, 2] * (
            h[member.col, t])
        entries.append((first + member.row, member.col, coefficient))
        lower.append(rows[:, 3])
        upper.append(rows[:, 4])
        first += rows.shape[0]
    r, c, v = (np.concatenate(part) for part in zip(*entries))
    matrix = sp.csr_matrix((v, (r, c)), shape=(first, leaves.shape[0]))
    return SideRows(matrix, np.concatenate(lower), np.concatenate(upper))


def largest_gradient_miss(model: ReleasedModel, leaves: np.ndarray, label: np.ndarray
                          ) -> tuple[float, str]:
    """How far rows (their leaves and labels, as `gradient_rows` takes them) fall outside
    the model's gradient sums, relative to each sum's tolerance (at most 1 inside), and
    where the worst is."""
    side = gradient_rows(model, leaves, label)
    if side is None:
        return 0.0, ""
    total = side.matrix @ np.ones(leaves.shape[0])
    centre, half = (side.lower + side.upper) / 2, (side.upper - side.lower) / 2
    relative = np.abs(total - centre) / np.maximum(half, 1e-300)
    worst = int(np.argmax(relative))
    tree, row = _locate(model.gradients, worst)
    return float(relative[worst]), (
        f"tree {tree} leaf {row}: the rows' gradient sum is {total[worst]:.6g}, the model's "
        f"leaf value needs {centre[worst]:.6g} ± {half[worst]:.2g}")


def _locate(gradients: LeafGradients | None, index: int) -> tuple[int, int]:
    """The tree and leaf of side row ``index``."""
    assert gradients is not None
    for t, rows in enumerate(gradients.sums):
        if index < rows.shape[0]:
            return t, int(rows[index, 0])
        index -= rows.shape[0]
    raise IndexError(index)
