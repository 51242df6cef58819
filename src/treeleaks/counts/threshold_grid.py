"""A forest flattened onto the grid its thresholds cut: every training row is a point of
it (a bin per feature), and every path to a leaf a box of bins. The row searches move rows
as points on it (`treeleaks.counts.row_search`, `treeleaks.counts.draw_search`): a row's
geometry is its path in each tree, its count its path's leaf (`treeleaks.counts.paths`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from treeleaks.counts.paths import tree_paths
from treeleaks.ir.model import ReleasedModel

__all__ = ["ThresholdGrid"]


@dataclass
class ThresholdGrid:
    """The forest flattened onto the grid of its thresholds, every path and every leaf
    numbered globally (path i is leaf i in a forest whose leaves each have one path).

    A value in bin ``b`` of feature ``f`` satisfies ``x <= t`` for a threshold ``t`` of
    rank ``r`` exactly when ``b <= r``; a path's box is ``lo <= bin <= hi`` per feature.
    """

    n_bins: np.ndarray  # (F,) bins of each feature (thresholds + 1)
    values: list[np.ndarray]  # per feature, a value inside each bin
    feature: np.ndarray  # (nodes,) split feature, -1 at a leaf
    rank: np.ndarray  # (nodes,) rank of the split threshold
    left: np.ndarray  # (nodes,) global child indices
    right: np.ndarray
    path: np.ndarray  # (nodes,) global path a leaf node ends, -1 at an internal node
    roots: np.ndarray  # (T,) global root node of each tree
    offset: np.ndarray  # (T,) first global leaf of each tree
    path_offset: np.ndarray  # (T,) first global path of each tree
    path_leaf: np.ndarray  # (P,) global leaf of each global path
    lo: np.ndarray  # (P, F) path box in bins, inclusive
    hi: np.ndarray  # (P, F)
    counts: np.ndarray  # (G, C) released counts

    @classmethod
    def of(cls, model: ReleasedModel) -> ThresholdGrid:
        thresholds = model.thresholds()
        n_bins = np.array([len(t) + 1 for t in thresholds], dtype=np.int64)
        values = [np.append(t, t[-1] + 1.0) if len(t) else np.zeros(1) for t in thresholds]
        feature, rank, left, right, path, roots, lo, hi, counts, path_leaf = (
            [] for _ in range(10))
        offset, path_offset = [], []
        nodes = leaves = paths = 0
        for tree in model.trees:
            internal = tree.feature >= 0
            f = np.where(internal, tree.feature, -1)
            r = np.zeros(len(f), dtype=np.int64)
            for j in np.flatnonzero(internal):
                r[j] = np.searchsorted(thresholds[f[j]], tree.threshold[j])
            feature.append(f)
            rank.append(r)
            left.append(np.where(internal, tree.left + nodes, -1))
            right.append(np.where(internal, tree.right + nodes, -1))
            mine = tree_paths(tree, model.n_features)
            at_node = np.full(len(f), -1, dtype=np.int64)
            at_node[mine.node] = np.arange(len(mine)) + paths
            path.append(at_node)
            roots.append(nodes)
            offset.append(leaves)
            path_offset.append(paths)
            path_leaf.append(mine.leaf + leaves)
            box_lo, box_hi = _bins(thresholds, mine.lower, mine.upper)
            lo.append(box_lo)
            hi.append(box_hi)
            counts.append(tree.counts)
            nodes += len(f)
            leaves += tree.n_leaves
            paths += len(mine)
        return cls(n_bins, values, np.concatenate(feature), np.concatenate(rank),
                   np.concatenate(left), np.concatenate(right), np.concatenate(path),
                   np.array(roots), np.array(offset), np.array(path_offset),
                   np.concatenate(path_leaf), np.concatenate(lo), np.concatenate(hi),
                   np.concatenate(counts).astype(np.int64))

    @property
    def aliased(self) -> bool:
        """Whether some leaf has several paths."""
        return len(self.path_leaf) > len(self.counts)

    def route(self, points: np.ndarray, trees: np.ndarray) -> np.ndarray:
        """Global path of each point (``(K, F)`` bins) in the matching tree."""
        node = self.roots[trees]
        rows = np.arange(len(node))
        while True:
            active = np.flatnonzero(self.feature[node] >= 0)
            if not len(active):
                return self.path[node]
            n = node[active]
            go_left = points[rows[active], self.feature[n]] <= self.rank[n]
            node[active] = np.where(go_left, self.left[n], self.right[n])

    def a_path(self, leaves: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A global path of each global leaf, at random among its paths (the leaf's one
        path, drawing nothing from ``rng``, when no leaf has several)."""
        if not self.aliased:
            return leaves
        first = np.searchsorted(self.path_leaf, leaves)
        many = np.searchsorted(self.path_leaf, leaves, side="right") - first
        return first + (rng.random(len(leaves)) * many).astype(np.int64)

    def box_bins(self, lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Boxes ``lower < x <= upper`` (``(R, F)``) as inclusive ranges of bins."""
        return _bins([v[:-1] for v in self.values], lower, upper)

    def point_in(self, paths: np.ndarray) -> np.ndarray:
        """A grid point inside the common box of each row's global paths ``(R, T)``."""
        lo = self.lo[paths].max(axis=1)
        hi = self.hi[paths].min(axis=1)
        if (lo > hi).any():
            raise ValueError("a start row's leaves have no common point")
        return lo

    def exits(self, paths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(feature, bin)`` just outside each face of the given global paths."""
        lo, hi = self.lo[paths], self.hi[paths]
        fl, fh = np.nonzero(lo > 0), np.nonzero(hi < self.n_bins - 1)
        return np.concatenate([fl[1], fh[1]]), np.concatenate([lo[fl] - 1, hi[fh] + 1])

    def steps(self, point: np.ndarray, paths: np.ndarray, n_random: int,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The single-feature steps a row at ``point`` tries: across each face of the given
        global paths, and ``n_random`` random jumps; distinct, each changing the point."""
        feats, bins = self.exits(paths)
        extra = rng.integers(0, len(self.n_bins), n_random)
        feats = np.concatenate([feats, extra])
        bins = np.concatenate([bins, (rng.random(n_random) * self.n_bins[extra]).astype(
            np.int64)])
        pairs = np.unique(np.stack([feats, bins]), axis=1)
        return pairs[:, pairs[1] != point[pairs[0]]]


def _bins(thresholds: list[np.ndarray], lower: np.ndarray, upper: np.ndarray,
          ) -> tuple[np.ndarray, np.ndarray]:
    """Boxes ``lower < x <= upper`` as inclusive ranges of bins ``(lo, hi)``."""
    lo = np.array([np.searchsorted(cuts, lower[:, j]) + 1
                   for j, cuts in enumerate(thresholds)], dtype=np.int64).T.reshape(lower.shape)
    lo[np.isneginf(lower)] = 0
    hi = np.array([np.searchsorted(cuts, upper[:, j])
                   for j, cuts in enumerate(thresholds)], dtype=np.int64).T.reshape(upper.shape)
    return lo, hi
