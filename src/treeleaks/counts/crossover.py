"""Count-neutral crossovers: other datasets that every released count fits as well.

Two rows of one class trade the values of some columns (a one-hot group as one column).
The move is *count-neutral* when, in every tree, the drawing rows bring the same draws to
the same leaves as before: each tree that draws one of the two sees it stay in its leaf or
trade leaves with the other, drawn as often. Every count of the forest, per class and per
leaf, weighted draws and distinct rows, is then exactly what it was, and each column keeps
its multiset of values. A walk of such moves, each taking the rows further from where they
started, shows how far the counts leave the rows unpinned: a dataset that fits the model as
exactly as the training data, with rows the training rows' leaves do not describe.

A row is *far* from a set of rows when none of them shares its leaf in `SHARED` of the
trees that drew it (every tree, without bootstrap): the score of
`treeleaks.evaluation.recovered` could recover no row with it. The walk lowers each row's
largest share with the starting rows, so it measures the multiset, not the positions.

Forests whose draws are known or that draw every row once; boosters are out (their gradient
sums follow each row's path through every earlier tree).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from treeleaks.ir.model import ReleasedModel

SHARED = 0.9  # the recovered score's share of drawing trees (evaluation.recovered.SHARED)
NEIGHBOURS = 8  # rows of the same class tried as partners, the most leaves shared first
RANDOM_SUBSETS = 16  # random sets of columns tried per pair, beside each column alone


@dataclass(frozen=True)
class Walk:
    """Rows after a crossover walk: the values, their leaves, the moves made and tried."""

    X: np.ndarray  # (n_rows, n_features)
    leaves: np.ndarray  # (n_rows, n_trees), each tree's leaf numbering
    moves: int
    tried: int
    far: int  # rows no starting row shares `SHARED` of its drawing trees with


def position_draws(model: ReleasedModel, positions: np.ndarray) -> np.ndarray:
    """How often each tree drew the rows at training ``positions``, ``(rows, n_trees)``:
    the model's draws, or once each without bootstrap. Raises ValueError where the walk's
    moves are not count-neutral."""
    if model.gradients is not None:
        raise ValueError("a booster's leaf values follow every row's path through the "
                         "earlier trees: crossovers are count-neutral for forests only")
    positions = np.asarray(positions, dtype=np.int64)
    if not model.bootstrap:
        return np.ones((len(positions), model.n_trees), dtype=np.int64)
    kept = [tree.draws for tree in model.trees]
    if any(d is None or (len(positions) and positions.max() >= len(d)) for d in kept):
        raise ValueError("a bootstrap forest without one draw count per row and tree: "
                         "which rows a tree counts is unknown")
    return np.column_stack([d[positions] for d in kept]).astype(np.int64)


def column_units(n_features: int, groups: Sequence[Sequence[int]]) -> list[list[int]]:
    """The columns a crossover trades: each group together, every other column alone."""
    grouped = {j for group in groups for j in group}
    return [list(group) for group in groups] + [
        [j] for j in range(n_features) if j not in grouped]


def crossover_walk(model: ReleasedModel, X: np.ndarray, classes: np.ndarray,
                   draws: np.ndarray, *, units: Sequence[Sequence[int]], deadline: float,
                   max_tries: int | None = None, seed: int = 0) -> Walk:
    """Walk from rows ``X`` of ``classes`` (class indices; a regressor's targets), drawn
    ``draws`` times by each tree (`position_draws`), by count-neutral crossovers until
    ``deadline`` (``time.perf_counter()``) or ``max_tries`` rows tried, each move lowering
    the two rows' largest share of drawing-tree leaves with any starting row. The starting
    rows fit the model or not: every count the walk leaves is the one it found."""
    rng = np.random.default_rng(seed)
    drawn = draws > 0
    X = np.array(X, dtype=np.float64)
    leaves = model.apply(X)
    shares = _Shares(leaves, drawn, model)
    nearest = shares.largest(leaves)
    moves = tried = 0
    while time.perf_counter() < deadline and (max_tries is None or tried < max_tries):
        i = int(rng.integers(len(X)))
        tried += 1
        j = _partner(i, classes, leaves, rng)
        if j is None:
            continue
        subsets = _subsets(units, rng)
        Xi, Xj = _crossed(X, i, j, subsets)
        Li, Lj = model.apply(Xi), model.apply(Xj)
        neutral = np.flatnonzero(_neutral(leaves[i], leaves[j], Li, Lj, draws[i], draws[j]))
        moved = (Li[neutral] != leaves[i]).any(axis=1) | (Lj[neutral] != leaves[j]).any(axis=1)
        neutral = neutral[moved]
        if not neutral.size:
            continue
        si, sj = shares.largest(Li[neutral]), shares.largest(Lj[neutral])
        gain = nearest[i] + nearest[j] - si - sj
        best = int(np.argmax(gain))
        if gain[best] <= 0:
            continue
        k = neutral[best]
        X[i], X[j], leaves[i], leaves[j] = Xi[k], Xj[k], Li[k], Lj[k]
        nearest[i], nearest[j] = si[best], sj[best]
        moves += 1
    return Walk(X, leaves, moves, tried, int(np.count_nonzero(nearest < SHARED)))


def _partner(i: int, classes: np.ndarray, leaves: np.ndarray,
             rng: np.random.Generator) -> int | None:
    """A row of ``i``'s class among those sharing the most leaves with it."""
    same = np.flatnonzero(classes == classes[i])
    same = same[same != i]
    if not same.size:
        return None
    shared = (leaves[same] == leaves[i]).sum(axis=1)
    return int(rng.choice(same[np.argsort(-shared, kind="stable")[:NEIGHBOURS]]))


def _subsets(units: Sequence[Sequence[int]], rng: np.random.Generator) -> list[list[int]]:
    """Each unit alone, and random sets of units of every size up to half."""
    subsets = [list(unit) for unit in units]
    if len(units) > 2:
        for _ in range(RANDOM_SUBSETS):
            size = int(rng.integers(2, len(units) // 2 + 2))
            picked = rng.choice(len(units), size=min(size, len(units)), replace=False)
            subsets.append([j for u in picked for j in units[u]])
    return subsets


def _crossed(X: np.ndarray, i: int, j: int,
             subsets: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Rows i and j with each subset's columns traded, one candidate pair per subset."""
    Xi = np.repeat(X[i][None], len(subsets), axis=0)
    Xj = np.repeat(X[j][None], len(subsets), axis=0)
    for k, columns in enumerate(subsets):
        Xi[k, columns], Xj[k, columns] = X[j, columns], X[i, columns]
    return Xi, Xj


def _neutral(li: np.ndarray, lj: np.ndarray, Li: np.ndarray, Lj: np.ndarray,
             bi: np.ndarray, bj: np.ndarray) -> np.ndarray:
    """Candidates whose drawing rows bring every tree's leaves the same draws as before."""
    def pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ka = np.where(bi > 0, a * (bi.max() + bj.max() + 1) + bi, -1)
        kb = np.where(bj > 0, b * (bi.max() + bj.max() + 1) + bj, -1)
        return np.minimum(ka, kb), np.maximum(ka, kb)

    low, high = pairs(li, lj)
    new_low, new_high = pairs(Li, Lj)
    return ((new_low == low) & (new_high == high)).all(axis=1)


def _by_leaf(leaves: np.ndarray, keep: np.ndarray, model: ReleasedModel) -> sparse.csc_matrix:
    """Rows x forest-wide leaves: 1 where a row sits in the leaf, in the trees ``keep``
    marks; summing a row's leaf columns counts the rows sharing them."""
    rows, trees = np.nonzero(keep)
    ids = leaves[rows, trees] + model.leaf_offsets[trees]
    return sparse.csc_matrix((np.ones(len(rows)), (rows, ids)),
                             shape=(len(leaves), model.n_leaves))


class _Shares:
    """The starting rows' leaves in the trees that drew them, as columns to sum: a row's
    share of a starting row's drawing trees in which it sits in that row's leaf."""

    def __init__(self, start: np.ndarray, drawn: np.ndarray, model: ReleasedModel) -> None:
        self.offsets = model.leaf_offsets
        self.by_leaf = _by_leaf(start, drawn, model)
        self.n_drawn = np.maximum(drawn.sum(axis=1), 1)

    def largest(self, leaves: np.ndarray) -> np.ndarray:
        """Each row of ``leaves``'s largest share with any starting row."""
        ids = leaves + self.offsets
        return np.array([
            (np.asarray(self.by_leaf[:, row].sum(axis=1)).ravel() / self.n_drawn).max()
            for row in ids])


def kept_shares(start: np.ndarray, drawn: np.ndarray, others: np.ndarray,
                model: ReleasedModel) -> np.ndarray:
    """For each starting row (leaves ``start``, drawing trees ``drawn``), the largest share
    of its drawing trees in which one of the ``others`` rows sits in its leaf: below
    `SHARED`, no row of the other dataset could be scored as it."""
    by_leaf = _by_leaf(others, np.ones(others.shape, dtype=bool), model)
    ids = start + model.leaf_offsets
    n_drawn = np.maximum(drawn.sum(axis=1), 1)
    return np.array([
        np.asarray(by_leaf[:, ids[r][drawn[r]]].sum(axis=1)).max() / n_drawn[r]
        if drawn[r].any() else 1.0 for r in range(len(start))])
