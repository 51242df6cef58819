"""Rows every dataset holds, found by narrowing boxes from single-row leaves.

A leaf whose count of class c is 1 holds exactly one training row of class c. That row lies
in the leaf's box and, in every other tree, in a leaf holding rows of class c whose box
meets its own. Narrowing the box to the hull of those leaves, tree by tree, until nothing
changes often leaves one leaf per tree: the row's cell of the common refinement is then
known, in every consistent dataset. Taking that row out of the counts empties leaves and
makes new single-row leaves, so the narrowing goes on, round after round.

This needs no list of cells, so it runs before cell generation: on 100 full-depth trees
over 100 one-hot columns (N=100) it pins 95 to 100 of the 100 rows in 1 to 3.5 s, and the
cells of the rest are few enough to list. Raw numerical columns rarely narrow to one leaf per tree,
so there it finds little. Figures in docs/engine.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from treeleaks.counts.cells import Cells, cell_boxes
from treeleaks.counts.paths import leaf_hulls
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.runtime.progress import ProgressCallback, report


@dataclass
class Peeled:
    """Rows proven to be in every dataset consistent with the counts: row i lies in leaf
    ``leaves[i, t]`` of tree t and has class ``cls[i]``; a cell may hold several of them.
    ``complete``: the narrowing reached its fixed point before the deadline."""

    leaves: np.ndarray
    cls: np.ndarray
    rounds: int
    complete: bool

    def __len__(self) -> int:
        return int(self.cls.size)


class _Leaves:
    """Every leaf of the forest as one row of a stacked array: box, tree, class counts.

    A leaf of several paths (a tree read from a table with gaps or categories) is taken as
    the hull of their boxes: it holds the leaf's rows, so narrowing to hulls stays sound.
    """

    def __init__(self, model: ReleasedModel) -> None:
        n_features = len(model.feature_names)
        lower, upper, tree, index = [], [], [], []
        for t, one in enumerate(model.trees):
            lo, hi = leaf_hulls(one, n_features)
            lower.append(lo)
            upper.append(hi)
            tree.append(np.full(one.n_leaves, t))
            index.append(np.arange(one.n_leaves))
        self.lower, self.upper = np.vstack(lower), np.vstack(upper)
        self.tree, self.index = np.concatenate(tree), np.concatenate(index)
        self.counts = np.vstack([one.counts for one in model.trees]).astype(np.int64)
        self.n_trees = model.n_trees
        self.offset = np.cumsum([0] + [one.n_leaves for one in model.trees[:-1]])  # per tree


def peel_rows(model: ReleasedModel, schema: FeatureSchema, deadline: float,
              progress: ProgressCallback | None = None) -> Peeled:
    """The rows the narrowing pins (see the module doc), until its fixed point or
    ``deadline`` (``time.perf_counter()``), reporting stage ``pin`` after each round.
    Forests with pooled trees (side knowledge without the label) are left alone: their
    counts do not say a row's class."""
    empty = Peeled(np.zeros((0, model.n_trees), dtype=np.int64), np.zeros(0, dtype=np.int64),
                   0, True)
    if model.bootstrap or any(tree.pooled for tree in model.trees):
        return empty
    peeler = _Peeler(_Leaves(model), schema.feasibility())
    rounds = 0
    while True:
        rounds += 1
        pinned_before = len(peeler.found_cls)
        for anchor, cls in zip(*np.nonzero(peeler.leaves.counts == 1)):
            if time.perf_counter() >= deadline:
                return _result(peeler.found_leaves, peeler.found_cls, model.n_trees, rounds,
                               False)
            peeler.narrow(int(anchor), int(cls))
        report(progress, "pin", len(peeler.found_cls), model.n_rows, round=rounds)
        if len(peeler.found_cls) == pinned_before:
            return _result(peeler.found_leaves, peeler.found_cls, model.n_trees, rounds, True)


class _Peeler:
    """The narrowing's state across rounds: the counts left, the rows pinned so far (their
    cells and classes), and what each single-row leaf's narrowing last ended with."""

    def __init__(self, leaves: _Leaves,
                 feasible: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
        self.leaves, self.feasible = leaves, feasible
        self.found_leaves: list[np.ndarray] = []
        self.found_cls: list[int] = []
        # per (anchor leaf, class): the candidate leaves its narrowing ended with, and when
        self.settled: dict[tuple[int, int], tuple[np.ndarray, int]] = {}
        # when each (leaf, class) ran out of rows
        self.emptied_at = np.full(leaves.counts.shape, -1)

    def narrow(self, anchor: int, cls: int) -> None:
        """Narrow the row of class ``cls`` in single-row leaf ``anchor``, unless its row is
        pinned already or its candidates are unchanged; pin it when one cell is left."""
        leaves, emptied_at = self.leaves, self.emptied_at
        if leaves.counts[anchor, cls] != 1:
            return  # its row was pinned through another leaf this round
        key = (anchor, cls)
        before = self.settled.get(key)
        if before is not None and emptied_at[before[0], cls].max() < before[1]:
            return  # its candidates are unchanged, and so is its narrowing
        narrowed = _narrow(leaves, self.feasible, anchor, cls)
        chosen = None if narrowed is None else narrowed[0]
        if chosen is None:
            self.settled.pop(key, None)
            return
        self.settled[key] = (chosen, len(self.found_cls))
        if chosen.size == leaves.n_trees:
            self.found_leaves.append(_take_out(leaves, chosen, cls, emptied_at,
                                               len(self.found_cls)))
            self.found_cls.append(cls)


def _take_out(leaves: _Leaves, chosen: np.ndarray, cls: int, emptied_at: np.ndarray,
              n_pinned: int) -> np.ndarray:
    """Take a row of class ``cls`` pinned to a cell (one leaf per tree, ``chosen``) out of
    the counts at once, so the other single-row leaves it lies in are not narrowed for it
    again; mark the (leaf, class) it empties as emptied at ``n_pinned``. Its cell, the
    leaf of each tree in tree order."""
    cell = leaves.index[chosen[np.argsort(leaves.tree[chosen])]]
    rows = leaves.offset + cell
    leaves.counts[rows, cls] -= 1
    emptied_at[rows[leaves.counts[rows, cls] == 0], cls] = n_pinned
    return cell


def without_pinned(model: ReleasedModel, peeled: Peeled) -> ReleasedModel:
    """``model`` with the pinned rows taken out of its counts: the counts of the other
    rows, whose datasets, with the pinned rows added, are every dataset of ``model``."""
    taken = model.leaf_counts_at(peeled.leaves, peeled.cls)
    return replace(model, trees=[replace(tree, counts=tree.counts - count)
                                 for tree, count in zip(model.trees, taken)])


def with_pinned(model: ReleasedModel, cells: Cells, peeled: Peeled) -> Cells:
    """``cells`` (listed for the other rows) and the pinned rows' cells, each cell once."""
    leaves = np.vstack([cells.leaf.astype(np.int64), peeled.leaves])
    allowed = np.vstack([cells.allowed,
                         np.eye(cells.allowed.shape[1], dtype=bool)[peeled.cls]])
    unique, where = np.unique(leaves, axis=0, return_inverse=True)
    merged = np.zeros((len(unique), allowed.shape[1]), dtype=bool)
    np.logical_or.at(merged, where.ravel(), allowed)
    return Cells(*cell_boxes(model, unique), merged, unique.astype(cells.leaf.dtype))


def _narrow(leaves: _Leaves, feasible: Callable[[np.ndarray, np.ndarray], np.ndarray],
            anchor: int, cls: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The leaves of class ``cls`` the row of a single-row leaf may lie in, once its box is
    narrowed to their hull tree by tree, and that box; None when some tree has none left
    (the counts leave that row nowhere to go, which the solvers will report)."""
    lower, upper = leaves.lower[anchor], leaves.upper[anchor]
    candidates = np.flatnonzero(leaves.counts[:, cls] > 0)
    while True:
        lo = np.maximum(leaves.lower[candidates], lower)
        hi = np.minimum(leaves.upper[candidates], upper)
        meets = feasible(lo, hi)
        candidates, lo, hi = candidates[meets], lo[meets], hi[meets]
        trees = leaves.tree[candidates]  # candidates are in tree order
        starts = np.searchsorted(trees, np.arange(leaves.n_trees))
        if np.any(np.diff(np.append(starts, trees.size)) == 0):
            return None
        new_lower = np.maximum(lower, np.minimum.reduceat(lo, starts, axis=0).max(axis=0))
        new_upper = np.minimum(upper, np.maximum.reduceat(hi, starts, axis=0).min(axis=0))
        if np.array_equal(new_lower, lower) and np.array_equal(new_upper, upper):
            return candidates, lower, upper
        lower, upper = new_lower, new_upper


@dataclass
class Region:
    """Where the one row of a single-row leaf lies: a box (``lower < x <= upper``) and,
    per tree, the leaves that may hold it (stacked per tree in tree order)."""

    lower: np.ndarray
    upper: np.ndarray
    leaves: list[np.ndarray]

    @property
    def pinned(self) -> bool:
        """Whether every tree has one leaf left: the row's cell is known."""
        return all(leaves.size == 1 for leaves in self.leaves)


def single_row_regions(model: ReleasedModel, schema: FeatureSchema, deadline: float
                       ) -> list[tuple[int, int, Region]]:
    """For every leaf of one row (of a model with one count column), ``(tree, leaf,
    region)``: the row's box narrowed as the peeling narrows it, with its candidate leaves,
    until ``deadline`` (``time.perf_counter()``). Leaves whose row has nowhere to go are
    left out."""
    leaves = _Leaves(model)
    feasible = schema.feasibility()
    found = []
    for anchor in np.flatnonzero(leaves.counts[:, 0] == 1):
        if time.perf_counter() >= deadline:
            break
        narrowed = _narrow(leaves, feasible, int(anchor), 0)
        if narrowed is None:
            continue
        candidates, lower, upper = narrowed
        per_tree = [leaves.index[candidates[leaves.tree[candidates] == t]]
                    for t in range(leaves.n_trees)]
        found.append((int(leaves.tree[anchor]), int(leaves.index[anchor]),
                      Region(lower, upper, per_tree)))
    return found


def _result(found_leaves: list[np.ndarray], found_cls: list[int], n_trees: int, rounds: int,
            complete: bool) -> Peeled:
    leaves = (np.array(found_leaves, dtype=np.int64) if found_leaves
              else np.zeros((0, n_trees), dtype=np.int64))
    return Peeled(leaves, np.array(found_cls, dtype=np.int64), rounds, complete)
