"""The few cells of a large count block that an integer solution is likely to use.

A block of the count system (one class of a shallow forest) can hold 10^4 to 10^5 cells
against about 200 equations, and HiGHS's MIP over all of them can search for minutes
(Default Credit, depth 2, N=100: over 100 s). An LP vertex uses at most one cell per
equation, and the union of the vertices reached under a few random costs almost always
holds an integer solution, which a MIP over those few hundred cells finds in about a
second. Each vertex comes from column generation: an LP over a subset of the cells, with
penalised slack so that it is always feasible, and exact pricing of every other cell by
one sparse product, until no cell's reduced cost is negative (under a second, where the
LP over every cell took 3 to 26 s). Measured in docs/engine.md.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from treeleaks.runtime.clock import seconds_until

ENTERING_PER_PASS = 2000  # cells added to the restricted LP per pricing pass
START_COLUMNS = 1000  # random cells the first restricted LP starts from, beside the support
_REDUCED_COST_TOLERANCE = 1e-9
_POSITIVE = 1e-9  # an LP value above this puts the cell in the support


def vertex_supports(
    A: sp.spmatrix,
    rhs: np.ndarray,
    upper: np.ndarray,
    base_cost: np.ndarray,
    rounds: int,
    rng: np.random.Generator,
    deadline: float,
    used: np.ndarray | None = None,
) -> np.ndarray:
    """Cells used by the LP vertices ``min (base_cost + u) @ x`` over ``A @ x == rhs``,
    ``0 <= x <= upper``, for ``rounds`` draws of ``u ~ U[0, 1)^n``, added to ``used``
    (a boolean mask, returned). Stops early at ``deadline`` (``time.perf_counter()``)."""
    A = A.tocsc()  # no copy when the caller already holds it by columns
    n = A.shape[1]
    used = np.zeros(n, dtype=bool) if used is None else used.copy()
    for _ in range(rounds):
        start = np.union1d(np.flatnonzero(used),
                           rng.choice(n, size=min(START_COLUMNS, n), replace=False))
        x = _vertex(A, rhs, upper, base_cost + rng.random(n), start, deadline)
        if x is None:
            break
        used |= x > _POSITIVE
    return used


def _vertex(A: sp.csc_matrix, rhs: np.ndarray, upper: np.ndarray, cost: np.ndarray,
            columns: np.ndarray, deadline: float) -> np.ndarray | None:
    """An optimal vertex of the LP by column generation, or None when time runs out."""
    from scipy.optimize import linprog  # ~0.3 s to import; only runs need it

    m = A.shape[0]
    penalty = 1e3 * (float(np.abs(cost).max()) + 1.0)  # slack costs more than any cell set
    slack = sp.hstack([sp.identity(m), -sp.identity(m)])
    while True:
        if time.perf_counter() >= deadline:
            return None
        res = linprog(
            np.concatenate([cost[columns], np.full(2 * m, penalty)]),
            A_eq=sp.hstack([A[:, columns], slack]).tocsc(),
            b_eq=rhs,
            bounds=np.column_stack([
                np.zeros(columns.size + 2 * m),
                np.concatenate([upper[columns], np.full(2 * m, np.inf)]),
            ]),
            method="highs-ds",
            options={"time_limit": seconds_until(deadline)},
        )
        if res.status != 0:
            return None
        reduced = cost - A.T @ res.eqlin.marginals
        reduced[columns] = 0.0
        entering = np.flatnonzero(reduced < -_REDUCED_COST_TOLERANCE)
        if entering.size == 0:
            x = np.zeros(A.shape[1])
            x[columns] = res.x[: columns.size]
            return x
        best = entering[np.argsort(reduced[entering])[:ENTERING_PER_PASS]]
        columns = np.concatenate([columns, best])
