"""The certificate: do the reconstructed rows reproduce every released leaf count?"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from treeleaks.counts.gradient_rows import largest_gradient_miss
from treeleaks.counts.node_rows import NodeMisses, node_misses
from treeleaks.ir.model import ReleasedModel, Tree


@dataclass
class Certificate:
    """``verified`` when the rows, passed through the released trees, reproduce every count
    (a booster's leaf values are checked beside, in ``leaf_values_match``)."""

    verified: bool
    n_counts_checked: int
    n_counts_wrong: int
    first_mismatch: str = ""
    # a booster's: whether the rows also reproduce its later trees' leaf values (gradient
    # sums, within the file's precision), and how far the worst one is off
    leaf_values_match: bool | None = None
    leaf_values: str = ""


def verify(model: ReleasedModel, rows: pd.DataFrame) -> Certificate:
    """Route ``rows`` (features + label) through every tree and compare all leaf counts.

    For a bootstrap forest, row k counts ``draws[k]`` times in each tree (the rows
    are in training order), and each leaf's number of distinct rows is checked too; so are
    the internal nodes' counts where the file keeps them (`node_misses`). A file that
    contradicts itself (`ReleasedModel.contradictions`) is never verified."""
    if model.contradictions:
        return _contradicted(model)
    X = rows[list(model.feature_names)].to_numpy(dtype=np.float64)
    if (unrouted := _unroutable(model, X)):
        return Certificate(False, 0, 1, unrouted)
    leaves, cls = model.apply(X), model.class_index(rows[model.label_name].to_numpy())
    wrong, checked, first = 0, 0, ""
    for t, tree in enumerate(model.trees):
        if not tree.counted:  # checked by its gradient sums below
            continue
        weight = np.ones(len(rows), dtype=np.int64)
        if model.bootstrap:
            if tree.draws is None or len(tree.draws) != len(rows):
                return Certificate(False, checked, wrong + 1, f"tree {t} has no draw count "
                                   f"for each of the {len(rows)} rows")
            weight = tree.draws
        leaf_checked, leaf_wrong, leaf_first = _leaf_misses(model, t, leaves[:, t], cls, weight)
        checked, wrong, first = checked + leaf_checked, wrong + leaf_wrong, first or leaf_first
        misses = node_misses(tree, t, leaves[:, t], weight, tree.count_column(cls))
        checked, wrong, first = _add(misses, checked, wrong, first)
    certificate = Certificate(wrong == 0, checked, wrong, first)
    if model.gradients is not None:
        _check_leaf_values(certificate, model, leaves, cls)
    return certificate


def _leaf_misses(model: ReleasedModel, t: int, leaves: np.ndarray, cls: np.ndarray,
                 weight: np.ndarray) -> tuple[int, int, str]:
    """Tree ``t``'s leaf counts (a bootstrap tree's distinct rows too) against the rows'
    (``leaves``: each row's leaf, ``weight``: its draws): how many numbers were checked,
    how many the rows miss, and the first miss ("" when none)."""
    tree = model.trees[t]
    counts = np.zeros(tree.counts.shape, dtype=np.int64)
    np.add.at(counts, (leaves, tree.count_column(cls)), weight)
    diff = np.argwhere(counts != tree.counts)
    checked, wrong, first = counts.size, len(diff), ""
    if len(diff):
        leaf, c = diff[0]
        first = (
            f"tree {t} leaf {leaf} {tree.column_name(c, model.classes)}: released "
            f"{tree.counts[leaf, c]}, reconstructed rows give {counts[leaf, c]}"
        )
    if model.bootstrap and tree.n_samples is not None:
        distinct = np.bincount(leaves, weights=weight > 0, minlength=tree.n_leaves)
        off = np.flatnonzero(distinct != tree.n_samples)
        checked += tree.n_leaves
        wrong += off.size
        if off.size and not first:
            first = (f"tree {t} leaf {off[0]}: released {tree.n_samples[off[0]]} distinct "
                     f"rows, reconstructed rows give {int(distinct[off[0]])}")
    return checked, wrong, first


def _check_leaf_values(certificate: Certificate, model: ReleasedModel, leaves: np.ndarray,
                       cls: np.ndarray) -> None:
    """Record on ``certificate`` whether the rows reproduce a booster's leaf values (its
    later trees' gradient sums), and the worst miss."""
    miss, where = largest_gradient_miss(model, leaves, cls)
    certificate.leaf_values_match = miss <= 1.0
    certificate.leaf_values = (
        f"every leaf value reproduced (the largest miss is {miss:.2g} of its tolerance)"
        if miss <= 1.0 else f"leaf values not reproduced: {where}")


def _contradicted(model: ReleasedModel) -> Certificate:
    """The certificate of any rows of a file that contradicts itself: none verifies."""
    return Certificate(False, 0, len(model.contradictions),
                       f"the file contradicts itself: {model.contradictions[0]}")


def _add(misses: NodeMisses, checked: int, wrong: int, first: str) -> tuple[int, int, str]:
    """The running totals with one tree's internal nodes added."""
    return checked + misses.checked, wrong + misses.wrong, first or misses.first


def _unroutable(model: ReleasedModel, X: np.ndarray) -> str:
    """Why some row cannot be routed as a training row (a NaN, an infinite or a value past
    ±2^53 in a column some tree splits goes down a side no threshold chose), or "" when
    every value can. A column no tree splits may stay open (NaN)."""
    split = np.array([t.size > 0 for t in model.thresholds()], dtype=bool)
    bad = ~(np.abs(X) <= 2.0**53) & split
    if not bad.any():
        return ""
    row, column = np.argwhere(bad)[0]
    return (f"row {row} column {model.feature_names[column]!r} holds {X[row, column]:g}, "
            "which no tree routes as a training value")


def verify_within(model: ReleasedModel, rows: pd.DataFrame) -> Certificate:
    """The certificate of a partial dataset of a forest whose trees each saw every row
    once: routed through every tree, the rows fill no leaf beyond its released count of
    their class, nor an internal node beyond its stored rows (``verified``;
    ``n_counts_wrong`` counts the leaves and nodes they overfill)."""
    if model.contradictions:
        return _contradicted(model)
    X = rows[list(model.feature_names)].to_numpy(dtype=np.float64)
    if (unrouted := _unroutable(model, X)):
        return Certificate(False, 0, 1, unrouted)
    leaves, cls = model.apply(X), model.class_index(rows[model.label_name].to_numpy())
    wrong, checked, first = 0, 0, ""
    for t, tree in enumerate(model.trees):
        if not tree.counted:
            continue
        counts = np.zeros(tree.counts.shape, dtype=np.int64)
        np.add.at(counts, (leaves[:, t], tree.count_column(cls)), 1)
        over = np.argwhere(counts > tree.counts)
        checked += counts.size
        wrong += len(over)
        if len(over) and not first:
            leaf, c = over[0]
            first = (f"tree {t} leaf {leaf} {tree.column_name(c, model.classes)}: released "
                     f"{tree.counts[leaf, c]}, the partial rows put {counts[leaf, c]} there")
        misses = node_misses(tree, t, leaves[:, t], np.ones(len(rows)),
                             tree.count_column(cls), complete=False)
        checked, wrong, first = _add(misses, checked, wrong, first)
    return Certificate(wrong == 0, checked, wrong, first)


def verify_within_draws(model: ReleasedModel, rows: pd.DataFrame,
                        positions: np.ndarray) -> Certificate:
    """The certificate of a partial dataset of a bootstrap forest with known draws: row i
    is training row ``positions[i]`` and counts its draws in every tree. ``verified`` when,
    routed through every tree, the rows put no more draws of a class in a leaf than it
    released, nor more distinct rows; ``n_counts_wrong`` counts the counts they exceed."""
    if model.contradictions:
        return _contradicted(model)
    if len(np.unique(positions)) != len(positions):
        return Certificate(False, 0, 1, "two rows claim the same training position")
    X = rows[list(model.feature_names)].to_numpy(dtype=np.float64)
    leaves, cls = model.apply(X), model.class_index(rows[model.label_name].to_numpy())
    wrong, checked, first = 0, 0, ""
    for t, tree in enumerate(model.trees):
        draws = tree.draws[positions]
        weighted = np.zeros(tree.counts.shape, dtype=np.int64)
        np.add.at(weighted, (leaves[:, t], cls), draws)
        distinct = np.bincount(leaves[:, t], weights=draws > 0, minlength=tree.n_leaves)
        over = np.argwhere(weighted > tree.counts)
        crowded = np.flatnonzero(distinct > tree.n_samples)
        checked += weighted.size + tree.n_leaves
        wrong += len(over) + crowded.size
        if len(over) and not first:
            leaf, c = over[0]
            first = (f"tree {t} leaf {leaf} class {model.classes[c]!r}: released "
                     f"{tree.counts[leaf, c]} draws, the partial rows put {weighted[leaf, c]} "
                     "there")
        if crowded.size and not first:
            first = (f"tree {t} leaf {crowded[0]}: released {tree.n_samples[crowded[0]]} "
                     f"distinct rows, the partial rows put {int(distinct[crowded[0]])} there")
        misses = node_misses(tree, t, leaves[:, t], draws, cls, complete=False)
        checked, wrong, first = _add(misses, checked, wrong, first)
    return Certificate(wrong == 0, checked, wrong, first)


def verify_regression(model: ReleasedModel, rows: pd.DataFrame,
                      rtol: float = 1e-9) -> Certificate:
    """The certificate of a regression model's rows: routed through every tree, each row
    counting its draws (in training order; once each where the trees saw every row once),
    they reproduce every leaf's distinct rows, weighted rows, value (the draw-weighted
    mean of their targets, within ``rtol`` of the largest leaf value: the file's float64
    precision with room for rounding) and, where the file keeps it, impurity (their
    weighted variance, within a thousand times that relative to the value squared: the
    file computes it as a difference of squares); so are the internal nodes' stored rows,
    means and variances where the file keeps them (`node_misses`). A file that contradicts
    itself is never verified."""
    if model.contradictions:
        return _contradicted(model)
    leaves, y, scale = _routed_targets(model, rows)
    wrong, checked, first = 0, 0, ""
    for t, tree in enumerate(model.trees):
        draws = tree.draws if model.bootstrap else np.ones(len(rows), dtype=np.int64)
        if draws is None or len(draws) != len(rows):
            return Certificate(False, checked, wrong + 1, f"tree {t} has no draw count for "
                               f"each of the {len(rows)} rows")
        at = leaves[:, t]
        leaf_checked, leaf_wrong, leaf_first = _regression_leaf_misses(tree, t, at, draws, y,
                                                                       scale, rtol)
        checked, wrong, first = checked + leaf_checked, wrong + leaf_wrong, first or leaf_first
        misses = node_misses(tree, t, at, draws, np.zeros(len(rows), dtype=np.int64), y)
        checked, wrong, first = _add(misses, checked, wrong, first)
    return Certificate(wrong == 0, checked, wrong, first)


def verify_regression_within(model: ReleasedModel, rows: pd.DataFrame,
                             positions: np.ndarray | None = None,
                             rtol: float = 1e-9) -> Certificate:
    """The certificate of some of the rows of a regression model: routed through every
    tree, each counting its draws (a bootstrap forest's row i is training row
    ``positions[i]``; once each where the trees saw every row once), no leaf holds more
    draws or distinct rows than it released, and each row's target is one its leaf can
    hold: the leaf's value where its impurity (if kept) is 0, otherwise within
    ``sqrt(v (W - 1))`` of it (v the impurity, W the draws: no row of a leaf lies further
    from its mean); no internal node holds more rows than it stored."""
    if model.contradictions:
        return _contradicted(model)
    if positions is not None and len(np.unique(positions)) != len(positions):
        return Certificate(False, 0, 1, "two rows claim the same training position")
    leaves, y, scale = _routed_targets(model, rows)
    wrong, checked, first = 0, 0, ""
    for t, tree in enumerate(model.trees):
        at = leaves[:, t]
        draws = (tree.draws[positions] if positions is not None
                 else np.ones(len(rows), dtype=np.int64))
        leaf_checked, leaf_wrong, leaf_first = _partial_leaf_misses(tree, t, at, draws, y,
                                                                    scale, rtol)
        checked, wrong, first = checked + leaf_checked, wrong + leaf_wrong, first or leaf_first
        misses = node_misses(tree, t, at, draws, np.zeros(len(rows), dtype=np.int64),
                             complete=False)
        checked, wrong, first = _add(misses, checked, wrong, first)
    return Certificate(wrong == 0, checked, wrong, first)


def _regression_leaf_misses(tree: Tree, t: int, at: np.ndarray, draws: np.ndarray,
                            y: np.ndarray, scale: float, rtol: float) -> tuple[int, int, str]:
    """Tree ``t``'s leaves against the rows (``at``: each row's leaf, ``draws``, targets
    ``y``): distinct rows, weighted rows, value and, where kept, impurity (see
    `verify_regression`). How many numbers were checked, how many missed, the first."""
    weighted = np.bincount(at, weights=draws, minlength=tree.n_leaves)
    distinct = np.bincount(at, weights=draws > 0, minlength=tree.n_leaves)
    total = np.bincount(at, weights=draws * y, minlength=tree.n_leaves)
    value = np.divide(total, weighted, out=np.full(tree.n_leaves, np.nan),
                      where=weighted > 0)
    checks = {"weighted rows": (weighted != tree.counts[:, 0], tree.counts[:, 0], weighted),
              "distinct rows": (distinct != tree.n_samples, tree.n_samples, distinct),
              "value": (~(np.abs(value - tree.values) <= rtol * scale), tree.values,
                        value)}
    if tree.impurity is not None:  # the weighted variance of the leaf's targets
        squares = np.bincount(at, weights=draws * y * y, minlength=tree.n_leaves)
        variance = np.divide(squares, weighted, out=np.full(tree.n_leaves, np.nan),
                             where=weighted > 0) - value ** 2
        checks["impurity"] = (~(np.abs(variance - tree.impurity)
                                <= rtol * max(scale, 1.0) ** 2 * 1e3),
                              tree.impurity, variance)
    checked, wrong, first = 0, 0, ""
    for what, (off, released, rebuilt) in checks.items():
        checked += tree.n_leaves
        wrong += int(off.sum())
        if off.any() and not first:
            v = int(np.argmax(off))
            first = (f"tree {t} leaf {v} {what}: released {released[v]:g}, reconstructed "
                     f"rows give {rebuilt[v]:g}")
    return checked, wrong, first


def _partial_leaf_misses(tree: Tree, t: int, at: np.ndarray, draws: np.ndarray,
                         y: np.ndarray, scale: float, rtol: float) -> tuple[int, int, str]:
    """Tree ``t``'s leaves against some of the rows: leaves holding more draws or distinct
    rows than released, and drawn rows whose target their leaf cannot hold (see
    `verify_regression_within`). How many were checked, how many missed, the first."""
    weighted = np.bincount(at, weights=draws, minlength=tree.n_leaves)
    distinct = np.bincount(at, weights=draws > 0, minlength=tree.n_leaves)
    released = tree.n_samples if tree.n_samples is not None else tree.counts[:, 0]
    crowded = np.flatnonzero((weighted > tree.counts[:, 0]) | (distinct > released))
    reach = (np.zeros(tree.n_leaves) if tree.impurity is None else np.sqrt(
        np.maximum(tree.impurity, 0.0) * np.maximum(tree.counts[:, 0] - 1.0, 0.0)))
    drawn = draws > 0
    strays = np.flatnonzero(drawn & ~(np.abs(y - tree.values[at])
                                      <= reach[at] * (1 + rtol) + rtol * scale))
    first = ""
    if crowded.size:
        v = crowded[0]
        first = (f"tree {t} leaf {v}: released {tree.counts[v, 0]:g} draws of "
                 f"{released[v]:g} rows, the partial rows put {weighted[v]:g} of "
                 f"{distinct[v]:g} there")
    if strays.size and not first:
        row = strays[0]
        first = (f"tree {t}: row {row}'s target {y[row]:g} lands in leaf {at[row]} of "
                 f"value {tree.values[at[row]]:g}")
    return tree.n_leaves + len(at), len(crowded) + len(strays), first


def _routed_targets(model: ReleasedModel,
                    rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, float]:
    """Each row's leaf in every tree, the rows' targets, and the largest leaf value."""
    X = rows[list(model.feature_names)].to_numpy(dtype=np.float64)
    y = rows[model.label_name].to_numpy(dtype=np.float64)
    scale = max(float(np.abs(tree.values).max()) for tree in model.trees)
    return model.apply(X), y, scale
