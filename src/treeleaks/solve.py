"""Choose the most likely dataset among those the count system admits.

Propagation usually fixes most variables; only the residual goes to a solver. Shallow
forests admit many datasets, so the solver picks the one with the most *orderings*: if
rows are exchangeable (every ordered dataset consistent with the model equally likely a
priori), a histogram ``n`` has weight ``N! / prod(n!)``, so we minimise ``sum(log n!)``.
That cost is convex and separable, hence exact as unit segments with increasing costs
``log(lb+1), log(lb+2), ...`` (up to ``SEGMENTS`` steps per variable, then linear).
Measured on COMPAS/Adult/Default Credit forests of depth 2-3 it roughly halves the error
of an arbitrary feasible histogram, while a sparsity prior made it worse.

Backends: HiGHS MIP through scipy (default; its LP-based search finds feasible histograms
in seconds where CP-SAT needs minutes on shallow forests) and OR-Tools CP-SAT (the same
model, costs scaled to integers).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from ortools.sat.python import cp_model
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse.csgraph import connected_components

from treeleaks.system import CountSystem

SOLVERS = ("highs", "cp-sat")
SEGMENTS = 8
_CPSAT_SCALE = 1000


@dataclass
class Solution:
    """Counts per variable (``None`` when nothing was found), with the solver's verdict.

    ``objective`` is ``log(N! / prod(n!))``, the log number of orderings of the histogram.
    """

    counts: np.ndarray | None
    status: str
    objective: float | None
    time_s: float


@dataclass
class _Residual:
    """The open part: ``A @ (step sums) == rest`` over unit steps and linear tails."""

    free: np.ndarray
    A: sp.csr_matrix
    rest: np.ndarray
    step_var: np.ndarray
    step_cost: np.ndarray
    tail_cap: np.ndarray
    tail_cost: np.ndarray


def solve(
    system: CountSystem,
    time_limit: float = 60.0,
    threads: int = 2,
    seed: int = 0,
    solver: str = "highs",
) -> Solution:
    """Complete the propagated bounds to the most likely integer solution (see module doc)."""
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    start = time.perf_counter()
    counts = system.lb.copy()
    residual = _residual(system)
    run = _solve_highs if solver == "highs" else _solve_cpsat
    statuses = []
    for block in _blocks(residual):
        left = max(float(time_limit) - (time.perf_counter() - start), 0.0)
        status, values = run(block, left, threads, seed)
        statuses.append(status)
        if values is None:
            return Solution(None, status, None, time.perf_counter() - start)
        n_steps = block.step_var.size
        added = np.bincount(block.step_var, weights=values[:n_steps], minlength=block.free.size)
        counts[block.free] += np.rint(added + values[n_steps:]).astype(np.int64)
    status = "OPTIMAL" if all(s == "OPTIMAL" for s in statuses) else "FEASIBLE"
    return Solution(counts, status, _log_orderings(counts), time.perf_counter() - start)


def _log_orderings(counts: np.ndarray) -> float:
    from scipy.special import gammaln

    return float(gammaln(counts.sum() + 1) - gammaln(counts + 1).sum())


def _residual(system: CountSystem) -> _Residual:
    free = np.flatnonzero(system.lb < system.ub)
    fixed = np.where(system.lb == system.ub, system.lb, 0)
    A = system.A.tocsc()[:, free].tocsr()
    rest = (system.b - system.A @ fixed - A @ system.lb[free]).astype(np.int64)
    live = np.diff(A.indptr) > 0
    if np.any(rest[~live] != 0):
        raise AssertionError("propagation left an equation with no open variable unmet")
    lb, span = system.lb[free], (system.ub - system.lb)[free]
    steps = np.minimum(span, SEGMENTS)
    step_var = np.repeat(np.arange(free.size), steps)
    step_index = np.arange(step_var.size) - np.repeat(np.cumsum(steps) - steps, steps) + 1
    return _Residual(
        free=free,
        A=A[live],
        rest=rest[live],
        step_var=step_var,
        step_cost=np.log(lb[step_var] + step_index),
        tail_cap=span - steps,
        tail_cost=np.log(lb + steps + 1.0),
    )


def _blocks(residual: _Residual) -> list[_Residual]:
    """Split the residual into independent blocks (no equation links two of them), smallest
    first so that quick blocks do not wait behind a hard one; equations never mix classes,
    so there is at least one block per class."""
    n_rows, n_free = residual.A.shape
    graph = sp.bmat([[None, residual.A], [residual.A.T, None]]).tocsr()
    _, label = connected_components(graph, directed=False)
    var_label, row_label = label[n_rows:], label[:n_rows]
    blocks = []
    for name in np.unique(var_label):
        vars_ = np.flatnonzero(var_label == name)
        rows = np.flatnonzero(row_label == name)
        steps = np.flatnonzero(np.isin(residual.step_var, vars_))
        renumber = np.full(n_free, -1)
        renumber[vars_] = np.arange(vars_.size)
        blocks.append(_Residual(
            free=residual.free[vars_],
            A=residual.A[rows][:, vars_],
            rest=residual.rest[rows],
            step_var=renumber[residual.step_var[steps]],
            step_cost=residual.step_cost[steps],
            tail_cap=residual.tail_cap[vars_],
            tail_cost=residual.tail_cost[vars_],
        ))
    return sorted(blocks, key=lambda block: block.free.size)


def _matrix(residual: _Residual) -> sp.csr_matrix:
    """Constraint matrix over [steps, tails]: each step or tail adds one row to its variable."""
    n_steps, n_free = residual.step_var.size, residual.free.size
    to_vars = sp.csr_matrix(
        (np.ones(n_steps), (residual.step_var, np.arange(n_steps))), shape=(n_free, n_steps)
    )
    return sp.hstack([residual.A @ to_vars, residual.A]).tocsr()


def _solve_highs(
    residual: _Residual, time_limit: float, threads: int, seed: int
) -> tuple[str, np.ndarray | None]:
    matrix = _matrix(residual)
    n_steps = residual.step_var.size
    result = milp(
        np.concatenate([residual.step_cost, residual.tail_cost]),
        constraints=LinearConstraint(matrix, residual.rest, residual.rest),
        bounds=Bounds(0, np.concatenate([np.ones(n_steps), residual.tail_cap])),
        integrality=np.ones(matrix.shape[1]),
        options={"time_limit": time_limit},
    )
    if result.x is None:
        return ("INFEASIBLE" if result.status == 2 else "UNKNOWN"), None
    return ("OPTIMAL" if result.status == 0 else "FEASIBLE"), np.rint(result.x)


def _solve_cpsat(
    residual: _Residual, time_limit: float, threads: int, seed: int
) -> tuple[str, np.ndarray | None]:
    matrix = _matrix(residual)
    n_steps = residual.step_var.size
    caps = np.concatenate([np.ones(n_steps, dtype=np.int64), residual.tail_cap])
    costs = np.rint(
        np.concatenate([residual.step_cost, residual.tail_cost]) * _CPSAT_SCALE
    ).astype(np.int64)
    model = cp_model.CpModel()
    x = [model.new_int_var(0, int(cap), "") for cap in caps]
    for i in range(matrix.shape[0]):
        cols = matrix.indices[matrix.indptr[i] : matrix.indptr[i + 1]]
        model.add(cp_model.LinearExpr.sum([x[j] for j in cols]) == int(residual.rest[i]))
    model.minimize(cp_model.LinearExpr.weighted_sum(x, costs.tolist()))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = max(int(threads), 1)
    solver.parameters.random_seed = int(seed)
    code = solver.solve(model)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return solver.status_name(code), None
    return solver.status_name(code), np.array([solver.value(v) for v in x], dtype=np.float64)
