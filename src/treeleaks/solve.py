"""CP-SAT over the count variables that propagation left open.

Propagation usually fixes most variables; only the residual system goes to the solver.
Among the many datasets a shallow forest admits, the solver prefers the most
*concentrated* one: it minimises the number of occupied (cell, class) pairs. Real tabular
data repeats rows far more than a uniformly random consistent dataset does, so a sparse
histogram is the likelier one (a Dirichlet-multinomial prior with a small concentration
parameter favours exactly this).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from treeleaks.system import CountSystem

PRIORS = ("sparse", "none")


@dataclass
class Solution:
    """Counts per variable (``None`` when nothing was found), with the solver's verdict."""

    counts: np.ndarray | None
    status: str
    objective: float | None
    time_s: float
    n_free_vars: int


def solve(
    system: CountSystem,
    time_limit: float = 60.0,
    threads: int = 2,
    seed: int = 0,
    prior: str = "sparse",
) -> Solution:
    """Complete the propagated bounds to one integer solution of the count system."""
    if prior not in PRIORS:
        raise ValueError(f"unknown prior {prior!r}; choose one of {', '.join(PRIORS)}")
    start = time.perf_counter()
    free = np.flatnonzero(system.lb < system.ub)
    counts = system.lb.copy()
    if free.size == 0:
        objective = float(np.count_nonzero(counts)) if prior == "sparse" else None
        return Solution(counts, "OPTIMAL", objective, time.perf_counter() - start, 0)
    A = system.A.tocsc()[:, free].tocsr()
    rest = system.b - system.A @ np.where(system.lb == system.ub, system.lb, 0)
    rows = np.flatnonzero(np.diff(A.indptr) > 0)
    model = cp_model.CpModel()
    x = [model.new_int_var(int(lo), int(hi), "") for lo, hi in zip(system.lb[free], system.ub[free])]
    for i in rows:
        cols = A.indices[A.indptr[i] : A.indptr[i + 1]]
        model.add(cp_model.LinearExpr.sum([x[j] for j in cols]) == int(rest[i]))
    if prior == "sparse":
        used = []
        for j, var in enumerate(x):
            if system.lb[free[j]] > 0:
                continue
            flag = model.new_bool_var("")
            model.add(var == 0).only_enforce_if(flag.negated())
            used.append(flag)
        model.minimize(cp_model.LinearExpr.sum(used))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(float(time_limit), 0.0)
    solver.parameters.num_workers = max(int(threads), 1)
    solver.parameters.random_seed = int(seed)
    code = solver.solve(model)
    status = solver.status_name(code)
    elapsed = time.perf_counter() - start
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Solution(None, status, None, elapsed, int(free.size))
    counts[free] = [solver.value(v) for v in x]
    objective = float(np.count_nonzero(counts)) if prior == "sparse" else None
    return Solution(counts, status, objective, elapsed, int(free.size))
