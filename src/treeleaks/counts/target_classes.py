"""A regression forest read as a classifier whose classes are its targets.

A fully grown regression tree splits until each leaf's rows share one target (a node of
equal targets has no impurity left to split) or share every feature. A leaf of the first
kind holds its weighted rows all of its value's target; a leaf of one row holds that row's
target exactly. A leaf of the second kind (its impurity, where the file keeps it, above
rounding) holds several targets, its value their mean: it is split into its targets' draws
and rows where the pure leaves' targets allow one split only (`treeleaks.counts.
mixed_leaves`), and is *undecided* otherwise. Taking each target as a class, every leaf
but the undecided holds its draws per class, and the classifier's per-row machinery
(`treeleaks.counts.row_leaves`) places the rows with their targets as their classes.
Values the file stores a rounding apart (a mean of w equal targets, divided by w) are one
class. A file without impurities reads every leaf as pure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from treeleaks.counts.mixed_leaves import LeafSplit, split_leaf
from treeleaks.counts.paths import leaf_hulls
from treeleaks.ir.model import ReleasedModel, Tree

__all__ = ["LeafTargets", "leaf_targets", "target_class_view", "unheld_leaf"]

# Leaf values this close (relative) are one target: float64 means of equal targets differ
# by a few units in the last place, far below this; distinct targets far above it.
VALUE_RTOL = 1e-9
# A leaf's impurity above this (relative to the largest leaf value squared) is a variance of
# several targets; a leaf of one target stores 0 up to rounding.
IMPURITY_RTOL = 1e-9
PAIR_RTOL = 1e-6  # a pair's target this close to a pure leaf's value is that value


@dataclass
class LeafTargets:
    """Per tree, the targets each leaf holds: entry i of tree t puts ``draws[t][i]`` draws
    from ``rows[t][i]`` distinct rows of target ``target[t][i]`` (into ``targets``) in leaf
    ``leaf[t][i]``; ``undecided[t]`` marks the leaves of several targets not told apart
    (no entry). ``several[t]`` marks the leaves of several targets, split or not; ``assumed``
    counts the splits assumed (the only one among the neighbours' targets, not among
    all)."""

    targets: np.ndarray
    leaf: list[np.ndarray]
    target: list[np.ndarray]
    draws: list[np.ndarray]
    rows: list[np.ndarray]
    undecided: list[np.ndarray]
    several: list[np.ndarray]
    assumed: int = 0

    @property
    def mixed(self) -> int:
        """The leaves of several targets, split or not."""
        return int(sum(s.sum() for s in self.several))

    def pure(self) -> LeafTargets:
        """The leaves of one target alone: what a reading that sets the leaves of several
        targets aside sees (their rows are not counted anywhere)."""
        keep = [~s[leaf] for s, leaf in zip(self.several, self.leaf)]
        return LeafTargets(
            self.targets, *([column[t][keep[t]] for t in range(len(keep))]
                            for column in (self.leaf, self.target, self.draws, self.rows)),
            undecided=[np.zeros_like(u) for u in self.undecided],
            several=[np.zeros_like(s) for s in self.several])

    @property
    def n_undecided(self) -> int:
        """The leaves of several targets whose split is not known."""
        return int(sum(u.sum() for u in self.undecided))

    def per_value(self, distinct: bool = False) -> np.ndarray:
        """(trees, targets): each tree's draws (``distinct``: rows, -1 where a split leaves
        them open) of each target."""
        column = self.rows if distinct else self.draws
        total = np.vstack([np.bincount(v, weights=w, minlength=self.targets.size)
                           for v, w in zip(self.target, column)]).astype(np.int64)
        if distinct:
            total[self._open_rows()] = -1
        return total

    def _open_rows(self) -> np.ndarray:
        """(trees, targets): where some split leaves its rows of the target open."""
        return np.vstack([np.bincount(v[r < 0], minlength=self.targets.size) > 0
                          for v, r in zip(self.target, self.rows)])

    def matrix(self, t: int, n_leaves: int, distinct: bool = False) -> sp.csr_matrix:
        """Tree ``t``'s (leaves, targets) draws (``distinct``: rows, -1 where open)."""
        data = (self.rows if distinct else self.draws)[t]
        return sp.csr_matrix((data, (self.leaf[t], self.target[t])),
                             shape=(n_leaves, self.targets.size))


def _group(values: np.ndarray, rtol: float) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values (sorted; values within ``rtol`` of each other are one, given by
    its most frequent value) and each value's index among them."""
    distinct, index, seen = np.unique(values, return_inverse=True, return_counts=True)
    if not distinct.size:
        return distinct, index
    gap = np.abs(np.diff(distinct)) > rtol * np.maximum(np.abs(distinct[1:]),
                                                        np.abs(distinct[:-1]))
    group = np.concatenate([[0], np.cumsum(gap)])
    most_seen = np.lexsort((-seen, group))  # by group, the most frequent value first
    first = np.ones(distinct.size, dtype=bool)
    first[1:] = group[most_seen][1:] != group[most_seen][:-1]
    return distinct[most_seen[first]], group[index]


def leaf_targets(model: ReleasedModel, deadline: float = np.inf, assume: bool = False,
                 rtol: float = VALUE_RTOL) -> LeafTargets:
    """Which targets each leaf holds (see the module doc); the leaves of several targets
    not split by ``deadline`` (``time.perf_counter()``) stay undecided. ``assume``: split
    the others among their split neighbours' targets too (`_split_by_neighbours`)."""
    scale = max(max(float(np.abs(tree.values).max()) for tree in model.trees), 1.0)
    mixed = _mixed_leaves(model, scale)
    pure_values = np.concatenate([tree.values[~m] for tree, m in zip(model.trees, mixed)])
    targets, index = _group(np.concatenate([pure_values, _pair_targets(
        model, mixed, pure_values, scale)]), rtol)
    index = index[:pure_values.size]
    bounds = np.cumsum([int((~m).sum()) for m in mixed])[:-1]
    pure_target = np.split(index, bounds)
    split = _LeafSplitter(targets, scale, model.bootstrap, deadline)
    out: dict[str, list[np.ndarray]] = {"leaf": [], "target": [], "draws": [], "rows": [],
                                        "undecided": []}
    for tree, m, of_pure in zip(model.trees, mixed, pure_target):
        columns, undecided = _tree_targets(tree, m, of_pure, split)
        for name, column in columns.items():
            out[name].append(column)
        out["undecided"].append(undecided)
    held = LeafTargets(targets, **out, several=mixed)
    if held.n_undecided and time.perf_counter() < deadline:
        _split_by_neighbours(model, held, scale, deadline, assume)
    return held


def _mixed_leaves(model: ReleasedModel, scale: float) -> list[np.ndarray]:
    """Per tree, the leaves of several targets: an impurity above rounding (relative to
    ``scale`` squared) in a leaf of more than one row; none without impurities."""
    return [np.zeros(tree.n_leaves, dtype=bool) if tree.impurity is None else
            (tree.impurity > IMPURITY_RTOL * scale ** 2) & (tree.n_samples != 1)
            if tree.n_samples is not None else tree.impurity > IMPURITY_RTOL * scale ** 2
            for tree in model.trees]


def _leaf_rows(tree: Tree) -> np.ndarray:
    """Each leaf's distinct rows where the file keeps them, else its draws."""
    return tree.n_samples if tree.n_samples is not None else tree.counts[:, 0]


def _leaf_key(tree: Tree, rows: np.ndarray, leaf: int) -> tuple[int, int, float, float]:
    """What a leaf's split depends on: its rows, draws, mean and variance."""
    return (int(rows[leaf]), int(tree.counts[leaf, 0]), float(tree.values[leaf]),
            float(tree.impurity[leaf]))


class _LeafSplitter:
    """The split of a mixed leaf among all the targets, once per `_leaf_key`; None when
    no one split is the only one or the deadline had passed when it was first asked."""

    def __init__(self, targets: np.ndarray, scale: float, bootstrap: bool,
                 deadline: float) -> None:
        self.targets, self.scale, self.bootstrap, self.deadline = (targets, scale, bootstrap,
                                                                   deadline)
        self.splits: dict[tuple, LeafSplit | None] = {}

    def __call__(self, key: tuple[int, int, float, float]) -> LeafSplit | None:
        if key not in self.splits:
            self.splits[key] = None if time.perf_counter() > self.deadline else split_leaf(
                self.targets, *key, self.scale, self.bootstrap)
        return self.splits[key]


def _tree_targets(tree: Tree, mixed: np.ndarray, of_pure: np.ndarray,
                  split: _LeafSplitter) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """One tree's entries (leaf, target, draws, rows; by leaf): its pure leaves' (targets
    ``of_pure``) and its mixed leaves' splits; and the mixed leaves left undecided."""
    pure = np.flatnonzero(~mixed)
    rows = _leaf_rows(tree)
    parts = [(pure, of_pure, tree.counts[pure, 0], rows[pure])]
    undecided = np.zeros(tree.n_leaves, dtype=bool)
    for leaf in np.flatnonzero(mixed):
        found = split(_leaf_key(tree, rows, leaf))
        if found is None:
            undecided[leaf] = True
        else:
            parts.append((np.full(found.target.size, leaf), found.target, found.draws,
                          found.rows))
    order = np.argsort(np.concatenate([p[0] for p in parts]), kind="stable")
    return {name: np.concatenate([p[i] for p in parts]).astype(np.int64)[order]
            for name, i in (("leaf", 0), ("target", 1), ("draws", 2), ("rows", 3))}, undecided


def _split_by_neighbours(model: ReleasedModel, held: LeafTargets, scale: float,
                         deadline: float, assume: bool) -> None:
    """Split the undecided leaves again, each first among the targets held by the leaves
    of every tree whose boxes meet its own. Its rows share every feature, so each lies, in
    every tree that drew it, in a leaf meeting this one, and that leaf holds its target:
    the targets tried include the true ones (unless a row was drawn by this tree alone),
    so a split that is the only one among them is theirs. Then, for those still open,
    among the targets of the split leaves of several targets meeting it (the same rows'
    leaves in other trees, most likely), if ``assume``: a split found so is assumed, and
    counted."""
    neighbours = _Neighbours(model, held)
    for assumed in (False, True) if assume else (False,):
        if not _split_round(model, held, neighbours, scale, deadline, assumed):
            return


class _Neighbours:
    """Every tree's leaf hulls and the targets each leaf holds, as they were when made:
    the targets of the leaves meeting a given leaf."""

    def __init__(self, model: ReleasedModel, held: LeafTargets) -> None:
        self.hulls = [leaf_hulls(tree, model.n_features) for tree in model.trees]
        self.low = np.vstack([h[0] for h in self.hulls])
        self.high = np.vstack([h[1] for h in self.hulls])
        self.holds = sp.vstack([held.matrix(t, tree.n_leaves)
                                for t, tree in enumerate(model.trees)], format="csr")
        self.several = np.diff(self.holds.indptr) > 1  # the split leaves of several targets

    def targets_near(self, t: int, leaf: int, only_several: bool) -> np.ndarray:
        """The targets (indices) of the leaves meeting tree ``t``'s ``leaf`` (only those
        of several targets when ``only_several``)."""
        meets = np.all(np.maximum(self.low, self.hulls[t][0][leaf])
                       < np.minimum(self.high, self.hulls[t][1][leaf]), axis=1)
        return np.unique(self.holds[np.flatnonzero(meets & self.several if only_several
                                                   else meets)].indices)


def _split_round(model: ReleasedModel, held: LeafTargets, neighbours: _Neighbours,
                 scale: float, deadline: float, assumed: bool) -> bool:
    """One pass over the undecided leaves, splitting each among its neighbours' targets
    (the split ones of several targets when ``assumed``); False when the deadline cut it."""
    # without bootstrap a leaf's rows sit together in every tree, alike: one answer
    seen: dict[tuple, tuple[np.ndarray, LeafSplit] | None] = {}
    for t, tree in enumerate(model.trees):
        rows = _leaf_rows(tree)
        for leaf in np.flatnonzero(held.undecided[t]):
            if time.perf_counter() > deadline:
                return False
            key = _leaf_key(tree, rows, leaf)
            if model.bootstrap or key not in seen:
                near = neighbours.targets_near(t, leaf, assumed)
                split = split_leaf(held.targets[near], *key, scale, model.bootstrap)
                seen[key] = None if split is None else (near, split)
            if seen[key] is None:
                continue
            near, split = seen[key]
            _add_split(held, t, leaf, near[split.target], split)
            held.assumed += int(assumed)
    return True


def _add_split(held: LeafTargets, t: int, leaf: int, targets: np.ndarray,
               split: LeafSplit) -> None:
    """Record tree ``t``'s undecided ``leaf`` as split (``targets``: the split's, as
    indices into ``held.targets``)."""
    held.undecided[t][leaf] = False
    order = np.argsort(np.concatenate([held.leaf[t], np.full(targets.size, leaf)]),
                       kind="stable")
    for name, add in (("leaf", np.full(targets.size, leaf)), ("target", targets),
                      ("draws", split.draws), ("rows", split.rows)):
        column = getattr(held, name)
        column[t] = np.concatenate([column[t], add]).astype(np.int64)[order]


def _pair_targets(model: ReleasedModel, mixed: list[np.ndarray], known: np.ndarray,
                  scale: float) -> np.ndarray:
    """The targets of the leaves of two rows drawn once each (mean m, variance s: the
    targets are m - sqrt(s) and m + sqrt(s)) that no pure leaf holds (none within
    `PAIR_RTOL` of the largest |value|: the file's float64 impurity keeps sqrt(s) far
    closer): a single tree's leaf of two rows sharing every feature may be the only leaf
    holding their targets."""
    found = []
    for tree, m in zip(model.trees, mixed):
        rows = tree.n_samples if tree.n_samples is not None else tree.counts[:, 0]
        pair = m & (rows == 2) & (tree.counts[:, 0] == 2)
        reach = np.sqrt(tree.impurity[pair]) if pair.any() else np.zeros(0)
        found.append(np.concatenate([tree.values[pair] - reach, tree.values[pair] + reach]))
    values = np.unique(np.concatenate(found))
    if not values.size or not known.size:
        return values
    ordered = np.sort(known)
    at = np.clip(np.searchsorted(ordered, values), 1, ordered.size - 1)
    nearest = np.minimum(np.abs(values - ordered[at - 1]), np.abs(values - ordered[at]))
    return values[nearest > PAIR_RTOL * scale]


def target_class_view(model: ReleasedModel, held: LeafTargets) -> ReleasedModel:
    """The classifier whose classes are the regression model's targets, each leaf holding
    its draws per target (``held``, with no undecided leaf: see the module doc)."""
    trees = []
    for t, tree in enumerate(model.trees):
        counts = held.matrix(t, tree.n_leaves).toarray().astype(np.int64)
        trees.append(replace(tree, counts=counts, values=None))
    return replace(model, trees=trees, classes=held.targets.tolist(), task="classification")


def unheld_leaf(model: ReleasedModel, held: LeafTargets) -> str:
    """A leaf of one row that no training row can be, read as `target_class_view` reads the
    leaves: every tree that drew the row must hold its target in some leaf, and the tree
    must have drawn it as often as the leaf holds. Names the first (tree, leaf), or ""."""
    drawn = np.vstack([tree.draws for tree in model.trees])
    has = held.per_value() > 0
    # fits[k, c]: every tree that drew row k holds target c somewhere
    fits = ((drawn > 0).T.astype(np.int64) @ (~has).astype(np.int64)) == 0
    for t, tree in enumerate(model.trees):
        for i in np.flatnonzero(held.rows[t] == 1).tolist():
            leaf, v = int(held.leaf[t][i]), int(held.target[t][i])
            if tree.n_samples[leaf] != 1:
                continue
            rows = fits[:, v] & (drawn[t] == tree.counts[leaf, 0])
            if not rows.any():
                return (f"tree {t}, leaf {leaf} holds one row of target "
                        f"{held.targets[v]:g}, which no row that tree drew "
                        f"{tree.counts[leaf, 0]} time(s) can have: some tree that drew each "
                        "holds no leaf of that target")
    return ""
