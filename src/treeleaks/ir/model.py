"""The framework-neutral model IR: exactly what an adversary sees in a released tree model.

Frontends (scikit-learn, DP forests, ...) translate their models into a `ReleasedModel`;
everything downstream (attacks, verification, reports) reads only this.

A tree is stored as its split structure (Treelite-style nodes: go left when
``x[feature] <= threshold``) with per-leaf class counts. Each leaf's *box* (the per-feature
interval ``lower < x <= upper`` of its root-to-leaf path) is derived from the nodes, so rows
and cells are routed in O(depth) rather than intersected with every leaf.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from treeleaks.ir.description import ModelDescription, ModelKind, StoredField, describe
from treeleaks.ir.inputs import InputMap, as_number
from treeleaks.ir.json_files import FORMAT_VERSION, MAX_COUNT, read_json
from treeleaks.ir.node_stats import NodeStats
from treeleaks.ir.revealed import RevealedValues
from treeleaks.ir.routing import route
from treeleaks.runtime.errors import TreeleaksError, UnsupportedModelError

if TYPE_CHECKING:  # the checked shapes load pydantic: imported when a file is parsed
    from treeleaks.ir.formats import DescriptionRecord, TreeRecord

GENERIC_LABEL = "label"  # the label's name when the file names none


class ModelFormatError(TreeleaksError, ValueError):
    """A serialized model is malformed; the message names the field at fault."""


@dataclass(frozen=True)
class NoiseMechanism:
    """Noise added to released leaf counts (DP forests): Laplace of ``scale`` per count."""

    kind: str
    epsilon: float
    scale: float


@dataclass(eq=False)
class Tree:
    """One tree: nodes (``feature == -1`` marks a leaf) and integer per-class leaf counts.

    ``counts[leaf, class]`` is the number of training rows of that class in the leaf, each
    counted as often as it was drawn (what the model's class frequencies are computed from).
    ``n_samples[leaf]`` is the number of *distinct* training rows, when the framework stores
    it; ``draws[row]`` is how often each training row was drawn for this tree, when the
    release exposes it (scikit-learn bootstrap forests do, through their random state). The
    model file keeps the field name ``"multiplicities"`` for them, so files saved earlier
    still load and files written now still load in older versions.
    A ``pooled`` tree holds every class's rows in the first column of ``counts`` (the rest
    are 0): side knowledge that says nothing of the label (`treeleaks.ir.knowledge`). A pooled
    tree may count one class ``apart`` (a multiclass booster's first-round tree for that
    class): its rows in column ``apart``, every other class's in `rest_column`.
    A regression tree has one column of ``counts`` (the rows in each leaf) and ``values``, each
    leaf's predicted target value (a booster's later trees have none: their leaves hold
    steps towards the target, not targets) and, when the file keeps it, ``impurity``: each
    leaf's weighted variance of its targets (scikit-learn's ``squared_error`` and
    ``friedman_mse``), 0 exactly when the leaf's rows share one target. A tree that is not
    ``counted`` has no counts at all (they are 0): an XGBoost tree after the first, known by
    its splits and its gradient sums (`LeafGradients`) alone. ``nodes``: what the file stores
    at every node, internal ones included, when the reader keeps it (`NodeStats`; not kept
    in the treeleaks JSON): checked against the children on reading and against the rows by
    the certificates.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    leaf_of_node: np.ndarray
    counts: np.ndarray
    n_samples: np.ndarray | None = None
    draws: np.ndarray | None = None
    pooled: bool = False
    values: np.ndarray | None = None
    counted: bool = True
    impurity: np.ndarray | None = None
    apart: int | None = None
    nodes: NodeStats | None = None

    @property
    def n_leaves(self) -> int:
        """The number of leaves."""
        return int(self.counts.shape[0])

    @property
    def depth(self) -> int:
        """The depth of the deepest leaf, the root's 0."""
        depth = np.zeros(len(self.feature), dtype=np.int64)
        for node in self.internal_nodes():
            depth[self.left[node]] = depth[self.right[node]] = depth[node] + 1
        return int(depth.max())

    def node_boxes(self, n_features: int) -> tuple[np.ndarray, np.ndarray]:
        """Bounds ``(lower, upper)`` of every node's region, ``(n_nodes, n_features)``.

        The region is lower < x <= upper.
        """
        lower = np.full((len(self.feature), n_features), -np.inf)
        upper = np.full((len(self.feature), n_features), np.inf)
        for node in self.internal_nodes():
            f, t = self.feature[node], self.threshold[node]
            for child in (self.left[node], self.right[node]):
                lower[child], upper[child] = lower[node], upper[node]
            upper[self.left[node], f] = min(upper[node, f], t)
            lower[self.right[node], f] = max(lower[node, f], t)
        return lower, upper

    @property
    def aliased(self) -> bool:
        """Whether some leaf is reached by several paths.

        A booster's gap or category split, spelled out over indicator features
        (`treeleaks.frontends.gaps`), makes a leaf's region a union of boxes.
        """
        return int((self.feature < 0).sum()) > self.n_leaves

    def path_boxes(self, n_features: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every path's box and leaf: ``(lower, upper, leaf)``, one row per leaf node.

        A leaf's region is the union of its paths' boxes (one path unless `aliased`).
        """
        lower, upper = self.node_boxes(n_features)
        leaf_nodes = np.flatnonzero(self.feature < 0)
        return lower[leaf_nodes], upper[leaf_nodes], self.leaf_of_node[leaf_nodes]

    def whole_nodes(self) -> np.ndarray:
        """``(n_nodes,)``: whether every path of each leaf below a node lies below it.

        The rows of such a node are exactly those of its leaves; in an `aliased` tree a
        node that holds one path of a leaf but not another holds an unknown share of its
        rows. Every node of a tree that is not aliased is whole.
        """
        if not self.aliased:
            return np.ones(len(self.feature), dtype=bool)
        order, stack = [], [0]  # depth-first: a subtree is the run of positions from its root
        while stack:
            node = stack.pop()
            order.append(node)
            if self.feature[node] >= 0:
                stack.extend((self.right[node], self.left[node]))
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        is_leaf = self.feature < 0
        first = np.full(self.n_leaves, len(order))
        last = np.full(self.n_leaves, -1)
        np.minimum.at(first, self.leaf_of_node[is_leaf], position[is_leaf])
        np.maximum.at(last, self.leaf_of_node[is_leaf], position[is_leaf])
        low, high, end = position.copy(), position.copy(), position.copy()
        low[is_leaf] = first[self.leaf_of_node[is_leaf]]
        high[is_leaf] = last[self.leaf_of_node[is_leaf]]
        for node in reversed(order):
            if not is_leaf[node]:
                kids = [self.left[node], self.right[node]]
                low[node], high[node] = min(low[k] for k in kids), max(high[k] for k in kids)
                end[node] = max(end[k] for k in kids)
        return (low >= position) & (high <= end)

    def leaf_boxes(self, n_features: int) -> tuple[np.ndarray, np.ndarray]:
        """Each leaf's box ``(lower, upper)``, ``(n_leaves, n_features)``, in leaf order.

        Refused for an `aliased` tree, whose leaves are unions of boxes (`path_boxes`).
        """
        if self.aliased:
            raise UnsupportedModelError(
                "the model routes gaps or categories, so some leaf is reached by several "
                "paths and is not one box; this attack reads one box per leaf and does not "
                "apply to such a model yet")
        lower, upper = self.node_boxes(n_features)
        leaf_nodes = np.flatnonzero(self.feature < 0)
        order = np.argsort(self.leaf_of_node[leaf_nodes])
        return lower[leaf_nodes[order]], upper[leaf_nodes[order]]

    @property
    def rest_column(self) -> int:
        """The column a tree counting one class `apart` keeps the other classes' rows in."""
        return 1 if self.apart == 0 else 0

    def count_column(self, cls: Any) -> Any:
        """The column of ``counts`` that holds rows of class ``cls`` (an index or an array)."""
        if self.apart is not None:
            return np.where(np.equal(cls, self.apart), self.apart, self.rest_column)
        return cls * 0 if self.pooled else cls

    def in_columns(self, per_class: np.ndarray) -> np.ndarray:
        """Sum per-class leaf counts into the columns this tree releases them in.

        ``per_class`` is ``(n_leaves, n_classes)``; the columns are `count_column`'s.
        """
        out = np.zeros_like(per_class)
        np.add.at(out.T, self.count_column(np.arange(per_class.shape[1])), per_class.T)
        return out

    def column_name(self, column: int, classes: list[Any]) -> str:
        """What column ``column`` of ``counts`` counts, for a message."""
        if self.apart is not None:
            named = classes[self.apart]
            return (f"class {named!r}" if column == self.apart
                    else f"classes other than {named!r}")
        return "all classes" if self.pooled else f"class {classes[column]!r}"

    def holds(self) -> np.ndarray:
        """``(n_leaves, n_classes)``: whether each leaf holds training rows of each class.

        In a tree without counts, each may.
        """
        if not self.counted:
            return np.ones(self.counts.shape, dtype=bool)
        if self.pooled:
            return self.counts[:, self.count_column(np.arange(self.counts.shape[1]))] > 0
        return self.counts > 0

    def internal_nodes(self) -> list[int]:
        """Internal nodes, each before its children."""
        order, stack = [], [0]
        while stack:
            node = stack.pop()
            if self.feature[node] >= 0:
                order.append(node)
                stack.extend((self.left[node], self.right[node]))
        return order

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Leaf index reached by each row of ``X``."""
        return self.leaf_of_node[self.apply_nodes(X)]

    def apply_nodes(self, X: np.ndarray) -> np.ndarray:
        """The leaf node each row of ``X`` ends at: the path it takes.

        In an `aliased` tree it is one of its leaf's paths; the row lies in its box
        (`node_boxes`).
        """
        node = np.zeros(X.shape[0], dtype=np.int64)
        active = self.feature[node] >= 0
        while active.any():
            idx = np.flatnonzero(active)
            n = node[idx]
            go_left = X[idx, self.feature[n]] <= self.threshold[n]
            node[idx] = np.where(go_left, self.left[n], self.right[n])
            active[idx] = self.feature[node[idx]] >= 0
        return node

    def node_contradiction(self, classes: list[Any]) -> str:
        """The first node whose stored numbers (`nodes`) its children contradict.

        In words; "" when none does or the reader kept no node numbers.
        """
        if self.nodes is None:
            return ""
        k = self.nodes.weighted.shape[1]  # an attack's view may count other columns
        columns = ([f"weighted rows of {self.column_name(c, classes)}" for c in range(k)]
                   if classes and k == self.counts.shape[1] else ["weighted rows"] * k)
        return self.nodes.contradiction(self.left, self.right, columns)

    def to_dict(self) -> dict[str, Any]:
        """The tree in the treeleaks JSON form (the draws under ``multiplicities``)."""
        out: dict[str, Any] = {
            "feature": self.feature.tolist(),
            "threshold": [
                float(t) if f >= 0 else None for f, t in zip(self.feature, self.threshold)
            ],
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "leaf_of_node": self.leaf_of_node.tolist(),
            "counts": self.counts.tolist(),
        }
        if self.n_samples is not None:
            out["n_samples"] = self.n_samples.tolist()
        if self.draws is not None:
            out["multiplicities"] = self.draws.tolist()  # the file's name for the draws
        if self.values is not None:
            out["values"] = self.values.tolist()
        if self.impurity is not None:
            out["impurity"] = self.impurity.tolist()
        return out

    @classmethod
    def from_record(cls, record: TreeRecord) -> Tree:
        """A tree from its checked JSON fields (`ReleasedModel.validate` checks the shape)."""
        return cls(
            feature=np.asarray(record.feature, dtype=np.int64),
            threshold=np.array(
                [np.nan if t is None else t for t in record.threshold], dtype=np.float64
            ),
            left=np.asarray(record.left, dtype=np.int64),
            right=np.asarray(record.right, dtype=np.int64),
            leaf_of_node=np.asarray(record.leaf_of_node, dtype=np.int64),
            counts=np.asarray(record.counts, dtype=np.float64).astype(np.int64),
            n_samples=_optional_int_array(record.n_samples),
            draws=_optional_int_array(record.multiplicities),
            values=None if record.values is None else np.asarray(record.values, dtype=np.float64),
            impurity=(None if record.impurity is None
                      else np.asarray(record.impurity, dtype=np.float64)),
        )

    def validate(self, n_classes: int, n_features: int) -> None:
        """Check the node arrays describe one binary tree and the counts fit it.

        The tree splits on ``n_features`` features at most. A crafted file gets a one-line
        error, not an index error later.
        """
        n_nodes = len(self.feature)
        if n_nodes == 0:
            raise ModelFormatError("a tree has no nodes")
        for name in ("threshold", "left", "right", "leaf_of_node"):
            if len(getattr(self, name)) != n_nodes:
                raise ModelFormatError(f"tree field {name!r} has a length other than 'feature'")
        is_leaf = self.feature < 0
        # a leaf may be reached by several paths (`aliased`): count the leaves, not the nodes
        n_leaves = int(np.unique(self.leaf_of_node[is_leaf]).size)
        self._check_leaf_arrays(n_leaves, n_classes)
        self._check_nodes(is_leaf, n_features)
        if self.nodes is not None and (why := self.nodes.shape_error(n_nodes)):
            raise ModelFormatError(why)

    def _check_leaf_arrays(self, n_leaves: int, n_classes: int) -> None:
        """The per-leaf arrays (counts, n_samples, values, impurity): one entry per leaf."""
        self._check_leaf_shapes(n_leaves, n_classes)
        self._check_leaf_numbers()
        if self.impurity is not None and (self.values is None
                                          or self.impurity.shape != (n_leaves,)):
            raise ModelFormatError(f"tree 'impurity' belongs to a regression tree's leaves: "
                                   f"one entry per leaf ({n_leaves}), beside 'values'")

    def _check_leaf_shapes(self, n_leaves: int, n_classes: int) -> None:
        """One row of counts per leaf, one column per class, adding up to at most 2^53.

        ``n_samples`` and ``values``, when given, hold one entry per leaf.
        """
        if self.counts.ndim != 2 or self.counts.shape != (n_leaves, n_classes):
            raise ModelFormatError(
                f"tree 'counts' must have shape (n_leaves={n_leaves}, n_classes={n_classes}), "
                f"got {self.counts.shape}"
            )
        if np.abs(self.counts).sum(dtype=np.float64) > MAX_COUNT:
            raise ModelFormatError("the tree's counts add up to more than 2^53 rows")
        if self.n_samples is not None and self.n_samples.shape != (n_leaves,):
            raise ModelFormatError(f"tree 'n_samples' must have one entry per leaf ({n_leaves})")
        if self.values is not None and self.values.shape != (n_leaves,):
            raise ModelFormatError(f"tree 'values' must have one entry per leaf ({n_leaves})")

    def _check_leaf_numbers(self) -> None:
        """Leaf values and impurities finite and within bounds.

        Small enough that float64 holds the sums of their rows' squared targets.
        """
        for name, what in (("values", "value"), ("impurity", "impurity")):
            field = getattr(self, name)
            if field is not None and not np.isfinite(field).all():
                leaf = int(np.argmin(np.isfinite(field)))
                raise ModelFormatError(f"leaf {leaf}'s {what} is {field[leaf]}: an "
                                       "edited or damaged file")
        for name, what, bound in (("values", "value", MAX_TARGET),
                                  ("impurity", "impurity", MAX_TARGET ** 2)):
            field = getattr(self, name)
            if field is not None and (np.abs(field) > bound).any():
                leaf = int(np.argmax(np.abs(field)))
                raise ModelFormatError(
                    f"leaf {leaf}'s {what} is {field[leaf]:g}, beyond ±{bound:g}, where "
                    "float64 stops holding the sums of its rows' squared targets: an "
                    "edited or damaged file")

    def _check_nodes(self, is_leaf: np.ndarray, n_features: int) -> None:
        """The nodes form one binary tree over ``n_features`` features.

        Its splits are finite and its leaves numbered in order.
        """
        n_nodes, n_leaves = len(self.feature), self.n_leaves
        if set(self.leaf_of_node[is_leaf].tolist()) != set(range(n_leaves)):
            raise ModelFormatError("tree 'leaf_of_node' must number the leaves 0..n_leaves-1")
        children = np.concatenate([self.left[~is_leaf], self.right[~is_leaf]])
        # Every node but the root is a child exactly once, and all are reached from the root.
        if sorted(children.tolist()) != list(range(1, n_nodes)) or (
            len(self.internal_nodes()) != n_nodes - int(is_leaf.sum())
        ):
            raise ModelFormatError("tree nodes must form one binary tree rooted at node 0")
        used = self.feature[~is_leaf]
        if used.size and used.max() >= n_features:
            raise ModelFormatError(
                f"a tree splits on feature {int(used.max())} but the model names only "
                f"{n_features} features"
            )
        if not np.isfinite(self.threshold[~is_leaf]).all():
            raise ModelFormatError("a tree has a split whose threshold is not a finite number")
        if (np.abs(self.threshold[~is_leaf]) > 2.0**53).any():
            raise ModelFormatError(
                "a tree has a split threshold past ±2^53, where float64 stops holding every "
                "whole number: an edited file, or a feature whose values are that large, which "
                "no row can be routed by exactly")


def _description(record: DescriptionRecord | None, model: ReleasedModel) -> ModelDescription:
    """A treeleaks JSON model described, what it gives away read off its counts.

    Where it came from is as the file says (framework, estimator, stored fields; a DP forest
    without noise stays one); N, the class balance and the draws are read again, so an
    edited description hides nothing. A file written before descriptions were kept is
    described from its IR alone.
    """
    if record is None:
        return describe(model, "treeleaks JSON", model.source)
    kind = ModelKind(record.kind)
    return describe(model, record.framework, record.estimator,
                    [StoredField(f.name, f.exposes, f.removed, f.per_row) for f in record.fields],
                    kind=kind if kind == ModelKind.DP_FOREST and model.noise is None else None)


def _optional_int_array(values: Any) -> np.ndarray | None:
    return None if values is None else np.asarray(values, dtype=np.int64)


LOG_LOSS, SQUARED_ERROR = "log_loss", "squared_error"  # the losses `LeafGradients` reads
# the largest regression leaf value read: its square times 2^53 rows stays below float64's
# largest number (1.8e308), so no sum of squared targets overflows
MAX_TARGET = 1e146


@dataclass(eq=False)
class LeafGradients:
    """What a booster's leaf values say beyond its counts.

    Each row's raw score starts at ``start`` and adds ``values[t][leaf]`` for its leaf in
    every tree t. With ``loss`` log_loss (a classifier), before tree t the row's probability
    of the positive class (``classes[1]``) is p = sigmoid(score), its gradient g = p - y and
    its hessian h = p(1 - p). A ``start`` of K scores is a softmax booster's: its trees come
    in rounds of K, tree k of a round adding to class k's score, and before it
    p_k = softmax(scores)_k, g = p_k - [y = k] and h = p_k(1 - p_k) (a framework's scaled
    hessian is scaled in ``sums``). With squared_error (a regressor), g = score - y for its
    target y and h = 1. Each row ``(leaf, a, b, low, high)`` of ``sums[t]`` says
    ``low <= a·Σg + b·Σh <= high`` over the leaf's training rows: the frontends turn each
    framework's stored leaf values and hessian sums into these, the interval covering the
    file's floating-point precision.
    """

    start: float | np.ndarray
    values: list[np.ndarray]
    sums: list[np.ndarray]
    loss: str = LOG_LOSS

    def validate(self, trees: list[Tree]) -> None:
        """Check one finite leaf value per leaf and well-formed sums for every tree."""
        if len(self.values) != len(trees) or len(self.sums) != len(trees) or (
                len(trees) % np.size(self.start)):
            raise ModelFormatError("the booster's leaf values do not cover every tree, "
                                   "round after round")
        for index, (tree, value, rows) in enumerate(zip(trees, self.values, self.sums)):
            if value.shape != (tree.n_leaves,) or not np.isfinite(value).all():
                raise ModelFormatError(f"tree {index}: one finite leaf value per leaf needed")
            if rows.size and _malformed_sums(rows, tree.n_leaves):
                raise ModelFormatError(f"tree {index}: malformed gradient sums")


@dataclass(eq=False)
class ReleasedModel:
    """What a released tree model exposes: its trees, classes, features and training facts.

    Frontends build it (`from_sklearn`, `load_model`, ...); every attack reads only this.

    Parameters
    ----------
    trees : list of Tree
        The trees: split nodes and per-leaf counts.
    classes : list
        A classifier's class labels, in the counts' column order; empty for a regressor.
    feature_names : list of str
        The features' names, in the splits' column order.
    label_name : str, default "label"
        The name of the label column of reconstructed rows.
    bootstrap : bool, default False
        Whether each tree drew its rows with replacement.
    noise : NoiseMechanism or None, default None
        The noise added to the counts (a DP forest's); None: exact counts.
    source : str, default ""
        Where the model came from, for people.
    facts : dict, default {}
        Scalar training facts the file records (``n_rows``, ``max_depth``, ``schema``, ...).
    task : str, default "classification"
        ``classification`` or ``regression``.
    gradients : LeafGradients or None, default None
        A booster's leaf values as bounds on gradient sums; not kept in the treeleaks JSON.
    description : ModelDescription or None, default None
        What the file is and gives away, as its reader found it (`described` reads it).
    inputs : InputMap or None, default None
        How the custodian's columns become the features (a pipeline's steps, a model's
        gaps and categories spelled out); None when the columns are the features. Not kept
        in the treeleaks JSON.
    revealed : dict, default {}
        Per feature index, the distinct training values the file gives away beside its
        trees (`RevealedValues`); not kept in the treeleaks JSON.
    contradictions : tuple of str, default ()
        The stored fields that contradict the trees (an edited file), each in words: no
        reconstruction of such a file is certified. Not kept in the treeleaks JSON.
    """

    trees: list[Tree]
    classes: list[Any]
    feature_names: list[str]
    label_name: str = GENERIC_LABEL
    bootstrap: bool = False
    noise: NoiseMechanism | None = None
    source: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    task: str = "classification"
    gradients: LeafGradients | None = None  # a booster's; not kept in the treeleaks JSON
    description: ModelDescription | None = None
    inputs: InputMap | None = None  # the custodian's columns, when they are not the features
    revealed: dict[int, RevealedValues] = field(default_factory=dict)
    contradictions: tuple[str, ...] = ()

    def described(self) -> ModelDescription:
        """Say what the model is and gives away: its reader's account of the file.

        A model built without a reader (by hand, in a test) is described once from its IR.

        Returns
        -------
        ModelDescription
            The one description every command prints.
        """
        if self.description is None:
            self.description = describe(self, "treeleaks", self.source)
        return self.description

    @property
    def is_regression(self) -> bool:
        """A regression model: no classes, one column of row counts and a value per leaf."""
        return self.task == "regression"

    @property
    def counts_released(self) -> bool:
        """Whether the counts say anything (not stripped by the publisher).

        A fitted tree has rows in every leaf, so a tree whose counts are all zero had them
        stripped.
        """
        return all(bool(tree.counts.any()) for tree in self.trees if tree.counted)

    @property
    def aliased(self) -> bool:
        """Whether some tree has a leaf reached by several paths (`Tree.aliased`).

        `Tree.leaf_boxes` then refuses it; the cells, the row searches and the
        probabilistic reconstruction read the paths.
        """
        return any(tree.aliased for tree in self.trees)

    @property
    def n_trees(self) -> int:
        """The number of trees."""
        return len(self.trees)

    @property
    def leaf_offsets(self) -> np.ndarray:
        """Each tree's first leaf in one numbering of every tree's leaves.

        ``apply(X) + leaf_offsets`` names each row's leaves across the forest.
        """
        return np.cumsum([0] + [tree.n_leaves for tree in self.trees])[:-1]

    @property
    def n_leaves(self) -> int:
        """Every tree's leaves together."""
        return sum(tree.n_leaves for tree in self.trees)

    @property
    def n_features(self) -> int:
        """The number of features."""
        return len(self.feature_names)

    @property
    def n_classes(self) -> int:
        """The number of classes (0 for a regressor)."""
        return len(self.classes)

    @property
    def n_rows(self) -> int | None:
        """Training-set size N when every tree saw every row once without noise, else None."""
        if self.bootstrap or self.noise is not None or not self.trees:
            return None
        return int(self.trees[0].counts.sum())

    def class_totals(self) -> np.ndarray:
        """Count each class's training rows as the counts give them.

        A tree's per-class counts give them, or each class's tree counting it apart (a
        multiclass booster's first round). Read with `n_rows`: without it the trees' totals
        differ.

        Returns
        -------
        numpy.ndarray
            Rows per class, in ``classes`` order.

        Raises
        ------
        ValueError
            No tree gives every class's rows.
        """
        totals = np.full(self.n_classes, -1, dtype=np.int64)
        for tree in self.trees:
            if tree.counted and not tree.pooled:
                return tree.counts.sum(axis=0)
            if tree.counted and tree.apart is not None and totals[tree.apart] < 0:
                totals[tree.apart] = tree.counts[:, tree.apart].sum()
        if (totals < 0).any():
            raise ValueError("no tree of this model gives every class's rows")
        return totals

    def thresholds(self) -> list[np.ndarray]:
        """List each feature's split thresholds over all trees.

        Returns
        -------
        list of numpy.ndarray
            Per feature, its distinct thresholds, sorted.
        """
        per_feature: list[list[float]] = [[] for _ in range(self.n_features)]
        for tree in self.trees:
            internal = tree.feature >= 0
            for f, t in zip(tree.feature[internal], tree.threshold[internal]):
                per_feature[f].append(float(t))
        return [np.unique(np.asarray(v, dtype=np.float64)) for v in per_feature]

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Route rows through every tree.

        Parameters
        ----------
        X : numpy.ndarray
            Rows of feature values, shape ``(n_rows, n_features)``.

        Returns
        -------
        numpy.ndarray
            The leaf index of each row in each tree, shape ``(n_rows, n_trees)``.

        Raises
        ------
        ValueError
            ``X`` does not have one column per feature.
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(
                f"expected rows with {self.n_features} features, got shape {X.shape}"
            )
        return route(self.trees, X) if self.trees else np.zeros((X.shape[0], 0), dtype=np.int64)

    def class_index(self, y: Any) -> np.ndarray:
        """Map labels to indices into ``classes``.

        Parameters
        ----------
        y : array_like
            Class labels.

        Returns
        -------
        numpy.ndarray
            Each label's index into ``classes``.

        Raises
        ------
        ValueError
            A label is not one of the model's classes.
        """
        lookup = {c: i for i, c in enumerate(self.classes)}
        if self.classes and all(isinstance(c, str) for c in self.classes):
            # a CSV reads R's factor levels "0", "1" (or ONNX's text labels) back as numbers
            lookup.update({_number_key(v): i for v, i in _numeric_texts(self.classes).items()})
        out = np.empty(len(np.asarray(y)), dtype=np.int64)
        for row, label in enumerate(np.asarray(y).tolist()):
            key = _number_key(label) if isinstance(label, float | int) and \
                label not in lookup else label
            if key not in lookup:
                raise ValueError(
                    f"label {label!r} is not one of the model's classes {self.classes}")
            out[row] = lookup[key]
        return out

    def leaf_counts_of(self, X: np.ndarray, y: Any) -> list[np.ndarray]:
        """Count rows into every tree's leaves, as training would.

        Parameters
        ----------
        X : numpy.ndarray
            Rows of feature values, shape ``(n_rows, n_features)``.
        y : array_like
            Their class labels.

        Returns
        -------
        list of numpy.ndarray
            Per tree, the ``(n_leaves, n_classes)`` counts the rows produce.
        """
        return self.leaf_counts_at(self.apply(X), self.class_index(y))

    def leaf_counts_at(self, leaves: np.ndarray, cls: np.ndarray) -> list[np.ndarray]:
        """Count rows into every tree's leaves, given where they land.

        Parameters
        ----------
        leaves : numpy.ndarray
            Each row's leaf in every tree, shape ``(n_rows, n_trees)`` (from `apply`).
        cls : numpy.ndarray
            Each row's class index.

        Returns
        -------
        list of numpy.ndarray
            Per tree, the ``(n_leaves, n_classes)`` counts of the rows.
        """
        out = []
        for t, tree in enumerate(self.trees):
            counts = np.zeros(tree.counts.shape, dtype=np.int64)
            np.add.at(counts, (leaves[:, t], cls), 1)
            out.append(counts)
        return out

    # --- serialization -------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Write the model in the treeleaks JSON form.

        Returns
        -------
        dict
            Plain JSON that `from_dict` reads back.

        Raises
        ------
        UnsupportedModelError
            The model is a booster whose JSON would lose its pooled trees, trees without
            counts, or leaf values, or it contradicts itself (`contradictions`), which the
            JSON would hide.
        """
        if self.gradients is not None or any(t.pooled or not t.counted for t in self.trees):
            raise UnsupportedModelError(
                "this booster's treeleaks JSON would lose which trees pool their classes or "
                "have no counts, and its leaf values; keep the framework's own model file")
        if self.contradictions:  # the JSON keeps leaves only: it would read as consistent
            raise UnsupportedModelError(
                f"the model contradicts itself ({self.contradictions[0]}); its treeleaks "
                "JSON would drop what shows it, so keep the original file")
        return {
            "format": "treeleaks.ReleasedModel",
            "version": FORMAT_VERSION,
            "source": self.source,
            "task": self.task,
            "classes": [_plain(c) for c in self.classes],
            "feature_names": list(self.feature_names),
            "label_name": self.label_name,
            "bootstrap": self.bootstrap,
            "noise": None if self.noise is None else vars(self.noise).copy(),
            "facts": self.facts,
            "description": self.described().to_dict(),
            "trees": [tree.to_dict() for tree in self.trees],
        }

    def to_json(self, path: str | Path | None = None) -> str:
        """Write the model as treeleaks JSON text, and to a file when given one.

        Parameters
        ----------
        path : str or pathlib.Path or None, default None
            The file to write; None writes none.

        Returns
        -------
        str
            The JSON text.

        Raises
        ------
        UnsupportedModelError
            As `to_dict`.
        """
        text = json.dumps(self.to_dict())
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def from_dict(cls, data: Any) -> ReleasedModel:
        """Read a model from the JSON form `to_dict` writes, every field checked.

        Parameters
        ----------
        data : dict
            The parsed JSON.

        Returns
        -------
        ReleasedModel
            The model, validated.

        Raises
        ------
        ModelFormatError
            A field is malformed or the model fails `validate`.
        UnsupportedModelError
            The counts are those of weighted training.
        """
        from treeleaks.ir.formats import parse_model

        record = parse_model(data, ModelFormatError)
        model = cls(
            trees=[Tree.from_record(tree) for tree in record.trees],
            classes=list(record.classes),
            feature_names=list(record.feature_names),
            label_name=record.label_name,
            bootstrap=record.bootstrap,
            noise=None if record.noise is None else NoiseMechanism(**record.noise.model_dump()),
            source=record.source,
            facts=dict(record.facts),
            task=record.task,
        )
        model.validate()
        model.description = _description(record.description, model)
        return model

    @classmethod
    def from_json(cls, source: str | Path) -> ReleasedModel:
        """Read a model from a treeleaks JSON file or from JSON text.

        Parameters
        ----------
        source : str or pathlib.Path
            A file (a `Path`, or a string not starting with ``{``) or JSON text (a string
            starting with ``{``).

        Returns
        -------
        ReleasedModel
            The model, validated.

        Raises
        ------
        ModelFormatError
            The file cannot be read, the JSON does not parse, or the model is malformed.
        UnsupportedModelError
            The counts are those of weighted training.
        """
        if isinstance(source, str) and source.lstrip().startswith("{"):
            try:
                data = json.loads(source)
            except (json.JSONDecodeError, RecursionError) as exc:
                raise ModelFormatError(f"model JSON does not parse: {exc}") from exc
        else:
            data = read_json(Path(source), "model", ModelFormatError)
        return cls.from_dict(data)

    def validate(self) -> None:
        """Check what the JSON shapes cannot.

        The trees fit the classes and features, names are distinct, and counts are those of
        unweighted training. Each error names the fix.

        Raises
        ------
        ModelFormatError
            The model is malformed.
        UnsupportedModelError
            The counts are those of weighted training.
        """
        if not self.trees:
            raise ModelFormatError("the model has no trees")
        self._check_task()
        self._check_names()
        self._check_trees()
        self._check_node_stats()
        self._check_counts()
        if not self.trees[0].counted:
            raise ModelFormatError("the first tree must have counts")
        if self.gradients is not None:
            self._check_gradients(self.gradients)
        self._check_revealed()

    def _check_trees(self) -> None:
        """Each tree well formed (`Tree.validate`), a refusal naming it."""
        for index, tree in enumerate(self.trees):
            try:
                tree.validate(1 if self.is_regression else self.n_classes, self.n_features)
            except ModelFormatError as exc:
                raise ModelFormatError(f"malformed tree {index}: {exc}") from None

    def _check_counts(self) -> None:
        """Counts as their source allows: noisy ones their mechanism, exact ones unweighted.

        For an edited file, the first contradiction is named instead of weighted training.
        """
        if self.noise is not None:
            self._check_noise()
            return
        try:
            self._check_unweighted()
        except UnsupportedModelError:
            if self.contradictions:  # an edited file, not weighted training
                raise ModelFormatError("the file contradicts itself: "
                                       f"{self.contradictions[0]}") from None
            raise

    def _check_revealed(self) -> None:
        """The training values given beside the trees: of the model's features, well formed."""
        for column, revealed in self.revealed.items():
            if not 0 <= column < self.n_features:
                raise ModelFormatError(f"training values given for feature {column}, but the "
                                       f"model has {self.n_features} features")
            try:
                revealed.check()
            except ValueError as exc:
                raise ModelFormatError(str(exc)) from None

    def _check_node_stats(self) -> None:
        """Add every tree whose node numbers contradict each other to `contradictions`.

        Each named with its tree and node (`NodeStats.contradiction`).
        """
        found = [f"tree {index} {why}" for index, tree in enumerate(self.trees)
                 if (why := tree.node_contradiction(self.classes))]
        self.contradictions += tuple(f for f in found if f not in self.contradictions)

    def require_classifier(self, attack: str) -> None:
        """Refuse a regression model for an attack that reads class counts.

        Parameters
        ----------
        attack : str
            The attack's name, for the message.

        Raises
        ------
        UnsupportedModelError
            The model is a regressor.
        """
        if self.is_regression:
            raise UnsupportedModelError(
                f"{attack} reads a classifier's class counts and this model is a regressor; "
                "treeleaks single-out (singling_out) audits regression trees")

    def _check_names(self) -> None:
        """Features, classes and the label each have a name of their own."""
        if len(set(self.feature_names)) != len(self.feature_names):
            raise ModelFormatError("the model names a feature twice; feature names must differ")
        if len(set(map(_plain, self.classes))) != len(self.classes):
            raise ModelFormatError("the model lists a class twice; classes must differ")
        if self.label_name in self.feature_names:
            raise ModelFormatError(
                f"the label column {self.label_name!r} has the name of a feature; give the "
                "model another 'label_name'"
            )

    def _check_gradients(self, gradients: LeafGradients) -> None:
        """A booster's sums fit its task, then each tree's leaf values and sums.

        One start score for a regressor or two classes, one per class for more.
        """
        if gradients.loss == SQUARED_ERROR:
            if not self.is_regression or np.size(gradients.start) != 1:
                raise ModelFormatError("squared-error sums are those of a regressor, "
                                       "of one start score")
        else:
            scores = int(np.size(gradients.start))
            if (scores == 1) != (self.n_classes == 2) or scores not in (1, self.n_classes):
                raise ModelFormatError(f"gradient sums of {scores} start score(s) for "
                                       f"{self.n_classes} classes: one for two classes, "
                                       "one per class for more")
        gradients.validate(self.trees)

    def _check_task(self) -> None:
        """A classifier lists its classes; a regression model lists none.

        A regression model has no noise and gives every leaf its value.
        """
        if not self.is_regression:
            if not self.classes:
                raise ModelFormatError("a classifier needs at least one class in 'classes'")
            if any(tree.values is not None for tree in self.trees):
                raise ModelFormatError("leaf 'values' belong to regression trees; set "
                                       "task to 'regression' or drop them")
            return
        if self.classes:
            raise ModelFormatError("a regression model has no classes; leave 'classes' empty")
        if self.noise is not None:
            raise UnsupportedModelError("noisy counts are supported for classifiers only")
        if self.trees[0].values is None:  # a booster's later trees give residual steps
            raise ModelFormatError("the first tree of a regression model needs its leaf "
                                   "'values'")

    def _check_noise(self) -> None:
        """A Laplace mechanism over T trees spends ε/T per tree: scale T/ε.

        A file whose ε and scale disagree misstates its guarantee or its noise, and the
        attack would weigh the counts wrongly.
        """
        noise = self.noise
        if noise.kind != "laplace":
            raise UnsupportedModelError(
                f"noise kind {noise.kind!r} is not supported; treeleaks models 'laplace'")
        expected = self.n_trees / noise.epsilon
        if not np.isclose(noise.scale, expected, rtol=1e-9, atol=0.0):
            raise ModelFormatError(
                f"the model states epsilon={noise.epsilon:g} over {self.n_trees} trees, "
                f"which means Laplace noise of scale {expected:g} per count, but it records "
                f"scale {noise.scale:g}; fix the file's 'noise' (scale = trees / epsilon)")

    def _check_unweighted(self) -> None:
        """Noise-free counts are row counts.

        Negative ones are malformed, and counts that disagree with the rows each leaf (or
        tree) saw come from weighted training.
        """
        weighted = (
            "so it was trained with sample_weight or class_weight (or its counts were "
            "altered); treeleaks reconstructs unweighted training only: refit without weights"
        )
        n_draws = None  # entries in tree 0's draws: one per training row
        for index, tree in enumerate(self.trees):
            if (tree.counts < 0).any():
                raise ModelFormatError(
                    f"tree {index} holds a negative count; counts without noise are row counts"
                )
            rows = tree.counts.sum(axis=1)
            if not self.bootstrap and tree.n_samples is not None:
                leaf = np.flatnonzero(rows != tree.n_samples)
                if leaf.size:
                    raise UnsupportedModelError(
                        f"tree {index}, leaf {leaf[0]}: its class counts add up to "
                        f"{rows[leaf[0]]} but it holds {tree.n_samples[leaf[0]]} training "
                        f"rows, {weighted}"
                    )
            if self.bootstrap and tree.draws is not None:
                if n_draws is None:
                    n_draws = len(tree.draws)
                _check_draws(index, tree, rows, n_draws, weighted)


def _malformed_sums(rows: np.ndarray, n_leaves: int) -> bool:
    """Whether a tree's gradient sums are malformed.

    Well formed: rows ``(leaf, a, b, low, high)``, each of a leaf of the tree, low <= high.
    """
    return bool(rows.ndim != 2 or rows.shape[1] != 5
                or not np.isin(rows[:, 0], np.arange(n_leaves)).all()
                or (rows[:, 3] > rows[:, 4]).any())


def _check_draws(index: int, tree: Tree, rows: np.ndarray, n_draws: int, weighted: str
                 ) -> None:
    """A bootstrap tree's recorded draws must fit the tree.

    One per training row (``n_draws``, as tree 0's), as many rows drawn as the tree saw
    distinct ones, and as many draws as its counts (``rows``: per leaf) add up to, else
    weighted training (``weighted`` says so).
    """
    if len(tree.draws) != n_draws:
        raise ModelFormatError(
            f"tree {index} has {len(tree.draws)} draws, tree 0 "
            f"has {n_draws}: each tree needs one per training row"
        )
    distinct = np.count_nonzero(tree.draws)
    if tree.n_samples is not None and tree.n_samples.sum() != distinct:
        raise ModelFormatError(
            f"tree {index}: the recorded draws do not match the tree (it saw "
            f"{tree.n_samples.sum()} distinct rows, the draws name {distinct}); "
            "the bootstrap cannot be reproduced from this file"
        )
    if rows.sum() != tree.draws.sum():
        raise UnsupportedModelError(
            f"tree {index}: its class counts add up to {rows.sum()} but it drew "
            f"{tree.draws.sum()} rows, {weighted}"
        )


def _plain(value: Any) -> Any:
    """NumPy scalars to plain Python, so class labels survive JSON."""
    return value.item() if isinstance(value, np.generic) else value


def _numeric_texts(classes: list[str]) -> dict[float, int]:
    """Text classes that read as numbers ("0", "1.5"), by their value."""
    return {number: index for index, text in enumerate(classes)
            if (number := as_number(text)) is not None}


def _number_key(value: float | int) -> Any:
    """The key `class_index` looks a number up by among text classes (1.0 and 1 alike)."""
    return ("number", float(value))
