"""Exact reconstruction of forests whose trees each saw every training row once.

Covers scikit-learn forests with ``bootstrap=False`` (and ExtraTrees' default) and single
decision trees. Pipeline: cells → count system → propagation → CP-SAT on the residual →
certainty bounds → rows → certificate.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np

from treeleaks.attacks.bootstrap import has_multiplicities, reconstruct_known_multiplicities
from treeleaks.attacks.bootstrap_unknown import reconstruct_unknown_multiplicities
from treeleaks.attacks.side_knowledge import bootstrap_with_knowledge, exact_with_knowledge
from treeleaks.counts.cells import CellBudget, CellBudgetExceeded, Cells, enumerate_cells
from treeleaks.counts.certainty import lower_bounds
from treeleaks.counts.materialize import rows_from_counts
from treeleaks.counts.peel import Peeled, peel_rows, with_pinned, without_pinned
from treeleaks.counts.solve import solve
from treeleaks.counts.system import (
    CountSystem,
    InconsistentCountsError,
    build_system,
    propagate,
)
from treeleaks.counts.verify import verify
from treeleaks.errors import BudgetError, TreeleaksError
from treeleaks.knowledge import Knowledge, KnowledgeError
from treeleaks.limits import DEFAULT_MAX_ROWS, PROOF_SHARE, check_run_options
from treeleaks.model import ReleasedModel
from treeleaks.progress import ProgressCallback, report
from treeleaks.result import Reconstruction
from treeleaks.schema import FeatureSchema

STRATEGIES = ("auto", "enumerate", "generate")
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
PEEL_SHARE = 0.1  # of the search time, at most, for `peel_rows` before generation


def reconstruct(
    model: ReleasedModel,
    schema: FeatureSchema | None = None,
    *,
    time_limit: float = 60.0,
    threads: int = 2,
    seed: int = 0,
    solver: str = "highs",
    certainty_time_limit: float = 30.0,
    strategy: str = "auto",
    cell_budget: CellBudget | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    progress: ProgressCallback | None = None,
    knowledge: Knowledge | None = None,
    ignore_multiplicities: bool = False,
    n_rows: int | None = None,
    n_unknown: bool = False,
    shrinkage: float | None = None,
) -> Reconstruction:
    """Reconstruct the training set of a noise-free forest from its counts (a bootstrap
    forest through `treeleaks.attacks.bootstrap`, when it exposes its multiplicities).

    Among the datasets the counts admit, the one with the most orderings is returned (see
    `treeleaks.counts.solve`). ``time_limit`` bounds the whole run: finding the reconstruction
    (listing or generating cells, then the solver) may use all of it but a reserve of
    ``min(certainty_time_limit, 15% of it)``; the proofs then use what is left, at most
    ``certainty_time_limit`` (cut short, they stay sound). Checking and assembling the rows
    take a fraction of a second. When the search runs out of time the best solution found
    is returned with status FEASIBLE, or, if none was found, the rows propagation proved
    (status UNKNOWN). Counts no dataset can produce give status INFEASIBLE.
    ``threads`` and ``seed`` steer CP-SAT (``solver="cp-sat"``; with generated cells,
    ``threads`` also prices the classes side by side); HiGHS runs deterministically.
    ``strategy``: ``enumerate`` lists every cell of the trees' common refinement,
    ``generate`` generates the cells a solution needs on demand, ``auto`` (default)
    enumerates within ``cell_budget`` and generates beyond it. The budget's memory limit
    holds for ``enumerate`` too: beyond it the run stops with status UNKNOWN and says so.
    Counts implying more than ``max_rows`` training rows are refused (`BudgetError`).
    A bootstrap forest that exposes its draws is rebuilt row by row in training order
    (`treeleaks.attacks.bootstrap`, HiGHS then CP-SAT whatever ``solver`` says, LP proofs).
    ``progress`` receives `treeleaks.progress.Progress` events. ``knowledge`` (known
    columns, known rows) is respected exactly by the rows returned, and the proofs hold
    given it (`treeleaks.attacks.side_knowledge`). A bootstrap forest without its draws,
    or with ``ignore_multiplicities``, is rebuilt with draws inferred for its rows
    (`treeleaks.attacks.bootstrap_unknown`; no proofs).
    A DP forest (noisy counts) is rebuilt as the most likely dataset
    (`treeleaks.attacks.dp`): N is ``n_rows`` or the one its file states, or inferred with
    ``n_unknown``; its schema defaults to the public domains its file records;
    ``shrinkage`` (default `treeleaks.attacks.dp.SHRINKAGE`) pulls its rows toward typical
    ones, 0 returns the most likely dataset.
    """
    model.require_classifier("the reconstruction attack")
    if model.noise is not None:
        check_run_options(time_limit, certainty_time_limit, threads, seed, max_rows)
        bound = (schema if schema is not None else FeatureSchema.for_model(model)).bind(model)
        from treeleaks.attacks.dp import reconstruct_dp  # OR-Tools: loaded when needed

        return reconstruct_dp(model, bound, n_rows=n_rows, n_unknown=n_unknown,
                              knowledge=knowledge, time_limit=time_limit,
                              cell_budget=cell_budget, progress=progress, seed=seed,
                              threads=threads,
                              **({} if shrinkage is None else {"shrinkage": shrinkage}))
    if n_unknown or shrinkage is not None or (n_rows is not None and n_rows != model.n_rows):
        raise TreeleaksError(
            "n_rows, n_unknown and shrinkage are for DP forests, whose counts are noisy; "
            "this model's "
            "counts are exact" + ("" if model.n_rows is None else f" and state N = {model.n_rows}"))
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    check_run_options(time_limit, certainty_time_limit, threads, seed, max_rows)
    n_rows = len(model.trees[0].multiplicities) if has_multiplicities(model) else model.n_rows
    if n_rows is not None and n_rows > max_rows:
        raise BudgetError(
            f"the counts imply {n_rows:,} training rows, more than the limit of "
            f"{max_rows:,}; raise it (--max-rows) if that size is right: time and memory "
            "grow with it"
        )
    bound = (schema if schema is not None else FeatureSchema.infer(model)).bind(model)
    if model.bootstrap and (ignore_multiplicities or not has_multiplicities(model)):
        if knowledge is not None and not knowledge.empty:
            raise KnowledgeError("side knowledge is not supported yet for a bootstrap forest "
                                 "whose draws are unknown")
        reason = ("the draws were set aside (ignore_multiplicities)" if ignore_multiplicities
                  else "this forest does not expose its draws (its random states were not "
                  "kept)")
        return reconstruct_unknown_multiplicities(model, bound, time_limit=time_limit,
                                                  cell_budget=cell_budget, progress=progress,
                                                  reason=reason)
    if knowledge is not None and not knowledge.empty:
        knowledge.check(model, bound, n_rows)
        bound = knowledge.schema_for(bound, model)
        options = {"time_limit": time_limit, "threads": threads, "seed": seed,
                   "certainty_time_limit": certainty_time_limit, "cell_budget": cell_budget,
                   "progress": progress}
        if model.bootstrap:
            return bootstrap_with_knowledge(model, bound, knowledge, lambda inner, boxes, rows: (
                reconstruct_known_multiplicities(inner, bound, row_boxes=boxes, known_rows=rows,
                                                 **options)))
        return exact_with_knowledge(model, bound, knowledge, lambda inner: reconstruct(
            inner, bound, solver=solver, strategy=strategy, max_rows=max_rows, **options))
    if model.bootstrap:
        def without_draws(seconds: float, why: str) -> Reconstruction:
            return reconstruct_unknown_multiplicities(
                model, bound, time_limit=seconds, cell_budget=cell_budget, progress=progress,
                reason=f"{why}; with the draws set aside")

        # the covering problem needs N draws per tree (no max_samples)
        covering = model.facts.get("max_samples") is None
        return reconstruct_known_multiplicities(
            model, bound, time_limit=time_limit, certainty_time_limit=certainty_time_limit,
            threads=threads, seed=seed, cell_budget=cell_budget, progress=progress,
            fallback=without_draws if covering else None)
    start = time.perf_counter()
    deadline = start + float(time_limit)
    search_deadline = deadline - min(certainty_time_limit, PROOF_SHARE * time_limit)
    timings: dict[str, float] = {}

    def lap(name: str, since: float) -> float:
        now = time.perf_counter()
        timings[name] = now - since
        return now

    def left(until: float) -> float:
        return max(until - time.perf_counter(), 0.0)

    def proof_time() -> float:
        return min(certainty_time_limit, left(deadline))

    def empty(status: str, message: str, n_cells: int, used: str) -> Reconstruction:
        return _empty(model, status, time.perf_counter() - start, timings, message, n_cells,
                      solver, used)

    def listing_budget(since: float) -> CellBudget:
        """What `auto` may spend listing cells from ``since``."""
        share = max(ENUMERATION_SHARE * time_limit, ENUMERATION_MIN_S)
        return replace(cell_budget or CellBudget(),
                       deadline=min(since + share, search_deadline))

    tick = time.perf_counter()
    cells, used = None, "generate"
    if strategy != "generate":
        limits = cell_budget or CellBudget()
        if strategy == "auto":
            limits = listing_budget(start)
        else:  # only memory and time stop a requested enumeration
            limits = replace(limits, max_cells=sys.maxsize, deadline=search_deadline)
        try:
            cells = enumerate_cells(model, bound, limits, progress)
            used = "enumerate"
        except CellBudgetExceeded as stop:
            timings["cells_abandoned_after_trees"] = stop.trees_done
            if strategy == "enumerate":
                lap("cells", tick)
                return empty("UNKNOWN", f"too many cells to list: enumeration stopped at "
                             f"{stop.n_cells:,} cells after {stop.trees_done} of "
                             f"{model.n_trees} trees ({stop.reason}); try strategy 'auto' or "
                             "'generate', a schema with the one-hot groups, or a larger "
                             "memory budget or time limit", stop.n_cells, "enumerate")
        tick = lap("cells", tick)
    proven, proof = None, PROOF_ENUMERATED
    if cells is None:
        proven = peel_rows(model, bound, tick + PEEL_SHARE * left(search_deadline), progress)
        tick = lap("peel", tick)
        timings["peeled_rows"] = len(proven)
        if len(proven) and strategy == "auto":
            # The other rows' counts may have few enough cells to list: then the proofs
            # are those of enumeration again.
            try:
                rest = enumerate_cells(without_pinned(model, proven), bound,
                                       listing_budget(tick), progress)
                cells, used, proof = with_pinned(model, rest, proven), "enumerate", PROOF_PINNED
            except CellBudgetExceeded:
                pass
            tick = lap("cells_after_peel", tick)
    if cells is None:
        from treeleaks.counts.generate import generate_cells  # OR-Tools, when needed

        generated = generate_cells(model, bound, search_deadline, seed=seed, progress=progress,
                                   workers=threads, proven=proven)
        tick = lap("generate", tick)
        timings["generate_iterations"] = generated.iterations
        timings["pricing_calls"] = generated.pricing_calls
        if generated.status == "INFEASIBLE":
            return empty("INFEASIBLE", "no dataset reproduces the released counts: no set of "
                         "cells can hold every leaf's rows (proven by pricing)",
                         len(generated.cells), used)
        if generated.status != "FEASIBLE":
            why = {
                "DEAD_END": "every rounding of its LP tried in time reached a dead end",
                "STALLED": "pricing could neither find a better cell nor rule one out",
            }.get(generated.status, f"the time limit of {time_limit:g} s ran out")
            why += "; raise the time limit, or try strategy 'enumerate' if memory allows"
            return empty("UNKNOWN", f"cell generation fixed {generated.placed:.0f} of "
                         f"{model.n_rows} rows (its LP placed at most "
                         f"{generated.lp_placed:.1f}): {why}", len(generated.cells), used)
        cells = generated.cells
    try:
        system = propagate(build_system(model, cells))
    except InconsistentCountsError as exc:
        lap("propagation", tick)
        if used == "generate":
            return empty("UNKNOWN", "the cells generated within the time limit hold no "
                         "integer dataset; raise the time limit", len(cells), used)
        return empty("INFEASIBLE", f"no dataset reproduces the released counts: {exc}",
                     len(cells), used)
    tick = lap("propagation", tick)
    report(progress, "solve", 0, None, variables=system.n_vars)
    solution = solve(system, time_limit=left(search_deadline), threads=threads, seed=seed,
                     solver=solver)
    tick = lap("solve", tick)
    if solution.counts is None:
        if solution.status == "INFEASIBLE" and used == "enumerate":
            return empty("INFEASIBLE", "no dataset reproduces the released counts: the model "
                         "was altered or its counts are not exact", len(cells), used)
        if used == "generate":
            return empty("UNKNOWN", "no integer dataset found among the cells generated "
                         f"within the time limit of {time_limit:g} s; raise the time limit",
                         len(cells), used)
        counts, lower = system.lb, system.lb
        message = (
            f"no complete reconstruction found within the time limit of {time_limit:g} s; "
            f"returning the {int(counts.sum())} rows propagation proved. "
            "Raise the time limit to get the rest."
        )
        complete = True
    else:
        report(progress, "certainty", 0, None)
        if used == "enumerate":
            certainty = lower_bounds(system, solution.counts, proof_time())
            if proven is not None:
                certainty.lower = np.maximum(certainty.lower,
                                             _peeled_lower(proven, cells, system))
        else:
            from treeleaks.counts.generate import generated_lower_bounds

            certainty = generated_lower_bounds(model, bound, cells, system, solution.counts,
                                               proof_time(), seed=seed, progress=progress,
                                               workers=threads,
                                               known=_peeled_lower(proven, cells, system))
            proof = (PINNED if len(proven) else "") + PROOF_GENERATED
        tick = lap("certainty", tick)
        counts, lower, complete = solution.counts, certainty.lower, certainty.complete
        notes = []
        if solution.status == "FEASIBLE":
            notes.append(f"the solver stopped at its time limit of {time_limit:g} s with a "
                         "complete reconstruction that may not be the most likely one")
        if not complete:
            notes.append("certainty bounds stopped at their time limit (still sound)")
        message = "; ".join(notes)
    report(progress, "verify", 0, None)
    recon = rows_from_counts(model, bound, cells, system.cell, system.cls, counts, lower,
                             with_width=True)
    certificate = verify(model, recon["rows"])
    lap("verify", tick)
    status = solution.status if solution.counts is not None else "UNKNOWN"
    if solution.counts is not None and not certificate.verified:
        message = f"reconstruction does not reproduce the model: {certificate.first_mismatch}"
    return Reconstruction(
        **recon,
        status=status,
        certificate=certificate,
        time_s=time.perf_counter() - start,
        message=message,
        objective=solution.objective,
        solver=solver,
        n_cells=len(cells),
        certainty_complete=complete,
        timings=timings,
        strategy=used,
        proof=proof,
    )


def _peeled_lower(proven: Peeled, cells: Cells, system: CountSystem) -> np.ndarray:
    """Per variable of ``system``, how many of the ``proven`` rows lie in its (cell, class)."""
    variable = {(int(c), cells.leaf[k].astype(np.int64).tobytes()): j
                for j, (k, c) in enumerate(zip(system.cell, system.cls))}
    lower = np.zeros(system.n_vars, dtype=np.int64)
    for cls, leaves in zip(proven.cls, proven.leaves):
        lower[variable[(int(cls), leaves.tobytes())]] += 1
    return lower


def _empty(
    model: ReleasedModel,
    status: str,
    elapsed: float,
    timings: dict[str, float],
    message: str,
    n_cells: int,
    solver: str,
    strategy: str,
) -> Reconstruction:
    """A result with no rows: the counts admit no dataset."""
    return Reconstruction.empty(model, status=status, time_s=elapsed, message=message,
                                solver=solver, n_cells=n_cells, timings=timings,
                                strategy=strategy)
