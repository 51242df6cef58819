"""Partial datasets of a bootstrap forest with known draws, by a search over rows as points
(issue 38).

scikit-learn keeps each tree's random state, so how often tree t drew row k (``b[t, k]``)
is known, and row k is told apart by its column of draws: a row found is training row k,
at its position. Row k has a *class* and a *point* on the grid of the forest's thresholds
(`ThresholdGrid`); in every tree that drew it, it lands in one leaf, bringing ``b[t, k]``
draws of its class and one distinct row. Nothing lists candidate placements, so memory
follows N x trees.

Rows are *inside* (counted, and together always within every count: a partial dataset at
any moment) or *outside*. A leaf *admits* a row when, with the row's draws added, no class
exceeds its released weight, the leaf's distinct rows are not exceeded, and what is left
can still be met: each row still to come brings at least one draw, and each class with
draws left needs a row. A leaf that cannot admit the row even empty (the wrong class, too
few draws) blocks it *hard*; one that could, were it emptier, blocks it *softly*.

An outside row takes the step (across a face of a blocking leaf, a random jump, or a
change of class) that most lowers the weighted count of its blocking leaves; the weight of
a leaf grows each time a row is stuck in it (breakout), so rows leave local minima. With no
blocking leaf it comes in. Stuck with soft blocks only, it comes in anyway by ejecting the
inside rows that hold its blocking leaves (greedy cover; rows brought in within the last
``TABU`` steps stay, and the ejection is undone when it does not let the row in). Ejected
rows keep their point and class and search from there: the same moves that carry the
search over forests without bootstrap (`treeleaks.counts.row_search`, docs/engine.md),
with the class part of a row's state.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from treeleaks.counts.threshold_grid import ThresholdGrid
from treeleaks.ir.model import ReleasedModel

__all__ = ["DrawnRows", "search_drawn_rows"]

REPORT_EVERY_S = 0.5  # on_better is called at most this often (and at the end)
RANDOM_CANDIDATES = 4  # random (feature, bin) jumps tried beside the face crossings
FACE_LEAVES = 3  # an outside row tries the faces of at most this many blocking leaves
HARD = 2.0  # a hard block weighs this much more than a soft one of the same weight
TABU = 50  # steps during which a row brought inside is not ejected
MAX_EJECTED = 8  # most rows ejected to let one row in


@dataclass
class DrawnRows:
    """A partial dataset of a bootstrap forest: training row ``positions[i]`` (ascending) has class
    ``cls[i]`` and lies on path ``paths[i, t]`` of tree t (numbered as
    `treeleaks.counts.paths.tree_paths`: its leaf, where no leaf has several paths; only
    the trees that drew it say anything of it)."""

    positions: np.ndarray
    paths: np.ndarray
    cls: np.ndarray
    interrupted: bool = False  # Ctrl-C ended the search: these are the rows in hand

    def __len__(self) -> int:
        return len(self.positions)


def search_drawn_rows(
    model: ReleasedModel,
    deadline: float,
    *,
    seed: int = 0,
    on_better: Callable[[DrawnRows], None] | None = None,
) -> DrawnRows:
    """The largest partial dataset found by ``deadline`` (a ``time.perf_counter()`` value):
    rows at their training positions whose leaves, in every tree that drew them, together
    hold no class beyond its released weight and no more distinct rows than released, with
    what is left still reachable. ``on_better`` is called with larger partial datasets as
    they are found (at most every ``REPORT_EVERY_S``, and with the final one). ``seed``
    makes a run repeatable up to the clock. Ctrl-C ends the search with the rows in hand
    (``interrupted``), or goes on when there are none.

    Needs a bootstrap forest whose every tree has its draws, per-class counts and distinct
    rows per leaf.
    """
    if any(tree.pooled or tree.draws is None or tree.n_samples is None
           for tree in model.trees):
        raise ValueError("the draw search needs every tree's draws, per-class counts and "
                         "distinct rows per leaf")
    search = _Search(ThresholdGrid.of(model), model, np.random.default_rng(seed))
    search.place()
    return search.run(deadline, on_better)


class _Search:
    """Rows inside (counted in ``weight_in`` and ``rows_in``: always within every count)
    and outside, all as grid points with a class and their global paths (counted in
    their leaves)."""

    def __init__(self, grid: ThresholdGrid, model: ReleasedModel, rng: np.random.Generator):
        self.grid, self.rng = grid, rng
        self.draws = np.vstack([tree.draws for tree in model.trees]).T.astype(np.int64)
        self.drawn = self.draws > 0  # (N, T)
        self.distinct = np.concatenate([tree.n_samples for tree in model.trees]).astype(
            np.int64)
        self.n, self.n_trees = self.draws.shape
        self.n_classes = grid.counts.shape[1]
        self.penalty = np.ones(grid.counts.shape)  # breakout weight of each (leaf, class)
        self.weight_in = np.zeros(grid.counts.shape, dtype=np.int64)
        self.rows_in = np.zeros(len(self.distinct), dtype=np.int64)
        self.inside = np.zeros(self.n, dtype=bool)
        self.since = np.full(self.n, -TABU, dtype=np.int64)  # step when last brought inside
        self.step = 0
        self.leaf = grid.path_leaf if grid.aliased else np.arange(len(grid.counts))

    # --- admission -------------------------------------------------------------------------

    def _admits(self, leaves: np.ndarray, b: np.ndarray, empty: bool = False) -> np.ndarray:
        """``(m, C)``: whether each leaf admits a row bringing ``b`` draws of each class,
        given the rows inside (``empty``: as if none were)."""
        room = self.grid.counts[leaves] - (0 if empty else self.weight_in[leaves])
        rows_left = self.distinct[leaves] - (0 if empty else self.rows_in[leaves]) - 1
        after = room - b[:, None]
        total_after = room.sum(axis=1)[:, None] - b[:, None]
        classes_after = (room > 0).sum(axis=1)[:, None] - (room > 0) + (after > 0)
        rows_left = rows_left[:, None]
        return ((after >= 0) & (rows_left >= 0) & (rows_left <= total_after)
                & (rows_left >= classes_after))

    def _cost(self, leaves: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``(m, C)``: the weighted blocking of each leaf for each class of the row."""
        soft = ~self._admits(leaves, b)
        hard = ~self._admits(leaves, b, empty=True)
        return self.penalty[leaves] * (soft + HARD * hard)

    # --- state -------------------------------------------------------------------------------

    def place(self) -> None:
        """Every row outside at a random point of a leaf (one of its paths) that could hold
        it in a tree that drew it, with that leaf's class; then every row that fits comes
        in."""
        g = self.grid
        points = np.zeros((self.n, len(g.n_bins)), dtype=np.int64)
        cls = np.zeros(self.n, dtype=np.int64)
        for row in range(self.n):
            trees = np.flatnonzero(self.drawn[row])
            if not len(trees):
                continue
            t = int(self.rng.choice(trees))
            own = np.arange(g.offset[t], g.offset[t + 1] if t + 1 < self.n_trees
                            else len(g.counts))
            fits = self._admits(own, np.full(len(own), self.draws[row, t]), empty=True)
            leaf_i, c = np.nonzero(fits) if fits.any() else np.nonzero(g.counts[own] > 0)
            pick = int(self.rng.integers(len(leaf_i)))
            path = g.a_path(own[leaf_i[pick:pick + 1]], self.rng)[0]
            lo, hi = g.lo[path], g.hi[path]
            points[row] = lo + (self.rng.random(len(lo)) * (hi - lo + 1)).astype(np.int64)
            cls[row] = c[pick]
        self.points, self.cls = points, cls
        trees = np.tile(np.arange(self.n_trees), self.n)
        self.paths = g.route(np.repeat(points, self.n_trees, axis=0), trees).reshape(
            self.n, self.n_trees)
        for row in self.rng.permutation(self.n):
            if not self._blocking(row).any():
                self._insert(row)

    def _mine(self, row: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The trees that drew ``row``, its paths there, and its draws."""
        trees = np.flatnonzero(self.drawn[row])
        return trees, self.paths[row, trees], self.draws[row, trees]

    def _blocking(self, row: int) -> np.ndarray:
        """Whether each of ``row``'s leaves (in the trees that drew it) blocks its class."""
        _, paths, b = self._mine(row)
        return ~self._admits(self.leaf[paths], b)[:, self.cls[row]]

    def _insert(self, row: int) -> None:
        _, paths, b = self._mine(row)
        leaves = self.leaf[paths]
        self.inside[row] = True
        self.since[row] = self.step
        np.add.at(self.weight_in, (leaves, self.cls[row]), b)
        np.add.at(self.rows_in, leaves, 1)

    def _eject(self, row: int) -> None:
        _, paths, b = self._mine(row)
        leaves = self.leaf[paths]
        self.inside[row] = False
        np.subtract.at(self.weight_in, (leaves, self.cls[row]), b)
        np.subtract.at(self.rows_in, leaves, 1)

    # --- moves ------------------------------------------------------------------------------

    def move(self, row: int) -> None:
        """One step for an outside row (see the module doc)."""
        g = self.grid
        self.step += 1
        trees, paths, b = self._mine(row)
        leaves = self.leaf[paths]
        soft, hard = ~self._admits(leaves, b), ~self._admits(leaves, b, empty=True)
        cost = self.penalty[leaves] * (soft + HARD * hard)  # (m, C)
        now = cost.sum(axis=0)
        c = self.cls[row]
        blocking = soft[:, c]
        if not blocking.any():
            self._insert(row)
            return
        faces = self.rng.permutation(paths[blocking])[:FACE_LEAVES]
        feats, bins = g.steps(self.points[row], faces, RANDOM_CANDIDATES, self.rng)
        k = len(feats)
        total = now[None, :].repeat(k + 1, axis=0)  # the last candidate: stay, class only
        if k:
            f = feats[:, None]
            stays = (g.lo[paths, f] <= bins[:, None]) & (bins[:, None] <= g.hi[paths, f])
            k_idx, i_idx = np.nonzero(~stays)
            cand = np.repeat(self.points[row][None], len(k_idx), axis=0)
            cand[np.arange(len(k_idx)), feats[k_idx]] = bins[k_idx]
            new = g.route(cand, trees[i_idx])
            # a step to another path of the same leaf costs what it did
            delta = self._cost(self.leaf[new], b[i_idx]) - cost[i_idx]
            for cc in range(self.n_classes):
                total[:k, cc] += np.bincount(k_idx, delta[:, cc], minlength=k)
        total = total + self.rng.random(total.shape) * 1e-3
        best_k, best_c = np.unravel_index(int(np.argmin(total)), total.shape)
        if total[best_k, best_c] < now[c]:
            if best_k < k:
                moved = k_idx == best_k
                self.paths[row, trees[i_idx[moved]]] = new[moved]
                self.points[row, feats[best_k]] = bins[best_k]
            self.cls[row] = best_c
            if not self._blocking(row).any():
                self._insert(row)
            return
        self.penalty[leaves[blocking], c] += 1.0
        if not hard[:, c].any():  # soft blocks only: make room
            self._eject_for(row)

    def _eject_for(self, row: int) -> None:
        """Bring ``row`` in by ejecting inside rows that hold its blocking leaves, those
        holding most first; undone when ``MAX_EJECTED`` rows do not let it in."""
        trees, paths, _ = self._mine(row)
        leaves = self.leaf[paths]
        others = np.flatnonzero(self.inside & (self.since < self.step - TABU))
        ejected: list[int] = []
        while True:
            blocking = self._blocking(row)
            if not blocking.any():
                self._insert(row)
                return
            if len(ejected) == MAX_EJECTED or not len(others):
                break
            t, leaf = trees[blocking], leaves[blocking]
            at = np.ix_(others, t)  # only the blocking trees' columns, not N x trees
            held = (self.leaf[self.paths[at]] == leaf) & self.drawn[at]
            hits = held.sum(axis=1) + self.rng.random(len(others)) * 0.5
            best = int(np.argmax(hits))
            if hits[best] < 1:
                break
            ejected.append(int(others[best]))
            self._eject(ejected[-1])
            others = np.delete(others, best)
        for other in ejected:  # no way in: put them back as they were
            since = self.since[other]
            self._insert(other)
            self.since[other] = since

    def run(self, deadline: float, on_better: Callable[[DrawnRows], None] | None,
            ) -> DrawnRows:
        """Steps until ``deadline`` or every row is inside; the largest inside set seen."""
        best = self._snapshot()
        told = 0
        report = time.perf_counter() + REPORT_EVERY_S
        try:
            while len(best) < self.n and time.perf_counter() < deadline:
                outside = np.flatnonzero(~self.inside)
                self.move(int(outside[self.rng.integers(len(outside))]))
                if self.inside.sum() > len(best):
                    best = self._snapshot()
                if on_better is not None and len(best) > told and time.perf_counter() >= report:
                    on_better(best)
                    told, report = len(best), time.perf_counter() + REPORT_EVERY_S
        except KeyboardInterrupt:  # anytime: the rows in hand are the answer
            if not len(best):
                raise
            best.interrupted = True
        if on_better is not None and len(best) > told:
            on_better(best)
        return best

    def _snapshot(self) -> DrawnRows:
        rows = np.flatnonzero(self.inside)  # in training order
        return DrawnRows(rows, self.paths[rows] - self.grid.path_offset, self.cls[rows].copy())
