"""Each tree's leaves as the boxes of their paths, for the searches that move rows.

A tree read from a table with gaps or native categories reaches a leaf by several paths
(`treeleaks.ir.model.Tree.aliased`), and the leaf's region is the union of their boxes. A
row lies in one path's box and is counted in that path's leaf, so the row searches keep
a row's geometry by path and its counts by leaf. Paths are numbered leaf by leaf (then in
node order): in a tree that is not aliased, path i is leaf i and its box the leaf's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from treeleaks.ir.model import ReleasedModel, Tree

__all__ = ["Paths", "leaf_hulls", "leaves_of", "path_boxes_of", "tree_paths"]


@dataclass(frozen=True)
class Paths:
    """One tree's paths: the box ``lower < x <= upper`` of each, its leaf and its node."""

    lower: np.ndarray  # (P, F)
    upper: np.ndarray  # (P, F)
    leaf: np.ndarray  # (P,) the leaf each path reaches, ascending
    node: np.ndarray  # (P,) the leaf node that ends it

    def __len__(self) -> int:
        return len(self.leaf)


def tree_paths(tree: Tree, n_features: int) -> Paths:
    """``tree``'s paths, numbered leaf by leaf (see the module doc)."""
    lower, upper = tree.node_boxes(n_features)
    nodes = np.flatnonzero(tree.feature < 0)
    nodes = nodes[np.argsort(tree.leaf_of_node[nodes], kind="stable")]
    return Paths(lower[nodes], upper[nodes], tree.leaf_of_node[nodes], nodes)


def leaves_of(model: ReleasedModel, paths: np.ndarray) -> np.ndarray:
    """``(R, T)`` rows' paths in every tree (`tree_paths` numbering) as their leaves."""
    if not model.aliased:
        return paths
    out = np.empty_like(paths)
    for t, tree in enumerate(model.trees):
        out[:, t] = tree_paths(tree, model.n_features).leaf[paths[:, t]]
    return out


def leaf_hulls(tree: Tree, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Each leaf's smallest box holding all of its paths' boxes, in leaf order: the leaf's
    own box when it has one path. A row in the leaf lies in its hull, not every point of
    the hull in the leaf."""
    paths = tree_paths(tree, n_features)
    lower = np.full((tree.n_leaves, n_features), np.inf)
    upper = np.full((tree.n_leaves, n_features), -np.inf)
    np.minimum.at(lower, paths.leaf, paths.lower)
    np.maximum.at(upper, paths.leaf, paths.upper)
    return lower, upper


def path_boxes_of(model: ReleasedModel, paths: np.ndarray, counted: np.ndarray | None = None,
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The common box ``(lower, upper)`` of each row's paths ``(R, T)`` (`tree_paths`
    numbering), over the trees ``counted`` marks for it (``(R, T)``; None: every tree)."""
    m = model.n_features
    lower = np.full((len(paths), m), -np.inf)
    upper = np.full((len(paths), m), np.inf)
    for t, tree in enumerate(model.trees):
        box = tree_paths(tree, m)
        mine = slice(None) if counted is None else counted[:, t]
        lower[mine] = np.maximum(lower[mine], box.lower[paths[mine, t]])
        upper[mine] = np.minimum(upper[mine], box.upper[paths[mine, t]])
    return lower, upper
