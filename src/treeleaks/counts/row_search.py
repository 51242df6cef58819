"""Partial datasets by a search over rows as points (issue 29, step 3).

A forest whose trees each saw every training row once releases, per tree, how many rows of
each class every leaf holds (a multiclass booster's trees pool classes into fewer columns,
`Tree.count_column`: a row counts in its class's column). A *partial dataset* is a set of
rows within every count. This module looks for a large one without cells. Every training
row is a point on the grid the forest's thresholds cut (a bin per feature), so its leaves
always meet (its box is never empty); the counts are what the search must respect.

Rows are *inside* (counted, and together always within every count: a partial dataset at
any moment) or *outside* (waiting, at a point of their own). An outside row steps across a
face of one of its *full* leaves (no room left for its class) to the point of fewest full
leaves, weighted: a full leaf's weight grows each time a row is stuck in it (breakout), so
outside rows leave local minima. With no full leaf left it comes inside. Stuck, it first
asks a row inside each of its few full leaves to step out of it into leaves with room,
then comes in anyway, ejecting the inside rows of its class that hold its full leaves
(greedy cover; rows brought in within the last ``TABU`` steps stay). Ejected rows keep
their points and search from there: the inside set shrinks for a while and reshapes, which
is what gets past the sets that admit no further row (measured in docs/engine.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from treeleaks.counts.cells import cell_boxes
from treeleaks.counts.paths import tree_paths
from treeleaks.counts.threshold_grid import ThresholdGrid
from treeleaks.ir.model import ReleasedModel

__all__ = ["row_points", "search_rows"]

REPORT_EVERY_S = 0.5  # on_better is called at most this often (and at the end)
RANDOM_CANDIDATES = 4  # random (feature, bin) jumps tried beside the face crossings
FACE_LEAVES = 3  # an outside row tries the faces of at most this many of its full leaves
ROOM_LEAVES = 3  # a stuck row blocked by at most this many full leaves asks for room
ROOM_ROWS = 8  # inside rows of a full leaf tried when making room in it (pinned ones stay)
TABU = 50  # steps during which a row brought inside is not ejected


def search_rows(
    model: ReleasedModel,
    deadline: float,
    *,
    seed: int = 0,
    start: tuple[np.ndarray, np.ndarray] | None = None,
    pinned: int = 0,
    on_better: Callable[[np.ndarray, np.ndarray], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The largest partial dataset found by ``deadline`` (a ``time.perf_counter()`` value).

    Returns ``(paths, cls)``: ``paths`` ``(R, n_trees)`` each row's path in every tree
    (numbered as `treeleaks.counts.paths.tree_paths`: its leaf, where no leaf has several
    paths), ``cls`` ``(R,)`` its class index. The rows' paths always meet and, together,
    hold no leaf's class beyond its released count. ``start`` (rows by their leaf in every
    tree and their class, within the counts: the cells' partial dataset, say) seeds the
    search: those rows start inside, the rest of the training rows outside at random; the
    first ``pinned`` of them (rows proven elsewhere) stay where they are. A start row whose
    leaves share no point of the grid (a leaf of several paths) is left out.
    ``on_better`` is called with larger partial datasets as they are found (at most every
    ``REPORT_EVERY_S``, and with the final one). ``seed`` makes a run repeatable up to the
    clock (how many steps fit before the deadline).

    Needs a forest whose trees each saw every row once (every tree holds the same number of
    rows of each class) and counts in every tree. A tree that pools classes into one column
    (a multiclass booster's: later rounds pool every class, the first round's tree k keeps
    class k apart from the rest, `Tree.count_column`) bounds the rows of all the classes
    of that column together.
    """
    if not all(tree.counted for tree in model.trees):
        raise ValueError("the row search needs every tree's counts; a tree has none")
    per_class = model.class_totals()
    if any((tree.counts.sum(axis=0) != tree.in_columns(per_class[None, :])[0]).any()
           for tree in model.trees):
        raise ValueError("the row search needs trees that each saw every row once; "
                         "their class totals differ")
    grid = ThresholdGrid.of(model)
    rng = np.random.default_rng(seed)
    search = _Search(grid, per_class, rng, _columns(model))
    if start is not None:
        *start, pinned = _start_paths(model, grid, start, pinned)
    search.place(start, pinned)
    return search.run(deadline, on_better)


def row_points(model: ReleasedModel, paths: np.ndarray) -> np.ndarray:
    """A point in each row's box (the common box of its paths, ``(R, n_trees)``, as
    `search_rows` gives them): the box's upper bound where it has one, else just above its
    lower bound, else 0."""
    boxes = [tree_paths(tree, model.n_features) for tree in model.trees]
    lower = np.max([b.lower[paths[:, t]] for t, b in enumerate(boxes)], axis=0)
    upper = np.min([b.upper[paths[:, t]] for t, b in enumerate(boxes)], axis=0)
    if (lower >= upper).any():
        raise ValueError("a row's leaves have no common point")
    return np.where(np.isfinite(upper), upper, np.where(np.isfinite(lower), lower + 1.0, 0.0))


def _start_paths(model: ReleasedModel, grid: ThresholdGrid, start: tuple[np.ndarray, np.ndarray],
                 pinned: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Start rows given by leaf as rows by path ``(paths, cls, pinned)``: a point of the
    cell's first box with a point in every leaf (`cell_boxes`), routed; a row with none
    is left out, with the pinned ones among them."""
    leaves, cls = start
    if not grid.aliased or not len(cls):
        return leaves, cls, pinned
    cells, cell_of = np.unique(leaves, axis=0, return_inverse=True)
    lo, hi = grid.box_bins(*cell_boxes(model, cells))
    n_trees = len(grid.roots)
    paths = grid.route(np.repeat(lo, n_trees, axis=0),
                       np.tile(np.arange(n_trees), len(cells))).reshape(len(cells), n_trees)
    fits = (lo <= hi).all(axis=1) & (grid.path_leaf[paths] == cells + grid.offset).all(axis=1)
    keep = fits[cell_of.ravel()]
    return ((paths - grid.path_offset)[cell_of.ravel()][keep], cls[keep],
            int(keep[:pinned].sum()))


def _columns(model: ReleasedModel) -> np.ndarray:
    """``(G, C)``: the column of its tree's counts that holds class c's rows, per global
    leaf (the grid's numbering)."""
    classes = np.arange(model.n_classes)
    return np.vstack([np.tile(np.asarray(tree.count_column(classes), dtype=np.int64),
                              (tree.n_leaves, 1)) for tree in model.trees])


def _start_tree(model_columns: np.ndarray, offset: np.ndarray, cls: int) -> int:
    """The first tree that counts class ``cls`` in a column of its own (a multiclass
    booster's first-round tree for it), else tree 0: where a row of that class starts."""
    for t, first in enumerate(offset):
        column = model_columns[first, cls]
        if (model_columns[first] == column).sum() == 1:
            return t
    return 0


class _Search:
    """Rows inside (counted in ``occ``: always within every count) and outside, all as
    grid points with their global paths (their leaves counted)."""

    def __init__(self, grid: ThresholdGrid, per_class: np.ndarray, rng: np.random.Generator,
                 columns: np.ndarray):
        self.grid, self.rng = grid, rng
        self.columns = columns  # (G, C): each global leaf's count column of each class
        self.cls = np.repeat(np.arange(len(per_class)), per_class)
        self.n_trees = len(grid.roots)
        self.aliased = grid.aliased
        self.n = len(self.cls)
        self.weight = np.ones(grid.counts.shape)
        self.inside = np.zeros(self.n, dtype=bool)
        self.fixed = np.zeros(self.n, dtype=bool)  # pinned rows: never moved nor ejected
        self.since = np.full(self.n, -TABU, dtype=np.int64)  # move when last brought inside
        self.step = 0

    def place(self, start: tuple[np.ndarray, np.ndarray] | None, pinned: int) -> None:
        """The start rows (by path) inside at their points (the first ``pinned`` for good);
        the rest outside, at random points of tree 0's leaves with room for their class;
        then every row that fits comes in."""
        g, n_features = self.grid, len(self.grid.n_bins)
        points = np.zeros((self.n, n_features), dtype=np.int64)
        given = np.zeros(self.n, dtype=bool)
        if start is not None and len(start[1]):
            paths, cls = start
            at = self.grid.point_in(paths + g.path_offset)
            for c in np.unique(cls):
                mine = np.flatnonzero(cls == c)
                free = np.flatnonzero(self.cls == c)[:len(mine)]
                points[free] = at[mine[:len(free)]]
                given[free] = True
                self.fixed[free] = mine[:len(free)] < pinned
        self.points = points
        self.paths = np.zeros((self.n, self.n_trees), dtype=np.int64)
        self.occ = np.zeros(g.counts.shape, dtype=np.int64)
        self._route_rows(np.flatnonzero(given))
        for row in np.flatnonzero(given):
            self._insert(row)
        if (self.occ > g.counts).any():
            raise ValueError("the start rows hold a leaf's class beyond its count")
        ends = np.append(g.offset, len(g.counts))
        for c in np.unique(self.cls):
            rows = np.flatnonzero(~given & (self.cls == c))
            tree = _start_tree(self.columns, g.offset, c)
            first = np.arange(ends[tree], ends[tree + 1])
            at = self._in_leaves(first, c)
            room = np.maximum(g.counts[at] - self.occ[at], 0)
            slots = self.rng.permutation(np.repeat(np.arange(len(room)), room))
            if not len(slots):
                slots = np.flatnonzero(g.counts[at] > 0)
            slots = g.a_path(g.offset[tree] + np.resize(slots, len(rows)), self.rng)
            lo, hi = g.lo[slots], g.hi[slots]
            points[rows] = lo + (self.rng.random(lo.shape) * (hi - lo + 1)).astype(np.int64)
        self._route_rows(np.flatnonzero(~given))
        for row in self.rng.permutation(np.flatnonzero(~given)):
            if not len(self._full(row)):
                self._insert(row)

    def _route_rows(self, rows: np.ndarray) -> None:
        trees = np.tile(np.arange(self.n_trees), len(rows))
        self.paths[rows] = self.grid.route(np.repeat(self.points[rows], self.n_trees, axis=0),
                                            trees).reshape(len(rows), self.n_trees)

    def _insert(self, row: int) -> None:
        self.inside[row] = True
        self.since[row] = self.step
        self.occ[self._at(self.paths[row], self.cls[row])] += 1

    def _eject(self, row: int) -> None:
        self.inside[row] = False
        self.occ[self._at(self.paths[row], self.cls[row])] -= 1

    def _full(self, row: int) -> np.ndarray:
        """Global paths of ``row`` whose leaf has no room left for its class."""
        mine, c = self.paths[row], self.cls[row]
        at = self._at(mine, c)
        return mine[self.occ[at] >= self.grid.counts[at]]

    def _leaf(self, paths: np.ndarray) -> np.ndarray:
        """The global leaf of each global path."""
        return self.grid.path_leaf[paths] if self.aliased else paths

    def _in_leaves(self, leaves: np.ndarray, c: int | np.ndarray,
                   ) -> tuple[np.ndarray, np.ndarray]:
        """The (global leaf, column) entries of ``occ`` and the counts that hold class
        ``c``'s rows in ``leaves``."""
        return leaves, self.columns[leaves, c]

    def _at(self, paths: np.ndarray, c: int | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`_in_leaves` for the leaves of global ``paths``."""
        return self._in_leaves(self._leaf(paths), c)

    def _changes(self, rows: np.ndarray, feats: np.ndarray, bins: np.ndarray,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For candidate k (row ``rows[k]`` with ``feats[k]`` set to ``bins[k]``): the trees
        whose path it changes and the new global path, as ``(k, tree, path)`` arrays (a new
        path may end in the same leaf)."""
        g = self.grid
        mine = self.paths[rows]  # (K, T)
        f = feats[:, None]
        stays = (g.lo[mine, f] <= bins[:, None]) & (bins[:, None] <= g.hi[mine, f])
        k_idx, t_idx = np.nonzero(~stays)
        cand = self.points[rows[k_idx]]
        cand[np.arange(len(k_idx)), feats[k_idx]] = bins[k_idx]
        return k_idx, t_idx, g.route(cand, t_idx)

    def _apply(self, row: int, feat: int, value: int, trees: np.ndarray, to: np.ndarray,
               ) -> None:
        if self.inside[row]:
            np.subtract.at(self.occ, self._at(self.paths[row, trees], self.cls[row]), 1)
            np.add.at(self.occ, self._at(to, self.cls[row]), 1)
        self.paths[row, trees] = to
        self.points[row, feat] = value

    def move(self, row: int) -> None:
        """One step for an outside row: across a face of a full leaf (or a random jump)
        to the candidate of least weighted full leaves; in when none is full. Stuck, it
        asks the rows in its full leaves to make room, and failing that ejects them."""
        g, c = self.grid, self.cls[row]
        self.step += 1
        full = self._full(row)
        if not len(full):
            self._insert(row)
            return
        feats, bins = g.steps(self.points[row], self.rng.permutation(full)[:FACE_LEAVES],
                              RANDOM_CANDIDATES, self.rng)
        k = len(feats)
        if k:
            k_idx, t_idx, new = self._changes(np.full(k, row), feats, bins)
            old = self.paths[row, t_idx]
            w = self.weight
            old_at, new_at = self._at(old, c), self._at(new, c)
            gain = np.where(self.occ[old_at] >= g.counts[old_at], w[old_at], 0.0)
            cost = np.where(self.occ[new_at] >= g.counts[new_at], w[new_at], 0.0)
            delta = np.bincount(k_idx, cost - gain, minlength=k) + self.rng.random(k) * 1e-3
            best = int(np.argmin(delta))
            if delta[best] < 0:
                moved = k_idx == best
                self._apply(row, feats[best], bins[best], t_idx[moved], new[moved])
                if not len(self._full(row)):
                    self._insert(row)
                return
        self.weight[self._at(full, c)] += 1.0
        if len(full) <= ROOM_LEAVES:
            for path in full:
                self._make_room(path, c)
            if not len(self._full(row)):
                self._insert(row)
                return
        self._eject_for(row, self._full(row))

    def _make_room(self, path: int, c: int) -> None:
        """Move one inside row counted with class ``c`` in the leaf of ``path`` (of its
        class, or of a class its tree pools with it) out of that leaf to leaves that all
        have room, preferring to leave the leaves outside rows wait for (their weight)."""
        g = self.grid
        tree = int(np.searchsorted(g.path_offset, path, side="right") - 1)
        leaf = self._leaf(path)
        holders = np.flatnonzero(self.inside & ~self.fixed
                                 & (self.columns[leaf, self.cls] == self.columns[leaf, c])
                                 & (self._leaf(self.paths[:, tree]) == leaf))
        if not len(holders):
            return
        holders = self.rng.permutation(holders)[:ROOM_ROWS]
        rows, feats, bins = self._exits_of(holders, tree)
        k = len(rows)
        k_idx, t_idx, new = self._changes(rows, feats, bins)
        old = self.paths[rows[k_idx], t_idx]
        mover = self.cls[rows[k_idx]]  # each candidate's own class
        old_at, new_at = self._at(old, mover), self._at(new, mover)
        # a step to another path of the same leaf is no step out of it
        blocked = np.bincount(k_idx, (self.occ[new_at] >= g.counts[new_at])
                              & (old_at[0] != new_at[0]), minlength=k)
        w = self.weight
        score = np.bincount(k_idx, w[old_at] - w[new_at], minlength=k) + self.rng.random(k)
        score[blocked > 0] = -np.inf
        best = int(np.argmax(score))
        if np.isfinite(score[best]):
            moved = k_idx == best
            self._apply(int(rows[best]), feats[best], bins[best], t_idx[moved], new[moved])

    def _exits_of(self, rows: np.ndarray, tree: int,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(row, feature, bin)`` of every step across a face of each row's path in
        ``tree``: the rows of one path at a time (all of them, in the order given, where
        no leaf has several paths)."""
        own = self.paths[rows, tree]
        rows_of, feats_of, bins_of = [], [], []
        for path in np.unique(own):
            feats, bins = self.grid.exits(np.array([path]))
            mine = rows[own == path]
            rows_of.append(np.repeat(mine, len(feats)))
            feats_of.append(np.tile(feats, len(mine)))
            bins_of.append(np.tile(bins, len(mine)))
        return np.concatenate(rows_of), np.concatenate(feats_of), np.concatenate(bins_of)

    def _eject_for(self, row: int, full: np.ndarray) -> None:
        """Bring ``row`` in, ejecting inside rows counted with its class (its own, or one
        a tree pools with it) that hold its leaves in ``full``, those holding most first;
        rows brought in within ``TABU`` steps stay (and when they alone hold a leaf,
        ``row`` stays out)."""
        c = self.cls[row]
        others = np.flatnonzero(self.inside & ~self.fixed & (self.since < self.step - TABU))
        if not len(others):
            return
        theirs = self._leaf(self.paths[others])  # (rows, T)
        mine, full = self._leaf(self.paths[row]), self._leaf(full)
        held = np.isin(theirs, full) & (self.columns[theirs, self.cls[others][:, None]]
                                        == self.columns[mine, c][None, :])
        ejected = []
        left = np.ones(self.n_trees, dtype=bool)
        need = np.isin(mine, full)
        while (need & left).any():
            hits = (held & (need & left)).sum(axis=1)
            best = int(np.argmax(hits + self.rng.random(len(hits)) * 0.5))
            if hits[best] == 0:
                return
            ejected.append(others[best])
            left &= ~held[best]
        for other in ejected:
            self._eject(int(other))
        self._insert(row)

    def run(self, deadline: float,
            on_better: Callable[[np.ndarray, np.ndarray], None] | None,
            ) -> tuple[np.ndarray, np.ndarray]:
        """Steps until ``deadline`` or every row is inside; the largest inside set seen."""
        best = self._snapshot()
        told = 0
        report = time.perf_counter() + REPORT_EVERY_S
        while len(best[1]) < self.n and time.perf_counter() < deadline:
            outside = np.flatnonzero(~self.inside)
            self.move(int(outside[self.rng.integers(len(outside))]))
            if self.inside.sum() > len(best[1]):
                best = self._snapshot()
            if on_better is not None and len(best[1]) > told and time.perf_counter() >= report:
                on_better(*best)
                told, report = len(best[1]), time.perf_counter() + REPORT_EVERY_S
        if on_better is not None and len(best[1]) > told:
            on_better(*best)
        return best

    def _snapshot(self) -> tuple[np.ndarray, np.ndarray]:
        rows = np.flatnonzero(self.inside)
        return self.paths[rows] - self.grid.path_offset, self.cls[rows]
