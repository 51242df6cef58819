"""Lazy enumeration of the cells of a forest's common refinement.

A cell is a non-empty box that lies inside exactly one leaf of every tree. Cells are
built tree by tree: each current cell is routed down the next tree and split where a
split threshold cuts it. A cell is dropped as soon as no class can occupy it (some tree
sends it to a subtree with no training row of any class the cell still allows) or the
schema rules it out, so the 2^M corners of the feature space are never listed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from treeleaks.model import ReleasedModel, Tree
from treeleaks.schema import FeatureSchema


@dataclass
class Cells:
    """Boxes ``lower < x <= upper`` (``(K, M)``), classes each may hold (``(K, C)``), and the
    leaf each cell falls in, per tree (``(K, T)``)."""

    lower: np.ndarray
    upper: np.ndarray
    allowed: np.ndarray
    leaf: np.ndarray

    def __len__(self) -> int:
        return int(self.lower.shape[0])


def enumerate_cells(model: ReleasedModel, schema: FeatureSchema) -> Cells:
    """All cells a row of some class could occupy given exact (noise-free) leaf counts.

    A class is possible in a cell only when every tree's leaf holding the cell has a
    positive count of it.
    """
    m, c = model.n_features, model.n_classes
    lower = np.full((1, m), -np.inf)
    upper = np.full((1, m), np.inf)
    allowed = np.ones((1, c), dtype=bool)
    leaves: list[np.ndarray] = []
    for tree in model.trees:
        lower, upper, allowed, leaf, parent = _route(tree, lower, upper, allowed)
        leaves = [previous[parent] for previous in leaves]
        keep = allowed.any(axis=1) & schema.feasible(lower, upper)
        lower, upper, allowed, leaf = lower[keep], upper[keep], allowed[keep], leaf[keep]
        leaves = [previous[keep] for previous in leaves]
        leaves.append(leaf)
    leaf_matrix = (
        np.column_stack(leaves).astype(np.int32) if leaves else np.zeros((1, 0), np.int32)
    )
    return Cells(lower, upper, allowed, leaf_matrix)


def _class_presence(tree: Tree) -> np.ndarray:
    """``(n_nodes, C)``: whether some leaf below each node holds a row of each class."""
    presence = np.zeros((len(tree.feature), tree.counts.shape[1]), dtype=bool)
    is_leaf = tree.feature < 0
    presence[is_leaf] = tree.counts[tree.leaf_of_node[is_leaf]] > 0
    for node in _bottom_up(tree):
        presence[node] = presence[tree.left[node]] | presence[tree.right[node]]
    return presence


def _bottom_up(tree: Tree) -> list[int]:
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        if tree.feature[node] >= 0:
            order.append(node)
            stack.extend((tree.left[node], tree.right[node]))
    return order[::-1]


def _route(
    tree: Tree, lower: np.ndarray, upper: np.ndarray, allowed: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Route boxes down ``tree``, splitting those a threshold cuts.

    Returns the resulting boxes, their allowed classes (narrowed by the subtrees they
    entered), their leaf, and the index of the input box each came from.
    """
    presence = _class_presence(tree)
    parent = np.arange(lower.shape[0])
    node = np.zeros(lower.shape[0], dtype=np.int64)
    allowed = allowed & presence[0]
    done_parts: list[tuple[np.ndarray, ...]] = []
    while lower.shape[0]:
        at_leaf = tree.feature[node] < 0
        if at_leaf.any():
            done_parts.append(
                (lower[at_leaf], upper[at_leaf], allowed[at_leaf], node[at_leaf], parent[at_leaf])
            )
            inner = ~at_leaf
            lower, upper, allowed, node, parent = (
                lower[inner], upper[inner], allowed[inner], node[inner], parent[inner]
            )
            if not lower.shape[0]:
                break
        rows = np.arange(lower.shape[0])
        f = tree.feature[node]
        t = tree.threshold[node]
        goes_left = lower[rows, f] < t
        goes_right = upper[rows, f] > t
        left_idx = np.flatnonzero(goes_left)
        right_idx = np.flatnonzero(goes_right)
        left_lower, left_upper = lower[left_idx], upper[left_idx].copy()
        left_upper[np.arange(left_idx.size), f[left_idx]] = np.minimum(
            left_upper[np.arange(left_idx.size), f[left_idx]], t[left_idx]
        )
        right_lower, right_upper = lower[right_idx].copy(), upper[right_idx]
        right_lower[np.arange(right_idx.size), f[right_idx]] = np.maximum(
            right_lower[np.arange(right_idx.size), f[right_idx]], t[right_idx]
        )
        left_node = tree.left[node[left_idx]]
        right_node = tree.right[node[right_idx]]
        lower = np.concatenate([left_lower, right_lower])
        upper = np.concatenate([left_upper, right_upper])
        node = np.concatenate([left_node, right_node])
        parent = np.concatenate([parent[left_idx], parent[right_idx]])
        allowed = np.concatenate([allowed[left_idx], allowed[right_idx]]) & presence[node]
        alive = allowed.any(axis=1)
        lower, upper, allowed, node, parent = (
            lower[alive], upper[alive], allowed[alive], node[alive], parent[alive]
        )
    if not done_parts:
        return lower, upper, allowed, node, parent
    lo, up, al, nd, pa = (np.concatenate(parts) for parts in zip(*done_parts))
    return lo, up, al, tree.leaf_of_node[nd], pa
