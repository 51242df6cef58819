"""Routing rows through every tree of a forest at once.

The trees' nodes are laid end to end, and every (row, tree) pair steps down one level per
pass: a forest of a hundred trees costs as many numpy passes as its deepest path, not a
hundred times that. Each node sends a row left when its value is at most the threshold
(a gap, NaN, goes right), as `Tree.apply_nodes` does one tree at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

CHUNK = 1 << 20  # (row, tree) pairs routed per pass: memory stays a few tens of MB


class RoutedTree(Protocol):
    """What routing needs of a tree: its nodes' tests and children, its leaves' numbers."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    leaf_of_node: np.ndarray


def route(trees: Sequence[RoutedTree], X: np.ndarray) -> np.ndarray:
    """The leaf index each row of ``X`` reaches in each tree, ``(n_rows, n_trees)``."""
    sizes = np.array([len(tree.feature) for tree in trees], dtype=np.int64)
    roots = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    offset = np.repeat(roots, sizes)
    feature = np.concatenate([tree.feature for tree in trees])
    threshold = np.concatenate([tree.threshold for tree in trees])
    children = (np.concatenate([tree.left for tree in trees]) + offset,
                np.concatenate([tree.right for tree in trees]) + offset)
    leaf_of_node = np.concatenate([tree.leaf_of_node for tree in trees])
    out = np.empty((X.shape[0], len(trees)), dtype=np.int64)
    step = max(1, CHUNK // max(len(trees), 1))
    for begin in range(0, X.shape[0], step):
        rows = X[begin:begin + step]
        node = np.tile(roots, len(rows))
        row = np.repeat(np.arange(len(rows)), len(trees))
        active = np.flatnonzero(feature[node] >= 0)
        while active.size:
            at = node[active]
            go_left = rows[row[active], feature[at]] <= threshold[at]
            node[active] = np.where(go_left, children[0][at], children[1][at])
            active = active[feature[node[active]] >= 0]
        out[begin:begin + step] = leaf_of_node[node].reshape(len(rows), len(trees))
    return out
