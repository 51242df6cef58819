"""Bootstrap forests with known draws, row by row: strategy ``per-row``.

The cell strategy (`treeleaks.attacks.reconstruction.bootstrap`) lists the cells of the trees'
common refinement; on raw numerical columns there are millions of them. Here the unknowns are one
leaf per (row, drawing tree) and a class per row (`treeleaks.counts.row_leaves`): the
classes come from the trees' class totals when they are the only ones that fit,
propagation closes the leaves no consistent dataset uses, and CP-SAT places the rest
(`treeleaks.counts.row_model`). Row k of the result is training row k; its box is the
intersection of its leaves, and its values are filled inside it. A row whose every leaf and
class propagation decided is in every consistent dataset: it is proven.
"""

from __future__ import annotations

import numpy as np

from treeleaks.attacks.reconstruction.options import RunOptions
from treeleaks.counts.materialize import rows_in_boxes
from treeleaks.counts.row_leaves import RowLeaves, RowLeavesInfeasible, RowLeavesTooLarge
from treeleaks.counts.row_model import solve_placements
from treeleaks.counts.verify import verify
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import Reconstruction
from treeleaks.runtime.clock import RunClock
from treeleaks.runtime.progress import report
from treeleaks.runtime.vocabulary import Formulation, SolverStatus, Status, Strategy

CLASS_SHARE = 0.25  # of the search time, at most, for the rows' classes from the totals
PROPAGATION_SHARE = 0.5  # of what is left, at most, for propagation
# Most open placements handed to CP-SAT, whose model takes about 17 kB a placement.
# Figures: docs/lab/2026-11-28-constants.md#attacks-per_row
MAX_PLACEMENTS = 200_000
# Most candidate placements listed at all (about 25 bytes each, and propagation's boxes
# take columns x 32 bytes each). Figures: docs/lab/2026-11-28-constants.md#attacks-per_row
MAX_CANDIDATES = 16_000_000
PROOF = ("a row whose every leaf and class propagation decides (the counts, the draws and "
         "the geometry of its leaves leave it no other), draws read from the model")
NOT_MET = "no dataset reproduces the released counts with these draws"


def reconstruct_per_row(model: ReleasedModel, schema: FeatureSchema,
                        run: RunOptions) -> Reconstruction:
    """The training rows of a bootstrap forest with known draws, in training order, without
    listing cells (see the module doc); ``schema`` is bound to the model."""
    clock = RunClock(run.time_limit)  # the proofs come with propagation: no share kept
    settled = _settled_leaves(model, run, clock)
    if isinstance(settled, Reconstruction):
        return settled
    leaves, classes, unique = settled
    decided = leaves.decided_rows()  # what holds in every dataset: the proofs
    clock.timings["rows_decided"] = int(decided.sum())
    search, assumed = _under_classes(leaves, classes, unique, clock)
    clock.lap("propagate")
    left_open = int(search.open.sum())
    if left_open > MAX_PLACEMENTS:
        return _nothing(model, Status.UNKNOWN, clock, _too_many(left_open, classes))
    thresholds = [np.unique(cuts) for cuts in model.thresholds()]
    search, chosen, row_class, status = _placed(leaves, search, assumed, classes,
                                                thresholds, clock, run.seed)
    clock.lap("solve")
    if chosen is None:
        return _unplaced(model, status, clock, run.time_limit, decided, leaves.n_rows)
    frames = _rows(model, schema, search, chosen, row_class, decided)
    certificate = verify(model, frames["rows"])
    clock.lap("verify")
    message = "" if certificate.verified else (
        f"reconstruction does not reproduce the model: {certificate.first_mismatch}")
    return Reconstruction(**frames, status=Status.OPTIMAL, certificate=certificate,
                          time_s=clock.elapsed(), message=message, solver="cp-sat",
                          n_cells=0, certainty_complete=True, timings=clock.timings,
                          strategy=Strategy.PER_ROW, proof=PROOF,
                          formulation=Formulation.BOOTSTRAP_KNOWN)


def _settled_leaves(model: ReleasedModel, run: RunOptions, clock: RunClock
                    ) -> tuple[RowLeaves, np.ndarray | None, bool] | Reconstruction:
    """Each row's candidate leaves, its class read off the trees' class totals (and
    whether that class is the only one), propagated where that pays; or the empty result
    when they are impossible or too many."""
    try:
        leaves = RowLeaves.of(model, MAX_CANDIDATES)
        clock.lap("placements")
        report(run.progress, "solve", 0, None, variables=int(leaves.open.size))
        # the classes first: until they are known, a row may lie in most leaves
        classes, unique = leaves.settle_classes(
            clock.share(CLASS_SHARE, clock.search_deadline))
        if classes is None and leaves.open.size > MAX_PLACEMENTS:
            # without the classes propagation decides next to nothing (docs/engine.md),
            # and the solver would not be given this many: stop here, time and memory kept
            return _nothing(model, Status.UNKNOWN, clock, _too_many(leaves.open.size, None))
        if unique or classes is None:  # with unproven classes it decides next to nothing
            leaves.propagate(clock.share(PROPAGATION_SHARE, clock.search_deadline))
    except RowLeavesInfeasible as exc:
        return _nothing(model, Status.INFEASIBLE, clock, f"{NOT_MET}: {exc} (the model or "
                        "its draws were altered; check the file against the fitted forest)")
    except RowLeavesTooLarge as exc:
        return _nothing(model, Status.UNKNOWN, clock, (
            f"{exc}: too many to place row by row; each row fits that many leaves when the "
            "trees are large and most of their leaves hold one row. Strategy 'auto' tries the "
            "cells with the time left"))
    return leaves, classes, unique


def _under_classes(leaves: RowLeaves, classes: np.ndarray | None, unique: bool,
                   clock: RunClock) -> tuple[RowLeaves, bool]:
    """The placements to search and whether they assume classes: under classes that fit
    the totals but are not proven the only ones, propagated, unless they contradict the
    counts; else ``leaves`` as they are."""
    search, assumed = leaves, classes is not None and not unique
    if assumed:  # classes that fit the totals, not proven the only ones: search under them
        try:
            search = leaves.with_classes(classes)
            search.propagate(clock.share(PROPAGATION_SHARE, clock.search_deadline))
        except RowLeavesInfeasible:
            search, assumed = leaves, False
    return search, assumed


def _placed(leaves: RowLeaves, search: RowLeaves, assumed: bool, classes: np.ndarray | None,
            thresholds: list[np.ndarray], clock: RunClock, seed: int
            ) -> tuple[RowLeaves, np.ndarray | None, np.ndarray | None, SolverStatus]:
    """CP-SAT's placement of every row in ``search``, again without the assumed classes
    when they admit none; the placements searched last, the chosen ones, each row's class
    and the solver's status."""
    chosen, row_class, status = solve_placements(
        search, thresholds, clock.search_deadline, seed, hint=classes)
    if chosen is None and assumed and status == SolverStatus.INFEASIBLE:
        search = leaves
        chosen, row_class, status = solve_placements(
            search, thresholds, clock.search_deadline, seed, hint=classes)
    return search, chosen, row_class, status


def _unplaced(model: ReleasedModel, status: SolverStatus, clock: RunClock, time_limit: float,
              decided: np.ndarray, n_rows: int) -> Reconstruction:
    """The empty result when the solver placed no dataset: none exists, or time ran out."""
    if status == SolverStatus.INFEASIBLE:
        return _nothing(model, Status.INFEASIBLE, clock, f"{NOT_MET} (the model or its "
                        "draws were altered)")
    return _nothing(model, Status.UNKNOWN, clock, (
        f"no dataset placing every row found within the time limit of "
        f"{time_limit:.3g} s; propagation decided {int(decided.sum())} of "
        f"{n_rows} rows. Raise the time limit"))


def _rows(model: ReleasedModel, schema: FeatureSchema, leaves: RowLeaves, chosen: np.ndarray,
          row_class: np.ndarray, decided: np.ndarray) -> dict:
    """Each row's box (the intersection of the paths it takes), filled, in training order."""
    m = model.n_features
    lower = np.full((leaves.n_rows, m), -np.inf)
    upper = np.full((leaves.n_rows, m), np.inf)
    row = leaves.pair_row[leaves.place_pair[chosen]]
    np.maximum.at(lower, row, leaves.lower[leaves.place_path[chosen]])
    np.minimum.at(upper, row, leaves.upper[leaves.place_path[chosen]])
    return rows_in_boxes(model, schema, lower, upper, np.maximum(row_class, 0), decided)


def _too_many(left_open: int, classes: np.ndarray | None) -> str:
    """Why the solver was not run: more open placements than it is given."""
    return (f"{left_open:,} placements of rows in leaves are left open, more than the "
            f"solver is given ({MAX_PLACEMENTS:,}): "
            + ("the rows' classes could not be read off the trees' class totals in time"
               if classes is None else "propagation narrowed too little")
            + "; nothing narrows a row until its class is known. A longer --time-limit "
            "gives the classes more time (a quarter of it)")


def _nothing(model: ReleasedModel, status: Status, clock: RunClock,
             message: str) -> Reconstruction:
    return Reconstruction.empty(model, status=status, time_s=clock.elapsed(), message=message,
                                solver="cp-sat", timings=clock.timings,
                                strategy=Strategy.PER_ROW,
                                formulation=Formulation.BOOTSTRAP_KNOWN)
