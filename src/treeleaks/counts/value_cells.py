"""Rows of a regression forest whose trees each saw every row once, one target at a time.

In a fully grown regression tree every leaf holds rows of one target, or rows sharing
every feature whose targets its value and impurity tell apart (`target_classes`), so the
rows of target v lie in the leaves holding v, and each such leaf holds a known number of
them: the problem splits by target. The rows outside the leaves of several targets come
first (those leaves set aside), then, with the time left, the targets left out or that the
split leaves give more rows are read again with them. A leaf of
several targets not told apart (undecided) holds rows left out rather than given its mean.
Each tree's leaves holding v hold the same number m_v of its rows (every tree saw every row
once); a target whose trees disagree is one no reading explains (an undecided leaf holds
some of its rows in some trees), and keeps its first reading. For the others, the *cells*
of v are the intersections of one leaf holding v per tree (one path of it, where a tree
read from a table with gaps reaches a leaf by several: `treeleaks.counts.paths`) that hold
a value the columns allow (an extra-trees split of a 0/1 column at 0.3 and another at 0.7
meet in none), built tree by tree; the rows of v are a multiset of cells meeting every
leaf's count. With one row of v there is one cell, and it is that row's box. A cell whose
multiplicity the linear relaxation pins to one value holds that many rows in every
consistent dataset: its rows are proven.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import LinearConstraint, linprog, milp

from treeleaks.counts.paths import Paths, tree_paths
from treeleaks.counts.target_classes import LeafTargets, leaf_targets
from treeleaks.ir.model import ReleasedModel

__all__ = ["TargetRows", "TargetRowsInfeasible", "rows_by_target"]

MAX_CELLS = 20_000  # most cells of one target kept while intersecting; beyond, it is left out
MAX_PROOF_CELLS = 40  # most cells of one target whose multiplicities are bounded by LP
SPLIT_SHARE = 0.2  # of the time to the deadline, at most, for splitting leaves of several
Feasible = Callable[[np.ndarray, np.ndarray], np.ndarray]  # boxes → which hold a value


class TargetRowsInfeasible(Exception):
    """A target's leaves admit no rows: the file's values contradict each other."""


@dataclass
class TargetRows:
    """Rows found target by target: row i lies in ``lower[i] < x <= upper[i]`` with target
    index ``target[i]`` (into ``targets``), proven where ``proven[i]``. ``left_out`` lists
    the targets whose rows were not rebuilt, ``out_of_time`` whether the deadline cut it."""

    targets: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    target: np.ndarray
    proven: np.ndarray
    left_out: list[int]
    out_of_time: bool = False


def rows_by_target(model: ReleasedModel, deadline: float,
                   feasible: Feasible | None = None) -> TargetRows:
    """The rows of a regression model whose trees each saw every row once (see the module
    doc), within ``deadline`` (``time.perf_counter()``); ``feasible`` tells the boxes holding a
    value the columns allow (`FeatureSchema.feasibility`: a box between two thresholds of a
    0/1 column holds none); raises `TargetRowsInfeasible` naming the target and tree whose
    counts no rows meet."""
    feasible = feasible or _nonempty
    quick = leaf_targets(model, -np.inf)  # the targets, and which leaves hold several
    paths = [tree_paths(tree, model.n_features) for tree in model.trees]
    if all(tree.impurity is not None for tree in model.trees) and not quick.mixed:
        _check_pure_trees_agree(quick.per_value(), quick)  # every leaf of one target
    found = _rows_of(model, quick.pure(), paths, feasible, deadline, quick.targets.size)
    if not quick.mixed or time.perf_counter() > deadline:
        return _sorted(found)
    # with the time left, the targets left out or whose split leaves give them more rows,
    # read again
    held = leaf_targets(model, time.perf_counter() + SPLIT_SHARE * max(
        deadline - time.perf_counter(), 0.0))
    gains = np.union1d(np.flatnonzero(held.per_value()[0] > quick.pure().per_value()[0]),
                       found.left_out).astype(np.int64)
    better = _rows_of(model, held, paths, feasible, deadline, held.targets.size, gains)
    redone = np.setdiff1d(gains, better.left_out)
    keep = ~np.isin(found.target, redone)
    return _sorted(TargetRows(
        held.targets, *(np.concatenate([getattr(found, name)[keep], getattr(better, name)])
                        for name in ("lower", "upper", "target", "proven")),
        np.setdiff1d(found.left_out, redone).tolist(),
        found.out_of_time or better.out_of_time))


def _sorted(found: TargetRows) -> TargetRows:
    """The rows ordered by target."""
    order = np.argsort(found.target, kind="stable")
    return TargetRows(found.targets, found.lower[order], found.upper[order],
                      found.target[order], found.proven[order], sorted(found.left_out),
                      found.out_of_time)


def _rows_of(model: ReleasedModel, held: LeafTargets, paths: list[Paths], feasible: Feasible,
             deadline: float, n_targets: int,
             wanted: np.ndarray | None = None) -> TargetRows:
    """The rows of the ``wanted`` targets (all by default) that every tree's leaves agree
    on, as ``held`` reads the leaves, cheapest first (see `rows_by_target`)."""
    targets = held.targets
    is_wanted = np.zeros(n_targets, dtype=bool)
    is_wanted[np.arange(n_targets) if wanted is None else wanted] = True
    boxes = [(p.lower, p.upper) for p in paths]
    # per tree, (paths, targets): which paths' leaves hold each target
    on_path = [(held.matrix(t, tree.n_leaves)[p.leaf] > 0).tocsc()
               for t, (tree, p) in enumerate(zip(model.trees, paths))]
    per_value = held.per_value()
    agreed = (per_value == per_value[0]).all(axis=0) & is_wanted & (per_value[0] > 0)
    paths_of = np.vstack([np.diff(holds.indptr) for holds in on_path])
    single = agreed & (paths_of == 1).all(axis=0)  # one path per tree: one cell
    low, high = _single_cells(boxes, on_path, single)
    empty = ~feasible(low, high)
    if empty.any():
        v = np.flatnonzero(single)[int(np.argmax(empty))]
        where = ("any point" if (low[np.argmax(empty)] >= high[np.argmax(empty)]).any()
                 else "any value the columns allow (0/1, whole-number and one-hot columns)")
        raise TargetRowsInfeasible(
            f"the leaves of value {targets[v]:g} do not meet in {where}: the file's values "
            "contradict each other (edited or truncated?)")
    take = np.repeat(np.flatnonzero(single), per_value[0, single].astype(np.int64))
    at = np.repeat(np.arange(single.sum()), per_value[0, single].astype(np.int64))
    lowers, uppers, found, proven = [low[at]], [high[at]], [take], [np.ones(len(at), bool)]
    left_out = np.flatnonzero(~agreed & is_wanted).tolist()
    out_of_time = False
    several = np.flatnonzero(agreed & ~single)
    several = several[np.argsort(per_value[0, several], kind="stable")]  # fewest rows first
    slowest = 0.0  # the longest a target took: one is not started unless that is left
    for i, v in enumerate(several):
        started = time.perf_counter()
        if started + slowest > deadline:
            out_of_time = True
            left_out.extend(several[i:].tolist())
            break
        on = [np.sort(holds.indices[holds.indptr[v]:holds.indptr[v + 1]])
              for holds in on_path]
        cells = _cells(boxes, on, feasible)
        if cells is None:
            left_out.append(int(v))
            slowest = max(slowest, time.perf_counter() - started)
            continue
        cell_low, cell_high, cell_paths = cells
        A, b = _equations(_leaves_held(cell_paths, paths), held, int(v))
        counts = _multiplicities(A, b, int(v), targets[v])
        fixed = _fixed(A, b, counts)
        take = np.repeat(np.arange(len(counts)), counts)
        lowers.append(cell_low[take]), uppers.append(cell_high[take])
        found.append(np.full(len(take), v)), proven.append(fixed[take])
        slowest = max(slowest, time.perf_counter() - started)
    return TargetRows(targets, np.vstack(lowers), np.vstack(uppers),
                      np.concatenate(found).astype(np.int64), np.concatenate(proven),
                      left_out, out_of_time)


def _check_pure_trees_agree(per_value: np.ndarray, held: LeafTargets) -> None:
    """Every leaf holds one target (their impurities say so), so every tree holds each
    target's rows: a tree that holds another number of them contradicts the others (an
    edited leaf value, count or impurity). Raises `TargetRowsInfeasible` naming it."""
    usual = np.median(per_value, axis=0)
    off = per_value != usual
    if not off.any():
        return
    over = off & (per_value > usual)  # a leaf holding a value the other trees do not
    t, v = map(int, np.argwhere(over if over.any() else off)[0])
    leaves = held.leaf[t][held.target[t] == v]
    target = held.targets[v]
    where = (f"its leaf {leaves[0]} has value {target:g}" if len(leaves)
             else f"it has no leaf of value {target:g}")
    raise TargetRowsInfeasible(
        f"tree {t} holds {per_value[t, v]:g} rows of target {target:g} where most trees "
        f"hold {np.median(per_value[:, v]):g} ({where}), and every leaf's impurity says "
        "it holds one target: the file's values contradict each other at tree "
        f"{t}{f' leaf {leaves[0]}' if len(leaves) else ''} (edited or truncated?)")


def _single_cells(boxes: list[tuple[np.ndarray, np.ndarray]], on_path: list[sp.csc_matrix],
                  single: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For the targets with one path in every tree (``on_path``: per tree, which paths'
    leaves hold each target): the intersection of those paths."""
    m = boxes[0][0].shape[1]
    low = np.full((int(single.sum()), m), -np.inf)
    high = np.full((int(single.sum()), m), np.inf)
    for (path_low, path_high), holds in zip(boxes, on_path):
        path_of = holds.indices[holds.indptr[:-1][single]]  # the one path of each
        np.maximum(low, path_low[path_of], out=low)
        np.minimum(high, path_high[path_of], out=high)
    return low, high


def _nonempty(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Per box ``lower < x <= upper``, whether it holds a point (no column's domain known)."""
    return np.all(lower < upper, axis=1)


def _cells(boxes: list[tuple[np.ndarray, np.ndarray]], leaves: list[np.ndarray],
           feasible: Feasible) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The intersections of one path of the target per tree that hold a value the columns
    allow (boxes, and each cell's path per tree), trees with fewest such paths first; None
    past `MAX_CELLS`."""
    order = sorted(range(len(leaves)), key=lambda t: (len(leaves[t]), t))
    first = order[0]
    low, high = boxes[first][0][leaves[first]], boxes[first][1][leaves[first]]
    held = np.full((len(low), len(leaves)), -1, dtype=np.int64)
    held[:, first] = leaves[first]
    for t in order[1:]:
        leaf_low, leaf_high = boxes[t][0][leaves[t]], boxes[t][1][leaves[t]]
        new_low = np.maximum(low[:, None], leaf_low[None])
        new_high = np.minimum(high[:, None], leaf_high[None])
        shape = new_low.shape
        held_point = feasible(new_low.reshape(-1, shape[2]), new_high.reshape(-1, shape[2]))
        cell, leaf = np.nonzero(held_point.reshape(shape[:2]))
        if len(cell) > MAX_CELLS:
            return None
        low, high = new_low[cell, leaf], new_high[cell, leaf]
        held = held[cell]
        held[:, t] = leaves[t][leaf]
    return low, high, held


def _leaves_held(held: np.ndarray, paths: list[Paths]) -> np.ndarray:
    """Each cell's leaf per tree, from its path per tree."""
    return np.column_stack([p.leaf[held[:, t]] for t, p in enumerate(paths)])


def _equations(leaves: np.ndarray, held: LeafTargets, v: int) -> tuple[np.ndarray,
                                                                         np.ndarray]:
    """Each (tree, leaf holding target ``v``): which cells (by leaf, ``leaves``) lie in it,
    and its rows of ``v``."""
    rows, released = [], []
    for t in range(leaves.shape[1]):
        at = held.target[t] == v
        for leaf, count in zip(held.leaf[t][at], held.draws[t][at]):  # each row drawn once
            rows.append(leaves[:, t] == leaf)
            released.append(count)
    return np.array(rows, dtype=float), np.array(released, dtype=float)


def _multiplicities(A: np.ndarray, b: np.ndarray, v: int, target: float) -> np.ndarray:
    """How many rows each cell holds (``A``, ``b``: `_equations`): whole numbers meeting
    every leaf's rows."""
    n = A.shape[1]
    if (A.sum(axis=1) == b).all():  # every cell once fits at once
        return np.ones(n, dtype=np.int64)
    solved = milp(np.zeros(n), constraints=LinearConstraint(A, b, b),
                  integrality=np.ones(n), bounds=(0, np.inf))
    if solved.x is None:
        raise TargetRowsInfeasible(
            f"the leaves of value {target:g} (target {v}) hold counts no rows meet in every "
            "tree at once: the file's values contradict each other (edited or truncated?)")
    return np.round(solved.x).astype(np.int64)


def _fixed(A: np.ndarray, b: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Cells whose multiplicity every consistent dataset shares (``A``, ``b``: `_equations`):
    a cell alone in some leaf takes that leaf's rows; the others, where the LP bounds it to
    one value both ways."""
    n = A.shape[1]
    fixed = (A[A.sum(axis=1) == 1] > 0).any(axis=0)
    if fixed.all() or n > MAX_PROOF_CELLS:
        return fixed
    for cell in np.flatnonzero(~fixed):
        bound = []
        for sign in (1.0, -1.0):
            c = np.zeros(n)
            c[cell] = sign
            result = linprog(c, A_eq=A, b_eq=b, bounds=(0, None), method="highs")
            bound.append(sign * result.fun if result.status == 0 else np.nan)
        fixed[cell] = abs(bound[0] - counts[cell]) < 1e-6 and abs(bound[1] - counts[cell]) < 1e-6
    return fixed
