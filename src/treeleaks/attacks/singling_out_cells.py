"""Singling out by a no-bootstrap forest as a whole: cells of the trees' common refinement
that every dataset consistent with the counts fills with exactly one row of a class.

Each tree's own vulnerable nodes are listed by `treeleaks.attacks.singling_out`; a forest
can expose more. A cell (one leaf of every tree) whose count for class c is at least 1 and
at most 1 in every solution of the count system holds exactly one training row of class c,
so its box and c single that row out, even when every tree's leaf holds several rows of c.
The lower bound is the engine's certainty analysis (LP minimum, rounded up); the upper bound
is propagation's, tightened where it is above 1 by the integer maximum (HiGHS through scipy;
its dual bound, rounded down, so a run cut short stays sound). The LP maximum alone is too
loose: on COMPAS forests it allowed 2 rows in cells whose integer maximum is 1.
"""

from __future__ import annotations

import time

import numpy as np

from treeleaks.attacks.predicates import CELLS_CUT, Condition, Predicate, box_conditions
from treeleaks.counts.cells import CellBudget, CellBudgetExceeded, Cells, enumerate_cells
from treeleaks.counts.certainty import lower_bounds
from treeleaks.counts.solve import solve
from treeleaks.counts.system import (
    CountSystem,
    InconsistentCountsError,
    OpenPart,
    build_system,
    propagate,
)
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.runtime.clock import seconds_until

PROVEN_CELL = "forest certainty: exactly one row of this class in every dataset the counts admit"
_EPS = 1e-7
MIN_SOLVE_S = 0.1  # the solve and the proofs run at least this long, even past the deadline


def cell_predicates(model: ReleasedModel, schema: FeatureSchema | None, deadline: float
                    ) -> tuple[list[Predicate], str]:
    """Predicates of the cells proven to hold exactly one row of a class that no tree's
    leaf already singles out, found by ``deadline`` (``time.perf_counter()``; the solve and
    the proofs get at least `MIN_SOLVE_S` each), and a note when the analysis stopped
    short."""
    bound = (schema if schema is not None else FeatureSchema.infer(model)).bind(model)
    try:
        cells = enumerate_cells(model, bound, CellBudget(deadline=deadline))
        system = propagate(build_system(model, cells))
    except CellBudgetExceeded as stop:
        return [], f"{CELLS_CUT}: {stop.reason} ({stop.n_cells:,} cells)"
    except InconsistentCountsError as exc:
        return [], f"{CELLS_CUT}: {exc}"
    solution = solve(system, max(deadline, time.perf_counter() + MIN_SOLVE_S))
    if solution.counts is None:
        return [], f"{CELLS_CUT}: no dataset found within the time limit"
    candidates = np.flatnonzero((solution.counts == 1) & ~_tree_singles(model, cells, system))
    if candidates.size == 0:
        return [], ""
    lower = lower_bounds(system, solution.counts,
                         max(deadline, time.perf_counter() + MIN_SOLVE_S))
    candidates = candidates[lower.lower[candidates] >= 1]
    part = system.open_part()
    proven = [v for v in candidates if _at_most_one(system, part, v, deadline)]
    out = []
    for v in proven:
        k, c = int(system.cell[v]), int(system.cls[v])
        out.append(Predicate(None, k, _cell_conditions(model, bound, cells, k),
                             model.classes[c], True, PROVEN_CELL))
    note = "" if lower.complete and time.perf_counter() < deadline else (
        "forest cells: the time limit cut the analysis short; more cells may single rows out")
    return out, note


def _tree_singles(model: ReleasedModel, cells: Cells, system: CountSystem) -> np.ndarray:
    """Per variable: whether some tree's leaf already holds exactly one row of its class."""
    leaf = cells.leaf[system.cell]
    ones = np.zeros(system.n_vars, dtype=bool)
    for t, tree in enumerate(model.trees):
        ones |= tree.counts[leaf[:, t], system.cls] == 1
    return ones


def _at_most_one(system: CountSystem, part: OpenPart, v: int, deadline: float) -> bool:
    """Whether no solution puts two rows in variable ``v`` (propagation, else the integer
    maximum over the open ``part`` of the system)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    if system.ub[v] <= 1:
        return True
    if time.perf_counter() > deadline:
        return False
    where = np.flatnonzero(part.vars == v)
    if where.size == 0:
        return bool(system.lb[v] <= 1)
    cost = np.zeros(part.vars.size)
    cost[where[0]] = -1.0
    res = milp(cost, constraints=LinearConstraint(part.A, part.rest, part.rest),
               bounds=Bounds(system.lb[part.vars], system.ub[part.vars]),
               integrality=np.ones(part.vars.size),
               options={"time_limit": seconds_until(deadline, 0.01)})
    bound = getattr(res, "mip_dual_bound", None)
    return bound is not None and np.isfinite(bound) and np.floor(-bound + _EPS) <= 1


def _cell_conditions(model: ReleasedModel, schema: FeatureSchema, cells: Cells, k: int
                     ) -> list[Condition]:
    """The cell's box without the bounds its column's domain already implies."""
    lower, upper = cells.lower[k].copy(), cells.upper[k].copy()
    for f, name in enumerate(model.feature_names):
        spec = schema.features[name]
        if lower[f] < spec.low:
            lower[f] = -np.inf
        if upper[f] >= spec.high:
            upper[f] = np.inf
    return box_conditions(lower, upper, model.feature_names)
