"""Regression forests grown with limits (``min_samples_leaf=5``, ``max_depth``, ...): each
row's target within an interval, from one tree's leaves (issue 39).

A leaf of a limited tree holds rows of several targets; what it keeps is their mean m, the
(weighted) variance v of their targets and how many rows it holds. That bounds every one of
them: a row of weight w in a leaf of weight W lies within ``sqrt(v·(W - w)/w) <=
sqrt(v·(W - 1))`` of m (the other rows' deviations add up to the opposite of its own, and
their squares are at least that sum squared over their weight). A leaf of variance 0 gives
its rows' target exactly.

The rows returned are one tree's: the n distinct rows of each leaf in its box, with the
target interval, from the tree whose intervals are narrowest on average. They are proven
in their boxes; their places in the other trees are not known, so their values, filled in
those boxes, are only checked not to crowd the other trees' leaves, and the result says
whether they do. No target is called exact unless its leaf's variance
is 0.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from treeleaks.attacks.reconstruction.options import RunOptions
from treeleaks.counts.materialize import rows_in_boxes
from treeleaks.counts.paths import tree_paths
from treeleaks.counts.verify_boosted import verify_rows_within
from treeleaks.ir.model import ReleasedModel, Tree
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import Reconstruction, RegressionDetails
from treeleaks.runtime.clock import RunClock
from treeleaks.runtime.vocabulary import Formulation, Status, Strategy

# the variance below which a leaf's targets are one value: rounding of the file's float64
PURE = 1e-9
PROOF = ("each row of a leaf lies in its box, its target within sqrt(v·(W - 1)) of the "
         "leaf's mean (v the leaf's variance, W its weighted rows); exact where v is 0")


def reads_leaf_intervals(model: ReleasedModel) -> bool:
    """Whether every tree keeps each leaf's value, impurity and distinct rows."""
    return all(tree.values is not None and tree.impurity is not None
               and tree.n_samples is not None for tree in model.trees)


def reconstruct_regression_leaves(model: ReleasedModel, schema: FeatureSchema | None,
                                  run: RunOptions) -> Reconstruction:
    """One tree's rows with their target intervals (see the module doc)."""
    clock = RunClock(run.time_limit)
    bound = (schema if schema is not None else FeatureSchema.infer(model)).bind(model)
    widths = [_mean_width(tree) for tree in model.trees]
    best = int(np.argmin(widths))
    tree = model.trees[best]
    low, high = leaf_intervals(tree)
    per_row, frames = leaf_group_rows(model, bound, best, tree.n_samples, tree.values)
    exact = int((low[per_row] == high[per_row]).sum())
    n = per_row.size
    certificate = verify_rows_within(model, frames["rows"], distinct=True)
    clock.lap("intervals")
    span = float(np.ptp(tree.values[per_row])) or 1.0
    return Reconstruction(
        **frames, status=Status.FEASIBLE if certificate.verified else Status.UNKNOWN,
        certificate=certificate, time_s=clock.elapsed(),
        timings=clock.timings, solver="", strategy=Strategy.ENUMERATE, proof=PROOF,
        formulation=Formulation.REGRESSION_LEAVES, partial=True,
        regression=RegressionDetails(exact, (low[per_row], high[per_row])), message=(
            f"{n} rows of tree {best}, each in its leaf's box with its target within "
            f"{np.mean(high[per_row] - low[per_row]) / span:.0%} of the leaf means' span "
            f"on average ({exact} exact, in leaves of one target); the trees' growth "
            "limits leave leaves of several targets, so the rows are not placed in the "
            "other trees: their values are filled in tree "
            f"{best}'s boxes" + ("" if certificate.verified else
                                 f", which crowd other trees' leaves "
                                 f"({certificate.first_mismatch})")))


def leaf_group_rows(model: ReleasedModel, bound: FeatureSchema, index: int,
                    rows: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, dict]:
    """Tree ``index``'s leaves as rows: ``rows[leaf]`` of them in the leaf's box, each with
    the leaf's ``targets[leaf]``, filled and proven in the box. A leaf the tree reaches by
    several paths (a table with gaps) has its rows filled in its first path's box, not
    proven there. Returns each row's leaf and the frames of a `Reconstruction`."""
    held = np.flatnonzero(rows > 0)
    per_row = np.repeat(held, rows[held])
    paths = tree_paths(model.trees[index], model.n_features)
    first = np.searchsorted(paths.leaf, np.arange(model.trees[index].n_leaves))
    one_path = np.diff(np.append(first, len(paths))) == 1
    lower, upper = paths.lower[first], paths.upper[first]
    frames = rows_in_boxes(replace(model, classes=targets[per_row].tolist()), bound,
                           lower[per_row], upper[per_row], np.arange(per_row.size),
                           one_path[per_row])
    return per_row, frames


def leaf_intervals(tree: Tree) -> tuple[np.ndarray, np.ndarray]:
    """Per leaf, where every one of its rows' targets lies (see the module doc)."""
    assert tree.values is not None and tree.impurity is not None
    weight = tree.counts[:, 0].astype(np.float64)
    variance = np.where(tree.impurity > PURE * max(float(np.abs(tree.values).max()), 1.0)
                        ** 2, tree.impurity, 0.0)
    reach = np.sqrt(variance * np.maximum(weight - 1.0, 0.0))
    return tree.values - reach, tree.values + reach


def _mean_width(tree: Tree) -> float:
    """The average interval width over a tree's distinct rows (infinite without rows)."""
    low, high = leaf_intervals(tree)
    rows = tree.n_samples
    return float((rows * (high - low)).sum() / rows.sum()) if rows.sum() else np.inf
