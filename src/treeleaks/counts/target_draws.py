"""Rows of a bootstrap regression forest told apart by their draws, target by target.

In a fully grown tree every leaf holds rows of one target, or rows sharing every feature
whose targets its split tells (`target_classes`). Tree t's leaves holding target v then
hold ``W[t, v]`` draws of it: the sum of ``b[t, k]`` over the rows k of
target v. A row of a target no other row has is the training row whose column of draws is
``W[:, v]`` itself; rows sharing a target are a set of columns summing to it, each column
within it tree by tree (a row drawn by a tree with no leaf of v is not of target v), and
as many drawn in each tree as its leaves of v hold distinct rows. The targets so found are
the rows' targets at their training positions, with no solver; each row's box is the
intersection of its leaves of v in the trees that drew it, the leaf taken in a tree with
several of them being the one its draws and the other trees' leaves leave it (and so the
path, in a tree that reaches a leaf by several: `treeleaks.counts.paths`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from treeleaks.counts.paths import tree_paths
from treeleaks.counts.target_classes import LeafTargets
from treeleaks.ir.model import ReleasedModel

__all__ = ["DrawnTargets", "targets_by_draws"]

MAX_CANDIDATES = 24  # most rows a shared target's draws leave it, searched for their sum
MAX_NODES = 200_000  # most steps of that search, per target


@dataclass
class DrawnTargets:
    """Row k has target index ``target[k]`` (into ``targets``; -1 where not found) and lies
    in ``lower[k] < x <= upper[k]``; ``settled`` says whether every row's target was found."""

    targets: np.ndarray
    target: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    settled: bool


def targets_by_draws(model: ReleasedModel, held: LeafTargets,
                     deadline: float) -> DrawnTargets:
    """Each training row's target and box (see the module doc; ``held``: the targets each
    leaf holds), by ``deadline`` (``time.perf_counter()``); rows left open keep target -1 and
    ``settled`` is False. A leaf of several targets not told apart holds rows that are
    left open."""
    targets = held.targets
    draws = np.vstack([tree.draws for tree in model.trees]).astype(np.int64)  # (T, N)
    n = draws.shape[1]
    W, D = held.per_value(), held.per_value(distinct=True)
    target = np.full(n, -1, dtype=np.int64)
    _targets_of_own_draws(draws, W, D, target)
    found = np.bincount(target[target >= 0], minlength=targets.size)
    for v in np.flatnonzero(found == 0):
        if time.perf_counter() > deadline:
            break
        rows = _shared_target(draws, W[:, v], D[:, v], target < 0)
        if rows is not None:
            target[rows] = v
    lower, upper = _boxes(model, held, draws, target)
    return DrawnTargets(targets, target, lower, upper, bool((target >= 0).all()))


def _targets_of_own_draws(draws: np.ndarray, W: np.ndarray, D: np.ndarray,
                          target: np.ndarray) -> None:
    """Where every row's draws are its own, a target whose draws per tree (``W``, with
    ``D`` distinct rows) are exactly one row's is that row's: set in ``target``."""
    n = draws.shape[1]
    column = {draws[:, k].tobytes(): k for k in range(n)}
    if len(column) == n:  # every row's draws its own: a target's sum may be one of them
        for v in range(W.shape[1]):
            k = column.get(np.ascontiguousarray(W[:, v]).tobytes())
            if k is not None and ((D[:, v] == (draws[:, k] > 0)) | (D[:, v] < 0)).all() \
                    and target[k] < 0:
                target[k] = v


def _shared_target(draws: np.ndarray, weight: np.ndarray, distinct: np.ndarray,
                   free: np.ndarray) -> np.ndarray | None:
    """The one set of free rows whose draws sum to ``weight`` tree by tree, with
    ``distinct`` of them drawn in each tree (-1: any number); None if there is none or
    more than one."""
    fits = free & (draws <= weight[:, None]).all(axis=0) & (
        (draws > 0) <= (weight > 0)[:, None]).all(axis=0)
    candidates = np.flatnonzero(fits)
    if not len(candidates) or len(candidates) > MAX_CANDIDATES:
        return None
    cols = draws[:, candidates]
    found: list[list[int]] = []
    steps = 0

    def search(i: int, left: np.ndarray, seen: np.ndarray, chosen: list[int]) -> None:
        nonlocal steps
        steps += 1
        if len(found) > 1 or steps > MAX_NODES:
            return
        if not left.any():
            if ((seen == distinct) | (distinct < 0)).all():
                found.append(list(chosen))
            return
        if i == len(candidates):
            return
        col = cols[:, i]
        if (col <= left).all():
            search(i + 1, left - col, seen + (col > 0), [*chosen, i])
        search(i + 1, left, seen, chosen)

    search(0, weight.copy(), np.zeros_like(distinct), [])
    if len(found) != 1 or steps > MAX_NODES:
        return None
    return candidates[found[0]]


def _boxes(model: ReleasedModel, held: LeafTargets, draws: np.ndarray,
           target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each found row's box: the intersection of its target's leaves in the trees that drew
    it. Where a tree holds several leaves of a target (or paths to them), its rows there are
    shared among them so that each leaf gets its weighted and distinct rows, each row a
    path meeting its box so far (the first such sharing; the certificate judges it), trees
    with one path first."""
    n, m = len(target), model.n_features
    lower, upper = np.full((n, m), -np.inf), np.full((n, m), np.inf)
    paths = [tree_paths(tree, m) for tree in model.trees]
    boxes = [(p.lower, p.upper) for p in paths]
    shared: list[tuple[int, int, np.ndarray, np.ndarray]] = []  # (tree, target, rows, paths)
    for t, tree in enumerate(model.trees):
        holds = held.matrix(t, tree.n_leaves)[paths[t].leaf].tocsc()  # (paths, targets)
        drawn = (draws[t] > 0) & (target >= 0)
        for v in np.unique(target[drawn]):
            ways = holds.indices[holds.indptr[v]:holds.indptr[v + 1]]
            rows = np.flatnonzero(drawn & (target == v))
            if len(ways) == 1:
                _narrow(lower, upper, rows, boxes[t], ways[0])
            elif len(ways):
                shared.append((t, int(v), rows, np.sort(ways)))
    for t, v, rows, ways in shared:
        tree = model.trees[t]
        weight = held.matrix(t, tree.n_leaves)[:, v].toarray().ravel()
        distinct = held.matrix(t, tree.n_leaves, distinct=True)[:, v].toarray().ravel()
        meets = _ways_meeting(rows, ways, lower, upper, boxes[t])
        sharing = _share(rows, ways, meets, paths[t].leaf, draws[t], weight, distinct)
        if sharing is not None:
            for row, way in zip(rows, sharing):
                _narrow(lower, upper, np.array([row]), boxes[t], way)
    return lower, upper


def _narrow(lower: np.ndarray, upper: np.ndarray, rows: np.ndarray,
            box: tuple[np.ndarray, np.ndarray], path: int) -> None:
    lower[rows] = np.maximum(lower[rows], box[0][path])
    upper[rows] = np.minimum(upper[rows], box[1][path])


def _ways_meeting(rows: np.ndarray, ways: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                  box: tuple[np.ndarray, np.ndarray]) -> list[np.ndarray]:
    """For each row, the paths among ``ways`` (boxes ``box``) that meet its box so far."""
    return [ways[(np.maximum(lower[k], box[0][ways])
                  < np.minimum(upper[k], box[1][ways])).all(axis=1)] for k in rows]


def _share(rows: np.ndarray, ways: np.ndarray, meets: list[np.ndarray],
           path_leaf: np.ndarray, draws: np.ndarray, weight: np.ndarray,
           distinct: np.ndarray) -> list[int] | None:
    """A path for each row, among those meeting its box (``meets``, out of ``ways``),
    giving every path's leaf (``path_leaf``) its weighted and distinct rows (-1: any
    number); None if none is found within `MAX_NODES` steps."""
    leaves = np.unique(path_leaf[ways])
    weight_left = {int(leaf): int(weight[leaf]) for leaf in leaves}
    rows_left = {int(leaf): int(distinct[leaf]) if distinct[leaf] >= 0 else len(rows)
                 for leaf in leaves}
    chosen: list[int] = []
    steps = 0

    def search(i: int) -> bool:
        nonlocal steps
        steps += 1
        if steps > MAX_NODES:
            return False
        if i == len(rows):
            return not any(weight_left.values()) and all(
                rows_left[leaf] == 0 or distinct[leaf] < 0 for leaf in rows_left)
        b = int(draws[rows[i]])
        for way in map(int, meets[i]):
            leaf = int(path_leaf[way])
            if weight_left[leaf] >= b and rows_left[leaf] >= 1:
                weight_left[leaf] -= b
                rows_left[leaf] -= 1
                chosen.append(way)
                if search(i + 1):
                    return True
                chosen.pop()
                weight_left[leaf] += b
                rows_left[leaf] += 1
        return False

    return chosen if search(0) else None
