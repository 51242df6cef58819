"""The per-row view of a bootstrap forest with known draws: one leaf per (row, drawing tree).

Row k was drawn ``b[t, k]`` times by tree t; in every tree that drew it, it lies in one
leaf, and that leaf holds at least ``b[t, k]`` draws of the row's class. The unknowns are
*placements* ``(pair, path, class)``, a pair being one (row, drawing tree), a path one way
down the tree to a leaf (a leaf of a tree read from a table with gaps or categories has
several, `treeleaks.counts.paths`; elsewhere path and leaf are one); a row takes one
placement per pair and one class throughout, and its paths' boxes must share a point. For
axis-parallel boxes that is the same as pairwise intersection (Helly's theorem for boxes),
and the row's box is their intersection. The counts are the leaves': a placement counts in
its path's leaf. Nothing here lists cells of the trees' common refinement, so the size
follows N times trees times candidate paths, never the domain.

`RowLeaves.propagate` closes placements that no dataset reproducing the counts can use,
to a fixed point, so that every placement it closes is proven absent and a pair left with
one placement is proven (sound, like `counts.system.propagate` for cells):

- a row's class must have an open placement in every tree that drew it;
- a row's box is the intersection, over its trees, of the hull of its open paths; a path
  that misses the box is closed;
- a leaf holds ``distinct`` rows: when exactly that many pairs can be there, they all are;
  when that many are forced there, no other is;
- a leaf of one class holds ``weight`` draws: a row the rest cannot make room for (each
  other row there brings at least one draw) is closed, and the last row must bring exactly
  what is left.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from treeleaks.counts.paths import Paths, tree_paths
from treeleaks.ir.model import ReleasedModel
from treeleaks.runtime.clock import seconds_until


class RowLeavesInfeasible(Exception):
    """No dataset reproduces the counts with these draws; the message says where."""


class RowLeavesTooLarge(Exception):
    """More candidate placements than the caller allows; the message says how many."""


@dataclass
class RowLeaves:
    """Every candidate placement of every (row, drawing tree) pair.

    Leaves of all trees are stacked (``leaf_tree``, per-class ``weight``, ``distinct``
    rows), and so are their paths, leaf by leaf (``lower``/``upper`` boxes with
    ``lower < x <= upper``, ``path_leaf``). Pair p is row ``pair_row[p]`` in tree
    ``pair_tree[p]``, drawn ``pair_draw[p]`` times; placement j puts pair ``place_pair[j]``
    on path ``place_path[j]`` of leaf ``place_leaf[j]`` with class ``place_cls[j]``, while
    ``open[j]``. Placements are sorted by pair. Where no leaf has several paths, path and
    leaf are one, and so are the two arrays."""

    n_rows: int
    n_classes: int
    leaf_tree: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    weight: np.ndarray
    distinct: np.ndarray
    pair_row: np.ndarray
    pair_tree: np.ndarray
    pair_draw: np.ndarray
    place_pair: np.ndarray
    place_leaf: np.ndarray
    place_cls: np.ndarray
    open: np.ndarray
    path_leaf: np.ndarray
    place_path: np.ndarray
    last_boxes: tuple[np.ndarray, np.ndarray] | None = None  # the rows' boxes last checked

    @classmethod
    def of(cls, model: ReleasedModel, max_placements: int | None = None) -> RowLeaves:
        """The placements the counts allow one pair at a time: the leaf holds at least the
        pair's draws of the class, and room for its other distinct rows. More than
        ``max_placements`` of them raise `RowLeavesTooLarge` before they are all built."""
        m = model.n_features
        boxes = [tree_paths(tree, m) for tree in model.trees]
        lower = np.vstack([b.lower for b in boxes])
        upper = np.vstack([b.upper for b in boxes])
        weight = np.vstack([tree.counts for tree in model.trees]).astype(np.int64)
        distinct = np.concatenate([tree.n_samples for tree in model.trees]).astype(np.int64)
        leaf_tree, offset, path_leaf, first_path, n_paths = _leaf_layout(model, boxes)
        aliased = len(path_leaf) > len(leaf_tree)
        draws = np.vstack([tree.draws for tree in model.trees]).astype(np.int64)
        _check_totals(draws, weight.sum(axis=1), distinct, leaf_tree)
        pair_tree, pair_row, pair_draw = _drawn_pairs(draws)
        pairs, leaves, classes, paths = [], [], [], []
        listed = 0
        total = weight.sum(axis=1)
        for t in range(model.n_trees):
            at = np.flatnonzero(pair_tree == t)
            p, v, c = _fitting(weight, total, distinct, offset[t], offset[t + 1],
                               pair_draw[at])
            if aliased:  # one placement per path of the leaf
                p, v, c, path = _per_path(p, v, c, n_paths, first_path)
                paths.append(path)
            listed += p.size
            if max_placements is not None and listed > max_placements:
                raise RowLeavesTooLarge(
                    f"more than {max_placements:,} candidate placements of rows in leaves "
                    f"({listed:,} after {t + 1} of {model.n_trees} trees, "
                    f"{listed / max(int(np.sum(pair_tree <= t)), 1):.0f} a (row, tree) pair)")
            pairs.append(at[p])
            leaves.append(v)
            classes.append(c)
        place_pair = np.concatenate(pairs)
        order = np.argsort(place_pair, kind="stable")
        place_leaf = np.concatenate(leaves)[order]
        return cls(_n_rows(model), model.n_classes, leaf_tree, lower, upper, weight,
                   distinct, pair_row, pair_tree, pair_draw, place_pair[order], place_leaf,
                   np.concatenate(classes)[order], np.ones(order.size, dtype=bool), path_leaf,
                   np.concatenate(paths)[order] if aliased else place_leaf)

    @property
    def n_leaves(self) -> int:
        """The leaves of all trees."""
        return self.weight.shape[0]

    @property
    def aliased(self) -> bool:
        """Whether some leaf has several paths."""
        return self.path_leaf.size > self.n_leaves

    def _kept(self, keep: np.ndarray) -> dict[str, np.ndarray]:
        """The placements ``keep`` marks, every placement array filtered (path and leaf
        stay one array where they are one), all open."""
        leaf = self.place_leaf[keep]
        return dict(place_pair=self.place_pair[keep], place_leaf=leaf,
                    place_cls=self.place_cls[keep],
                    place_path=self.place_path[keep] if self.aliased else leaf,
                    open=np.ones(leaf.size, dtype=bool))

    def with_classes(self, classes: np.ndarray) -> RowLeaves:
        """A copy whose rows take the given classes (-1: any), closed placements dropped."""
        row_class = classes[self.pair_row[self.place_pair]]
        keep = self.open & ((row_class < 0) | (self.place_cls == row_class))
        return replace(self, **self._kept(keep), last_boxes=None)

    def propagate(self, deadline: float, max_rounds: int = 500) -> None:
        """Close placements no consistent dataset uses, to a fixed point or ``deadline``
        (see the module doc). Raises `RowLeavesInfeasible` when some pair has none left."""
        for _ in range(max_rounds):
            self._compact()
            before = int(self.open.sum())
            self._classes()
            self._boxes()
            self._capacity()
            self._weights()
            self._check()
            if int(self.open.sum()) == before or time.perf_counter() > deadline:
                return

    def _compact(self) -> None:
        """Drop closed placements once they are most of them (every rule reads the open)."""
        if self.open.mean() > 0.5:
            return
        for name, kept in self._kept(self.open).items():
            setattr(self, name, kept)

    def settle_classes(self, deadline: float) -> tuple[np.ndarray | None, bool]:
        """Each row's class from the trees' class totals alone: per tree and class, the
        draws of the rows of that class add up to the class's weight, and in a tree whose
        leaves each hold one class, the rows it drew of that class number its leaves'
        distinct rows. One solution (a MIP) and whether it is the only one (a second MIP
        that excludes it has none); the classes are then fixed, and proven. ``None`` when
        no solution was found before ``deadline``."""
        from scipy.optimize import Bounds, LinearConstraint, milp

        allowed = self.row_classes()
        k_of, c_of = np.nonzero(allowed)
        n_vars = k_of.size
        draws = np.zeros((self.leaf_tree.max() + 1, self.n_rows), dtype=np.int64)
        draws[self.pair_tree, self.pair_row] = self.pair_draw
        n_trees = draws.shape[0]
        totals = np.zeros((n_trees, self.n_classes), dtype=np.int64)
        np.add.at(totals, self.leaf_tree, self.weight)
        pure = (self.weight > 0).sum(axis=1) == 1
        all_pure = np.bincount(self.leaf_tree, weights=~pure, minlength=n_trees) == 0
        counted = np.zeros((n_trees, self.n_classes), dtype=np.int64)
        np.add.at(counted, (self.leaf_tree[pure], self.weight[pure].argmax(axis=1)),
                  self.distinct[pure])
        pure_trees = np.flatnonzero(all_pure)
        blocks, rhs = [], []
        for c in range(self.n_classes):
            mine = (c_of == c)[None]
            blocks += [sp.csr_matrix(np.where(mine, draws[:, k_of], 0)),
                       sp.csr_matrix(np.where(mine, draws[pure_trees][:, k_of] > 0, 0))]
            rhs += [totals[:, c], counted[pure_trees, c]]
        one = sp.csr_matrix((np.ones(n_vars), (k_of, np.arange(n_vars))),
                            shape=(self.n_rows, n_vars))
        A = sp.vstack([*blocks, one]).tocsr()
        b = np.concatenate([*rhs, np.ones(self.n_rows)])
        start = time.perf_counter()
        options = {"time_limit": seconds_until(deadline, 0.01)}
        found = milp(np.zeros(n_vars), constraints=LinearConstraint(A, b, b),
                     integrality=np.ones(n_vars), bounds=Bounds(0, 1), options=options)
        if found.x is None:
            if found.status == 2:
                raise RowLeavesInfeasible("no assignment of classes to the rows meets every "
                                          "tree's class totals with these draws")
            return None, False
        chosen = found.x > 0.5
        classes = np.full(self.n_rows, -1)
        classes[k_of[chosen]] = c_of[chosen]
        # The proof that it is the only one gets twice what finding it took (at least
        # 1 s, at most half of what is left), so the search keeps its time.
        # Figures: docs/lab/2026-11-28-constants.md#counts-row_leaves
        now = time.perf_counter()
        proof_end = now + min(max(2 * (now - start), 1.0), (deadline - now) / 2)
        options = {"time_limit": seconds_until(proof_end, 0.01)}
        other = milp(np.zeros(n_vars), constraints=[
            LinearConstraint(A, b, b),
            LinearConstraint(chosen.astype(np.float64)[None], -np.inf, self.n_rows - 1)],
            integrality=np.ones(n_vars), bounds=Bounds(0, 1), options=options)
        unique = other.status == 2
        if unique:
            self.open &= self.place_cls == classes[self.pair_row[self.place_pair]]
        return classes, unique

    def row_classes(self) -> np.ndarray:
        """``(N, C)``: which classes each row may still have."""
        has = np.zeros((self.pair_row.size, self.n_classes), dtype=bool)
        has[self.place_pair[self.open], self.place_cls[self.open]] = True
        per_row = np.bincount(self.pair_row, minlength=self.n_rows)
        ok = np.stack([np.bincount(self.pair_row, weights=has[:, c], minlength=self.n_rows)
                       for c in range(self.n_classes)], axis=1)
        return ok == per_row[:, None]

    def row_boxes(self) -> tuple[np.ndarray, np.ndarray]:
        """Each row's box: the intersection over its trees of its open paths' hull."""
        m = self.lower.shape[1]
        low = np.full((self.n_rows, m), -np.inf)
        high = np.full((self.n_rows, m), np.inf)
        j = np.flatnonzero(self.open)  # sorted by pair, and pairs by row
        if not j.size:
            return low, high
        pair, path = self.place_pair[j], self.place_path[j]
        starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
        hull_low = np.minimum.reduceat(self.lower[path], starts, axis=0)
        hull_high = np.maximum.reduceat(self.upper[path], starts, axis=0)
        row = self.pair_row[pair[starts]]
        first = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
        low[row[first]] = np.maximum.reduceat(hull_low, first, axis=0)
        high[row[first]] = np.minimum.reduceat(hull_high, first, axis=0)
        return low, high

    def decided_rows(self) -> np.ndarray:
        """Rows whose class and every path are left single: after `propagate`, in every
        consistent dataset."""
        count = np.bincount(self.place_pair[self.open], minlength=self.pair_row.size)
        undecided = np.bincount(self.pair_row, weights=count > 1, minlength=self.n_rows)
        return (undecided == 0) & (self.row_classes().sum(axis=1) == 1)

    def forced_pairs(self) -> np.ndarray:
        """Per pair, a placement of the one leaf and class left to it (-1 while several
        are open; its path may be open to choice)."""
        j = np.flatnonzero(self.open)
        only = np.full(self.pair_row.size, -1)
        if self.aliased:  # one (leaf, class) over several paths is forced too
            pair = self.place_pair[j]
            key = self.place_leaf[j] * self.n_classes + self.place_cls[j]
            starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
            ends = np.append(starts[1:], pair.size)
            single = (np.minimum.reduceat(key, starts) == np.maximum.reduceat(key, starts))
            only[pair[starts[single]]] = j[ends[single] - 1]
            return only
        count = np.bincount(self.place_pair[j], minlength=self.pair_row.size)
        single = count[self.place_pair[j]] == 1
        only[self.place_pair[j[single]]] = j[single]
        return only

    def _classes(self) -> None:
        ok = self.row_classes()
        self.open &= ok[self.pair_row[self.place_pair], self.place_cls]

    def _boxes(self) -> None:
        low, high = self.row_boxes()
        moved = np.ones(self.n_rows, dtype=bool)
        if self.last_boxes is not None:  # only rows whose box narrowed can lose a leaf
            moved = ((low != self.last_boxes[0]) | (high != self.last_boxes[1])).any(axis=1)
        self.last_boxes = (low, high)
        j = np.flatnonzero(self.open & moved[self.pair_row[self.place_pair]])
        row, path = self.pair_row[self.place_pair[j]], self.place_path[j]
        meets = (np.maximum(low[row], self.lower[path])
                 < np.minimum(high[row], self.upper[path])).all(axis=1)
        self.open[j[~meets]] = False

    def _pair_leaves(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The distinct open (pair, leaf) combinations, and per pair how many it has."""
        j = np.flatnonzero(self.open)
        key = np.unique(self.place_pair[j].astype(np.int64) * self.n_leaves
                        + self.place_leaf[j])
        pair, leaf = key // self.n_leaves, key % self.n_leaves
        return pair, leaf, np.bincount(pair, minlength=self.pair_row.size)

    def _capacity(self) -> None:
        pair, leaf, per_pair = self._pair_leaves()
        n_leaves = self.n_leaves
        can = np.bincount(leaf, minlength=n_leaves)
        forced = per_pair[pair] == 1
        held = np.bincount(leaf[forced], minlength=n_leaves)
        short = np.flatnonzero((can < self.distinct) | (held > self.distinct))
        if short.size:
            v = short[0]
            tree = self.leaf_tree[v]
            raise RowLeavesInfeasible(
                f"tree {tree}, leaf {v - np.searchsorted(self.leaf_tree, tree)}: it holds "
                f"{self.distinct[v]} distinct rows, but {can[v]} can be there and {held[v]} "
                "must")
        full = can == self.distinct  # every pair that may be there is
        keep_only = np.full(self.pair_row.size, -1)
        keep_only[pair[full[leaf]]] = leaf[full[leaf]]
        bound = keep_only[self.place_pair] >= 0
        self.open &= ~bound | (self.place_leaf == keep_only[self.place_pair])
        taken = held == self.distinct  # no room left but for the forced
        pair_forced = per_pair[self.place_pair] == 1
        self.open &= ~(taken[self.place_leaf] & ~pair_forced)

    def _weights(self) -> None:
        pure = (self.weight > 0).sum(axis=1) == 1
        only = self.forced_pairs()
        fixed = only[only >= 0]
        n_leaves = self.n_leaves
        held_draws = np.zeros((n_leaves, self.n_classes), dtype=np.int64)
        np.add.at(held_draws, (self.place_leaf[fixed], self.place_cls[fixed]),
                  self.pair_draw[self.place_pair[fixed]])
        _, _, per_pair = self._pair_leaves()
        single_leaf = per_pair == 1
        held_rows = np.bincount(_unique_leaf(self, single_leaf), minlength=n_leaves)
        room = self.weight - held_draws
        rows_left = self.distinct - held_rows
        leaf, cls = self.place_leaf, self.place_cls
        b = self.pair_draw[self.place_pair]
        free = ~single_leaf[self.place_pair] & pure[leaf]
        too_heavy = b > room[leaf, cls] - (rows_left[leaf] - 1)
        last_misfit = (rows_left[leaf] == 1) & (b != room[leaf, cls])
        self.open &= ~(free & (too_heavy | last_misfit))

    def _check(self) -> None:
        count = np.bincount(self.place_pair[self.open], minlength=self.pair_row.size)
        empty = np.flatnonzero(count == 0)
        if empty.size:
            p = empty[0]
            raise RowLeavesInfeasible(
                f"tree {self.pair_tree[p]} drew row {self.pair_row[p]} "
                f"{self.pair_draw[p]} time(s), and no leaf of it can hold that row together "
                "with the rest of the counts")


def _check_totals(draws: np.ndarray, leaf_weight: np.ndarray, distinct: np.ndarray,
                  leaf_tree: np.ndarray) -> None:
    """Each tree's draws add up to the draws its leaves hold, and it drew as many distinct
    rows as its leaves hold; else `RowLeavesInfeasible` naming the first tree that does
    not."""
    n_trees = draws.shape[0]
    held = np.bincount(leaf_tree, weights=leaf_weight, minlength=n_trees).round()
    rows = np.bincount(leaf_tree, weights=distinct, minlength=n_trees).round()
    drawn, drew = draws.sum(axis=1), (draws > 0).sum(axis=1)
    bad = np.flatnonzero((drawn != held) | (drew != rows))
    if bad.size:
        t = bad[0]
        raise RowLeavesInfeasible(
            f"tree {t}'s draws add up to {drawn[t]} draws of {drew[t]} distinct rows, but "
            f"its leaves hold {int(held[t])} draws of {int(rows[t])} distinct rows")


def _unique_leaf(leaves: RowLeaves, single_leaf: np.ndarray) -> np.ndarray:
    """The leaf of each pair confined to one leaf (whatever its open classes)."""
    j = np.flatnonzero(leaves.open & single_leaf[leaves.place_pair])
    _, first = np.unique(leaves.place_pair[j], return_index=True)
    return leaves.place_leaf[j[first]]


def _n_rows(model: ReleasedModel) -> int:
    """N: the length of every tree's draws."""
    return len(model.trees[0].draws)


def _leaf_layout(model: ReleasedModel, boxes: list[Paths]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Where the trees' leaves and paths sit once stacked: each leaf's tree, each tree's
    first leaf (and the end), each path's leaf, each leaf's first path and its paths."""
    leaf_tree = np.concatenate([np.full(tree.n_leaves, t) for t, tree in
                                enumerate(model.trees)])
    offset = np.concatenate([[0], np.cumsum([tree.n_leaves for tree in model.trees])])
    path_leaf = np.concatenate([b.leaf + offset[t] for t, b in enumerate(boxes)])
    first_path = np.searchsorted(path_leaf, np.arange(len(leaf_tree)))
    n_paths = np.diff(np.append(first_path, len(path_leaf)))
    return leaf_tree, offset, path_leaf, first_path, n_paths


def _drawn_pairs(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (row, tree) pairs that drew the row at least once, by row then tree: their
    trees, rows and draws."""
    pair_tree, pair_row = np.nonzero(draws)
    order = np.lexsort((pair_tree, pair_row))
    pair_tree, pair_row = pair_tree[order], pair_row[order]
    return pair_tree, pair_row, draws[pair_tree, pair_row]


def _fitting(weight: np.ndarray, total: np.ndarray, distinct: np.ndarray, first: int,
             end: int, drawn: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The placements of one tree's (row, tree) pairs (drawn ``drawn`` times) in its leaves
    ``first:end``: (pair among these, leaf, class) where the leaf holds at least the pair's
    draws of the class and room for its other distinct rows."""
    # the (leaf, class) entries holding draws, in (leaf, class) order: a pair (drawn
    # at least once) fits no other, and with many classes most entries are empty
    v, c = np.nonzero(weight[first:end])
    own = first + v
    b = drawn[:, None]
    rest = total[own][None, :] - b  # the draws of the leaf's other rows
    others = distinct[own][None, :] - 1
    fits = (weight[own, c][None] >= b) & (rest >= others) & ((others > 0) | (rest == 0))
    p, e = np.nonzero(fits)
    return p, own[e], c[e]


def _per_path(p: np.ndarray, v: np.ndarray, c: np.ndarray, n_paths: np.ndarray,
              first_path: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The placements repeated once per path of their leaf, with each one's path."""
    many = n_paths[v]
    p, v, c = np.repeat(p, many), np.repeat(v, many), np.repeat(c, many)
    path = first_path[v] + np.arange(v.size) - np.repeat(np.cumsum(many) - many, many)
    return p, v, c, path
