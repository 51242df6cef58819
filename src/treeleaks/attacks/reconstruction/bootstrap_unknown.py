"""Reconstruct a bootstrap forest whose draws are not known.

Without the draws, a row may lie in any leaf of a tree that did not draw it, so each
(tree, leaf, class) count says only that some rows of the class there were drawn: as many
distinct rows as the leaf's ``n_node_samples`` when the leaf is pure, at least one per
class present otherwise, their draws adding up to the count. A dataset is then a count of
rows per (cell, class) covering every leaf that many times (a set multicover), with N rows
in all (N = the draws per tree, scikit-learn's default bootstrap size).

Many datasets cover the leaves, and with the distinct counts known the most likely draws
give each of them the same likelihood (each tree holds the same multiset of draws whoever
carries them). What tells them apart is how many ways the draws could have fallen: the
chance of the counts given the rows grows with ``C(m, d)``, the ways to pick the ``d``
drawn rows among the ``m`` rows of the class lying in the leaf. The MIP maximises
``sum log C(m, d)`` over pure leaves (concave in m: unit steps of ``log((d+i)/i)``, the
first `STEPS` of them), which favours rows lying where the trees drew rows.

The draws themselves are then assigned leaf by leaf (the ``d`` rows drawn least so far,
the count split evenly), and the rows are checked against every weighted and distinct-row
count *with those draws*. Proven rows are only those no draws can move: a leaf that is a
single region of the refinement holds the rows it says were drawn (`_forced`).

A (cell, class) where fewer trees could have drawn a row than `min_drawn_trees` allows
(fewer than a Binomial(T, 1 - (1 - 1/N)^N) tail of 1e-4 over all rows) is left out: such a
row is all but impossible.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from treeleaks.attacks.reconstruction.bootstrap import MAX_CELLS, MAX_NONZEROS
from treeleaks.attacks.reconstruction.options import RunOptions
from treeleaks.counts.cells import CellBudget, CellBudgetExceeded, Cells, enumerate_cells
from treeleaks.counts.materialize import rows_from_counts
from treeleaks.counts.verify import verify
from treeleaks.ir.model import ReleasedModel, Tree
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import BootstrapDetails, Reconstruction
from treeleaks.runtime.clock import RunClock, seconds_until
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.runtime.progress import report
from treeleaks.runtime.vocabulary import Formulation, SolverStatus, Status

FORMULATION = Formulation.BOOTSTRAP_UNKNOWN
STEPS = 8  # unit steps of log C(m, d) per pure leaf (4 made Adult 1.5-7x slower, worse)
TAIL = 1e-4  # chance, over all rows, that a true row is left out by `min_drawn_trees`
PROOF = ("a leaf that is a single region holds the rows it says were drawn, whatever the "
         "draws; nothing else is proven, as the draws are inferred")


class _Everywhere:
    """Occupants are classes, and a row of any class may lie in any leaf (out of bag)."""

    def __init__(self, n_classes: int) -> None:
        self.n = n_classes

    def presence(self, t: int, tree: Tree) -> np.ndarray:
        return np.ones((len(tree.feature), self.n), dtype=bool)


def bootstrap_size(model: ReleasedModel) -> int:
    """N: the draws per tree, when the forest drew as many rows as it was given."""
    limit = model.facts.get("max_samples")
    if limit is not None:
        raise UnsupportedModelError(
            f"this forest drew max_samples={limit} rows per tree, so the number of training "
            "rows is not its draws; reconstruction with unknown draws needs the default "
            "bootstrap size: export the fitted forest with skops (it keeps the draws) and "
            "drop --ignore-draws")
    return int(model.trees[0].counts.sum())


def min_drawn_trees(n_trees: int, n_rows: int) -> int:
    """Fewest trees that draw a training row, but for a chance of ``TAIL`` over all rows."""
    from scipy.stats import binom  # 0.7 s to import: only when draws are inferred

    p_drawn = 1.0 - (1.0 - 1.0 / n_rows) ** n_rows
    return int(binom.ppf(TAIL / n_rows, n_trees, p_drawn))


def reconstruct_unknown_draws(
    model: ReleasedModel,
    schema: FeatureSchema,
    run: RunOptions,
    *,
    reason: str = "the forest does not expose its draws",
) -> Reconstruction:
    """The training rows of a bootstrap forest without its draws, with draws inferred for
    them (see the module doc), within ``run.time_limit`` seconds, its cells listed within
    ``run.cell_budget``; ``reason`` says why the draws were not used."""
    time_limit, progress = run.time_limit, run.progress
    clock = RunClock(time_limit)
    n_rows = bootstrap_size(model)
    limits = run.cell_budget or CellBudget()
    limits = replace(limits, max_cells=max(limits.max_cells, MAX_CELLS),
                     deadline=clock.start + time_limit / 3)
    try:
        cells = enumerate_cells(model, schema, limits, progress, _Everywhere(model.n_classes))
    except CellBudgetExceeded as stop:
        return _nothing(model, Status.UNKNOWN, clock, stop.n_cells, (
            f"{reason}; without them every region of the trees may hold a row, and there are "
            f"too many to list ({stop.n_cells:,} after {stop.trees_done} of "
            f"{model.n_trees} trees): unknown draws are only attempted on forests over few "
            "columns so far"))
    allowed = _drawable(model, cells, n_rows)
    clock.lap("cells")
    cell, cls = np.nonzero(allowed)
    if cell.size * model.n_trees > MAX_NONZEROS:
        return _nothing(model, Status.UNKNOWN, clock, len(cells), (
            f"{reason}; without them {cell.size:,} (region, class) pairs could hold a row, "
            f"too many for the covering problem ({cell.size * model.n_trees:,} nonzeros, more "
            f"than {MAX_NONZEROS:,}): unknown draws are only attempted on forests over few "
            "columns so far"))
    problem = _cover(model, cells, cell, cls, n_rows)
    if problem is None:
        return _nothing(model, Status.INFEASIBLE, clock, len(cells), (
            f"{reason}; no dataset of {n_rows} rows covers every leaf's distinct rows"))
    report(progress, "solve", 0, None, variables=int(problem[0].shape[1]))
    clock.lap("problem")
    counts, status = _solve(*problem, cell.size, clock.deadline)
    clock.lap("solve")
    if counts is None:
        message = (f"{reason}; no dataset covers the leaves"
                   if status == SolverStatus.INFEASIBLE else
                   f"{reason}; no dataset found within the time limit of {time_limit:.3g} s")
        return _nothing(model, Status.solved(status), clock, len(cells), message)
    lower = np.minimum(_forced(model, cells, cell, cls), counts)
    frames = rows_from_counts(model, schema, cells, cell, cls, counts, lower, with_width=True)
    draws = infer_draws(model, frames["rows"])
    drawn = replace(model, trees=[replace(tree, draws=b)
                                  for tree, b in zip(model.trees, draws)])
    certificate = verify(drawn, frames["rows"])
    message = (f"{reason}: rows inferred with draws that reproduce every count (in no "
               "particular order)")
    if status == SolverStatus.FEASIBLE:
        message += f"; the solver stopped at its time limit of {time_limit:.3g} s"
    if not certificate.verified:
        message = f"reconstruction does not reproduce the model: {certificate.first_mismatch}"
    return Reconstruction(**frames, status=Status.solved(status), certificate=certificate,
                          time_s=clock.elapsed(), message=message, solver="highs",
                          n_cells=len(cells), certainty_complete=False, timings=clock.timings,
                          proof=PROOF, formulation=FORMULATION,
                          bootstrap=BootstrapDetails(draws=draws))


def _forced(model: ReleasedModel, cells: Cells, cell: np.ndarray, cls: np.ndarray,
            ) -> np.ndarray:
    """Per (cell, class): rows every dataset holds there, whatever the draws. A leaf that
    is a single region of the refinement must hold the rows its counts say were drawn
    (its distinct rows when pure, one per class present otherwise), and only that region
    can."""
    forced = np.zeros((len(cells), model.n_classes), dtype=np.int64)
    for t, tree in enumerate(model.trees):
        regions = np.bincount(cells.leaf[:, t], minlength=tree.n_leaves)
        alone = np.flatnonzero(regions == 1)
        where = np.full(tree.n_leaves, -1, dtype=np.int64)
        where[cells.leaf[:, t]] = np.arange(len(cells))
        for v in alone:
            present = np.flatnonzero(tree.counts[v] > 0)
            need = (int(tree.n_samples[v]) if tree.n_samples is not None and present.size == 1
                    else 1)
            for c in present:
                forced[where[v], c] = max(forced[where[v], c], need)
    return forced[cell, cls]


def _drawable(model: ReleasedModel, cells: Cells, n_rows: int) -> np.ndarray:
    """``(K, C)``: (cell, class) pairs enough trees could have drawn a row of."""
    could = np.zeros((len(cells), model.n_classes), dtype=np.int64)
    for t, tree in enumerate(model.trees):
        could += tree.counts[cells.leaf[:, t]] > 0
    return could >= min_drawn_trees(model.n_trees, n_rows)


def _cover(model: ReleasedModel, cells: Cells, cell: np.ndarray, cls: np.ndarray,
           n_rows: int) -> tuple | None:
    """The covering MIP ``lo <= A x <= hi``, bounds and objective over the row counts per
    (cell, class), then per pure leaf `STEPS` unit steps of ``log C(m, d)``, then per class
    of a mixed leaf its drawn rows ``u``. None when some count no row can reach."""
    n_vars = cell.size
    rows: list[np.ndarray] = [np.zeros(n_vars, dtype=np.int64)]
    cols: list[np.ndarray] = [np.arange(n_vars)]
    vals: list[np.ndarray] = [np.ones(n_vars)]
    lo, hi, gain, low, high = [float(n_rows)], [float(n_rows)], [], [], []
    n_cols = n_vars

    def equation(columns: np.ndarray, values: np.ndarray, least: float, most: float) -> None:
        rows.append(np.full(columns.size, len(lo), dtype=np.int64))
        cols.append(columns)
        vals.append(values)
        lo.append(least)
        hi.append(most)

    for t, tree in enumerate(model.trees):
        leaf = cells.leaf[cell, t]
        by_leaf = np.argsort(leaf, kind="stable")
        bounds = np.searchsorted(leaf[by_leaf], np.arange(tree.n_leaves + 1))
        for v in range(tree.n_leaves):
            here = by_leaf[bounds[v]:bounds[v + 1]]
            present = np.flatnonzero(tree.counts[v] > 0)
            distinct = None if tree.n_samples is None else int(tree.n_samples[v])
            drawn = []
            for c in present:
                members = here[cls[here] == c]
                if not members.size:
                    return None
                if present.size == 1:
                    need = distinct if distinct is not None else 1
                    steps = np.arange(n_cols, n_cols + STEPS)
                    n_cols += STEPS
                    gain.extend(np.log((need + np.arange(1, STEPS + 1)) /
                                       np.arange(1, STEPS + 1)))
                    low.extend([0.0] * STEPS)
                    high.extend([1.0] * STEPS)
                    equation(np.concatenate([members, steps]),
                             np.concatenate([np.ones(members.size), -np.ones(STEPS)]),
                             float(need), np.inf)
                else:
                    u = n_cols
                    n_cols += 1
                    drawn.append(u)
                    gain.append(0.0)
                    low.append(1.0)
                    high.append(float(tree.counts[v, c]))
                    equation(np.append(members, u),
                             np.append(np.ones(members.size), -1.0), 0.0, np.inf)
            if drawn and distinct is not None:
                equation(np.array(drawn), np.ones(len(drawn)), float(distinct),
                         float(distinct))
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(len(lo), n_cols))
    cost = -np.concatenate([np.zeros(n_vars), np.asarray(gain)])
    lower = np.concatenate([np.zeros(n_vars), np.asarray(low)])
    upper = np.concatenate([np.full(n_vars, float(n_rows)), np.asarray(high)])
    return A, np.asarray(lo), np.asarray(hi), cost, lower, upper


def _solve(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray, cost: np.ndarray,
           lower: np.ndarray, upper: np.ndarray, n_vars: int, deadline: float,
           ) -> tuple[np.ndarray | None, SolverStatus]:
    from scipy.optimize import Bounds, LinearConstraint

    from treeleaks.counts.bounded_milp import bounded_milp

    seconds = seconds_until(deadline)
    if seconds <= 0:
        return None, SolverStatus.UNKNOWN
    result = bounded_milp(cost, constraints=LinearConstraint(A, lo, hi),
                          integrality=np.ones(cost.size), bounds=Bounds(lower, upper),
                          options={"time_limit": seconds})
    if result.x is None:
        return None, SolverStatus.INFEASIBLE if result.status == 2 else SolverStatus.UNKNOWN
    status = SolverStatus.OPTIMAL if result.status == 0 else SolverStatus.FEASIBLE
    return np.rint(result.x[:n_vars]).astype(np.int64), status


def infer_draws(model: ReleasedModel, rows) -> list[np.ndarray]:
    """Per tree, how often it drew each row: in each leaf, the rows of each class present
    drawn least so far take the leaf's distinct rows (at least one per class), and its
    count is split among them as evenly as it goes."""
    X = rows[list(model.feature_names)].to_numpy(dtype=np.float64)
    cls = model.class_index(rows[model.label_name].to_numpy())
    leaves = model.apply(X)
    so_far = np.zeros(len(rows), dtype=np.int64)
    draws = []
    for t, tree in enumerate(model.trees):
        b = np.zeros(len(rows), dtype=np.int64)
        for v in range(tree.n_leaves):
            present = np.flatnonzero(tree.counts[v] > 0)
            if not present.size:
                continue
            members = [np.flatnonzero((leaves[:, t] == v) & (cls == c)) for c in present]
            room = [min(int(tree.counts[v, c]), m.size) for c, m in zip(present, members)]
            take = [1] * present.size
            extra = (int(tree.n_samples[v]) if tree.n_samples is not None
                     else present.size) - present.size
            for i in range(present.size):
                more = max(0, min(extra, room[i] - 1))
                take[i] += more
                extra -= more
            for c, group, k in zip(present, members, take):
                if not group.size:
                    continue
                chosen = group[np.argsort(so_far[group], kind="stable")[:k]]
                share, rest = divmod(int(tree.counts[v, c]), chosen.size)
                b[chosen] = share
                b[chosen[:rest]] += 1
        so_far += b > 0
        draws.append(b)
    return draws


def _nothing(model: ReleasedModel, status: Status, clock: RunClock, n_cells: int,
             message: str) -> Reconstruction:
    return Reconstruction.empty(model, status=status, time_s=clock.elapsed(),
                                message=message, solver="highs", n_cells=n_cells,
                                timings=clock.timings, formulation=FORMULATION)
