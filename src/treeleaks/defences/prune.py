"""The pruning defence against predicate singling out (after Sedlmeyr 2024, section 3.3).

From a fitted scikit-learn tree (or forest of them), a pruned copy in which no reachable
node shows a class count in 1..k-1 (a regressor: a row count in 1..k-1); k = 2 removes
every vulnerable node, larger k leaves every node k-anonymous. The parent of each node that
shows such a count becomes a leaf, from the root down, which keeps the largest subtree that
satisfies the rule (any valid pruning must cut above that node, and its parent is the
lowest place to cut). The new leaf keeps the class frequencies scikit-learn already stored
for it, so it predicts what the subtree's rows say.

scikit-learn's tree cannot be edited in place, so the pruned tree is rebuilt from the
reachable nodes only (through the tree's own ``__getstate__``/``__setstate__``): nothing
below a new leaf stays in the object, in its arrays or in a file it is saved to. The result
is an ordinary estimator: it predicts, pickles and saves with skops like the original.

A pruned forest has every tree pruned. That stops each tree from singling out a row, but
the forest's reconstruction attack (`treeleaks reconstruct`) still works on the counts that
remain (all at least k), and a row can still be isolated by the intersection of several
trees' leaves.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from treeleaks.runtime.errors import TreeleaksError, UnsupportedModelError
from treeleaks.sklearn_compat import node_class_counts

PRUNABLE = (
    "DecisionTreeClassifier", "DecisionTreeRegressor", "RandomForestClassifier",
    "RandomForestRegressor", "ExtraTreesClassifier", "ExtraTreesRegressor",
)
_LEAF = -1  # scikit-learn's TREE_LEAF
_UNDEFINED = -2  # scikit-learn's TREE_UNDEFINED (a leaf's feature and threshold)


class PruningError(TreeleaksError):
    """The model cannot be pruned to the rule asked for; the message says why."""


@dataclass(frozen=True)
class PruneSummary:
    """Nodes and leaves before and after, summed over the trees."""

    min_count: int
    nodes_before: int
    nodes_after: int
    leaves_before: int
    leaves_after: int


def prune(estimator: Any, min_count: int = 2) -> tuple[Any, PruneSummary]:
    """A pruned copy of a fitted scikit-learn tree model (the input is left untouched) in
    which no reachable node shows a count in ``1..min_count-1``, and what pruning removed.
    Raises `PruningError` when even the root shows such a count (the training set itself
    holds fewer than ``min_count`` rows of a class)."""
    kind = type(estimator).__name__
    _check_prunable(estimator, kind, min_count)
    forest = hasattr(estimator, "estimators_")
    pruned = copy.deepcopy(estimator)
    copies = pruned.estimators_ if forest else [pruned]
    regression = "Regressor" in kind
    before = after = leaves_before = leaves_after = 0
    for index, member in enumerate(copies):
        old = member.tree_
        try:
            member.tree_ = prune_tree(old, min_count, regression)
        except PruningError as exc:
            where = f"tree {index}: " if len(copies) > 1 else ""
            raise PruningError(where + str(exc)) from None
        before, after = before + old.node_count, after + member.tree_.node_count
        leaves_before += int(old.n_leaves)
        leaves_after += int(member.tree_.n_leaves)
    return pruned, PruneSummary(min_count, before, after, leaves_before, leaves_after)


def _check_prunable(estimator: Any, kind: str, min_count: int) -> None:
    """One line for a model `prune` does not prune, a count below 1, or a model not
    fitted."""
    if kind not in PRUNABLE:
        raise UnsupportedModelError(
            f"cannot prune a {kind}; treeleaks prunes {', '.join(PRUNABLE)}")
    if min_count < 1:
        raise PruningError(f"min_count must be at least 1, not {min_count}")
    members = estimator.estimators_ if hasattr(estimator, "estimators_") else [estimator]
    if not members or not all(hasattr(m, "tree_") for m in members):
        raise UnsupportedModelError(f"the {kind} is not fitted: call fit(X, y) before pruning")


def exposing_nodes(sk_tree: Any, min_count: int, regression: bool) -> np.ndarray:
    """Per node: whether it shows a count in ``1..min_count-1`` (any class's weighted
    count, or its number of distinct rows)."""
    rows = np.asarray(sk_tree.n_node_samples)
    low = (rows >= 1) & (rows < min_count)
    if regression:
        return low
    counts = node_class_counts(sk_tree)
    return low | ((counts > 0) & (counts < min_count)).any(axis=1)


def prune_tree(sk_tree: Any, min_count: int, regression: bool) -> Any:
    """A new ``sklearn.tree._tree.Tree`` holding only the nodes the pruning keeps."""
    exposing = exposing_nodes(sk_tree, min_count, regression)
    if exposing[0]:
        raise PruningError(
            f"the root itself shows a count below {min_count} (the training set holds fewer "
            f"than {min_count} rows of a class), so no pruning hides it; lower --min-count "
            "to the rare class's count or below")
    left, right = sk_tree.children_left, sk_tree.children_right
    kept, is_leaf, depth = [], [], []
    stack = [(0, 0)]
    while stack:  # pre-order, left first, as scikit-learn numbers nodes
        node, level = stack.pop()
        kept.append(node)
        depth.append(level)
        leaf = left[node] == _LEAF or exposing[left[node]] or exposing[right[node]]
        is_leaf.append(bool(leaf))
        if not leaf:
            stack.extend(((right[node], level + 1), (left[node], level + 1)))
    return _rebuilt(sk_tree, np.asarray(kept), np.asarray(is_leaf), max(depth))


def _rebuilt(sk_tree: Any, kept: np.ndarray, is_leaf: np.ndarray, max_depth: int) -> Any:
    """The tree restricted to ``kept`` (pre-order), with ``is_leaf`` nodes made leaves."""
    state = sk_tree.__getstate__()
    nodes = state["nodes"][kept].copy()
    position = np.full(sk_tree.node_count, _LEAF, dtype=np.int64)
    position[kept] = np.arange(kept.size)
    inner = ~is_leaf
    nodes["left_child"][inner] = position[nodes["left_child"][inner]]
    nodes["right_child"][inner] = position[nodes["right_child"][inner]]
    nodes["left_child"][is_leaf] = _LEAF
    nodes["right_child"][is_leaf] = _LEAF
    nodes["feature"][is_leaf] = _UNDEFINED
    nodes["threshold"][is_leaf] = _UNDEFINED
    if "missing_go_to_left" in nodes.dtype.names:
        nodes["missing_go_to_left"][is_leaf] = 0
    cls, args = sk_tree.__reduce__()[:2]
    tree = cls(*args)
    tree.__setstate__({"max_depth": int(max_depth), "node_count": int(kept.size),
                       "nodes": np.ascontiguousarray(nodes),
                       "values": np.ascontiguousarray(state["values"][kept])})
    return tree

