"""A booster's gaps and native categories, spelled out as splits the IR can hold.

Boosters fitted on a real table route a missing value (a gap) left or right at each split,
chosen split by split, and split a categorical column by a set of its categories. Neither is
``x <= t`` on one axis. Each is rewritten over 0/1 features: a column with gaps gains a
feature that is 1 exactly on a gap, a categorical column becomes one feature per category
(and one for a gap when it may have them), exactly one of them 1. A split

- ``x <= t``, gaps to the left, becomes ``gap <= 0.5``: on a gap, the left subtree; else
  ``x <= t`` as before;
- ``category in S`` becomes a chain ``is c1``, ``is c2``, ... over the smaller of S and the
  categories left, each hit leading to its side's subtree.

A subtree reached twice is copied, and every copy's leaves are the same leaves of the
model (`treeleaks.ir.model.Tree.aliased`): their counts and values are the file's, and a
leaf's region is the union of its copies' boxes. A copy knows what its path settled (a gap,
or which categories remain), so later splits on that column are followed, not repeated, and
copies stay small. The `InputMap` built beside says how the custodian's columns become these
features, so rows are read and written in the table's own terms.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from treeleaks.frontends.boosting import Nodes
from treeleaks.ir.inputs import InputColumn, InputMap, NumberColumn, OneHotColumn
from treeleaks.ir.model import ModelFormatError, ReleasedModel, Tree
from treeleaks.runtime.errors import UnsupportedModelError

GAP = -1  # the code of a gap among a categorical column's possible values
MAX_NODES = 200_000  # nodes one tree may grow to once spelled out
_SEPARATOR = "="


@dataclass(frozen=True)
class Column:
    """One input column as a booster splits it.

    ``categories`` lists a categorical column's categories by code (None: numeric);
    ``gaps`` says whether its training rows may hold gaps, and ``gaps_unsure`` that the
    file cannot tell whether they did (a rebuilt row then takes a gap only where the model
    leaves it no category: `OneHotColumn.fallback`).
    """

    name: str
    categories: tuple[Any, ...] | None = None
    gaps: bool = False
    gaps_unsure: bool = False


@dataclass
class RoutedTree:
    """A booster's tree as its framework routes a row.

    Per node: the split column (-1 at a leaf), the threshold of a numeric split (go left
    when ``x <= threshold``), the children, the leaf index (-1 inside), whether a gap goes
    left, and, for a categorical split, the category codes that go left.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    leaf: np.ndarray
    gap_left: np.ndarray
    categories_left: list[frozenset[int] | None] = field(default_factory=list)

    def category_split(self, node: int) -> frozenset[int] | None:
        """The codes a categorical split sends left, None for a numeric split."""
        return self.categories_left[node] if self.categories_left else None


@dataclass(frozen=True)
class Layout:
    """Where each column's features sit among the model's."""

    columns: tuple[Column, ...]
    value: tuple[int, ...]  # a numeric column's feature (-1 for a categorical column)
    gap: tuple[int, ...]  # its gap feature (-1: none)
    hot: tuple[tuple[int, ...], ...]  # a categorical column's feature per code
    names: tuple[str, ...]

    @classmethod
    def of(cls, columns: list[Column]) -> Layout:
        names: list[str] = []
        value, gap, hot = [], [], []
        for column in columns:
            if column.categories is None:
                value.append(len(names))
                names.append(column.name)
                gap.append(len(names) if column.gaps else -1)
                if column.gaps:
                    names.append(f"{column.name}{_SEPARATOR}(missing)")
                hot.append(())
            else:
                value.append(-1)
                hot.append(tuple(range(len(names), len(names) + len(column.categories))))
                names += [f"{column.name}{_SEPARATOR}{c}" for c in column.categories]
                gap.append(len(names) if column.gaps else -1)
                if column.gaps:
                    names.append(f"{column.name}{_SEPARATOR}(missing)")
        return cls(tuple(columns), tuple(value), tuple(gap), tuple(hot), tuple(names))

    @property
    def spelled_out(self) -> bool:
        """Whether any column needs more than its one numeric feature."""
        return any(c.gaps or c.categories is not None for c in self.columns)

    def inputs(self, fills: dict[int, float] | None = None) -> InputMap:
        """How the custodian's columns become these features; ``fills`` gives, per numeric
        column without a gap feature, the value a gap routes as (a booster that reads a gap
        as 0, or sends it past every threshold on the left)."""
        mapped: list[InputColumn] = []
        for j, column in enumerate(self.columns):
            if column.categories is None:
                if column.gaps:
                    mapped.append(NumberColumn(column.name, self.value[j], gap=self.gap[j]))
                else:  # every column named, so rows come back in the table's order
                    mapped.append(NumberColumn(column.name, self.value[j],
                                               fill=(fills or {}).get(j)))
                continue
            features = self.hot[j] + ((self.gap[j],) if column.gaps else ())
            categories = column.categories + ((np.nan,) if column.gaps else ())
            mapped.append(OneHotColumn(column.name, features, categories,
                                       fallback=(np.nan,) if column.gaps_unsure else ()))
        return InputMap(tuple(mapped), self.names)

    def possible(self, column: int) -> frozenset[int]:
        """The codes a categorical column's row may hold before any split."""
        codes = set(range(len(self.columns[column].categories or ())))
        return frozenset(codes | ({GAP} if self.columns[column].gaps else set()))


def spell_out(tree: RoutedTree, layout: Layout, n_leaves: int, index: int = 0
              ) -> tuple[Nodes, np.ndarray]:
    """The tree over the layout's features, and the original leaves it kept, in order.

    A leaf no row can reach once gaps and categories are followed is dropped (its index is
    missing from the second array); the caller keeps the per-leaf arrays of the others.
    """
    out = _Builder(tree, layout, index)
    out.emit(0, {})
    kept = np.unique(np.asarray(out.leaf)[np.asarray(out.feature) < 0])
    renumber = np.full(n_leaves, -1, dtype=np.int64)
    renumber[kept] = np.arange(kept.size)
    feature = np.asarray(out.feature, dtype=np.int64)
    leaf = np.where(feature < 0, renumber[np.maximum(np.asarray(out.leaf), 0)], -1)
    nodes = (feature, np.asarray(out.threshold, dtype=np.float64),
             np.asarray(out.left, dtype=np.int64), np.asarray(out.right, dtype=np.int64),
             leaf.astype(np.int64))
    return nodes, kept


class _Builder:
    """Grows the spelled-out tree node by node (children after their parent)."""

    def __init__(self, tree: RoutedTree, layout: Layout, index: int) -> None:
        self.tree, self.layout, self.index = tree, layout, index
        self.feature: list[int] = []
        self.threshold: list[float] = []
        self.left: list[int] = []
        self.right: list[int] = []
        self.leaf: list[int] = []

    def _node(self, feature: int, threshold: float, leaf: int = -1) -> int:
        if len(self.feature) >= MAX_NODES:
            raise UnsupportedModelError(
                f"tree {self.index} grows past {MAX_NODES:,} nodes once its gap and category "
                "splits are spelled out; treeleaks does not read a booster this large")
        self.feature.append(feature)
        self.threshold.append(threshold)
        self.left.append(-1)
        self.right.append(-1)
        self.leaf.append(leaf)
        return len(self.feature) - 1

    def emit(self, node: int, settled: dict[int, Any]) -> int:
        """The spelled-out subtree of ``node`` given what the path settled per column: a
        numeric column's gap (True/False), a categorical column's possible codes."""
        tree = self.tree
        column = int(tree.feature[node])
        if column < 0:
            return self._node(-1, np.nan, int(tree.leaf[node]))
        categories = tree.category_split(node)
        if categories is None:
            return self._numeric(node, column, settled)
        return self._categorical(node, column, categories, settled)

    def _numeric(self, node: int, column: int, settled: dict[int, Any]) -> int:
        tree, layout = self.tree, self.layout
        gap_side = int(tree.left[node] if tree.gap_left[node] else tree.right[node])
        if layout.gap[column] < 0 or settled.get(column) is False:
            return self._value_split(node, column, settled)
        if settled.get(column) is True:
            return self.emit(gap_side, settled)
        here = self._node(layout.gap[column], 0.5)
        self.left[here] = self._value_split(node, column, {**settled, column: False})
        self.right[here] = self.emit(gap_side, {**settled, column: True})
        return here

    def _value_split(self, node: int, column: int, settled: dict[int, Any]) -> int:
        tree = self.tree
        threshold = float(tree.threshold[node])
        if np.isinf(threshold):  # every value one way (scikit-learn: gaps alone the other)
            return self.emit(int(tree.left[node] if threshold > 0 else tree.right[node]),
                             settled)
        here = self._node(self.layout.value[column], threshold)
        self.left[here] = self.emit(int(tree.left[node]), settled)
        self.right[here] = self.emit(int(tree.right[node]), settled)
        return here

    def _categorical(self, node: int, column: int, categories: frozenset[int],
                     settled: dict[int, Any]) -> int:
        tree, layout = self.tree, self.layout
        possible = settled.get(column, layout.possible(column))
        to_left = frozenset(c for c in possible if (
            bool(tree.gap_left[node]) if c == GAP else c in categories))
        to_right = possible - to_left
        left, right = int(tree.left[node]), int(tree.right[node])
        if not to_right or not to_left:
            return self.emit(left if to_right == frozenset() else right,
                             {**settled, column: possible})
        # a chain over the smaller side: each of its codes leads to that side's subtree
        chained, side, other, rest = ((to_left, left, right, to_right)
                                      if len(to_left) <= len(to_right)
                                      else (to_right, right, left, to_left))
        codes = sorted(chained)
        first = here = -1
        for code in codes:
            feature = layout.gap[column] if code == GAP else layout.hot[column][code]
            test = self._node(feature, 0.5)
            if here < 0:
                first = test
            else:
                self.left[here] = test
            self.right[test] = self.emit(side, {**settled, column: frozenset({code})})
            here = test
        self.left[here] = self.emit(other, {**settled, column: rest})
        return first


def spell_imputed(tree: Tree, imputed: dict[int, tuple[int, float]], names: tuple[str, ...],
                  index: int = 0) -> Tree:
    """``tree`` (over a pipeline's features) with its imputed gaps routed as the pipeline
    routes them: ``imputed`` maps a value feature to its gap indicator and fill value.

    The tree saw a gap as the fill with its indicator at 1, so a split on the value sends a
    gap to the fill's side and a split on the indicator sends it right: spelled out over the
    same features, a gap row's value no longer matters and every row the reconstruction
    gives is one the pipeline can produce.
    """
    if not imputed or not np.isin(tree.feature, [*imputed, *(g for g, _ in imputed.values())]
                                  ).any():
        return tree
    column_of_gap = {gap: value for value, (gap, _) in imputed.items()}
    feature = tree.feature.copy()
    threshold = tree.threshold.astype(np.float64).copy()
    gap_left = np.zeros(len(feature), dtype=bool)
    for node in np.flatnonzero(feature >= 0):
        f = int(feature[node])
        if f in imputed:
            gap_left[node] = imputed[f][1] <= threshold[node]
        elif f in column_of_gap:  # indicator <= t: every value left, a gap right
            feature[node], threshold[node] = column_of_gap[f], np.inf
    layout = Layout(
        columns=tuple(Column(name, None, f in imputed) for f, name in enumerate(names)),
        value=tuple(range(len(names))),
        gap=tuple(imputed[f][0] if f in imputed else -1 for f in range(len(names))),
        hot=((),) * len(names), names=names)
    routed = RoutedTree(feature, threshold, tree.left, tree.right, tree.leaf_of_node,
                        gap_left)
    nodes, kept = spell_out(routed, layout, tree.n_leaves, index)
    check_kept(kept, tree.counts.sum(axis=1), f"tree {index}", "counts",
               "gaps, sent the imputer's fill's way")
    return kept_leaves(tree, nodes, kept)


def kept_leaves(tree: Tree, nodes: Nodes, kept: np.ndarray) -> Tree:
    """``tree`` on ``nodes``, its per-leaf arrays kept for the leaves ``kept``."""
    def of(values: np.ndarray | None) -> np.ndarray | None:
        return None if values is None else values[kept]

    return dataclasses.replace(
        tree, feature=nodes[0], threshold=nodes[1], left=nodes[2], right=nodes[3],
        leaf_of_node=nodes[4], counts=tree.counts[kept], n_samples=of(tree.n_samples),
        values=of(tree.values), impurity=of(tree.impurity), nodes=None)  # other nodes now


def check_kept(kept: np.ndarray, rows: np.ndarray, where: str, field: str, routing: str
               ) -> None:
    """Refuse a leaf that holds rows (``rows``, its file field ``field``) although no value
    reaches it once gaps and categories are routed as ``routing`` says: the two fields
    contradict each other, so the file was edited."""
    dropped = np.setdiff1d(np.flatnonzero(np.asarray(rows) > 0), kept)
    if dropped.size:
        leaf = int(dropped[0])
        raise ModelFormatError(
            f"the file's values contradict each other at {where} leaf {leaf}: its {field} "
            f"holds {rows[leaf]:g} but no row can reach it through the splits' {routing}: "
            "edited or truncated?")


class Routing(Protocol):
    """A booster reader's account of its gaps and categories: the input map, and facts."""

    facts: dict[str, Any]

    def inputs(self) -> InputMap:
        """How the table's columns become the model's features."""
        ...


def with_routing(model: ReleasedModel, routing: Routing | None) -> ReleasedModel:
    """The model with the way its table's columns become its features, and what the
    routing says, when its splits route gaps or categories."""
    if routing is not None:
        model.inputs = routing.inputs()
        model.facts.update(routing.facts)
    return model


def without_gap_features(model: ReleasedModel, gaps: set[int]) -> tuple[ReleasedModel,
                                                                        np.ndarray]:
    """``model`` with the gap features ``gaps`` gone: every split on one sends rows the
    way a value goes (the feature is 0), and the leaves only a gap reached are dropped.
    Also the new index of each old feature (-1: dropped).

    For a stripped file read with gap features for columns that held none: its counts gone,
    only a split's gap side shows gaps, so a pipeline whose steps never leave the column
    missing settles them here. Per-leaf arrays are kept for the leaves that stay.
    """
    renumber = np.full(len(model.feature_names), -1, dtype=np.int64)
    kept_features = [f for f in range(len(model.feature_names)) if f not in gaps]
    renumber[kept_features] = np.arange(len(kept_features))
    trees = [_settled(tree, gaps, renumber) for tree in model.trees]
    settled = dataclasses.replace(
        model, trees=trees, feature_names=[model.feature_names[f] for f in kept_features],
        revealed={int(renumber[f]): v for f, v in model.revealed.items() if renumber[f] >= 0},
        inputs=None)
    settled.validate()
    return settled, renumber


def _settled(tree: Tree, gaps: set[int], renumber: np.ndarray) -> Tree:
    """``tree`` with each split on a feature of ``gaps`` replaced by its left side (the
    feature 0), features renumbered, per-leaf arrays kept for the leaves still reached."""
    nodes: tuple[list[int], list[float], list[int], list[int], list[int]] = (
        [], [], [], [], [])

    def emit(node: int) -> int:
        while tree.feature[node] in gaps:  # gap <= 0.5: the value's side
            node = int(tree.left[node])
        here, split = len(nodes[0]), int(tree.feature[node])
        nodes[0].append(int(renumber[split]) if split >= 0 else -1)
        nodes[1].append(float(tree.threshold[node]))
        nodes[2].append(-1)
        nodes[3].append(-1)
        nodes[4].append(int(tree.leaf_of_node[node]))
        if split >= 0:
            nodes[2][here] = emit(int(tree.left[node]))
            nodes[3][here] = emit(int(tree.right[node]))
        return here

    emit(0)
    feature, leaf = np.asarray(nodes[0], np.int64), np.asarray(nodes[4], np.int64)
    kept = np.unique(leaf[feature < 0])
    order = np.full(tree.n_leaves, -1, dtype=np.int64)
    order[kept] = np.arange(kept.size)
    return kept_leaves(tree, (feature, np.asarray(nodes[1], np.float64),
                              np.asarray(nodes[2], np.int64), np.asarray(nodes[3], np.int64),
                              np.where(feature < 0, order[np.maximum(leaf, 0)], -1)), kept)
