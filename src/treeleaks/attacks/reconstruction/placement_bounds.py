"""Placements that every dataset shares: bounds on the 0/1 placements of a bootstrap forest.

Both functions here only ever fix a placement that holds in every solution of the
placement system ``lo <= A y <= hi`` (A nonnegative), so what they fix is proven.

- `propagate_placements`: each equation on its own, to a fixed point (a placement that
  would overshoot a count is out, one without which a count falls short is in).
- `probe_subsystems`: the equations that only placements into one (cell, class) still
  touch, solved together. With many rows over few cells (COMPAS, N=1,000: 168 cells),
  most leaves of full-depth trees are single cells, so each (cell, class) has up to 200
  equations of its own: one weighted and one distinct-row count per tree whose leaf it is.
  They say which rows lie there: a subset of the candidate rows whose draws add up to
  every count. Found by a small MIP, and proven unique by a second MIP that excludes it,
  that subset is in every dataset. Fixing it takes its rows out of every other cell, which
  makes the next subsets easier; propagation runs between rounds.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from treeleaks.runtime.clock import seconds_until

# Per-subsystem time limits: each round with nothing new fixed retries with the next.
# Figures: docs/lab/2026-11-28-constants.md#attacks-placement_bounds
SUBSYSTEM_LIMITS_S = (0.25, 1.0, 4.0)

Bounds01 = tuple[np.ndarray, np.ndarray]


def propagate_placements(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray,
                         bounds: Bounds01 | None = None, max_rounds: int = 200,
                         ) -> Bounds01 | int:
    """Bounds (0 or 1) on every placement that hold in every solution of
    ``lo <= A y <= hi`` within ``bounds`` (default: none): a placement that would push a
    count past its bound is out, one without which a count cannot be reached is in. When
    the bounds show that no solution exists, the index of an equation they make impossible
    instead."""
    entries = A.tocoo()
    row, col, weight = entries.row, entries.col, entries.data.astype(np.int64)
    if bounds is None:
        first = np.zeros(A.shape[1], dtype=np.int64)
        last = np.ones(A.shape[1], dtype=np.int64)
    else:
        first, last = (b.astype(np.int64) for b in bounds)
    for _ in range(max_rounds):
        most = np.bincount(row, weights=weight * last[col], minlength=A.shape[0])
        least = np.bincount(row, weights=weight * first[col], minlength=A.shape[0])
        impossible = np.flatnonzero((most < lo - 0.5) | (least > hi + 0.5))
        if impossible.size:
            return int(impossible[0])
        open_ = first[col] < last[col]
        out = open_ & (least[row] + weight > hi[row] + 0.5)
        needed = open_ & (most[row] - weight < lo[row] - 0.5)
        new_first, new_last = first.copy(), last.copy()
        new_last[col[out]] = 0
        new_first[col[needed]] = 1
        clash = np.flatnonzero(new_first > new_last)
        if clash.size:  # an equation forces in a placement another forces out
            return int(row[np.flatnonzero(col == clash[0])[0]])
        if np.array_equal(new_first, first) and np.array_equal(new_last, last):
            return first, last
        first, last = new_first, new_last
    return first, last


def probe_subsystems(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray, bounds: Bounds01,
                     group: np.ndarray, owner: np.ndarray, deadline: float) -> Bounds01 | int:
    """``bounds`` tightened by the subsystems of single groups (see the module doc), or
    the index of an equation no dataset can meet.

    ``group[j]`` is the (cell, class) of placement j and ``owner[j]`` its row; a row takes
    one placement. Stops at ``deadline`` or when a round at the longest per-subsystem
    limit fixes nothing; what it fixed by then stands."""
    first, last = (b.astype(np.int64).copy() for b in bounds)
    limits = list(SUBSYSTEM_LIMITS_S)
    while limits and time.perf_counter() < deadline:
        fixed_before = int(first.sum())
        for of_group, equations in _single_group_equations(A, lo, hi, first, last, group):
            if time.perf_counter() >= deadline:
                break
            cols = np.flatnonzero((group == of_group) & (first < last))
            M = A[equations][:, cols]
            counted = np.diff(M.tocsc().indptr) > 0  # rows no equation here sees stay open
            cols, M = cols[counted], M[:, np.flatnonzero(counted)]
            if not cols.size:
                continue
            need = (lo[equations] - A[equations] @ first).astype(np.float64)
            subset = _unique_subset(M, need, min(time.perf_counter() + limits[0], deadline))
            if isinstance(subset, str):
                return int(equations[0])
            if subset is None:
                continue
            first[cols[subset]] = 1
            last[cols[~subset]] = 0
            last[np.isin(owner, owner[cols[subset]]) & (first == 0)] = 0
        result = propagate_placements(A, lo, hi, (first, last))
        if isinstance(result, int):
            return result
        first, last = result
        if int(first.sum()) == fixed_before:
            limits.pop(0)
    return first, last


def _single_group_equations(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray,
                            first: np.ndarray, last: np.ndarray, group: np.ndarray,
                            ) -> list[tuple[int, np.ndarray]]:
    """The equations whose open placements all lie in one group, with that group, the
    groups likely to hold fewest rows first (their subsets are the quickest to find)."""
    open_ = np.flatnonzero(first < last)
    entries = A[:, open_].tocoo()
    sentinel = np.iinfo(np.int64).max
    low = np.full(A.shape[0], sentinel, dtype=np.int64)
    high = np.full(A.shape[0], -1, dtype=np.int64)
    of_entry = group[open_][entries.col]
    np.minimum.at(low, entries.row, of_entry)
    np.maximum.at(high, entries.row, of_entry)
    single = np.flatnonzero((lo == hi) & (low == high))
    if not single.size:
        return []
    need = lo - A @ first
    per_equation = np.bincount(entries.row, minlength=A.shape[0])
    mean_weight = np.bincount(entries.row, weights=entries.data,
                              minlength=A.shape[0]) / np.maximum(per_equation, 1)
    rows_needed = need / np.maximum(mean_weight, 1e-9)
    order = np.argsort(low[single], kind="stable")
    by_group = np.split(single[order], np.flatnonzero(np.diff(low[single][order])) + 1)
    by_group.sort(key=lambda equations: float(rows_needed[equations].max()))
    return [(int(low[equations[0]]), equations) for equations in by_group]


def _unique_subset(M: sp.csr_matrix, need: np.ndarray, deadline: float,
                   ) -> np.ndarray | str | None:
    """The 0/1 ``x`` with ``M x = need`` when it is the only one; "infeasible" when there
    is none; None when there are several or ``deadline`` came first (each of the two MIPs
    is given the seconds left when the first starts)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    seconds = seconds_until(deadline)
    if seconds <= 0:
        return None
    n = M.shape[1]
    options = {"time_limit": seconds, "presolve": False}
    found = milp(np.zeros(n), constraints=LinearConstraint(M, need, need),
                 integrality=np.ones(n), bounds=Bounds(0, 1), options=options)
    if found.x is None:
        return "infeasible" if found.status == 2 else None
    x = found.x > 0.5
    if not np.array_equal(M @ x.astype(np.float64), need):  # within tolerance, not exact
        return None
    # any other solution differs from x somewhere: sum(x_j = 0 where chosen) + sum(x_j = 1
    # elsewhere) >= 1, i.e. (2x - 1) . y <= |x| - 1
    other = milp(np.zeros(n), constraints=[LinearConstraint(M, need, need),
                                           LinearConstraint(2.0 * x - 1.0, -np.inf,
                                                            x.sum() - 1.0)],
                 integrality=np.ones(n), bounds=Bounds(0, 1), options=options)
    return x if other.status == 2 else None
