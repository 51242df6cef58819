"""Exact reconstruction of forests whose trees each saw every training row once.

Covers scikit-learn forests with ``bootstrap=False`` (and ExtraTrees' default) and single
decision trees. Pipeline: cells → count system → propagation → CP-SAT on the residual →
certainty bounds → rows → certificate.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from treeleaks.cells import CellBudget, enumerate_cells
from treeleaks.certainty import lower_bounds
from treeleaks.errors import UnsupportedModelError
from treeleaks.materialize import rows_from_counts
from treeleaks.model import ReleasedModel
from treeleaks.progress import ProgressCallback
from treeleaks.result import Reconstruction
from treeleaks.schema import FeatureSchema
from treeleaks.solve import solve
from treeleaks.system import InconsistentCountsError, build_system, propagate
from treeleaks.verify import verify


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
    progress: ProgressCallback | None = None,
) -> Reconstruction:
    """Reconstruct the training set of a no-bootstrap, noise-free forest from its counts.

    Among the datasets the counts admit, the one with the most orderings is returned (see
    `treeleaks.solve`). ``time_limit`` bounds the solver's search; when it runs out the best
    solution found is returned with status FEASIBLE, or, if none was found, the rows
    propagation proved (status UNKNOWN). Counts no dataset can produce give status INFEASIBLE.
    ``threads`` and ``seed`` steer CP-SAT (``solver="cp-sat"``); HiGHS runs deterministically.
    ``certainty_time_limit`` bounds the LP tightening of the proofs (they stay sound if cut).
    ``strategy``: ``enumerate`` lists every cell of the trees' common refinement,
    ``generate`` generates the cells a solution needs on demand, ``auto`` (default)
    enumerates within ``cell_budget`` and generates beyond it. ``progress`` receives
    `treeleaks.progress.Progress` events.
    """
    if model.bootstrap:
        raise UnsupportedModelError(
            "this forest was trained with bootstrap=True, which exact reconstruction does not "
            "cover yet: it needs every tree to see every row once (bootstrap=False); "
            "'treeleaks inspect' shows what the model exposes"
        )
    if model.noise is not None:
        raise UnsupportedModelError(
            "this model releases noisy (DP) counts; exact reconstruction needs exact counts"
        )
    start = time.perf_counter()
    timings: dict[str, float] = {}
    bound = (schema if schema is not None else FeatureSchema.infer(model)).bind(model)

    def lap(name: str, since: float) -> float:
        now = time.perf_counter()
        timings[name] = now - since
        return now

    tick = time.perf_counter()
    cells = enumerate_cells(model, bound, progress=progress)
    tick = lap("cells", tick)
    try:
        system = propagate(build_system(model, cells))
    except InconsistentCountsError as exc:
        lap("system", tick)
        return _empty(model, "INFEASIBLE", time.perf_counter() - start, timings,
                      f"no dataset reproduces the released counts: {exc}", len(cells), solver)
    tick = lap("propagation", tick)
    solution = solve(system, time_limit=time_limit, threads=threads, seed=seed, solver=solver)
    tick = lap("solve", tick)
    if solution.counts is None:
        if solution.status == "INFEASIBLE":
            return _empty(model, "INFEASIBLE", time.perf_counter() - start, timings,
                          "no dataset reproduces the released counts: the model was altered "
                          "or its counts are not exact", len(cells), solver)
        counts, lower = system.lb, system.lb
        message = (
            f"no complete reconstruction found within the time limit of {time_limit:g} s; "
            f"returning the {int(counts.sum())} rows propagation proved. "
            "Raise the time limit to get the rest."
        )
        complete = True
    else:
        certainty = lower_bounds(system, solution.counts, certainty_time_limit)
        tick = lap("certainty", tick)
        counts, lower, complete = solution.counts, certainty.lower, certainty.complete
        notes = []
        if solution.status == "FEASIBLE":
            notes.append(f"the solver stopped at its time limit of {time_limit:g} s with a "
                         "complete reconstruction that may not be the most likely one")
        if not complete:
            notes.append("certainty bounds stopped at their time limit (still sound)")
        message = "; ".join(notes)
    recon = rows_from_counts(model, bound, cells, system.cell, system.cls, counts, lower)
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
    )


def _empty(
    model: ReleasedModel,
    status: str,
    elapsed: float,
    timings: dict[str, float],
    message: str,
    n_cells: int,
    solver: str,
) -> Reconstruction:
    """A result with no rows: the counts admit no dataset."""
    names = list(model.feature_names)
    nothing = np.zeros(0, dtype=bool)
    empty = pd.DataFrame(np.zeros((0, len(names))), columns=names)
    rows = empty.copy()
    rows[model.label_name] = pd.Series(dtype=object)
    return Reconstruction(
        rows=rows, free=empty.astype(bool), lower=empty, upper=empty, proven=nothing,
        proven_pattern=nothing, status=status, certificate=None, time_s=elapsed,
        message=message, solver=solver, n_cells=n_cells, timings=timings,
    )
