"""The most probable dataset given noisy counts: a concave maximisation over cell counts.

Variables are ``n[j]`` rows in (cell, class) pair j; ``A`` maps them to the released
(tree, leaf, class) counts. The objective is the sum over released counts of the exact
log-likelihood of the count the rows imply (`treeleaks.counts.noise`), concave and
piecewise linear, plus an optional log-prior per row of each variable (linear). Its LP
relaxation is an ordinary LP (one epigraph row per piece) whose optimum bounds every
dataset's objective. Any histogram with the right number of rows is a valid dataset, so a
first one comes at once (rows added greedily, then moved one at a time while that helps);
the LP by column generation (its variables priced exactly, or by ``extend`` beyond them),
its rounding and HiGHS' MIP then search for better ones in the time left. Exact counts
are the limit where every piece but the exact count has likelihood zero; the exact engine
solves that case by propagation instead (`treeleaks.counts.system`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from treeleaks.counts.noise import Lines, likelihood_lines, log_mass
from treeleaks.runtime.clock import seconds_until
from treeleaks.runtime.vocabulary import SolverStatus

MIP_MIN_S = 1.0  # below this much time left, the MIP is not started
COLUMN_BATCH = 2000  # variables added to the restricted LP per pricing round

# More variables on demand: given each count's gain from one more row, the price of a row
# and a deadline, the columns of ``A`` of new variables whose rows gain more than the
# price, with their log-prior (none found in time: zero columns), or None when pricing
# proved there are none.
Extend = Callable[[np.ndarray, float, float], tuple[sp.spmatrix, np.ndarray] | None]


@dataclass(frozen=True)
class NoisyCounts:
    """The released counts (``released``, Laplace ``scale``), the rows already known to lie
    in each (``offset``), which counts each variable adds to (``A``, counts by variables),
    and a log-prior per row of each variable (``prior``; none: the most likely dataset)."""

    A: sp.csr_matrix
    released: np.ndarray
    offset: np.ndarray
    scale: float
    prior: np.ndarray

    def log_likelihood(self, z: np.ndarray) -> float:
        """Log-likelihood of the guessed counts ``z`` of unknown rows."""
        return float(log_mass(self.released, z + self.offset, self.scale).sum())

    def objective(self, counts: np.ndarray) -> float:
        """What the search maximises: log-likelihood plus the rows' log-prior."""
        return self.log_likelihood(self.A @ counts) + float(self.prior @ counts)


@dataclass
class NoisySolution:
    """Rows per variable, their log-likelihood and objective (with the prior), the LP's
    upper bound on the objective, when the first complete dataset was found (seconds from
    the start) and the search's verdict: ``OPTIMAL`` (no dataset has a higher objective) or
    ``FEASIBLE``."""

    counts: np.ndarray
    log_likelihood: float
    objective: float
    bound: float | None
    first_solution_s: float
    status: SolverStatus
    timings: dict[str, float]


def most_likely(problem: NoisyCounts, n_rows: int, deadline: float,
                start: float | None = None, extend: Extend | None = None) -> NoisySolution:
    """The most likely histogram of ``n_rows`` rows by ``deadline`` (``time.perf_counter()``), over
    the variables of ``problem`` and those ``extend`` generates (appended in its order;
    the solution's counts cover them all).


    First a complete dataset, fast at any size: rows added one at a time where they raise
    the likelihood most, then polished by local search. Then the LP relaxation by column
    generation (a restricted LP over the variables in use and the most promising ones;
    every variable's reduced cost is one sparse product, so pricing is exact), its
    rounding, and the MIP over the generated columns in the time left. Each candidate is
    polished over all variables and the most likely is kept.
    """
    start = time.perf_counter() if start is None else start
    timings: dict[str, float] = {}
    counts = _climb(problem, _greedy(problem, n_rows, deadline), deadline)
    first = time.perf_counter() - start
    timings["first_solution"] = first
    best = problem.objective(counts)
    lines = likelihood_lines(problem.released, problem.scale, n_rows, problem.offset)
    lp, problem = _generate_columns(problem, lines, n_rows, counts, deadline, extend)
    counts = np.pad(counts, (0, problem.A.shape[1] - counts.size))
    timings["lp"] = time.perf_counter() - start - first
    candidates = [] if lp.x is None else [_round(lp.x, n_rows)]
    proven = False
    if lp.columns is not None and time.perf_counter() + MIP_MIN_S < deadline:
        mip_counts, proven = _mip(problem, lines, n_rows, lp.columns, deadline)
        timings["mip"] = time.perf_counter() - start - first - timings["lp"]
        if mip_counts is not None:
            candidates.append(mip_counts)
    counts, best = _best_polished(problem, candidates, counts, best, deadline)
    status = _verdict(problem, lp, best, proven, extend)
    return NoisySolution(counts, problem.log_likelihood(problem.A @ counts), best,
                         lp.bound if lp.converged else None, first, status, timings)


def _best_polished(problem: NoisyCounts, candidates: list[np.ndarray], counts: np.ndarray,
                   best: float, deadline: float) -> tuple[np.ndarray, float]:
    """Each candidate polished by local search, kept when its objective beats ``best``
    (that of ``counts``): the best counts and objective."""
    for candidate in candidates:
        candidate = _climb(problem, candidate, max(deadline, time.perf_counter() + 1))
        value = problem.objective(candidate)
        if value > best + 1e-9:
            counts, best = candidate, value
    return counts, best


def _verdict(problem: NoisyCounts, lp: _Lp, best: float, proven: bool,
             extend: Extend | None) -> SolverStatus:
    """OPTIMAL when the converged LP's bound is met, or the MIP over every variable proved
    its answer; else FEASIBLE."""
    tight = lp.converged and best >= lp.bound - 1e-6 * max(1.0, abs(lp.bound))
    if tight or (proven and extend is None and lp.columns.size == problem.A.shape[1]):
        return SolverStatus.OPTIMAL
    return SolverStatus.FEASIBLE


@dataclass
class _Lp:
    """The LP relaxation over the generated ``columns``: its solution over all variables,
    its optimum, and whether pricing proved no other variable improves it (then the
    optimum bounds every dataset's log-likelihood)."""

    x: np.ndarray | None
    bound: float | None
    columns: np.ndarray | None
    converged: bool


def _generate_columns(problem: NoisyCounts, lines: Lines, n_rows: int, start: np.ndarray,
                      deadline: float, extend: Extend | None) -> tuple[_Lp, NoisyCounts]:
    """The LP relaxation by column generation from the variables ``start`` uses plus the
    best `COLUMN_BATCH` by reduced cost, adding that many per round until none improves;
    then ``extend``'s new variables, until it proves there are none. Returns the LP and
    the problem with every variable generated."""
    AT = problem.A.T.tocsr()
    columns = np.flatnonzero(start > 0)
    seed_gain = AT @ row_gains(problem, problem.A @ start) + problem.prior
    columns = np.union1d(columns, np.argsort(-seed_gain, kind="stable")[:COLUMN_BATCH])
    x = bound = None
    while time.perf_counter() < deadline:
        res = _relaxation(problem, lines, n_rows, columns, deadline)
        if res is None:
            break
        values, bound, weights, total_price = res
        x = np.zeros(problem.A.shape[1])
        x[columns] = values
        reduced = AT @ weights + problem.prior - total_price  # gain of one more row
        reduced[columns] = 0.0
        better = np.flatnonzero(reduced > 1e-9)
        if better.size:
            columns = np.union1d(
                columns, better[np.argsort(-reduced[better], kind="stable")[:COLUMN_BATCH]])
            continue
        new = None if extend is None else extend(weights, total_price, deadline)
        if new is None:
            return _Lp(x, bound, columns, True), problem
        columns_new, prior_new = new
        if not columns_new.shape[1]:
            break
        first = problem.A.shape[1]
        problem = replace(problem, A=sp.hstack([problem.A, columns_new]).tocsr(),
                          prior=np.concatenate([problem.prior, prior_new]))
        AT = problem.A.T.tocsr()
        columns = np.union1d(columns, first + np.arange(columns_new.shape[1]))
    if x is not None:
        x = np.pad(x, (0, problem.A.shape[1] - x.size))
    return _Lp(x, bound, columns if x is not None else None, False), problem


def row_gains(problem: NoisyCounts, z: np.ndarray, step: int = 1,
              at: np.ndarray | slice = slice(None)) -> np.ndarray:
    """Per count (those of ``at``, given ``z`` there), how much ``step`` more rows of
    unknown ones change the log-likelihood."""
    here = problem.offset[at] + z
    released = problem.released[at]
    return (log_mass(released, np.maximum(here + step, 0), problem.scale)
            - log_mass(released, here, problem.scale))


def _epigraph(problem: NoisyCounts, lines: Lines, n_rows: int,
              columns: np.ndarray):
    """``s[owner] <= slope * (A n) + intercept`` as rows over ``[n[columns], s]``, the row
    total, the objective (maximise Σ s) and the variables' bounds."""
    A = problem.A[:, columns]
    n_vars, n_counts = A.shape[1], A.shape[0]
    pick = sp.csr_matrix((-lines.slope, (np.arange(lines.owner.size), lines.owner)),
                         shape=(lines.owner.size, n_counts))
    rows = sp.hstack([pick @ A, sp.csr_matrix(
        (np.ones(lines.owner.size), (np.arange(lines.owner.size), lines.owner)),
        shape=(lines.owner.size, n_counts))]).tocsr()
    total = sp.csr_matrix(np.concatenate([np.ones(n_vars), np.zeros(n_counts)]))
    cost = np.concatenate([-problem.prior[columns], -np.ones(n_counts)])
    floor = np.full(n_counts, np.inf)
    for z in (0.0, float(n_rows)):  # concave: its minimum over [0, z_max] is at an end
        np.minimum.at(floor, lines.owner, lines.slope * z + lines.intercept)
    low = np.concatenate([np.zeros(n_vars), floor - 1.0])
    high = np.concatenate([np.full(n_vars, float(n_rows)), np.zeros(n_counts)])
    return rows, lines.intercept, total, cost, low, high


def _relaxation(problem: NoisyCounts, lines: Lines, n_rows: int,
                columns: np.ndarray, deadline: float):
    """The LP over ``columns`` until ``deadline``: their values, its optimum, and the prices
    pricing needs (per count, the value of one more row; the price of one more row in
    total)."""
    from scipy.optimize import linprog  # ~0.3 s to import; only runs need it

    seconds = seconds_until(deadline, 0.01)
    rows, rhs, total, cost, low, high = _epigraph(problem, lines, n_rows, columns)
    res = linprog(cost, A_ub=rows, b_ub=rhs, A_eq=total, b_eq=[n_rows],
                  bounds=np.column_stack([low, high]), method="highs",
                  options={"time_limit": seconds})
    if res.status != 0 or res.x is None:
        return None
    line_duals = -res.ineqlin.marginals  # >= 0: objective gained per unit of slack
    weights = np.bincount(lines.owner, weights=line_duals * lines.slope,
                          minlength=problem.A.shape[0])
    return res.x[: columns.size], float(-res.fun), weights, float(-res.eqlin.marginals[0])


def _mip(problem: NoisyCounts, lines: Lines, n_rows: int, columns: np.ndarray,
         deadline: float) -> tuple[np.ndarray | None, bool]:
    """The integer problem over ``columns`` until ``deadline``: its best histogram (over all
    variables) and whether HiGHS proved it optimal among those columns."""
    from scipy.optimize import Bounds, LinearConstraint

    from treeleaks.counts.bounded_milp import bounded_milp

    seconds = seconds_until(deadline)
    rows, rhs, total, cost, low, high = _epigraph(problem, lines, n_rows, columns)
    integrality = np.concatenate([np.ones(columns.size), np.zeros(problem.A.shape[0])])
    result = bounded_milp(cost, integrality=integrality, bounds=Bounds(low, high),
                          constraints=[LinearConstraint(rows, -np.inf, rhs),
                                       LinearConstraint(total, n_rows, n_rows)],
                          options={"time_limit": seconds, "disp": False})
    if result.x is None:
        return None, False
    counts = np.zeros(problem.A.shape[1], dtype=np.int64)
    counts[columns] = np.maximum(np.rint(result.x[: columns.size]), 0).astype(np.int64)
    return counts, result.status == 0


def _greedy(problem: NoisyCounts, n: int, deadline: float) -> np.ndarray:
    """``n`` rows added one at a time, each where it raises the objective most (all at
    once into the last choice if time runs out)."""
    gains = _Gains(problem, np.zeros(problem.A.shape[0], dtype=np.int64))
    counts = np.zeros(problem.A.shape[1], dtype=np.int64)
    j = 0
    for placed in range(n):
        if time.perf_counter() > deadline:
            counts[j] += n - placed
            break
        j = int(np.argmax(gains.up + problem.prior))
        counts[j] += 1
        gains.move(j, 1)
    return counts


def _round(x: np.ndarray, n_rows: int) -> np.ndarray:
    """Whole rows from the LP: floors, then the largest remainders up to ``n_rows``."""
    counts = np.floor(np.maximum(x, 0.0) + 1e-9).astype(np.int64)
    short = n_rows - int(counts.sum())
    if short > 0:
        counts[np.argsort(-(x - counts), kind="stable")[:short]] += 1
    while short < 0:  # only from the LP's tolerances
        j = int(np.argmax(counts))
        counts[j] -= 1
        short += 1
    return counts


def _climb(problem: NoisyCounts, counts: np.ndarray, deadline: float) -> np.ndarray:
    """Local search: move one row while that raises the objective; each step takes the
    best removal, then the best addition given it."""
    counts = counts.copy()
    gains = _Gains(problem, problem.A @ counts)
    while time.perf_counter() < deadline and counts.any():
        remove = np.where(counts > 0, gains.down - problem.prior, -np.inf)
        j = int(np.argmax(remove))
        gains.move(j, -1)
        add = gains.up + problem.prior
        add[j] = -np.inf
        k = int(np.argmax(add))
        if not remove[j] + add[k] > 1e-9:
            gains.move(j, 1)
            break
        gains.move(k, 1)
        counts[j] -= 1
        counts[k] += 1
    return counts


class _Gains:
    """Per variable, the change in log-likelihood of one row more (``up``) or one fewer
    (``down``) at the current counts ``z``. A row moving changes one count per tree, so
    only the variables sharing one of those are updated: the greedy start and the local
    search then cost O(rows in the touched leaves) per step, not O(variables times trees)."""

    def __init__(self, problem: NoisyCounts, z: np.ndarray) -> None:
        self.problem, self.z = problem, z.astype(np.int64).copy()
        self.by_count, self.by_var = problem.A.tocsr(), problem.A.tocsc()
        self.m_up, self.m_down = row_gains(problem, self.z, 1), row_gains(problem, self.z, -1)
        self.up = self.by_count.T @ self.m_up
        self.down = self.by_count.T @ self.m_down

    def move(self, j: int, step: int) -> None:
        """Add (``step`` 1) or remove (-1) one row of variable ``j``."""
        touched = self.by_var.indices[self.by_var.indptr[j]:self.by_var.indptr[j + 1]]
        self.z[touched] += step
        up = row_gains(self.problem, self.z[touched], 1, touched)
        down = row_gains(self.problem, self.z[touched], -1, touched)
        rows = self.by_count[touched].T
        self.up += rows @ (up - self.m_up[touched])
        self.down += rows @ (down - self.m_down[touched])
        self.m_up[touched], self.m_down[touched] = up, down
