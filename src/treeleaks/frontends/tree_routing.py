"""How a scikit-learn tree or forest fitted on a table with gaps routes them.

Since scikit-learn 1.4 a tree learns from rows with gaps: each node keeps
``missing_go_to_left``. For a node whose rows held no gap it is set to the child with more
rows (``n_node_samples``), so a split that sends gaps elsewhere shows that column held gaps
in training; such a split's threshold may be infinite (every value left, the gaps right).
The columns with gaps are spelled out by `treeleaks.frontends.gaps`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treeleaks.frontends.boosting import Nodes
from treeleaks.frontends.gaps import (
    Column,
    Layout,
    RoutedTree,
    check_kept,
    kept_leaves,
    spell_out,
)
from treeleaks.ir.model import Tree


def gap_layout(sk_trees: list[Any], names: list[str], known: frozenset[str] = frozenset()
               ) -> Layout | None:
    """The layout with a gap feature for each column some split shows held gaps, or
    ``known`` to have held some; None when no column did (or the trees keep no routing)."""
    gaps = np.array([name in known for name in names], dtype=bool)
    for sk_tree in sk_trees:
        routing = getattr(sk_tree, "missing_go_to_left", None)
        if routing is None:
            return None
        left, right = np.asarray(sk_tree.children_left), np.asarray(sk_tree.children_right)
        inner = np.flatnonzero(left >= 0)
        rows = np.asarray(sk_tree.n_node_samples)
        if not (np.isin(left[inner], np.arange(rows.size)).all()
                and np.isin(right[inner], np.arange(rows.size)).all()):
            return None  # broken nodes: the tree's validation names them
        # a split sending gaps to its smaller side shows them (a stripped tree's rows are
        # gone: not), and one at +inf sends every value left and only the gaps right
        odd = np.asarray(routing)[inner].astype(bool) != (rows[left[inner]] > rows[right[inner]])
        odd &= bool(rows.any())
        odd |= ~np.isfinite(np.asarray(sk_tree.threshold, dtype=np.float64)[inner])
        gaps[np.asarray(sk_tree.feature)[inner[odd]]] = True
    if not gaps.any():
        return None
    return Layout.of([Column(name, None, bool(gap)) for name, gap in zip(names, gaps)])


def spelled(tree: Tree, sk_tree: Any, layout: Layout, index: int) -> Tree:
    """``tree`` (read from ``sk_tree``, leaves in node order) with its gap splits spelled
    out, its per-leaf arrays kept for the leaves a row can still reach."""
    nodes, kept = spelled_nodes(sk_tree, layout, index)
    return kept_leaves(tree, nodes, kept)


def spelled_nodes(sk_tree: Any, layout: Layout, index: int) -> tuple[Nodes, np.ndarray]:
    """``sk_tree``'s nodes with its gap splits spelled out, and the leaves (in node order)
    a row can still reach; a leaf holding rows that none can reach is refused."""
    left = np.asarray(sk_tree.children_left, dtype=np.int64)
    is_leaf = left < 0
    leaf = np.full(len(left), -1, dtype=np.int64)
    leaf[is_leaf] = np.arange(int(is_leaf.sum()))
    routed = RoutedTree(
        feature=np.where(is_leaf, -1, np.asarray(sk_tree.feature, dtype=np.int64)),
        threshold=np.asarray(sk_tree.threshold, dtype=np.float64), left=left,
        right=np.asarray(sk_tree.children_right, dtype=np.int64), leaf=leaf,
        gap_left=np.asarray(sk_tree.missing_go_to_left).astype(bool))
    nodes, kept = spell_out(routed, layout, int(is_leaf.sum()), index)
    check_kept(kept, np.asarray(sk_tree.n_node_samples)[is_leaf], f"tree {index}",
               "n_node_samples", "thresholds and missing_go_to_left")
    return nodes, kept
