"""Choose the most likely dataset among those the count system admits.

Propagation usually fixes most variables; only the residual goes to a solver. Shallow
forests admit many datasets, so the solver picks the one with the most *orderings*: if
rows are exchangeable (every ordered dataset consistent with the model equally likely a
priori), a histogram ``n`` has weight ``N! / prod(n!)``, so we minimise ``sum(log n!)``.
That cost is convex and separable, hence exact as unit segments with increasing costs
``log(lb+1), log(lb+2), ...`` (up to ``SEGMENTS`` steps per variable, then linear).
Measured on COMPAS/Adult/Default Credit forests of depth 2-3 it roughly halves the error
of an arbitrary feasible histogram, while a sparsity prior made it worse.

A booster's gradient sums (the system's ``side`` rows, `counts.gradient_rows`) join the
MIP as ranged rows (HiGHS only) once the counts alone have a solution, for at most
`SIDE_SHARE` of the time, after the bounds they imply have been propagated with the
counts' (`counts.side_bounds`: on fine boosters this rules out all but a few thousand of
10^5 variables, which HiGHS's presolve did far more slowly); a wide block with them goes
to the MIP over every cell at once, since the random LP vertices would ignore them. When
HiGHS finds them infeasible (which the true rows never are) or runs out of that time, the
solution of the counts alone stands and says so.

Backends: HiGHS MIP through scipy (default; its LP-based search finds feasible histograms
in seconds where CP-SAT needs minutes on shallow forests) and OR-Tools CP-SAT (the same
model, costs scaled to integers).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.special import gammaln

from treeleaks.counts.gradient_rows import SideRows
from treeleaks.counts.side_bounds import with_side_bounds
from treeleaks.counts.system import CountSystem, InconsistentCountsError
from treeleaks.runtime.clock import seconds_until
from treeleaks.runtime.errors import TreeleaksError
from treeleaks.runtime.vocabulary import SolverStatus

SOLVERS = ("highs", "cp-sat")
SEGMENTS = 8
_CPSAT_SCALE = 1000
# A block with at least this many cells, and this many per equation, is solved first over
# the cells of random LP vertices (`_solve_block`): rounds of this many vertices each.
# Figures: docs/lab/2026-11-28-constants.md#counts-solve
RESTRICT_MIN_CELLS = 10_000
# Of the solver's time, the most the MIP with a booster's gradient sums may take once the
# counts alone have a solution (else a run may end at the limit for nothing).
# Figures: docs/lab/2026-11-28-constants.md#counts-solve
SIDE_SHARE = 0.6
RESTRICT_CELLS_PER_EQUATION = 50
RESTRICT_ROUNDS = 2
VERTICES_PER_ROUND = 5
_ZERO_COST = 1e-9


@dataclass
class Solution:
    """Counts per variable (``None`` when nothing was found), with the solver's verdict.

    ``objective`` is ``log(N! / prod(n!))``, the log number of orderings of the histogram.
    """

    counts: np.ndarray | None
    status: SolverStatus
    objective: float | None
    time_s: float
    note: str = ""
    # the system with the bounds a booster's gradient sums add (`counts.side_bounds`), when
    # the counts were found with them: sound, so the proofs may start from them
    bounded: CountSystem | None = None
    # the gradient sums were found infeasible and ``counts`` meet the counts alone: the
    # caller checks its rows against the sums (`attacks.reconstruction.exact`), INFEASIBLE when
    # they miss
    sums_infeasible: bool = False


@dataclass
class _Residual:
    """The open part: ``A @ x == rest`` with ``0 <= x <= span`` (x counts rows above ``lb``),
    and the ``side`` rows over x."""

    free: np.ndarray
    A: sp.csr_matrix
    rest: np.ndarray
    lb: np.ndarray
    span: np.ndarray
    side: SideRows | None = None


_Backend = Callable[[_Residual, float, int, int], tuple[SolverStatus, "np.ndarray | None"]]


@dataclass
class _Mip:
    """``min cost @ v`` s.t. ``matrix @ v == rhs``, ``0 <= v <= upper``, v integer.

    Columns: one per open variable (carrying its equations), then unit steps and a linear
    tail for variables that can take more than one extra row, tied to their variable by one
    link row each, so the equations' coefficients are stored once per variable.
    """

    cost: np.ndarray
    matrix: sp.csr_matrix
    rhs: np.ndarray
    upper: np.ndarray
    side: SideRows | None = None  # over every column (zero on the steps and tails)


def solve(
    system: CountSystem,
    deadline: float,
    threads: int = 2,
    seed: int = 0,
    solver: str = "highs",
) -> Solution:
    """Complete the propagated bounds to the most likely integer solution (see module doc),
    until ``deadline`` (``time.perf_counter()``)."""
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    if system.side is not None and solver != "highs":
        raise TreeleaksError("this booster's gradient sums have real coefficients, which "
                             "CP-SAT does not take; use the solver 'highs'")
    if system.side is None:
        return _solve(system, deadline, threads, seed, solver)
    start = time.perf_counter()
    most = SIDE_SHARE * (deadline - start)  # of the sums' solve: a share of the whole
    # the counts alone first: a complete dataset in hand, then the sums refine it in the
    # time left. Figures: docs/lab/2026-11-28-constants.md#counts-solve
    plain = _solve(dataclasses.replace(system, side=None), deadline, threads, seed, solver)
    if plain.counts is None:
        return plain
    share = deadline - time.perf_counter()
    try:
        bounded = with_side_bounds(system, deadline - share / 2)
        sums_deadline = min(deadline, time.perf_counter() + most)
        solution = (_solve(bounded, sums_deadline, threads, seed, solver)
                    if sums_deadline > time.perf_counter()
                    else Solution(None, SolverStatus.UNKNOWN, None, 0.0))
        solution.bounded = bounded
    except InconsistentCountsError:
        solution = Solution(None, SolverStatus.INFEASIBLE, None, 0.0)
    if solution.counts is not None:
        solution.time_s = time.perf_counter() - start
        return solution
    # infeasible sums: the rows of the counts alone tell the solver's numerics (they meet
    # the sums) from a file whose values contradict each other (they miss them)
    infeasible = solution.status == SolverStatus.INFEASIBLE
    why = ("found the booster's gradient sums infeasible at its tolerance, yet the rows of "
           "the counts alone meet them" if infeasible else
           "found no dataset that meets the booster's gradient sums in the "
           f"{max(min(share, most), 0.0):.0f} s it gave them")
    plain.time_s = time.perf_counter() - start
    plain.note = f"the solver {why}; solved over the counts alone"
    plain.sums_infeasible = infeasible
    return plain


def _solve(system: CountSystem, deadline: float, threads: int, seed: int,
           solver: str) -> Solution:
    start = time.perf_counter()
    counts = system.lb.copy()
    residual = _residual(system)
    run = _solve_highs if solver == "highs" else _solve_cpsat
    statuses = []
    for block in _blocks(residual):
        status, values = _solve_block(block, deadline, threads, seed, run)
        statuses.append(status)
        if values is None:
            return Solution(None, status, None, time.perf_counter() - start)
        counts[block.free] += np.rint(values[: block.free.size]).astype(np.int64)
    status = (SolverStatus.OPTIMAL if all(s == SolverStatus.OPTIMAL for s in statuses)
              else SolverStatus.FEASIBLE)
    return Solution(counts, status, _log_orderings(counts), time.perf_counter() - start)


def _log_orderings(counts: np.ndarray) -> float:
    return float(gammaln(counts.sum() + 1) - gammaln(counts + 1).sum())


def _residual(system: CountSystem) -> _Residual:
    part = system.open_part()
    lb = system.lb[part.vars]
    return _Residual(
        free=part.vars,
        A=part.A,
        rest=part.rest - part.A @ lb,
        lb=lb,
        span=system.ub[part.vars] - lb,
        side=None if system.side is None else system.side.restricted(part.vars, system.lb),
    )


def _blocks(residual: _Residual) -> list[_Residual]:
    """Split the residual into independent blocks (no equation links two of them), smallest
    first so that quick blocks do not wait behind a hard one; equations never mix classes,
    so there is at least one block per class."""
    n_rows, side = residual.A.shape[0], residual.side
    links = residual.A if side is None else sp.vstack([residual.A, side.matrix]).tocsr()
    graph = sp.bmat([[None, links], [links.T, None]]).tocsr()
    _, label = connected_components(graph, directed=False)
    n_links = links.shape[0]
    var_label, row_label = label[n_links:], label[:n_rows]
    blocks = []
    for name in np.unique(var_label):
        vars_ = np.flatnonzero(var_label == name)
        rows = np.flatnonzero(row_label == name)
        block_side = None
        if side is not None:
            sides = np.flatnonzero(label[n_rows:n_links] == name)
            block_side = SideRows(side.matrix[sides][:, vars_].tocsr(), side.lower[sides],
                                  side.upper[sides]) if sides.size else None
        blocks.append(_Residual(
            free=residual.free[vars_],
            A=residual.A[rows][:, vars_],
            rest=residual.rest[rows],
            lb=residual.lb[vars_],
            span=residual.span[vars_],
            side=block_side,
        ))
    return sorted(blocks, key=lambda block: block.free.size)


def _solve_block(block: _Residual, deadline: float, threads: int, seed: int,
                 run: _Backend) -> tuple[SolverStatus, np.ndarray | None]:
    """One block; a wide one first over the cells of a few random LP vertices (see
    ``vertex_support``), each round's vertices and then its MIP getting at most a third of
    the time left, then, if no round found a dataset, over every cell in what remains."""
    n = block.free.size
    if (n < RESTRICT_MIN_CELLS or n < RESTRICT_CELLS_PER_EQUATION * block.A.shape[0]
            or block.side is not None):  # the vertices would ignore the gradient sums
        return run(block, deadline, threads, seed)
    from treeleaks.counts.vertex_support import vertex_supports

    rng = np.random.default_rng(seed)
    by_cell, upper = block.A.tocsc(), block.span.astype(np.float64)
    base_cost = np.log(block.lb + 1.0)
    used = None
    for _ in range(RESTRICT_ROUNDS):
        round_end = time.perf_counter() + (deadline - time.perf_counter()) / 3
        used = vertex_supports(by_cell, block.rest, upper, base_cost, VERTICES_PER_ROUND, rng,
                               round_end, used)
        now = time.perf_counter()
        if now >= deadline:
            return SolverStatus.UNKNOWN, None
        if not used.any():
            break
        _, values = run(_restrict(block, used), now + (deadline - now) / 3, threads, seed)
        if values is not None:
            counts = np.zeros(n)
            counts[used] = values[: int(used.sum())]
            proven = _added_log_factorials(block.lb, counts) <= _ZERO_COST
            return (SolverStatus.OPTIMAL if proven else SolverStatus.FEASIBLE), counts
    return run(block, deadline, threads, seed)


def _restrict(block: _Residual, used: np.ndarray) -> _Residual:
    side = block.side
    return _Residual(free=block.free[used], A=block.A[:, used], rest=block.rest,
                     lb=block.lb[used], span=block.span[used],
                     side=None if side is None else side.restricted(
                         np.flatnonzero(used), np.zeros(used.size)))


def _added_log_factorials(lb: np.ndarray, extra: np.ndarray) -> float:
    """The MIP's objective: ``sum(log n!)`` above its value at the lower bounds (never
    negative, so a solution at 0 is optimal over every cell, not only the restricted ones)."""
    return float((gammaln(lb + np.rint(extra) + 1.0) - gammaln(lb + 1.0)).sum())


def _mip(residual: _Residual) -> _Mip:
    """The block as a MIP minimising ``sum(log n!)`` (see the module doc)."""
    n_free, lb, span = residual.free.size, residual.lb, residual.span
    stepped = np.flatnonzero(span > 1)
    steps = np.minimum(span[stepped], SEGMENTS)
    step_owner = np.repeat(np.arange(stepped.size), steps)
    step_index = np.arange(step_owner.size) - np.repeat(np.cumsum(steps) - steps, steps) + 1
    n_steps, n_links = step_owner.size, stepped.size
    # link row k: x[stepped[k]] - (its steps) - (its tail) == 0
    link = sp.hstack([
        sp.csr_matrix((np.ones(n_links), (np.arange(n_links), stepped)), shape=(n_links, n_free)),
        sp.csr_matrix((-np.ones(n_steps), (step_owner, np.arange(n_steps))),
                      shape=(n_links, n_steps)),
        -sp.identity(n_links, format="csr"),
    ])
    equations = sp.hstack([residual.A, sp.csr_matrix((residual.A.shape[0], n_steps + n_links))])
    single_cost = np.where(span == 1, np.log(lb + 1.0), 0.0)
    side = residual.side
    if side is not None:  # the steps and tails add nothing to the side rows
        side = SideRows(sp.hstack([side.matrix, sp.csr_matrix(
            (side.matrix.shape[0], n_steps + n_links))]).tocsr(), side.lower, side.upper)
    return _Mip(
        side=side,
        cost=np.concatenate([
            single_cost,
            np.log(lb[stepped][step_owner] + step_index),
            np.log(lb[stepped] + steps + 1.0),
        ]),
        matrix=sp.vstack([equations, link]).tocsr(),
        rhs=np.concatenate([residual.rest, np.zeros(n_links)]),
        upper=np.concatenate([span, np.ones(n_steps), span[stepped] - steps]),
    )


def _solve_highs(
    residual: _Residual, deadline: float, threads: int, seed: int
) -> tuple[SolverStatus, np.ndarray | None]:
    from scipy.optimize import Bounds, LinearConstraint  # ~0.3 s to import

    from treeleaks.counts.bounded_milp import bounded_milp

    seconds = seconds_until(deadline)
    mip = _mip(residual)
    constraints = [LinearConstraint(mip.matrix, mip.rhs, mip.rhs)]
    if mip.side is not None:
        constraints.append(LinearConstraint(mip.side.matrix, mip.side.lower, mip.side.upper))
    result = bounded_milp(
        mip.cost,
        constraints=constraints,
        bounds=Bounds(0, mip.upper),
        integrality=np.ones(mip.cost.size),
        options={"time_limit": seconds},
    )
    if result.x is None:
        return (SolverStatus.INFEASIBLE if result.status == 2 else SolverStatus.UNKNOWN), None
    solved = SolverStatus.OPTIMAL if result.status == 0 else SolverStatus.FEASIBLE
    return solved, np.rint(result.x)


def _solve_cpsat(
    residual: _Residual, deadline: float, threads: int, seed: int
) -> tuple[SolverStatus, np.ndarray | None]:
    from ortools.sat.python import cp_model  # imported here: it costs ~0.3 s at start-up

    seconds = seconds_until(deadline)
    mip = _mip(residual)
    costs = np.rint(mip.cost * _CPSAT_SCALE).astype(np.int64)
    model = cp_model.CpModel()
    v = [model.new_int_var(0, int(cap), "") for cap in mip.upper]
    matrix = mip.matrix
    for i in range(matrix.shape[0]):
        cols = matrix.indices[matrix.indptr[i] : matrix.indptr[i + 1]]
        coefs = matrix.data[matrix.indptr[i] : matrix.indptr[i + 1]].astype(np.int64)
        terms = [v[j] for j in cols]
        model.add(cp_model.LinearExpr.weighted_sum(terms, coefs.tolist()) == int(mip.rhs[i]))
    model.minimize(cp_model.LinearExpr.weighted_sum(v, costs.tolist()))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = max(int(threads), 1)
    solver.parameters.random_seed = int(seed)
    solver.parameters.catch_sigint_signal = False  # Ctrl-C must reach the CLI
    code = solver.solve(model)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return SolverStatus(solver.status_name(code)), None
    values = np.array([solver.value(x) for x in v], dtype=np.float64)
    return SolverStatus(solver.status_name(code)), values
