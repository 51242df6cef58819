"""A forest flattened onto the grid its thresholds cut: every training row is a point of
it (a bin per feature), and every leaf a box of bins. The row searches move rows as points
on it (`treeleaks.counts.row_search`, `treeleaks.counts.draw_search`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from treeleaks.ir.model import ReleasedModel

__all__ = ["ThresholdGrid"]


@dataclass
class ThresholdGrid:
    """The forest flattened onto the grid of its thresholds, every leaf numbered globally.

    A value in bin ``b`` of feature ``f`` satisfies ``x <= t`` for a threshold ``t`` of
    rank ``r`` exactly when ``b <= r``; a leaf's box is ``lo <= bin <= hi`` per feature.
    """

    n_bins: np.ndarray  # (F,) bins of each feature (thresholds + 1)
    values: list[np.ndarray]  # per feature, a value inside each bin
    feature: np.ndarray  # (nodes,) split feature, -1 at a leaf
    rank: np.ndarray  # (nodes,) rank of the split threshold
    left: np.ndarray  # (nodes,) global child indices
    right: np.ndarray
    leaf: np.ndarray  # (nodes,) global leaf index, -1 at an internal node
    roots: np.ndarray  # (T,) global root node of each tree
    offset: np.ndarray  # (T,) first global leaf of each tree
    lo: np.ndarray  # (G, F) leaf box in bins, inclusive
    hi: np.ndarray  # (G, F)
    counts: np.ndarray  # (G, C) released counts

    @classmethod
    def of(cls, model: ReleasedModel) -> ThresholdGrid:
        thresholds = model.thresholds()
        n_bins = np.array([len(t) + 1 for t in thresholds], dtype=np.int64)
        values = [np.append(t, t[-1] + 1.0) if len(t) else np.zeros(1) for t in thresholds]
        feature, rank, left, right, leaf, roots, offset, lo, hi, counts = ([] for _ in range(10))
        nodes = leaves = 0
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
            leaf.append(np.where(internal, -1, tree.leaf_of_node + leaves))
            roots.append(nodes)
            offset.append(leaves)
            box_lo, box_hi = tree.leaf_boxes(model.n_features)
            lo.append(np.array([np.searchsorted(thresholds[j], box_lo[:, j]) + 1
                                for j in range(model.n_features)]).T)
            hi.append(np.array([np.searchsorted(thresholds[j], box_hi[:, j])
                                for j in range(model.n_features)]).T)
            counts.append(tree.counts)
            nodes += len(f)
            leaves += tree.n_leaves
        lo_all = np.concatenate(lo).astype(np.int64)
        lo_all[np.isneginf(np.concatenate([t.leaf_boxes(model.n_features)[0]
                                           for t in model.trees]))] = 0
        return cls(n_bins, values, np.concatenate(feature), np.concatenate(rank),
                   np.concatenate(left), np.concatenate(right), np.concatenate(leaf),
                   np.array(roots), np.array(offset), lo_all,
                   np.concatenate(hi).astype(np.int64),
                   np.concatenate(counts).astype(np.int64))

    def route(self, points: np.ndarray, trees: np.ndarray) -> np.ndarray:
        """Global leaf of each point (``(K, F)`` bins) in the matching tree."""
        node = self.roots[trees]
        rows = np.arange(len(node))
        while True:
            active = np.flatnonzero(self.feature[node] >= 0)
            if not len(active):
                return self.leaf[node]
            n = node[active]
            go_left = points[rows[active], self.feature[n]] <= self.rank[n]
            node[active] = np.where(go_left, self.left[n], self.right[n])

    def point_in(self, leaves: np.ndarray) -> np.ndarray:
        """A grid point inside the common box of each row's global leaves ``(R, T)``."""
        lo = self.lo[leaves].max(axis=1)
        hi = self.hi[leaves].min(axis=1)
        if (lo > hi).any():
            raise ValueError("a start row's leaves have no common point")
        return lo

    def exits(self, leaves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(feature, bin)`` just outside each face of the given global leaves."""
        lo, hi = self.lo[leaves], self.hi[leaves]
        fl, fh = np.nonzero(lo > 0), np.nonzero(hi < self.n_bins - 1)
        return np.concatenate([fl[1], fh[1]]), np.concatenate([lo[fl] - 1, hi[fh] + 1])

    def steps(self, point: np.ndarray, leaves: np.ndarray, n_random: int,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The single-feature steps a row at ``point`` tries: across each face of the given
        global leaves, and ``n_random`` random jumps; distinct, each changing the point."""
        feats, bins = self.exits(leaves)
        extra = rng.integers(0, len(self.n_bins), n_random)
        feats = np.concatenate([feats, extra])
        bins = np.concatenate([bins, (rng.random(n_random) * self.n_bins[extra]).astype(
            np.int64)])
        pairs = np.unique(np.stack([feats, bins]), axis=1)
        return pairs[:, pairs[1] != point[pairs[0]]]
