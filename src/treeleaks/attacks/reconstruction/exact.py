"""Exact reconstruction of forests whose trees each saw every training row once.

Covers scikit-learn forests with ``bootstrap=False`` (and ExtraTrees' default) and single
decision trees. Four stages, each a function here: find the cells (list every cell of the
trees' common refinement, or pin rows by single-row leaves and generate the rest's cells
on demand), solve the count system over them (propagation, then HiGHS or CP-SAT), prove
which rows every consistent dataset shares (certainty bounds), and assemble the rows with
their certificate.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from treeleaks.attacks.reconstruction.options import RunOptions
from treeleaks.counts.cells import CellBudget, CellBudgetExceeded, Cells, enumerate_cells
from treeleaks.counts.certainty import lower_bounds
from treeleaks.counts.materialize import rows_from_counts
from treeleaks.counts.peel import Peeled, peel_rows, with_pinned, without_pinned
from treeleaks.counts.solve import Solution, solve
from treeleaks.counts.system import (
    CountSystem,
    InconsistentCountsError,
    build_system,
    propagate,
)
from treeleaks.counts.verify import verify, verify_within
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import PackingDetails, Reconstruction
from treeleaks.runtime.clock import RunClock
from treeleaks.runtime.progress import report
from treeleaks.runtime.vocabulary import SolverStatus, Status, Strategy

if TYPE_CHECKING:
    from treeleaks.counts.generate import Generated

STRATEGIES = (Strategy.AUTO, Strategy.ENUMERATE, Strategy.GENERATE)
ENUMERATION_SHARE = 0.25  # of the time limit, before `auto` switches to generating cells
ENUMERATION_MIN_S = 2.0  # ... but never less: small models enumerate in well under this
PROOF_ENUMERATED = "propagation and LP bounds over every cell (enumeration complete)"
PROOF_GENERATED = (
    "LP bounds over the generated cells, each closed by exact pricing over all other cells"
)
PINNED = "boxes narrowed from single-row leaves pin some rows; "
PROOF_PINNED = (
    PINNED + "propagation and LP bounds over every cell the other rows can occupy "
    "(enumeration complete)"
)
# A booster's gradient sums bound the counts too (`treeleaks.counts.side_bounds`)
PROOF_SUMS = "bounds the booster's leaf values imply, within the file's precision"
PEEL_SHARE = 0.1  # of the search time, at most, for `peel_rows` before generation
# A partial dataset's last step, a MIP that moves its rows among the generated cells, takes
# the time kept for proofs, up to this. Figures: docs/lab/2026-11-28-constants.md#attacks-exact
PACKING_MAX_S = 30.0
# A run out of time before it placed a row suggests ten times its limit, and at least this.
# Figures: docs/lab/2026-11-28-constants.md#attacks-exact
MIN_SUGGESTED_S = 10.0
# With the row search to follow (raw measurements), generation's share of the search time.
# Figures: docs/lab/2026-11-28-constants.md#attacks-exact
GENERATION_SHARE = 0.5


class _Partial(Exception):
    """The search ended short of N with a partial dataset: the result to return."""

    def __init__(self, result: Reconstruction) -> None:
        super().__init__(result.message)
        self.result = result


class _Stopped(Exception):
    """A stage ended the run without rows: the status to report and why."""

    def __init__(self, status: Status, message: str, n_cells: int, strategy: str) -> None:
        super().__init__(message)
        self.status, self.message, self.n_cells, self.strategy = (
            status, message, n_cells, strategy)


@dataclass
class _Found:
    """The cells a reconstruction may use, how they were found (``enumerate`` or
    ``generate``), the rows pinned before (None when none were tried), and the proof the
    bounds over these cells give."""

    cells: Cells
    strategy: str
    pinned: Peeled | None
    proof: str


@dataclass
class _Proofs:
    """The counts returned, the share of them every dataset holds, whether that bound is
    complete, and what the result says about both."""

    counts: np.ndarray
    lower: np.ndarray
    complete: bool
    message: str
    proof: str


def reconstruct_exact(model: ReleasedModel, schema: FeatureSchema, run: RunOptions, *,
                      solver: str = "highs", strategy: str = Strategy.AUTO,
                      row_search: bool = False) -> Reconstruction:
    """The training rows of a forest whose trees each saw every row once, from its counts
    (``schema`` bound to the model). Among the datasets the counts admit, the one with the
    most orderings (see `treeleaks.counts.solve`); the stages are the module doc's. With
    ``row_search`` (raw measurements), generation that ends short hands its rows to the
    row search (`treeleaks.attacks.reconstruction.row_search_stage`) for the rest of the time."""
    pipeline = _ExactPipeline(model, schema, run, solver, strategy,
                              RunClock(run.time_limit, run.certainty_time_limit), row_search)
    try:
        found = pipeline.find_cells()
        system, solution = pipeline.solve_counts(found)
    except _Partial as partial:
        return partial.result
    except _Stopped as stop:
        return Reconstruction.empty(model, status=stop.status,
                                    time_s=pipeline.clock.elapsed(), message=stop.message,
                                    solver=solver, n_cells=stop.n_cells,
                                    timings=pipeline.clock.timings, strategy=stop.strategy)
    proofs = pipeline.prove(found, system, solution)
    return pipeline.assemble(found, system, solution, proofs)


@dataclass
class _ExactPipeline:
    """One run of the exact reconstruction: what every stage reads."""

    model: ReleasedModel
    schema: FeatureSchema
    run: RunOptions
    solver: str
    strategy: str
    clock: RunClock
    row_search: bool = False

    def find_cells(self) -> _Found:
        """List every cell when the strategy allows and the budget holds; otherwise pin
        what single-row leaves prove, list the other rows' cells if they fit (``auto``),
        else generate the cells a solution needs."""
        model, schema, run, clock = self.model, self.schema, self.run, self.clock
        if self.strategy != Strategy.GENERATE:
            try:
                cells = enumerate_cells(model, schema, self._listing_budget(), run.progress)
                clock.lap("cells")
                return _Found(cells, Strategy.ENUMERATE, None, PROOF_ENUMERATED)
            except CellBudgetExceeded as stop:
                clock.timings["cells_abandoned_after_trees"] = stop.trees_done
                clock.lap("cells")
                if self.strategy == Strategy.ENUMERATE:
                    raise _Stopped(
                        Status.UNKNOWN, f"too many cells to list: enumeration stopped at "
                        f"{stop.n_cells:,} cells after {stop.trees_done} of {model.n_trees} "
                        f"trees ({stop.reason}); try strategy 'auto' or 'generate', a schema "
                        "with the one-hot groups, or a larger memory budget or time limit",
                        stop.n_cells, Strategy.ENUMERATE) from None
        pinned = peel_rows(model, schema, clock.share(PEEL_SHARE, clock.search_deadline),
                           run.progress)
        clock.lap("peel")
        clock.timings["peeled_rows"] = len(pinned)
        if len(pinned) and self.strategy == Strategy.AUTO:
            # The other rows' counts may have few enough cells to list: then the proofs
            # are those of enumeration again.
            try:
                rest = enumerate_cells(without_pinned(model, pinned), schema,
                                       self._listing_budget(), run.progress)
                clock.lap("cells_after_peel")
                return _Found(with_pinned(model, rest, pinned), Strategy.ENUMERATE, pinned,
                              PROOF_PINNED)
            except CellBudgetExceeded:
                clock.lap("cells_after_peel")
        return self._generated(pinned)

    def _listing_budget(self) -> CellBudget:
        """What listing cells may spend from now: under ``auto``, a share of the time
        limit; a requested enumeration is stopped only by memory and the search's
        deadline."""
        budget = self.run.cell_budget or CellBudget()
        if self.strategy != Strategy.AUTO:
            return replace(budget, max_cells=sys.maxsize, deadline=self.clock.search_deadline)
        share = max(ENUMERATION_SHARE * self.run.time_limit, ENUMERATION_MIN_S)
        return replace(budget, deadline=min(self.clock.since_lap() + share,
                                            self.clock.search_deadline))

    def _generated(self, pinned: Peeled) -> _Found:
        """The cells column generation finds before the search's deadline, the pinned
        rows fixed."""
        from treeleaks.counts.generate import Generation, generate_cells  # OR-Tools

        run, clock = self.run, self.clock
        until = (clock.since_lap() + GENERATION_SHARE * clock.left(clock.search_deadline)
                 if self.row_search else clock.search_deadline)
        generated = generate_cells(self.model, self.schema, until, seed=run.seed,
                                   progress=run.progress, workers=run.threads, proven=pinned)
        clock.lap("generate")
        clock.timings["generate_iterations"] = generated.iterations
        clock.timings["pricing_calls"] = generated.pricing_calls
        if generated.status == Generation.INFEASIBLE:
            where = f"; {generated.shortfall}" if generated.shortfall else ""
            raise _Stopped(Status.INFEASIBLE, "no dataset reproduces the released counts: no set "
                           f"of cells can hold every leaf's rows (proven by pricing: at most "
                           f"{generated.lp_placed:.1f} of {self.model.n_rows} fit){where}; "
                           "the model or its counts were altered: check the file against the "
                           "fitted model",
                           len(generated.cells), Strategy.GENERATE)
        if generated.status == Generation.INTERRUPTED and not generated.partial.any():
            raise KeyboardInterrupt  # nothing in hand: the interrupt is the caller's
        if generated.status != Generation.FEASIBLE:
            why = {
                Generation.DEAD_END: "every rounding of its LP tried in time reached a dead "
                                     "end",
                Generation.STALLED: "pricing could neither find a better cell nor rule one "
                                    "out",
            }.get(generated.status, f"the time limit of {run.time_limit:g} s ran out")
            why += "; raise the time limit, or try strategy 'enumerate' if memory allows"
            if generated.status == Generation.INTERRUPTED:
                why = (f"interrupted (Ctrl-C) after {clock.elapsed():.0f} s; let it run longer "
                       "for more rows")
            elif self.row_search:
                raise _Partial(self._searched(generated))
            if generated.partial.any():
                interrupted = generated.status == Generation.INTERRUPTED
                raise _Partial(self._partial(generated, why, interrupted=interrupted))
            if generated.status == Generation.TIMEOUT:  # no row in hand: say what limit to try
                why = (f"the time limit of {run.time_limit:g} s ran out before a row was "
                       f"placed; raise it to {max(10 * run.time_limit, MIN_SUGGESTED_S):g} s "
                       "or more")
            raise _Stopped(Status.UNKNOWN, f"cell generation fixed {generated.placed:.0f} of "
                           f"{self.model.n_rows} rows (its LP placed at most "
                           f"{generated.lp_placed:.1f}): {why}", len(generated.cells),
                           Strategy.GENERATE)
        proof = (PINNED if len(pinned) else "") + PROOF_GENERATED
        return _Found(generated.cells, Strategy.GENERATE, pinned, proof)

    def _partial(self, generated: Generated, why: str, interrupted: bool = False
                 ) -> Reconstruction:
        """The largest partial dataset generation found, checked against every count: no
        leaf may hold more of its rows than it released. The rows pinned before generation
        are proven; the others are one way to place that many rows. Once interrupted, the
        rows in hand are returned as they are."""
        from treeleaks.counts.generate import pack_whole_rows

        # the proofs' share, as there is nothing to prove; none after Ctrl-C
        until = time.perf_counter() if interrupted else self.clock.within(PACKING_MAX_S)
        try:
            packed = pack_whole_rows(self.model, generated, until)
        except KeyboardInterrupt:  # the rows in hand stand
            packed, interrupted = generated.partial, True
        self.clock.lap("packing")
        n, rows = self.model.n_rows, int(packed.sum())
        recon = rows_from_counts(self.model, self.schema, generated.cells,
                                 generated.column_cell, generated.column_cls,
                                 packed, generated.pinned, with_width=True)
        lp = (f"; the packing LP placed up to {generated.lp_placed:.1f} over them"
              if generated.lp_placed > rows else "")
        message = (f"a complete dataset, packed in the cells generated once the search's time "
                   f"was up, without proofs ({why})" if rows == n else
                   f"a partial dataset: {rows} of {n} rows ({rows / n:.0%}), whole rows placed "
                   f"in the cells generated{lp}; no complete dataset: {why}")
        result = self._checked_rows(recon, generated, message, bool(generated.pinned.any()),
                                    interrupted)
        self.clock.lap("partial")
        return result

    def _searched(self, generated: Generated) -> Reconstruction:
        """Generation's rows handed to the row search until the search's deadline, the
        result checked against every count: complete with N rows, else partial."""
        from treeleaks.attacks.reconstruction.row_search_stage import generated_rows, searched_rows

        leaves, cls, pinned = generated_rows(generated)
        # nothing to prove: all the time
        recon, found = searched_rows(self.model, self.schema, self.clock.deadline,
                                     self.run.seed, (leaves, cls), pinned, self.run.progress)
        self.clock.lap("row_search")
        n, rows = self.model.n_rows, len(recon["rows"])
        self.clock.timings.update(generated_rows=len(cls), searched_rows=rows)
        dropped = (f"; {found - rows} rows whose values the schema keeps out of their leaves "
                   "were dropped" if found > rows else "")
        message = (f"a complete dataset found by the row search from the {len(cls)} rows cell "
                   f"generation placed, without proofs{dropped}" if rows == n else
                   f"a partial dataset: {rows} of {n} rows ({rows / n:.0%}); cell generation "
                   f"placed {len(cls)}, the row search moved rows as points from there until "
                   f"the time limit of {self.run.time_limit:g} s{dropped}")
        return self._checked_rows(recon, generated, message, pinned > 0)

    def _checked_rows(self, recon: dict, generated: Generated, message: str, pinned: bool,
                      interrupted: bool = False) -> Reconstruction:
        """Rows found after generation (packed or searched), checked against every count:
        N rows must reproduce them all, fewer must stay within them (a partial dataset).
        Only the rows pinned before generation are proven."""
        n, rows = self.model.n_rows, len(recon["rows"])
        complete = rows == n
        certificate = (verify if complete else verify_within)(self.model, recon["rows"])
        if not certificate.verified:
            message = f"the rows exceed a count: {certificate.first_mismatch}"
        return Reconstruction(
            **recon, status=Status.FEASIBLE if rows else Status.UNKNOWN,
            certificate=certificate, time_s=self.clock.elapsed(), message=message,
            solver=self.solver, n_cells=len(generated.cells), certainty_complete=False,
            timings=self.clock.timings, strategy=Strategy.GENERATE,
            proof=(PINNED + "the pinned rows are proven; the others are not" if pinned
                   else "none: rows that fit the counts are not proven training rows"),
            partial=not complete and rows > 0,
            packing=None if complete else PackingDetails(max(generated.lp_placed, rows)),
            interrupted=interrupted)

    def solve_counts(self, found: _Found) -> tuple[CountSystem, Solution]:
        """The count system over the found cells, propagated, and the solver's answer.
        Counts no dataset meets over every cell are INFEASIBLE; over generated cells, only
        UNKNOWN."""
        cells, used, clock = found.cells, found.strategy, self.clock
        try:
            # gradient sums only over every cell: generated cells may not meet them
            system = propagate(build_system(self.model, cells,
                                            gradients=used == Strategy.ENUMERATE))
        except InconsistentCountsError as exc:
            clock.lap("propagation")
            if used == Strategy.GENERATE:
                raise _Stopped(Status.UNKNOWN, "the cells generated within the time limit hold no "
                               "integer dataset; raise the time limit", len(cells),
                               used) from None
            raise _Stopped(Status.INFEASIBLE, f"no dataset reproduces the released counts: {exc}",
                           len(cells), used) from None
        clock.lap("propagation")
        report(self.run.progress, "solve", 0, None, variables=system.n_vars)
        solution = solve(system, clock.search_deadline,
                         threads=self.run.threads, seed=self.run.seed, solver=self.solver)
        clock.lap("solve")
        if (solution.counts is None and solution.status == SolverStatus.INFEASIBLE
                and used == Strategy.ENUMERATE):
            raise _Stopped(Status.INFEASIBLE, "no dataset reproduces the released counts: the "
                           "model was altered or its counts are not exact", len(cells), used)
        if solution.counts is None and used == Strategy.GENERATE:
            raise _Stopped(Status.UNKNOWN, "no integer dataset found among the cells generated "
                           f"within the time limit of {self.run.time_limit:g} s; raise the "
                           "time limit", len(cells), used)
        return system, solution

    def prove(self, found: _Found, system: CountSystem, solution: Solution) -> _Proofs:
        """How many rows of each (cell, class) every consistent dataset holds, within the
        proofs' time. With no solution in time, the rows propagation proved stand alone."""
        run = self.run
        if solution.counts is None:
            return _Proofs(system.lb, system.lb, True, (
                f"no complete reconstruction found within the time limit of "
                f"{run.time_limit:g} s; returning the {int(system.lb.sum())} rows propagation "
                "proved. Raise the time limit to get the rest."), found.proof)
        report(run.progress, "certainty", 0, None)
        until = self.clock.proof_deadline()
        proof = found.proof
        if solution.bounded is not None:  # only listed cells carry the sums
            system, proof = solution.bounded, f"{proof}; {PROOF_SUMS}"
        if found.strategy == Strategy.ENUMERATE:
            certainty = lower_bounds(system, solution.counts, until)
            if found.pinned is not None:
                certainty.lower = np.maximum(certainty.lower,
                                             _pinned_lower(found.pinned, found.cells, system))
        else:
            from treeleaks.counts.generate import SearchSettings, generated_lower_bounds

            certainty = generated_lower_bounds(
                self.model, self.schema, found.cells, system, solution.counts, until,
                SearchSettings(run.seed, run.threads, run.progress),
                known=_pinned_lower(found.pinned, found.cells, system))
        self.clock.lap("certainty")
        notes = [solution.note] if solution.note else []
        if solution.status == SolverStatus.FEASIBLE:
            notes.append(f"the solver stopped at its time limit of {run.time_limit:g} s with "
                         "a complete reconstruction that may not be the most likely one")
        if not certainty.complete:
            notes.append("certainty bounds stopped at their time limit (still sound)")
        return _Proofs(solution.counts, certainty.lower, certainty.complete,
                       "; ".join(notes), proof)

    def assemble(self, found: _Found, system: CountSystem, solution: Solution,
                 proofs: _Proofs) -> Reconstruction:
        """The rows the counts hold, with their bounds and proofs, checked against every
        count of the model."""
        report(self.run.progress, "verify", 0, None)
        recon = rows_from_counts(self.model, self.schema, found.cells, system.cell,
                                 system.cls, proofs.counts, proofs.lower, with_width=True)
        certificate = verify(self.model, recon["rows"])
        self.clock.lap("verify")
        if solution.sums_infeasible and certificate.leaf_values_match is False:
            return Reconstruction.empty(
                self.model, status=Status.INFEASIBLE, time_s=self.clock.elapsed(),
                message=contradiction(certificate.leaf_values), solver=self.solver,
                n_cells=len(found.cells), timings=self.clock.timings, strategy=found.strategy)
        message = proofs.message
        if solution.counts is not None and not certificate.verified:
            message = ("reconstruction does not reproduce the model: "
                       f"{certificate.first_mismatch}")
        return Reconstruction(
            **recon,
            status=Status.solved(solution.status) if solution.counts is not None
            else Status.UNKNOWN,
            certificate=certificate,
            time_s=self.clock.elapsed(),
            message=message,
            objective=solution.objective,
            solver=self.solver,
            n_cells=len(found.cells),
            certainty_complete=proofs.complete,
            timings=self.clock.timings,
            strategy=found.strategy,
            proof=proofs.proof,
        )


def contradiction(leaf_values: str) -> str:
    """Why no dataset meets a booster's counts and gradient sums together, from where the
    rows of its counts alone miss the sums (``Certificate.leaf_values``)."""
    miss = leaf_values.removeprefix("leaf values not reproduced: ")
    where, _, detail = miss.partition(": ")
    return (f"no dataset meets both the booster's counts and its leaf values: the file's "
            f"values contradict each other at {where}: edited or truncated? (the rows of "
            f"the counts alone give: {detail})")


def _pinned_lower(pinned: Peeled, cells: Cells, system: CountSystem) -> np.ndarray:
    """Per variable of ``system``, how many of the ``pinned`` rows lie in its (cell, class)."""
    variable = {(int(c), cells.leaf[k].astype(np.int64).tobytes()): j
                for j, (k, c) in enumerate(zip(system.cell, system.cls))}
    lower = np.zeros(system.n_vars, dtype=np.int64)
    for cls, leaves in zip(pinned.cls, pinned.leaves):
        lower[variable[(int(cls), leaves.tobytes())]] += 1
    return lower
