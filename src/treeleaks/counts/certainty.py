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

from treeleaks.counts.system import CountSystem, OpenPart
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
    lower = system.lb.copy()
    part = system.open_part()
    open_vars = part.vars
    candidates = open_vars[solution[open_vars] > lower[open_vars]]
    if candidates.size == 0:
        return Certainty(lower, True, 0)
    lp = _OpenLP(system, part, deadline)
    candidates = _settle_jointly(lp, candidates, lower, deadline)
    candidates, unsettled = _settle_one_by_one(lp, candidates, lower, deadline)
    return Certainty(lower, candidates.size == 0 and unsettled == 0, lp.n_lps)


class _OpenLP:
    """The LP over the system's open variables (the fixed ones moved to the right-hand
    side): the least sum of some of them, and how many LPs were solved."""

    def __init__(self, system: CountSystem, part: OpenPart, deadline: float) -> None:
        self.vars, self.A, self.rest, self.deadline = part.vars, part.A, part.rest, deadline
        self.bounds = np.column_stack([system.lb[part.vars], system.ub[part.vars]])
        self.position = {v: i for i, v in enumerate(part.vars)}
        self.n_lps = 0

    def at(self, x: np.ndarray, variables: np.ndarray) -> np.ndarray:
        """The LP solution ``x``'s values of ``variables``."""
        return x[[self.position[v] for v in variables]]

    def minimise(self, targets: np.ndarray) -> np.ndarray | None:
        """A solution minimising the sum of ``targets``; None when HiGHS did not finish."""
        from scipy.optimize import linprog  # ~0.3 s to import; only runs need it

        self.n_lps += 1
        cost = np.zeros(self.vars.size)
        cost[[self.position[v] for v in targets]] = 1.0
        res = linprog(cost, A_eq=self.A, b_eq=self.rest, bounds=self.bounds, method="highs",
                      options={"time_limit": seconds_until(self.deadline, 0.01)})
        return res.x if res.status == 0 else None


def _settle_jointly(lp: _OpenLP, candidates: np.ndarray, lower: np.ndarray,
                    deadline: float) -> np.ndarray:
    """Joint LPs: every candidate that the LP can push down to its bound is settled; the
    candidates left."""
    while candidates.size and time.perf_counter() < deadline:
        x = lp.minimise(candidates)
        if x is None:
            break
        at_bound = lp.at(x, candidates) <= lower[candidates] + _EPS
        if not at_bound.any():
            break
        candidates = candidates[~at_bound]
    return candidates


def _settle_one_by_one(lp: _OpenLP, candidates: np.ndarray, lower: np.ndarray,
                       deadline: float) -> tuple[np.ndarray, int]:
    """One LP per remaining candidate: its minimum, rounded up, is a sound bound (raised in
    ``lower``). The optimum also settles every other candidate it leaves at its bound.
    The candidates left when time ran out, and how many LPs gave no bound."""
    unsettled = 0
    while candidates.size and time.perf_counter() < deadline:
        v, candidates = candidates[0], candidates[1:]
        x = lp.minimise(np.array([v]))
        if x is None:  # out of time or numerical trouble: no bound for v, which is sound
            unsettled += 1
            continue
        lower[v] = max(lower[v], int(np.ceil(x[lp.position[v]] - _EPS)))
        candidates = candidates[lp.at(x, candidates) > lower[candidates] + _EPS]
    return candidates, unsettled
