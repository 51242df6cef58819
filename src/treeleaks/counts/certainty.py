"""Sound lower bounds on every cell count, over *all* datasets consistent with the model.

Propagation (see `treeleaks.counts.system`) already gives sound bounds. This module tightens the
lower bounds with the LP relaxation (HiGHS through scipy): the LP minimum of a variable,
rounded up, is a lower bound no integer solution can beat. Variables whose bound is
already met by the solution we found are tight and skipped; one LP that minimises the sum
of the rest settles most of them at once, and the few left get an LP each.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from treeleaks.counts.system import CountSystem
from treeleaks.runtime.clock import seconds_until

_EPS = 1e-7


@dataclass
class Certainty:
    """Per-variable sound lower bound; ``complete`` is False when the time budget cut it short."""

    lower: np.ndarray
    complete: bool
    n_lps: int


def lower_bounds(system: CountSystem, solution: np.ndarray, deadline: float) -> Certainty:
    """Tighten ``system.lb`` (already propagated) towards the least each count can be, until
    ``deadline`` (``time.perf_counter()``)."""
    from scipy.optimize import linprog  # ~0.3 s to import; only runs need it

    lower = system.lb.copy()
    part = system.open_part()
    open_vars, A, rest = part.vars, part.A, part.rest
    candidates = open_vars[solution[open_vars] > lower[open_vars]]
    if candidates.size == 0:
        return Certainty(lower, True, 0)
    bounds = np.column_stack([system.lb[open_vars], system.ub[open_vars]])
    position = {v: i for i, v in enumerate(open_vars)}
    n_lps = 0

    def minimise(targets: np.ndarray) -> np.ndarray | None:
        nonlocal n_lps
        n_lps += 1
        cost = np.zeros(open_vars.size)
        cost[[position[v] for v in targets]] = 1.0
        res = linprog(cost, A_eq=A, b_eq=rest, bounds=bounds, method="highs",
                      options={"time_limit": seconds_until(deadline, 0.01)})
        return res.x if res.status == 0 else None

    # Joint LPs: every candidate that the LP can push down to its bound is settled.
    while candidates.size and time.perf_counter() < deadline:
        x = minimise(candidates)
        if x is None:
            break
        at_bound = x[[position[v] for v in candidates]] <= lower[candidates] + _EPS
        if not at_bound.any():
            break
        candidates = candidates[~at_bound]
    # One LP per remaining candidate: its minimum, rounded up, is a sound bound. The optimum
    # also settles every other candidate it leaves at its bound.
    unsettled = 0
    while candidates.size and time.perf_counter() < deadline:
        v, candidates = candidates[0], candidates[1:]
        x = minimise(np.array([v]))
        if x is None:  # out of time or numerical trouble: no bound for v, which is sound
            unsettled += 1
            continue
        lower[v] = max(lower[v], int(np.ceil(x[position[v]] - _EPS)))
        candidates = candidates[x[[position[u] for u in candidates]] > lower[candidates] + _EPS]
    return Certainty(lower, candidates.size == 0 and unsettled == 0, n_lps)
