"""Boosted regressors: their training rows with targets, from every tree's row counts and
every leaf's sum of residuals (issue 39, boosters: scikit-learn's two gradient-boosted
regressors, LightGBM ``regression``, XGBoost ``reg:squarederror``).

Every tree of a booster saw every row once, so its leaves' counts are a no-bootstrap
forest's; what its leaves say of the targets is, per leaf, the sum over its rows of the
target minus the earlier trees' prediction (`treeleaks.ir.model.LeafGradients`). Rows of one
cell of the trees' common refinement share their leaves, hence every earlier prediction:
the sums are linear in each cell's row count ``x`` and target sum ``s``.

- **Cells listed** (few distinct values per column): one MILP (HiGHS) over ``x`` whole and
  ``s`` real, every count and every sum a row of it. Its rows reproduce the model; a
  cell of one row gives that row's target, of several their mean (the sums hold for any
  split). No target is called exact: other datasets may reproduce the model too.
- **Too many cells** (raw numerical columns): what single-row leaves prove. A first-tree
  leaf of one row holds exactly one training row, in its box, whose target is the leaf's
  mean; a later tree's leaf of one row gives its row's target within the range of the
  earlier trees' predictions over its box (`_single_row_rows`). Rows of disjoint boxes are
  distinct rows: the result is partial, each row proven in its box.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from treeleaks.attacks.reconstruction.options import RunOptions
from treeleaks.attacks.reconstruction.regression_leaves import leaf_group_rows
from treeleaks.counts.cells import CellBudget, CellBudgetExceeded, Cells, enumerate_cells
from treeleaks.counts.gradient_rows import gradient_rows
from treeleaks.counts.materialize import rows_in_boxes
from treeleaks.counts.peel import Region, single_row_regions
from treeleaks.counts.system import count_incidence
from treeleaks.counts.verify_boosted import verify_boosted_regression, verify_rows_within
from treeleaks.ir.model import SQUARED_ERROR, LeafGradients, ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import Reconstruction, RegressionDetails
from treeleaks.runtime.clock import RunClock, seconds_until
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.runtime.vocabulary import Formulation, Status, Strategy

CELL_SHARE = 0.3  # of the limit, at most, for listing the cells
SOLVE_SHARE = 0.8  # of what is left, for the MILP: the single-row rows take the rest
MIN_SOLVE_S = 0.1  # the MILP runs at least this long
# cells beyond which the MILP is not tried: it finds no dataset in time past them.
# Figures: docs/lab/2026-11-28-constants.md#attacks-regression_boosted
MAX_CELLS = 500
# the targets the MILP searches: the first tree's leaf means widened this many spans
TARGET_REACH = 4.0
# of each sum's interval the MILP may use: its solution, recomputed by the certificate in
# another order of additions, stays inside the whole interval
MILP_SHARE = 0.5
GROUP_PROOF = ("each row lies in its first-tree leaf's box; the leaf's mean target is "
               "its rows' mean, no single row's")
PROOF = ("a leaf of one row holds exactly one training row, in its box; a first-tree leaf "
         "gives its target (the leaf's mean), a later one its target within the earlier "
         "trees' predictions over the box")


@dataclass
class _SingleRows:
    """Rows proven by single-row leaves: their boxes and target intervals (an exact
    target is an interval of one point)."""

    lower: np.ndarray
    upper: np.ndarray
    target_low: np.ndarray
    target_high: np.ndarray


def is_boosted_regressor(model: ReleasedModel) -> bool:
    """Whether ``model`` is a squared-error booster with its sums of residuals."""
    return model.gradients is not None and model.gradients.loss == SQUARED_ERROR


def reconstruct_boosted_regression(model: ReleasedModel, schema: FeatureSchema | None,
                                   run: RunOptions) -> Reconstruction:
    """A boosted regressor's training rows with their targets (see the module doc)."""
    if not is_boosted_regressor(model):
        raise UnsupportedModelError(
            "this boosted regressor's file keeps no leaf sums (stripped, or a reader without "
            "them); treeleaks reconstructs boosted regressors from their leaf values: give "
            "the framework's own model file")
    clock = RunClock(run.time_limit)
    view = replace(model, classes=["row"])  # one occupant: a row, whatever its target
    bound = (schema if schema is not None else FeatureSchema.infer(view)).bind(view)
    budget = run.cell_budget or CellBudget()
    listing = replace(budget, max_cells=min(budget.max_cells, MAX_CELLS),
                      deadline=min(budget.deadline or np.inf,
                                   clock.start + CELL_SHARE * run.time_limit))
    try:
        cells = enumerate_cells(view, bound, listing, run.progress)
    except CellBudgetExceeded as exc:
        clock.lap("cells")
        return _from_single_rows(model, bound, clock,
                                 f"the trees' cells are too many to list: {exc}")
    clock.lap("cells")
    return _from_cells(model, view, bound, cells, clock)


def _from_cells(model: ReleasedModel, view: ReleasedModel, bound: FeatureSchema,
                cells: Cells, clock: RunClock) -> Reconstruction:
    """Every row, from one MILP over the listed cells' counts and target sums."""
    common = {"solver": "highs", "strategy": Strategy.ENUMERATE, "n_cells": len(cells),
              "formulation": Formulation.REGRESSION_BOOSTED,
              "proof": "none: the rows reproduce the model, other datasets may too"}
    low, high = _target_range(model)
    solved = _solve(model, view, cells, low, high, clock.share(SOLVE_SHARE))
    clock.lap("search")
    if solved is None:
        return _from_single_rows(model, bound, clock, (
            f"no dataset found in time over the {len(cells)} cells, or none with targets "
            f"within [{low:.6g}, {high:.6g}] (the first tree's leaf means widened "
            f"{TARGET_REACH:g} times their span)"))
    x, s = solved
    used = np.flatnonzero(x > 0)
    reps = x[used]
    per_row = np.repeat(used, reps)
    target = np.repeat(s[used] / reps, reps)
    frames = rows_in_boxes(replace(model, classes=target.tolist()), bound,
                           cells.lower[per_row], cells.upper[per_row],
                           np.arange(per_row.size), np.zeros(per_row.size, dtype=bool))
    certificate = verify_boosted_regression(model, frames["rows"])
    clock.lap("verify")
    n = per_row.size
    if not certificate.verified:
        return Reconstruction(**frames, status=Status.UNKNOWN, certificate=certificate,
                              time_s=clock.elapsed(), timings=clock.timings, **common,
                              message=("the rows do not reproduce the booster: "
                                       f"{certificate.first_mismatch}"))
    return Reconstruction(**frames, status=Status.FEASIBLE, certificate=certificate,
                          time_s=clock.elapsed(), timings=clock.timings,
                          regression=RegressionDetails(targets_exact=0),
                          **common, message=(
                              f"{n} rows with targets that reproduce every tree's counts "
                              "and every leaf's sum of residuals (verified); no target is "
                              "proven: other datasets may reproduce the booster too"))


def _target_range(model: ReleasedModel) -> tuple[float, float]:
    """Where the MILP looks for targets: the first tree's leaf means, widened."""
    first = model.trees[0]
    means = first.values[first.counts[:, 0] > 0]
    span = float(means.max() - means.min()) or max(abs(float(means.max())), 1.0)
    return float(means.min()) - TARGET_REACH * span, float(means.max()) + TARGET_REACH * span


def _solve(model: ReleasedModel, view: ReleasedModel, cells: Cells, low: float, high: float,
           deadline: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Cells' row counts ``x`` and target sums ``s`` meeting every count and sum, or None
    (the solver given until ``deadline``, at least `MIN_SOLVE_S`).

    A sum row says ``lower <= Σ x·(a·F + b) - a·s <= upper`` over its leaf's cells (F the
    cell's score before the tree): `gradient_rows` at target 0 gives the x coefficients,
    and at target 1 minus at 0 the s ones."""
    seconds = seconds_until(deadline, MIN_SOLVE_S)
    k = len(cells)
    zero = np.zeros(k, dtype=np.int64)
    counts = count_incidence(view, cells.leaf, zero)
    released = np.concatenate([tree.counts[:, 0] for tree in model.trees]).astype(float)
    at_zero = gradient_rows(model, cells.leaf, np.zeros(k))
    at_one = gradient_rows(model, cells.leaf, np.ones(k))
    assert at_zero is not None and at_one is not None
    centre, half = (at_zero.lower + at_zero.upper) / 2, (at_zero.upper - at_zero.lower) / 2
    most = np.min(np.column_stack([tree.counts[cells.leaf[:, t], 0]
                                   for t, tree in enumerate(model.trees)]), axis=1)
    eye = sp.identity(k, format="csr")
    constraints = [
        LinearConstraint(sp.hstack([counts, sp.csr_matrix(counts.shape)]), released, released),
        LinearConstraint(sp.hstack([at_zero.matrix, at_one.matrix - at_zero.matrix]),
                         centre - MILP_SHARE * half, centre + MILP_SHARE * half),
        LinearConstraint(sp.hstack([-low * eye, eye]), 0.0, np.inf),  # s >= low·x
        LinearConstraint(sp.hstack([high * eye, -eye]), 0.0, np.inf),  # s <= high·x
    ]
    result = milp(np.zeros(2 * k), constraints=constraints,
                  integrality=np.concatenate([np.ones(k), np.zeros(k)]),
                  bounds=Bounds(np.concatenate([np.zeros(k), np.full(k, -np.inf)]),
                                np.concatenate([most, np.full(k, np.inf)])),
                  options={"time_limit": seconds, "disp": False})
    if result.x is None:
        return None
    x = np.rint(result.x[:k]).astype(np.int64)
    return x, result.x[k:]


def _from_single_rows(model: ReleasedModel, bound: FeatureSchema, clock: RunClock,
                      why: str) -> Reconstruction:
    """The rows single-row leaves prove (see the module doc), a partial dataset."""
    common = {"solver": "", "strategy": Strategy.ENUMERATE, "proof": PROOF,
              "formulation": Formulation.REGRESSION_BOOSTED, "partial": True}
    n = int(model.trees[0].counts[:, 0].sum())
    found = _within_counts(model, bound, _single_row_rows(replace(model, classes=["row"]),
                                                          bound, clock.deadline))
    clock.lap("single-row leaves")
    if not found.lower.shape[0]:
        return _from_first_tree(model, bound, clock, why)
    exact = found.target_low == found.target_high
    target = (found.target_low + found.target_high) / 2
    frames = rows_in_boxes(replace(model, classes=target.tolist()), bound, found.lower,
                           found.upper, np.arange(target.size),
                           np.ones(target.size, dtype=bool))
    certificate = verify_rows_within(model, frames["rows"])
    clock.lap("verify")
    rows = target.size
    status = Status.FEASIBLE if certificate.verified else Status.UNKNOWN
    return Reconstruction(**frames, status=status, certificate=certificate,
                          time_s=clock.elapsed(), timings=clock.timings,
                          regression=RegressionDetails(
                              int(exact.sum()), (found.target_low, found.target_high)),
                          **common,
                          message=(
                              f"{rows} of {n} rows proven, each alone in a leaf's box: "
                              f"{int(exact.sum())} with their exact target, the others "
                              f"within an interval; the rest are not found: {why}"))


def _from_first_tree(model: ReleasedModel, bound: FeatureSchema, clock: RunClock,
                     why: str) -> Reconstruction:
    """No leaf of one row: the first tree's leaves as groups of rows, each row in its
    leaf's box with the leaf's mean target (what the first tree's values are). The mean is
    exact for the group, not for any one row, so no row's target is called exact."""
    first = model.trees[0]
    assert first.values is not None  # the readers keep the first tree's leaf means
    per_row, frames = leaf_group_rows(model, bound, 0, first.counts[:, 0], first.values)
    certificate = verify_rows_within(model, frames["rows"])
    clock.lap("first tree")
    groups = np.unique(per_row).size
    return Reconstruction(
        **frames, status=Status.FEASIBLE if certificate.verified else Status.UNKNOWN,
        certificate=certificate, time_s=clock.elapsed(), timings=clock.timings,
        solver="", strategy=Strategy.ENUMERATE, proof=GROUP_PROOF,
        formulation=Formulation.REGRESSION_BOOSTED, partial=True,
        regression=RegressionDetails(targets_exact=0),
        message=(f"{why}; and no leaf holds a single row, so no row is given away on its "
                 f"own: the {per_row.size} rows are the first tree's {groups} leaves, "
                 f"each row in its leaf's box with the mean target of the leaf's "
                 f"{int(first.counts[per_row, 0].min())} or more rows (each mean exact, "
                 "no row's target); their values are filled in those boxes"
                 + ("" if certificate.verified else
                    f", which crowd other trees' leaves ({certificate.first_mismatch})")))


def _single_row_rows(model: ReleasedModel, bound: FeatureSchema, deadline: float
                     ) -> _SingleRows:
    """Every single-row leaf's row, its box narrowed as the peeling narrows it
    (`single_row_regions`), with its target interval; rows whose boxes meet none kept
    before (so that they are distinct rows), exact ones first, then the narrowest."""
    gradients = model.gradients
    assert gradients is not None
    candidates = []
    for t, leaf, region in single_row_regions(model, bound, deadline):
        low, high = _target_interval(gradients, t, leaf, region)
        candidates.append((high - low, t, region.lower, region.upper, low, high))
    candidates.sort(key=lambda c: (c[0], c[1]))
    kept: list[tuple[np.ndarray, np.ndarray, float, float]] = []
    for _, _, lower, upper, low, high in candidates:
        if all(_apart(lower, upper, other[0], other[1]) for other in kept):
            kept.append((lower, upper, low, high))
    m = model.n_features
    if not kept:
        return _SingleRows(np.zeros((0, m)), np.zeros((0, m)), np.zeros(0), np.zeros(0))
    lower, upper, low, high = zip(*kept)
    return _SingleRows(np.array(lower), np.array(upper), np.array(low), np.array(high))


def _target_interval(gradients: LeafGradients, t: int, leaf: int, region: Region
                     ) -> tuple[float, float]:
    """The target of the one row of leaf ``leaf`` in tree ``t``: its sum row says
    ``a·(F - y) + b`` lies in ``[low, high]`` with F the row's score before the tree,
    between the sums of each earlier tree's least and greatest value over the leaves the
    row may lie in. When each earlier tree leaves it one leaf, F is known and the target is
    the one the sum's centre gives (exact to the file's precision)."""
    score_low = score_high = gradients.start
    for before in range(t):
        values = gradients.values[before][region.leaves[before]]
        score_low += float(values.min())
        score_high += float(values.max())
    rows = gradients.sums[t]
    _, a, b, sum_low, sum_high = rows[np.flatnonzero(rows[:, 0] == leaf)[0]]
    if score_low == score_high:
        exact = score_low - ((sum_low + sum_high) / 2 - b) / a
        return exact, exact
    # a > 0 for every reader's rows: F - y between (sum_low - b)/a and (sum_high - b)/a
    return score_low - (sum_high - b) / a, score_high - (sum_low - b) / a


def _within_counts(model: ReleasedModel, bound: FeatureSchema, found: _SingleRows
                   ) -> _SingleRows:
    """``found`` without the rows whose filled values would put more rows in some leaf
    than it released (the true rows lie elsewhere in their boxes), in order. A value's
    fill depends on the boxes filled beside it, so the rows left are filled and checked
    again, until none is dropped."""
    while found.lower.shape[0]:
        target = np.zeros(found.lower.shape[0])
        frames = rows_in_boxes(replace(model, classes=target.tolist()), bound, found.lower,
                               found.upper, np.arange(target.size),
                               np.zeros(target.size, dtype=bool))
        leaves = model.apply(frames["rows"][list(model.feature_names)].to_numpy(np.float64))
        room = [tree.counts[:, 0].copy() for tree in model.trees]
        keep = np.zeros(target.size, dtype=bool)
        for i, row in enumerate(leaves):
            if all(room[t][leaf] > 0 for t, leaf in enumerate(row)):
                keep[i] = True
                for t, leaf in enumerate(row):
                    room[t][leaf] -= 1
        if keep.all():
            break
        found = _SingleRows(found.lower[keep], found.upper[keep], found.target_low[keep],
                            found.target_high[keep])
    return found


def _apart(lower: np.ndarray, upper: np.ndarray, other_lower: np.ndarray,
           other_upper: np.ndarray) -> bool:
    """Whether two boxes share no point."""
    return bool(((lower >= other_upper) | (other_lower >= upper)).any())
