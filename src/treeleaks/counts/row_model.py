"""CP-SAT on the placements propagation left open (`treeleaks.counts.row_leaves`).

One Boolean per open placement of a pair with several; exactly one per pair; per row with
several classes, one Boolean per class that each of its pairs follows; every leaf's
weighted class counts and distinct rows exact. The geometry is linear: a row's position on
feature f is an integer slot between consecutive thresholds, and since each pair takes
exactly one path, ``slot >= sum(lower slot of path * placement)`` and ``slot <= sum(upper
slot of path * placement)`` put the row inside the path it takes, in every tree (a leaf
reached by several paths counts the rows of each).
"""

from __future__ import annotations

import time

import numpy as np

from treeleaks.counts.row_leaves import RowLeaves
from treeleaks.runtime.clock import seconds_until
from treeleaks.runtime.vocabulary import SolverStatus


def box_slots(lower: np.ndarray, upper: np.ndarray, thresholds: list[np.ndarray],
              ) -> tuple[np.ndarray, np.ndarray]:
    """Boxes ``lower < x <= upper`` in slots: slot s of feature f is ``(t[s-1], t[s]]``
    between its sorted thresholds t (``s = 0`` below the first, ``len(t)`` above the
    last)."""
    low = np.zeros(lower.shape, dtype=np.int64)
    high = np.zeros(lower.shape, dtype=np.int64)
    for f, cuts in enumerate(thresholds):
        below, above = lower[:, f], upper[:, f]
        low[:, f] = np.where(np.isneginf(below), 0, np.searchsorted(cuts, below) + 1)
        high[:, f] = np.where(np.isposinf(above), cuts.size, np.searchsorted(cuts, above))
    return low, high


class _OutOfTime(Exception):
    """The model took the whole time to build."""


def solve_placements(leaves: RowLeaves, thresholds: list[np.ndarray], deadline: float,
                     seed: int, hint: np.ndarray | None = None,
                     ) -> tuple[np.ndarray | None, np.ndarray | None, SolverStatus]:
    """A placement per pair and a class per row reproducing every count, or None, by
    ``deadline`` (building the model included); with the solver's status. ``hint``: a
    class per row to try first (-1: none).

    One CP-SAT worker: its search is then the same on every run for a given ``seed`` (a
    portfolio of workers races, and under load finds a different dataset, or none, from
    run to run), and on these models it is also the faster: wine's default forest in 17 s
    against 28 s with two workers on a loaded 2-core machine (docs/engine.md)."""
    from ortools.sat.python import cp_model

    cp = cp_model.CpModel()
    allowed = leaves.row_classes()  # a placement of a class its row cannot have is out
    j_open = np.flatnonzero(leaves.open & allowed[leaves.pair_row[leaves.place_pair],
                                                  leaves.place_cls])
    per_pair = np.bincount(leaves.place_pair[j_open], minlength=leaves.pair_row.size)
    decided = per_pair[leaves.place_pair[j_open]] == 1
    fixed, free = j_open[decided], j_open[~decided]
    try:
        _in_time(deadline)
        z = {int(j): cp.new_bool_var("") for j in free}
        _one_per_pair(cp, leaves, free, z)
        classes = _row_classes(cp, leaves, j_open, z, hint)
        _in_time(deadline)
        if not _counts(cp, leaves, fixed, free, z):
            return None, None, SolverStatus.INFEASIBLE
        _geometry(cp, leaves, free, z, thresholds, deadline)
        _in_time(deadline)
    except _OutOfTime:
        return None, None, SolverStatus.UNKNOWN
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds_until(deadline, 0.01)
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = int(seed)
    solver.parameters.catch_sigint_signal = False  # Ctrl-C must reach the CLI
    # Presolve costs more than it gives on these models.
    # Figures: docs/lab/2026-11-28-constants.md#counts-row_model
    solver.parameters.cp_model_presolve = False
    code = solver.solve(cp)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, None, SolverStatus(solver.status_name(code))
    taken = np.array([j for j in free.tolist() if solver.boolean_value(z[j])], dtype=np.int64)
    chosen = np.concatenate([fixed, taken])
    row_class = np.full(leaves.n_rows, -1)
    row_class[leaves.pair_row[leaves.place_pair[chosen]]] = leaves.place_cls[chosen]
    for k, literals in classes.items():
        row_class[k] = next(c for c, lit in literals.items() if solver.boolean_value(lit))
    return np.sort(chosen), row_class, SolverStatus.OPTIMAL


def _in_time(deadline: float) -> None:
    if time.perf_counter() > deadline:
        raise _OutOfTime


def _one_per_pair(cp, leaves: RowLeaves, free: np.ndarray, z: dict) -> None:
    for group in np.split(free, np.flatnonzero(np.diff(leaves.place_pair[free])) + 1):
        if group.size:
            cp.add_exactly_one([z[int(j)] for j in group])


def _row_classes(cp, leaves: RowLeaves, j_open: np.ndarray, z: dict,
                 hint: np.ndarray | None) -> dict[int, dict[int, object]]:
    """Per row that may still take several classes, a literal per class, which every
    pair of the row follows."""
    allowed = leaves.row_classes()
    open_rows = np.flatnonzero(allowed.sum(axis=1) > 1)
    literals: dict[int, dict[int, object]] = {}
    for k in open_rows.tolist():
        literals[k] = {int(c): cp.new_bool_var("") for c in np.flatnonzero(allowed[k])}
        cp.add_exactly_one(list(literals[k].values()))
        if hint is not None and hint[k] in literals[k]:
            cp.add_hint(literals[k][int(hint[k])], True)
    row_of = leaves.pair_row[leaves.place_pair[j_open]]
    in_open = np.isin(row_of, open_rows)
    for pair in np.unique(leaves.place_pair[j_open[in_open]]).tolist():
        k = int(leaves.pair_row[pair])
        mine = j_open[leaves.place_pair[j_open] == pair]
        for c, lit in literals[k].items():
            terms = [z.get(int(j), 1) for j in mine if leaves.place_cls[j] == c]
            cp.add(sum(terms) == lit)
    return literals


def _counts(cp, leaves: RowLeaves, fixed: np.ndarray, free: np.ndarray, z: dict) -> bool:
    """Every leaf's weighted class counts and distinct rows; False when the fixed
    placements alone break one that no open placement can mend."""
    n_leaves = leaves.n_leaves
    draw = leaves.pair_draw[leaves.place_pair]
    held = np.zeros((n_leaves, leaves.n_classes), dtype=np.int64)
    np.add.at(held, (leaves.place_leaf[fixed], leaves.place_cls[fixed]), draw[fixed])
    rows_held = np.bincount(leaves.place_leaf[fixed], minlength=n_leaves)
    weighted: dict[tuple[int, int], list] = {}
    distinct: dict[int, dict[int, list]] = {}
    for j in free.tolist():
        v, c, p = int(leaves.place_leaf[j]), int(leaves.place_cls[j]), int(leaves.place_pair[j])
        weighted.setdefault((v, c), []).append((int(draw[j]), z[j]))
        distinct.setdefault(v, {}).setdefault(p, []).append(z[j])
    need = leaves.weight - held
    open_weight = np.zeros_like(need, dtype=bool)
    for (v, c), terms in weighted.items():
        open_weight[v, c] = True
        cp.add(sum(b * lit for b, lit in terms) == int(need[v, c]))
    if ((need != 0) & ~open_weight).any():
        return False
    rows_need = leaves.distinct - rows_held
    open_rows = np.zeros(n_leaves, dtype=bool)
    for v, by_pair in distinct.items():
        open_rows[v] = True
        cp.add(sum(sum(lits) for lits in by_pair.values()) == int(rows_need[v]))
    return not ((rows_need != 0) & ~open_rows).any()


def _geometry(cp, leaves: RowLeaves, free: np.ndarray, z: dict,
              thresholds: list[np.ndarray], deadline: float) -> None:
    """Per row and feature its pairs' open paths disagree on, order literals ``slot >= s``
    (a chain) inside the row's box (which holds the leaves of its decided pairs); each
    placement implies its path's two bounds. Clauses, which CP-SAT propagates at once."""
    low, high = box_slots(leaves.lower, leaves.upper, thresholds)
    row_low, row_high = box_slots(*leaves.row_boxes(), thresholds)
    at_least: dict[tuple[int, int], dict[int, object]] = {}

    def literal(k: int, f: int, s: int):
        """``slot of row k on feature f >= s``: a constant outside the row's box."""
        if s <= row_low[k, f]:
            return True
        if s > row_high[k, f]:
            return False
        chain = at_least.setdefault((k, f), {})
        if s not in chain:
            chain[s] = cp.new_bool_var("")
        return chain[s]

    for n, j in enumerate(free.tolist()):
        if n % 4096 == 0:
            _in_time(deadline)
        k, v, lit = int(leaves.pair_row[leaves.place_pair[j]]), int(leaves.place_path[j]), z[j]
        for f in np.flatnonzero((low[v] > row_low[k]) | (high[v] < row_high[k])).tolist():
            for bound, wanted in ((int(low[v, f]), True), (int(high[v, f]) + 1, False)):
                ge = literal(k, f, bound)
                if ge is wanted:
                    continue
                if isinstance(ge, bool):
                    cp.add_bool_or([lit.Not()])
                else:
                    cp.add_implication(lit, ge if wanted else ge.Not())
    for chain in at_least.values():
        steps = [chain[s] for s in sorted(chain)]
        for higher, lower in zip(steps[1:], steps[:-1]):
            cp.add_implication(higher, lower)
