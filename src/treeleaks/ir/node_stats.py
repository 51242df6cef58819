"""Every node's statistics as a model file stores them, and whether they agree.

A fitted tree keeps, at every node and not only at its leaves, the rows that reached it
(weighted by their draws, per class for a classifier), the distinct rows, a regressor's
mean target and the impurity. A node's rows are its children's rows, so each internal
node's numbers follow from its children's: counts add up, a mean is the children's mean
weighted by their rows, a variance their variances plus the spread of their means (the law
of total variance), a Gini or entropy impurity the one of the node's class counts. A file
whose nodes break one of these was edited: no dataset gives it, and no reconstruction of it
is certified (`NodeStats.contradiction`). The certificates also route the rebuilt rows
through every node (`sum_up`).

Regression sums are taken in units of the largest value involved, so a value near the top
of float64 cannot overflow them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VARIANCE, GINI, ENTROPY = "variance", "gini", "entropy"  # what `NodeStats.impurity` holds
COUNT_RTOL = 1e-6  # weighted counts are whole numbers kept as float64
VALUE_RTOL = 1e-9  # a mean against its children's, relative to the largest of the three
IMPURITY_RTOL = 1e-8  # a variance, relative to the square of the largest mean or spread
CLASS_IMPURITY_ATOL = 1e-7  # a Gini or entropy impurity lies in [0, log2(classes)]


@dataclass(eq=False)
class NodeStats:
    """What a file stores at every node, indexed like `Tree.feature` (leaves included).

    ``weighted[node, column]``: the rows through the node counted by their draws, per
    column of the tree's counts (a classifier's classes; one column for a regressor);
    ``distinct[node]``: the distinct rows; ``values[node]``: a regressor's mean target;
    ``impurity[node]``: what ``criterion`` names (`VARIANCE` of the targets, `GINI` or
    `ENTROPY` of the class counts; "" when the file's criterion is another, unchecked).
    """

    weighted: np.ndarray
    distinct: np.ndarray | None = None
    values: np.ndarray | None = None
    impurity: np.ndarray | None = None
    criterion: str = ""
    count_rtol: float = COUNT_RTOL  # a booster's hessian sums are float32: looser

    def shape_error(self, n_nodes: int) -> str:
        """Why the arrays do not fit a tree of ``n_nodes`` nodes, or "".

        The count columns may differ from the tree's: an attack's view of a file (a
        regressor's targets read as classes) keeps the file's nodes.
        """
        if self.weighted.ndim != 2 or len(self.weighted) != n_nodes:
            return (f"node counts of shape {self.weighted.shape}, the tree has {n_nodes} "
                    "nodes")
        for name in ("distinct", "values", "impurity"):
            array = getattr(self, name)
            if array is not None and array.shape != (n_nodes,):
                return f"node {name} of shape {array.shape}, the tree has {n_nodes} nodes"
            if array is not None and not np.isfinite(array).all():
                return f"node {int(np.argmin(np.isfinite(array)))}'s {name} is not finite"
        return ""

    def contradiction(self, left: np.ndarray, right: np.ndarray,
                      columns: list[str]) -> str:
        """The first node whose stored numbers its children contradict, in words, or "".

        ``left``/``right`` are the tree's children (-1 at a leaf); ``columns`` names each
        column of ``weighted`` for the message.
        """
        parent = np.flatnonzero(left >= 0)
        kids = left[parent], right[parent]
        if min(map(len, (left, right, self.weighted))) != len(left) or any(
                ((k < 0) | (k >= len(left))).any() for k in kids):
            return ""  # not one tree: the structure's own check refuses it, in its words
        for check in (self._counts, self._distinct, self._means, self._variances):
            if (found := check(parent, *kids, columns)):
                return found
        return self._class_impurity()

    def _counts(self, p: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                columns: list[str]) -> str:
        w = self.weighted
        off = np.abs(w[p] - w[lo] - w[hi]) > self.count_rtol * np.maximum(np.abs(w[p]), 1.0)
        if not off.any():
            return ""
        i, c = np.argwhere(off)[0]
        return (f"node {p[i]} holds {w[p[i], c]:g} {columns[c]}, its children "
                f"{lo[i]} and {hi[i]} hold {w[lo[i], c]:g} + {w[hi[i], c]:g}")

    def _distinct(self, p: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                  columns: list[str]) -> str:
        d = self.distinct
        if d is None or not (off := d[p] != d[lo] + d[hi]).any():
            return ""
        i = int(np.argmax(off))
        return (f"node {p[i]} holds {d[p[i]]} distinct rows, its children {lo[i]} and "
                f"{hi[i]} hold {d[lo[i]]} + {d[hi[i]]}")

    def _means(self, p: np.ndarray, lo: np.ndarray, hi: np.ndarray,
               columns: list[str]) -> str:
        v, w = self.values, self.weighted.sum(axis=1)
        if v is None:
            return ""
        s = _scale(v[p], v[lo], v[hi])
        off = (np.abs(v[p] / s * w[p] - v[lo] / s * w[lo] - v[hi] / s * w[hi])
               > VALUE_RTOL * np.maximum(w[p], 1.0))
        if not off.any():
            return ""
        i = int(np.argmax(off))
        return (f"node {p[i]}'s value {v[p[i]]:.10g} is not the mean of its children's: "
                f"node {lo[i]} {v[lo[i]]:.10g} over {_rows(w[lo[i]])}, node {hi[i]} "
                f"{v[hi[i]]:.10g} over {_rows(w[hi[i]])}")

    def _variances(self, p: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                   columns: list[str]) -> str:
        v, u, w = self.values, self.impurity, self.weighted.sum(axis=1)
        if v is None or u is None or self.criterion != VARIANCE:
            return ""
        roots = [np.sqrt(np.abs(u[n])) for n in (p, lo, hi)]
        s = _scale(v[p], v[lo], v[hi], *roots)
        mean = v[p] / s
        spread = sum(w[n] * (u[n] / s / s + (v[n] / s - mean) ** 2) for n in (lo, hi))
        off = np.abs(w[p] * u[p] / s / s - spread) > IMPURITY_RTOL * np.maximum(w[p], 1.0)
        if not off.any():
            return ""
        i = int(np.argmax(off))
        return (f"node {p[i]}'s impurity {u[p[i]]:.10g} is not the variance of its "
                f"children's rows (nodes {lo[i]} and {hi[i]}: "
                f"{spread[i] / w[p[i]] * s[i] * s[i]:.10g})")

    def _class_impurity(self) -> str:
        """Every node's Gini or entropy impurity against its own class counts."""
        u, w = self.impurity, self.weighted
        if u is None or self.criterion not in (GINI, ENTROPY):
            return ""
        total = w.sum(axis=1, keepdims=True)
        share = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
        if self.criterion == GINI:
            expected = 1.0 - (share ** 2).sum(axis=1)
        else:
            logs = np.log2(share, out=np.zeros_like(share), where=share > 0)
            expected = -(share * logs).sum(axis=1)
        off = (np.abs(u - expected) > CLASS_IMPURITY_ATOL) & (total[:, 0] > 0)
        if not off.any():
            return ""
        node = int(np.argmax(off))
        return (f"node {node}'s impurity {u[node]:.10g} is not the {self.criterion} of its "
                f"class counts ({expected[node]:.10g})")


def _rows(weight: float) -> str:
    """``weight`` rows in words."""
    return f"{weight:g} row" + ("" if weight == 1 else "s")


def _scale(*arrays: np.ndarray) -> np.ndarray:
    """Per node, the largest magnitude among ``arrays`` (1 where all are 0): the unit a
    node's sums are taken in, so no square of a value near float64's top overflows."""
    s = np.max(np.abs(np.stack(arrays)), axis=0)
    return np.where(s > 0, s, 1.0)


def sum_up(left: np.ndarray, right: np.ndarray, per_node: np.ndarray) -> np.ndarray:
    """``per_node`` with every internal node's entry replaced by the sum over its leaves:
    what the rows ending at each leaf give every node on their way (children summed into
    their parent level by level, deepest first: O(depth) array operations)."""
    levels, frontier = [], np.zeros(1, dtype=np.int64)
    while frontier.size:
        inner = frontier[left[frontier] >= 0]
        if inner.size:
            levels.append(inner)
        frontier = np.concatenate([left[inner], right[inner]])
    out = per_node.copy()
    for inner in reversed(levels):
        out[inner] = out[left[inner]] + out[right[inner]]
    return out
