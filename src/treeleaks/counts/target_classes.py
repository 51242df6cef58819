"""A regression forest read as a classifier whose classes are its targets.

A fully grown regression tree splits until each leaf's rows share one target (a node of
equal targets has no impurity left to split), so every leaf's value is the target of each
of its rows; a leaf of one row holds that row's target exactly. Taking each distinct leaf
value as a class, a leaf holds its weighted rows all in the class of its value, and the
classifier's per-row machinery (`treeleaks.counts.row_leaves`) places the rows with their
targets as their classes. Values the file stores a rounding apart (a mean of w equal
targets, divided by w) are one class.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from treeleaks.ir.model import ReleasedModel

# Leaf values this close (relative) are one target: float64 means of equal targets differ
# by a few units in the last place, far below this; distinct targets far above it.
VALUE_RTOL = 1e-9


def target_values(model: ReleasedModel, rtol: float = VALUE_RTOL) -> tuple[np.ndarray,
                                                                           list[np.ndarray]]:
    """The distinct targets the leaves hold (sorted; values within ``rtol`` of each other
    are one, given by its most frequent value) and, per tree, each leaf's target index."""
    values = np.concatenate([tree.values for tree in model.trees])
    distinct, index, seen = np.unique(values, return_inverse=True, return_counts=True)
    gap = np.abs(np.diff(distinct)) > rtol * np.maximum(np.abs(distinct[1:]),
                                                        np.abs(distinct[:-1]))
    group = np.concatenate([[0], np.cumsum(gap)])
    most_seen = np.lexsort((-seen, group))  # by group, the most frequent value first
    first = np.ones(distinct.size, dtype=bool)
    first[1:] = group[most_seen][1:] != group[most_seen][:-1]
    targets = distinct[most_seen[first]]
    bounds = np.cumsum([tree.n_leaves for tree in model.trees])[:-1]
    return targets, np.split(group[index], bounds)


def target_class_view(model: ReleasedModel) -> ReleasedModel:
    """The classifier whose classes are the regression model's targets, each leaf holding
    its weighted rows in the class of its value (see the module doc)."""
    targets, per_tree = target_values(model)
    trees = []
    for tree, leaf_target in zip(model.trees, per_tree):
        counts = np.zeros((tree.n_leaves, targets.size), dtype=np.int64)
        counts[np.arange(tree.n_leaves), leaf_target] = tree.counts[:, 0]
        trees.append(replace(tree, counts=counts, values=None))
    return replace(model, trees=trees, classes=targets.tolist(), task="classification")


def unheld_leaf(model: ReleasedModel) -> str:
    """A leaf of one row that no training row can be, read as `target_class_view` reads the
    leaves: every tree that drew the row must hold its target in some leaf, and the tree
    must have drawn it as often as the leaf holds. Names the first (tree, leaf), or ""."""
    targets, per_tree = target_values(model)
    drawn = np.vstack([tree.draws for tree in model.trees])
    has = np.zeros((model.n_trees, targets.size), dtype=bool)
    for t, leaf_target in enumerate(per_tree):
        has[t, leaf_target] = True
    # fits[k, c]: every tree that drew row k holds target c somewhere
    fits = ((drawn > 0).T.astype(np.int64) @ (~has).astype(np.int64)) == 0
    for t, (tree, leaf_target) in enumerate(zip(model.trees, per_tree)):
        for v in np.flatnonzero(tree.n_samples == 1).tolist():
            rows = fits[:, leaf_target[v]] & (drawn[t] == tree.counts[v, 0])
            if not rows.any():
                return (f"tree {t}, leaf {v} holds one row of target "
                        f"{targets[leaf_target[v]]:g}, which no row that tree drew "
                        f"{tree.counts[v, 0]} time(s) can have: some tree that drew each "
                        "holds no leaf of that target")
    return ""
