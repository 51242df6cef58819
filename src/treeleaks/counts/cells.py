"""Lazy enumeration of the cells of a forest's common refinement.

A cell is a non-empty box that lies inside exactly one leaf of every tree. Cells are
built tree by tree: each current cell is routed down the next tree and split where a
split threshold cuts it. A cell is dropped as soon as no class can occupy it (some tree
sends it to a subtree with no training row of any class the cell still allows) or the
schema rules it out, so the 2^M corners of the feature space are never listed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from treeleaks.ir.model import ReleasedModel, Tree
from treeleaks.ir.schema import FeatureSchema
from treeleaks.runtime.limits import default_memory_mb
from treeleaks.runtime.progress import ProgressCallback, report
from treeleaks.runtime.vocabulary import Strategy

DEFAULT_MAX_CELLS = 200_000
PACK_OCCUPANTS_ABOVE = 64  # occupants per cell beyond which their flags are kept as bits


class CellBudgetExceeded(Exception):
    """Enumeration stopped: the refinement outgrew its budget after ``trees_done`` trees."""

    def __init__(self, trees_done: int, n_cells: int, reason: str) -> None:
        super().__init__(f"{reason} after {trees_done} trees ({n_cells} cells)")
        self.trees_done, self.n_cells, self.reason = trees_done, n_cells, reason


@dataclass(frozen=True)
class CellBudget:
    """Limits on enumeration: cells kept, memory their boxes take, and a wall-clock deadline
    (``time.perf_counter()`` value). Beyond them, cells are generated on demand instead."""

    max_cells: int = DEFAULT_MAX_CELLS
    memory_mb: float = field(default_factory=default_memory_mb)
    deadline: float | None = None

    def cap(self, n_features: int, n_occupants: int = 2) -> int:
        """Most cells to hold at once: each box takes two floats per feature, about five
        times over while a tree splits them (measured: 165,000 cells of 64 features,
        550 MB peak), and a byte per possible occupant (or per eight, packed)."""
        per_box = 80 * max(n_features, 1) + 5 * n_occupants + 64
        return int(min(self.max_cells, self.memory_mb * 2**20 / per_box))

    def check(self, trees_done: int, n_cells: int, n_features: int, n_occupants: int = 2) -> None:
        if n_cells > self.cap(n_features, n_occupants):
            raise CellBudgetExceeded(trees_done, n_cells, "more cells than the budget allows")
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise CellBudgetExceeded(trees_done, n_cells, "enumeration ran out of its time")


@dataclass(frozen=True)
class CellProbe:
    """How far enumeration got within a budget: a cheap estimate of a run's cost."""

    trees_done: int
    n_trees: int
    n_cells: int
    complete: bool

    @property
    def strategy(self) -> str:
        return Strategy.ENUMERATE if self.complete else Strategy.GENERATE


class Occupancy(Protocol):
    """Who may occupy a cell: ``n`` kinds of occupant, and per tree and node which of them
    a row below that node could be (`ClassOccupancy` is the exact engine's)."""

    n: int

    def presence(self, t: int, tree: Tree) -> np.ndarray:
        """``(n_nodes, n)``: whether an occupant may lie below each node of tree ``t``."""
        ...


class ClassOccupancy:
    """Occupants are classes: a row of class c may lie only below nodes with a training
    row of class c (every tree saw every row)."""

    def __init__(self, model: ReleasedModel) -> None:
        self.n = model.n_classes

    def presence(self, t: int, tree: Tree) -> np.ndarray:
        return node_presence(tree, tree.holds())


class EveryClassOccupancy:
    """Occupants are classes, and no leaf rules one out: a noisy count of 0 may hide rows
    (DP forests), so cells are cut by the splits and the schema alone."""

    def __init__(self, model: ReleasedModel) -> None:
        self.n = model.n_classes

    def presence(self, t: int, tree: Tree) -> np.ndarray:
        return np.ones((len(tree.feature), self.n), dtype=bool)


@dataclass
class Cells:
    """Boxes ``lower < x <= upper`` (``(K, M)``), the occupants each may hold (``(K, C)``
    classes for the exact engine), and the leaf each cell falls in, per tree
    (``(K, T)``)."""

    lower: np.ndarray
    upper: np.ndarray
    allowed: np.ndarray
    leaf: np.ndarray

    def __len__(self) -> int:
        return int(self.lower.shape[0])


def enumerate_cells(
    model: ReleasedModel,
    schema: FeatureSchema,
    budget: CellBudget | None = None,
    progress: ProgressCallback | None = None,
    occupancy: Occupancy | None = None,
) -> Cells:
    """All cells some occupant could occupy given exact (noise-free) leaf counts.

    By default occupants are classes: a class is possible in a cell only when every tree's
    leaf holding the cell has a positive count of it. Raises `CellBudgetExceeded` as soon
    as ``budget`` is exceeded.
    """
    occupancy = occupancy or ClassOccupancy(model)
    m, c = model.n_features, occupancy.n
    lower = np.full((1, m), -np.inf)
    upper = np.full((1, m), np.inf)
    # Many occupants (rows of a bootstrap forest) travel as bits: `_route` only ands them
    # and asks whether any is left, which bytes answer as well as Booleans.
    packed = c > PACK_OCCUPANTS_ABOVE
    allowed = np.ones((1, c), dtype=bool)
    if packed:
        allowed = np.packbits(allowed, axis=1)
    history: list[tuple[np.ndarray, np.ndarray]] = []
    # Routing stops as soon as one tree would hold more (box, node) pairs than cells are
    # allowed: the boxes they become are what takes the memory.
    width = allowed.shape[1]  # bytes of occupant flags per cell
    cap = budget.cap(m, width) if budget is not None else None
    for t, tree in enumerate(model.trees):
        presence = occupancy.presence(t, tree)
        if packed:
            presence = np.packbits(presence, axis=1)
        parent, node, allowed = _route(tree, lower, upper, allowed, presence, cap, t)
        node_lower, node_upper = tree.node_boxes(m)
        lower = np.maximum(lower[parent], node_lower[node])
        upper = np.minimum(upper[parent], node_upper[node])
        keep = schema.feasible(lower, upper)
        lower, upper, allowed = lower[keep], upper[keep], allowed[keep]
        history.append((parent[keep], tree.leaf_of_node[node[keep]]))
        if budget is not None:
            budget.check(t + 1, lower.shape[0], m, width)
        report(progress, "cells", t + 1, model.n_trees, cells=int(lower.shape[0]))
    leaf = np.zeros((lower.shape[0], len(history)), dtype=np.int32)
    index = np.arange(lower.shape[0])
    for t in range(len(history) - 1, -1, -1):
        parent, leaf_t = history[t]
        leaf[:, t] = leaf_t[index]
        index = parent[index]
    if packed:
        allowed = np.unpackbits(allowed, axis=1, count=c).astype(bool)
    return Cells(lower, upper, allowed, leaf)


def cell_boxes(model: ReleasedModel, leaves: np.ndarray, schema: FeatureSchema | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """The boxes ``(lower, upper)`` of cells given by their leaf in every tree (one row of
    ``leaves`` each): the intersection of those leaves' boxes.

    A model with leaves reached by several paths (`Tree.aliased`) gives each cell the
    first box, path by path, that every tree's leaf holds and ``schema`` allows.
    """
    m = model.n_features
    if any(tree.aliased for tree in model.trees):
        return _path_cell_boxes(model, np.asarray(leaves), schema)
    lower = np.full((len(leaves), m), -np.inf)
    upper = np.full((len(leaves), m), np.inf)
    for t, tree in enumerate(model.trees):
        leaf_lower, leaf_upper = tree.leaf_boxes(m)
        np.maximum(lower, leaf_lower[leaves[:, t]], out=lower)
        np.minimum(upper, leaf_upper[leaves[:, t]], out=upper)
    return lower, upper


MAX_PATH_BOXES = 512  # boxes kept per cell while its paths are intersected tree by tree


def _path_cell_boxes(model: ReleasedModel, leaves: np.ndarray, schema: FeatureSchema | None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """One box per cell of ``leaves``: its trees' paths intersected tree by tree, boxes
    left empty or outside the schema dropped, and the first one left kept (a cell left
    with none keeps the first box it had when the last ones went, empty).

    Every cell's boxes are held in one array, grouped by cell in the order of the paths
    they combine, so each tree is one step over all cells at once.
    """
    m, n = model.n_features, len(leaves)
    out_lower, out_upper = np.empty((n, m)), np.empty((n, m))
    cell = np.arange(n)  # each box's cell, ascending
    lower, upper = np.full((n, m), -np.inf), np.full((n, m), np.inf)
    for t, tree in enumerate(model.trees):
        path_lower, path_upper, leaf_of_path = _paths_of(tree, m)
        order = np.argsort(leaf_of_path, kind="stable")  # a leaf's paths in node order
        count = np.bincount(leaf_of_path, minlength=tree.n_leaves)
        start = np.cumsum(count) - count
        leaf = leaves[cell, t]
        width = count[leaf]
        parent = np.repeat(np.arange(cell.size), width)
        offset = np.arange(parent.size) - np.repeat(np.cumsum(width) - width, width)
        path = order[start[leaf[parent]] + offset]
        lower = np.maximum(lower[parent], path_lower[path])
        upper = np.minimum(upper[parent], path_upper[path])
        cell = cell[parent]
        keep = (lower < upper).all(axis=1)
        if schema is not None:
            keep &= schema.feasible(lower, upper)
        alive = np.zeros(n, dtype=bool)
        alive[cell[keep]] = True
        gone = _firsts(cell) & ~alive[cell]
        out_lower[cell[gone]], out_upper[cell[gone]] = lower[gone], upper[gone]
        kept = np.flatnonzero(keep)
        kept = kept[_ranks(cell[kept]) < MAX_PATH_BOXES]
        lower, upper, cell = lower[kept], upper[kept], cell[kept]
    first = _firsts(cell)
    out_lower[cell[first]], out_upper[cell[first]] = lower[first], upper[first]
    return out_lower, out_upper


def _firsts(group: np.ndarray) -> np.ndarray:
    """Whether each entry of a grouped (sorted) array is its group's first."""
    return np.concatenate([group[:1] == group[:1], group[1:] != group[:-1]])


def _ranks(group: np.ndarray) -> np.ndarray:
    """Each entry's position within its group, in a grouped (sorted) array."""
    index = np.arange(group.size)
    starts = np.maximum.accumulate(np.where(_firsts(group), index, 0))
    return index - starts


def _paths_of(tree: Tree, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`Tree.path_boxes`, computed once per tree."""
    cached = getattr(tree, "_path_boxes", None)
    if cached is None or cached[0].shape[1] != m:
        cached = tree.path_boxes(m)
        tree._path_boxes = cached  # type: ignore[attr-defined]
    return cached


def node_presence(tree: Tree, leaf_presence: np.ndarray) -> np.ndarray:
    """``(n_nodes, n)``: whether some leaf below each node has ``leaf_presence`` (given per
    leaf, ``(n_leaves, n)``)."""
    presence = np.zeros((len(tree.feature), leaf_presence.shape[1]), dtype=bool)
    is_leaf = tree.feature < 0
    presence[is_leaf] = leaf_presence[tree.leaf_of_node[is_leaf]]
    for node in reversed(tree.internal_nodes()):
        presence[node] = presence[tree.left[node]] | presence[tree.right[node]]
    return presence


def probe_cells(
    model: ReleasedModel, schema: FeatureSchema, budget: CellBudget | None = None
) -> CellProbe:
    """Enumerate within ``budget`` (default: the engine's) and say how far it got; for
    noisy counts (DP), as the DP attack lists them (every class anywhere)."""
    occupancy = EveryClassOccupancy(model) if model.noise is not None else None
    try:
        cells = enumerate_cells(model, schema, budget or CellBudget(), occupancy=occupancy)
    except CellBudgetExceeded as stop:
        return CellProbe(stop.trees_done, model.n_trees, stop.n_cells, False)
    return CellProbe(model.n_trees, model.n_trees, len(cells), True)


def _route(
    tree: Tree,
    lower: np.ndarray,
    upper: np.ndarray,
    allowed: np.ndarray,
    presence: np.ndarray,
    cap: int | None = None,
    trees_done: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Route boxes down ``tree``: every (box, leaf) pair that overlaps and can hold an
    occupant (``presence``: per node, which occupants may lie below it).

    Only indices move; a box's bound on the split feature is narrowed by the node's own
    region. Returns the box index, the leaf node, and the occupants still allowed, per pair.
    """
    node_lower, node_upper = tree.node_boxes(lower.shape[1])
    box = np.arange(lower.shape[0])
    node = np.zeros(box.size, dtype=np.int64)
    allowed = allowed & presence[0]
    alive = allowed.any(axis=1)
    box, node, allowed = box[alive], node[alive], allowed[alive]
    done: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    while box.size:
        at_leaf = tree.feature[node] < 0
        done.append((box[at_leaf], node[at_leaf], allowed[at_leaf]))
        box, node, allowed = box[~at_leaf], node[~at_leaf], allowed[~at_leaf]
        f, t = tree.feature[node], tree.threshold[node]
        low = np.maximum(lower[box, f], node_lower[node, f])
        high = np.minimum(upper[box, f], node_upper[node, f])
        left, right = np.flatnonzero(low < t), np.flatnonzero(high > t)
        box = np.concatenate([box[left], box[right]])
        node = np.concatenate([tree.left[node[left]], tree.right[node[right]]])
        allowed = np.concatenate([allowed[left], allowed[right]]) & presence[node]
        alive = allowed.any(axis=1)
        box, node, allowed = box[alive], node[alive], allowed[alive]
        if cap is not None and box.size + sum(part[0].size for part in done) > cap:
            raise CellBudgetExceeded(trees_done, int(box.size), "more cells than the budget allows")
    if not done:  # no occupant anywhere (every count is zero): no cell
        return box, node, allowed
    return tuple(np.concatenate(parts) for parts in zip(*done))
