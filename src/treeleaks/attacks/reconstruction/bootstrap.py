"""Reconstruct a bootstrap forest whose draws are known.

scikit-learn draws each tree's rows with replacement and keeps the random state, so how
often tree t drew training row k (``b[t, k]``) can be recomputed from the released object
(`Tree.draws`). Leaf counts then count each row as often as it was drawn: rows are no longer
interchangeable, and a row is constrained only by the trees that drew it.

The formulation stays over cells of the trees' common refinement, with (row, class) pairs
as the occupants: row k of class c may lie in leaf v of tree t only if the tree never drew
it or the leaf holds at least ``b[t, k]`` rows of class c (`RowOccupancy`). A 0/1 variable
places row k, with class c, in one of the cells it may occupy; the constraints are one cell
per row, every (tree, leaf, class) weighted count, and every leaf's number of distinct
rows. Bounds that every dataset shares fix what they can first (`placement_bounds`: each
count alone, then the counts of each cell together); HiGHS solves the rest, or CP-SAT when
HiGHS has not within its share of the time. The rows come back in training order, each
checked against every weighted and distinct-row count.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from treeleaks.attacks.reconstruction.options import RunOptions
from treeleaks.attacks.reconstruction.placement_bounds import probe_subsystems, propagate_placements
from treeleaks.counts.cells import (
    CellBudget,
    CellBudgetExceeded,
    Cells,
    enumerate_cells,
    node_presence,
)
from treeleaks.counts.materialize import rows_from_counts
from treeleaks.counts.paths import tree_paths
from treeleaks.counts.verify import Certificate, verify
from treeleaks.ir.model import ReleasedModel, Tree
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import Reconstruction
from treeleaks.runtime.clock import RunClock, seconds_until
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.runtime.progress import ProgressCallback, report
from treeleaks.runtime.vocabulary import Formulation, SolverStatus, Status

FORMULATION = Formulation.BOOTSTRAP_KNOWN
RowBoxes = tuple[np.ndarray, np.ndarray, np.ndarray]  # lower, upper (N, M); class or -1 (N,)
# Beyond this many nonzeros the solvers' models would take gigabytes.
# Figures: docs/lab/2026-11-28-constants.md#attacks-bootstrap
MAX_NONZEROS = 20_000_000
# Cells held at once, unless memory runs out first: early trees split the space before later
# ones rule rows out. Figures: docs/lab/2026-11-28-constants.md#attacks-bootstrap
MAX_CELLS = 3_000_000
# HiGHS gets this share of the time left, CP-SAT the rest (each is faster on some tables).
# Figures: docs/lab/2026-11-28-constants.md#attacks-bootstrap
HIGHS_SHARE = 0.4
# With a fallback, the placement solvers get this share of the search time and the fallback
# the rest: few bootstrap trees leave the placements wide open, the covering problem solves
# them. Figures: docs/lab/2026-11-28-constants.md#attacks-bootstrap
FALLBACK_SHARE = 0.4
# Of the time left when the cells are too many to list, the share the per-row strategy
# gets before the fallback to inferred draws.
# Figures: docs/lab/2026-11-28-constants.md#attacks-bootstrap
WITHOUT_CELLS_SHARE = 0.8
# With such a strategy, the share of the search time listing the cells may take (time
# per-row would lack). Figures: docs/lab/2026-11-28-constants.md#attacks-bootstrap
LISTING_SHARE = 0.25
# Of the solvers' time, at most this share goes to fixing the rows of one (cell, class) at a
# time (`probe_subsystems`); it stops early once a round fixes nothing.
# Figures: docs/lab/2026-11-28-constants.md#attacks-bootstrap
PROBE_SHARE = 0.5
PROOF = ("a row's only placement, a placement the counts force (bound propagation, or the "
         "only set of rows meeting its cell's own counts), or LP infeasibility without it "
         "(draws read from the model)")
# Why a placement is impossible. The draws are named by their field in the model file too,
# where a user would look for what was altered.
NOT_MET = "no dataset reproduces the released counts with these draws"
ALTERED = 'the model or its draws (its "multiplicities") were altered'


class RowOccupancy:
    """Occupants are (training row, class) pairs, numbered ``row * n_classes + class``."""

    def __init__(self, model: ReleasedModel, row_boxes: RowBoxes | None = None) -> None:
        self.n_rows = len(model.trees[0].draws)
        self.n_classes = model.n_classes
        self.n = self.n_rows * self.n_classes
        self.row_boxes = row_boxes

    def presence(self, t: int, tree: Tree) -> np.ndarray:
        """Row k of class c fits leaf v when the leaf holds at least its ``b`` draws of c,
        and, where the leaf's distinct rows are known, the rest of its weight can be the
        leaf's other distinct rows (one draw each at least; none when it has one row)."""
        drawn = tree.draws[None, :, None]
        columns = tree.count_column(np.arange(self.n_classes))
        weight = tree.counts[:, None, columns]  # (leaves, 1, classes) against (1, rows, 1)
        fits = weight >= drawn
        if tree.n_samples is not None:
            total = tree.counts.sum(axis=1)[:, None, None]
            others = tree.n_samples[:, None, None] - 1
            fits &= total - drawn >= others
            fits &= (others > 0) | (total == drawn)
        fits |= drawn == 0  # a tree that never drew a row says nothing of it
        if self.row_boxes is not None:
            fits &= self._known(tree)
        return node_presence(tree, fits.reshape(tree.n_leaves, self.n))

    def _known(self, tree: Tree) -> np.ndarray:
        """``(leaves, rows, classes)``: whether what is known of each row (the values its
        box pins, its class when known) allows it in each leaf (on one of its paths)."""
        lower, upper, cls = self.row_boxes
        pinned = np.flatnonzero(np.isfinite(upper).any(axis=0))
        paths = tree_paths(tree, lower.shape[1])
        on_path = np.ones((len(paths), self.n_rows), dtype=bool)
        for f in pinned:
            on_path &= (np.maximum(paths.lower[:, f, None], lower[None, :, f])
                        < np.minimum(paths.upper[:, f, None], upper[None, :, f]))
        meets = on_path  # path i is leaf i, unless a leaf has several
        if len(paths) > tree.n_leaves:  # a leaf meets a row where one of its paths does
            meets = np.zeros((tree.n_leaves, self.n_rows), dtype=bool)
            np.logical_or.at(meets, paths.leaf, on_path)
        of_class = (cls[:, None] < 0) | (cls[:, None] == np.arange(self.n_classes)[None, :])
        return meets[:, :, None] & of_class[None, :, :]


def has_draws(model: ReleasedModel) -> bool:
    """Whether every tree of a bootstrap forest says how often it drew each row."""
    return model.bootstrap and all(tree.draws is not None for tree in model.trees)


def reconstruct_known_draws(
    model: ReleasedModel,
    schema: FeatureSchema,
    run: RunOptions,
    *,
    row_boxes: RowBoxes | None = None,
    known_rows: tuple[np.ndarray, np.ndarray] | None = None,
    fallback: Callable[[float, str], Reconstruction] | None = None,
    without_cells: Callable[[float, str], Reconstruction | None] | None = None,
) -> Reconstruction:
    """The training rows of a bootstrap forest, in training order (see the module doc).

    ``schema`` is bound to the model; ``run.cell_budget`` bounds the enumeration by its
    memory and time (at least `MAX_CELLS` cells are allowed). Status OPTIMAL when rows
    reproducing every count were found, INFEASIBLE when none exist (the draws or
    counts were altered), UNKNOWN when the time limit or the cell budget ran out first.
    As in the exact engine, the search keeps ``min(run.certainty_time_limit, 15% of
    run.time_limit)`` for the proofs (`_proofs`), which then use at most
    ``run.certainty_time_limit``.
    ``row_boxes`` (side knowledge: per row, bounds ``(N, M)`` its known values pin and its
    class, -1 where unknown) restrict where each row may lie; ``known_rows`` (features
    ``(k, M)`` and class indices) are rows some training row must equal, wherever it is.
    ``fallback`` (given the seconds left and why it runs) reconstructs without the
    draws, when the placement problem is too large or its solvers find nothing; it gets
    `FALLBACK_SHARE` of the search time when the placement solvers have found nothing, and
    its rows come back with status FEASIBLE and a message saying the draws were not met.
    ``without_cells`` (given the seconds it may take and why) is tried first when there
    are too many cells to list: another strategy's result, or None to go on to
    ``fallback``; it gets `WITHOUT_CELLS_SHARE` of the time left.
    """
    _refuse_without_draws(model)
    time_limit, progress = run.time_limit, run.progress
    clock = RunClock(time_limit, run.certainty_time_limit)
    search_deadline = clock.search_deadline
    # with a strategy for when the cells are too many, listing them gets only a share
    listing = (search_deadline if without_cells is None
               else clock.share(LISTING_SHARE, search_deadline))
    try:
        problem = placements(model, schema, listing, cell_budget=run.cell_budget,
                             progress=progress, row_boxes=row_boxes, known_rows=known_rows)
    except PlacementError as stop:
        return _without_placements(model, stop, clock, fallback, without_cells)
    clock.lap("cells")
    cells, cell, row, cls = problem.cells, problem.cell, problem.row, problem.cls
    A, lo, hi = problem.A, problem.lo, problem.hi
    report(progress, "solve", 0, None, variables=int(cell.size))
    bounds = propagate_placements(A, lo, hi)
    if isinstance(bounds, int):
        return _nothing(model, Status.INFEASIBLE, clock, len(cells), (
            f"{NOT_MET}: {_equation(model, bounds)} cannot be met by the rows the other "
            f"counts allow there ({ALTERED})"))
    solve_deadline = search_deadline
    if fallback is not None:
        solve_deadline -= FALLBACK_SHARE * clock.left(search_deadline)
    clock.lap("propagate")
    probe_deadline = clock.share(PROBE_SHARE, solve_deadline)
    bounds = probe_subsystems(A, lo, hi, bounds, cell * model.n_classes + cls, row,
                              probe_deadline)
    if isinstance(bounds, int):
        return _nothing(model, Status.INFEASIBLE, clock, len(cells), (
            f"{NOT_MET}: no set of rows meets {_equation(model, bounds)} together with the "
            f"other counts of its cell ({ALTERED})"))
    clock.lap("probe")
    chosen, status, solver = _solve(A, lo, hi, bounds, solve_deadline, run.threads, run.seed)
    clock.lap("solve")
    if chosen is None:
        return _unsolved(model, status, clock, len(cells), solve_deadline - clock.start,
                         time_limit, fallback)
    picked = chosen[np.argsort(row[chosen])]
    report(progress, "certainty", 0, None)
    proven, complete = _proofs(A, lo, hi, bounds, picked, row, clock.proof_deadline())
    clock.lap("certainty")
    frames = _placed_rows(model, schema, problem, picked, proven, known_rows)
    certificate = verify(model, frames["rows"])
    clock.lap("verify")
    return Reconstruction(**frames, status=Status.OPTIMAL, certificate=certificate,
                          time_s=clock.elapsed(), message=_message(certificate, complete),
                          solver=solver, n_cells=len(cells), certainty_complete=complete,
                          timings=clock.timings, proof=PROOF, formulation=FORMULATION)


def _refuse_without_draws(model: ReleasedModel) -> None:
    """Refuse a bootstrap forest whose trees do not all say how often they drew each row."""
    if not has_draws(model):
        raise UnsupportedModelError(
            "this bootstrap forest does not say how often each tree drew each row (its random "
            "states were not kept); reconstruction with unknown draws is not "
            "supported yet: export the fitted scikit-learn forest itself with skops, which "
            "keeps them"
        )


def _without_placements(
    model: ReleasedModel,
    stop: PlacementError,
    clock: RunClock,
    fallback: Callable[[float, str], Reconstruction] | None,
    without_cells: Callable[[float, str], Reconstruction | None] | None,
) -> Reconstruction:
    """The result when there is no placement problem: when it was too large, the strategy
    for too many cells, then the fallback; else (or when neither answers) nothing."""
    if stop.status == Status.UNKNOWN and without_cells is not None:  # too large
        instead = without_cells(WITHOUT_CELLS_SHARE * clock.left(), str(stop))
        if instead is not None:
            return _instead(instead, clock, str(stop))
    if stop.status == Status.UNKNOWN and fallback is not None:  # too large, not impossible
        return _fell_back(fallback(clock.left(), str(stop)), clock, str(stop))
    return _nothing(model, stop.status, clock, stop.n_cells, str(stop))


def _unsolved(
    model: ReleasedModel,
    status: SolverStatus,
    clock: RunClock,
    n_cells: int,
    solve_seconds: float,
    time_limit: float,
    fallback: Callable[[float, str], Reconstruction] | None,
) -> Reconstruction:
    """The result when the placement solvers chose no dataset: the fallback's when they ran
    out of time (``solve_seconds``, their share) and there is one, else nothing."""
    if status == SolverStatus.UNKNOWN and fallback is not None:
        why = (f"no dataset meets the released draws within {solve_seconds:.0f} s "
               "(many datasets nearly do when few trees drew each row; raise the time limit "
               "to search longer)")
        return _fell_back(fallback(clock.left(), why), clock, why)
    message = (f"{NOT_MET}: {ALTERED}" if status == SolverStatus.INFEASIBLE else
               f"no reconstruction found within the time limit of {time_limit:g} s; "
               "raise the time limit")
    return _nothing(model, Status.solved(status), clock, n_cells, message)


def _placed_rows(model: ReleasedModel, schema: FeatureSchema, problem: Placements,
                 picked: np.ndarray, proven: np.ndarray,
                 known_rows: tuple[np.ndarray, np.ndarray] | None) -> dict:
    """The rows of the chosen placements ``picked`` (in training order), with the known
    rows put where they fit."""
    cell, cls = problem.cell, problem.cls
    frames = rows_from_counts(model, schema, problem.cells, cell[picked], cls[picked],
                              np.ones(picked.size, dtype=np.int64), proven.astype(np.int64),
                              with_width=True)
    if known_rows is not None:
        _place_known(frames, known_rows[0], problem.known_cell, known_rows[1], cell[picked],
                     cls[picked])
    return frames


def _message(certificate: Certificate, complete: bool) -> str:
    """The run's message: a mismatch with the model first, else certainty cut short."""
    message = "" if complete else "certainty bounds stopped at their time limit (still sound)"
    if not certificate.verified:
        message = f"reconstruction does not reproduce the model: {certificate.first_mismatch}"
    return message


def _instead(result: Reconstruction, clock: RunClock, why: str) -> Reconstruction:
    """Another strategy's result, said to be one, for the reason ``why``."""
    note = f"{why}; the rows were placed one by one instead (strategy {result.strategy})"
    return replace(result, time_s=clock.elapsed(),
                   timings={**clock.timings, **result.timings},
                   message=f"{note}; {result.message}" if result.message else note)


def _fell_back(result: Reconstruction, clock: RunClock, why: str) -> Reconstruction:
    """The fallback's result, said to be one: its rows reproduce every count with draws of
    its own, not the released draws, for the reason ``why``."""
    if result.n_rows == 0:  # its message starts with ``why``, as `reconstruct` passes it on
        return replace(result, time_s=clock.elapsed(),
                       timings={**clock.timings, **result.timings})
    return replace(
        result, status=Status.FEASIBLE, time_s=clock.elapsed(),
        timings={**clock.timings, **{f"fallback_{k}": v for k, v in result.timings.items()}},
        message=(f"{why}; these rows reproduce every weighted and distinct-row count with "
                 "inferred draws instead, in no particular order"))


class PlacementError(Exception):
    """No placement problem: its status (INFEASIBLE or UNKNOWN) and why."""

    def __init__(self, status: Status, message: str, n_cells: int) -> None:
        super().__init__(message)
        self.status, self.n_cells = status, n_cells


@dataclass
class Placements:
    """Where each training row may lie: placement j puts row ``row[j]``, of class
    ``cls[j]``, in cell ``cell[j]``; a dataset is a 0/1 choice y of one placement per row
    with ``lo <= A @ y <= hi`` (the counts exactly, known rows at least).
    ``known_cell`` is each known row's cell."""

    cells: Cells
    cell: np.ndarray
    row: np.ndarray
    cls: np.ndarray
    A: sp.csr_matrix
    lo: np.ndarray
    hi: np.ndarray
    known_cell: np.ndarray | None = None


def placements(
    model: ReleasedModel,
    schema: FeatureSchema,
    deadline: float,
    *,
    cell_budget: CellBudget | None = None,
    progress: ProgressCallback | None = None,
    row_boxes: RowBoxes | None = None,
    known_rows: tuple[np.ndarray, np.ndarray] | None = None,
) -> Placements:
    """The placement problem of a bootstrap forest with known draws (see the module doc);
    `PlacementError` when the cells outgrow their budget or a row or known row fits none."""
    occupancy = RowOccupancy(model, row_boxes)
    limits = cell_budget or CellBudget()
    limits = CellBudget(max(limits.max_cells, MAX_CELLS), limits.memory_mb, deadline)
    try:
        cells = enumerate_cells(model, schema, limits, progress, occupancy)
    except CellBudgetExceeded as stop:
        raise PlacementError(Status.UNKNOWN, (
            f"too many cells to list for a bootstrap forest: enumeration stopped at "
            f"{stop.n_cells:,} cells after {stop.trees_done} of {model.n_trees} trees "
            f"({stop.reason}); raise the time limit or the memory budget"
            + _groups_hint(schema, "; or give a schema with the one-hot groups", "")),
            stop.n_cells) from None
    cell, occupant = np.nonzero(cells.allowed)
    row, cls = occupant // occupancy.n_classes, occupant % occupancy.n_classes
    homeless = np.setdiff1d(np.arange(occupancy.n_rows), row)
    if homeless.size:
        raise PlacementError(Status.INFEASIBLE, (
            f"{NOT_MET}: training row {homeless[0]} fits no cell of the trees that drew it "
            f"({ALTERED})"), len(cells))
    A, b = _placement_system(model, cells, cell, row, cls)
    lo, hi, known_cell = b, b, None
    if known_rows is not None:
        known_cell = _cells_of(cells, known_rows[0])
        if np.any(known_cell < 0):
            i = int(np.flatnonzero(known_cell < 0)[0])
            raise PlacementError(Status.INFEASIBLE, (
                f"no dataset reproduces the released counts with the known rows: known row {i} "
                "lies where no training row can (the known rows or the model are wrong)"),
                len(cells))
        A_known, need = _known_rows_system(known_cell, known_rows[1], cell, cls)
        A = sp.vstack([A, A_known], format="csr")
        lo = np.concatenate([b, need])
        hi = np.concatenate([b, np.full(need.size, occupancy.n_rows)])
    if A.nnz > MAX_NONZEROS:
        hint = _groups_hint(schema, "; declare the one-hot groups in the schema if the "
                            "columns have any", "; known columns (--known-columns) narrow "
                            "where each row may lie")
        raise PlacementError(Status.UNKNOWN, (
            f"the placement problem is too large for this version: {cell.size:,} placements "
            f"of {occupancy.n_rows:,} rows over {len(cells):,} cells ({A.nnz:,} nonzeros, "
            f"more than {MAX_NONZEROS:,}): each row fits {cell.size / occupancy.n_rows:,.0f} "
            f"cells on average{hint}"), len(cells))
    return Placements(cells, cell, row, cls, A, lo, hi, known_cell)


def _groups_hint(schema: FeatureSchema, groups: str, otherwise: str) -> str:
    """``groups`` when the schema has binary columns but declares no group among them (a
    group would cut the cells), else ``otherwise``: raw numerical columns have none."""
    binary = int(np.sum(schema.kind_array() == "binary"))
    undeclared = binary > 1 and not (schema.one_hot_groups or schema.at_most_one_groups)
    return groups if undeclared else otherwise


def _cells_of(cells: Cells, X: np.ndarray) -> np.ndarray:
    """The cell holding each row of ``X``, or -1 where none does."""
    found = np.full(len(X), -1, dtype=np.int64)
    for i, x in enumerate(X):
        inside = np.flatnonzero(((cells.lower < x) & (x <= cells.upper)).all(axis=1))
        if inside.size:
            found[i] = inside[0]
    return found


def _known_rows_system(known_cell: np.ndarray, known_cls: np.ndarray, cell: np.ndarray,
                       cls: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """Per distinct known (cell, class): the placements there, at least as many as known."""
    pairs, need = np.unique(np.column_stack([known_cell, known_cls]), axis=0,
                            return_counts=True)
    lookup = {(int(c), int(k)): i for i, (c, k) in enumerate(pairs)}
    hits = [(lookup[(int(c), int(k))], j) for j, (c, k) in enumerate(zip(cell, cls))
            if (int(c), int(k)) in lookup]
    rows, cols = (np.array(v, dtype=np.int64) for v in zip(*hits)) if hits else (
        np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    return (sp.csr_matrix((np.ones(rows.size, dtype=np.int64), (rows, cols)),
                          shape=(len(pairs), cell.size)), need.astype(np.int64))


def _place_known(frames: dict, X: np.ndarray, known_cell: np.ndarray, known_cls: np.ndarray,
                 row_cell: np.ndarray, row_cls: np.ndarray) -> None:
    """Give each known row's values to a reconstructed row of its cell and class (the
    solver placed at least as many there), in place."""
    taken = np.zeros(row_cell.size, dtype=bool)
    names = list(frames["free"].columns)
    for x, c, k in zip(X, known_cell, known_cls):
        i = int(np.flatnonzero((row_cell == c) & (row_cls == k) & ~taken)[0])
        taken[i] = True
        frames["rows"].loc[i, names] = x
        frames["free"].loc[i, names] = False


def _solve(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray,
           bounds: tuple[np.ndarray, np.ndarray], deadline: float, threads: int, seed: int,
           ) -> tuple[np.ndarray | None, SolverStatus, str]:
    """The placements chosen (one per row) with ``lo <= A y <= hi`` within the propagated
    ``bounds``, or None, with the verdict and the solver that gave it: HiGHS first, on a
    share of the time, then CP-SAT on the rest (each solved cases the other did not)."""
    first, last = bounds
    open_ = np.flatnonzero(first < last)
    taken = A @ first
    A = A[:, open_].tocsr()
    live = np.diff(A.indptr) > 0
    A, lo, hi = A[live], (lo - taken)[live], (hi - taken)[live]
    fixed = np.flatnonzero(first)
    now = time.perf_counter()
    if not open_.size:
        return fixed, SolverStatus.OPTIMAL, ""
    if deadline <= now:
        return None, SolverStatus.UNKNOWN, ""
    chosen, status = _solve_highs(A, lo, hi, now + HIGHS_SHARE * (deadline - now))
    solver = "highs"
    if status == SolverStatus.UNKNOWN:
        if deadline <= time.perf_counter():
            return None, SolverStatus.UNKNOWN, solver
        chosen, status = _solve_cp_sat(A, lo, hi, deadline, threads, seed)
        solver = "cp-sat"
    if chosen is None:
        return None, status, solver
    return np.sort(np.concatenate([fixed, open_[chosen]])), status, solver


def _proofs(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray,
            bounds: tuple[np.ndarray, np.ndarray], picked: np.ndarray, row: np.ndarray,
            deadline: float) -> tuple[np.ndarray, bool]:
    """Which chosen placements every dataset shares, and whether all were settled.

    A row with one possible placement has it in every dataset, and so has a placement
    ``bounds`` fix (`propagate_placements`, `probe_subsystems`). Otherwise, placement j is
    proven when the LP relaxation has no solution without it: no dataset, not even a
    fractional one, leaves row k elsewhere. One LP minimising the sum of the chosen
    placements comes first: when even its minimum keeps every one of them, all are proven
    at once; otherwise it sets aside those its solution avoids (no LP proof exists for
    them)."""

    proven = np.bincount(row, minlength=row.max() + 1)[row[picked]] == 1
    # the LPs below keep the propagated bounds: smaller, and still sound
    lower, upper = bounds[0].astype(np.float64), bounds[1].astype(np.float64)
    proven |= bounds[0][picked] == 1
    open_ = np.flatnonzero(~proven)
    if not open_.size:
        return proven, True

    def lp(cost: np.ndarray, upper: np.ndarray) -> object | None:
        return relaxation(A, lo, hi, cost, lower, upper, deadline)

    cost = np.zeros(A.shape[1])
    cost[picked[open_]] = 1.0
    joint = lp(cost, upper)
    if joint is None or joint.status != 0:
        return proven, False
    if joint.fun >= open_.size - 1e-6:  # no solution, even fractional, gives up any of them
        proven[open_] = True
        return proven, True
    candidates = open_[joint.x[picked[open_]] > 1e-6]
    for i in candidates:
        upper[picked[i]] = 0.0
        result = lp(np.zeros(A.shape[1]), upper)
        upper[picked[i]] = 1.0
        if result is None or result.status not in (0, 2):
            return proven, False
        proven[i] = result.status == 2  # infeasible without it
    return proven, True


def _equation(model: ReleasedModel, index: int) -> str:
    """What equation ``index`` of `_placement_system` (then the known rows') counts."""
    n_rows, n_classes = len(model.trees[0].draws), model.n_classes
    if index < n_rows:
        return f"placing training row {index}"
    index -= n_rows
    for t, tree in enumerate(model.trees):
        if index < tree.n_leaves * n_classes:
            leaf, c = divmod(index, n_classes)
            return (f"tree {t}, leaf {leaf}: its {int(tree.counts[leaf, c])} draws of class "
                    f"{model.classes[c]!r}")
        index -= tree.n_leaves * n_classes
        if tree.n_samples is not None:
            if index < tree.n_leaves:
                return f"tree {t}, leaf {index}: its {int(tree.n_samples[index])} distinct rows"
            index -= tree.n_leaves
    return "a known row"


def relaxation(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray, cost: np.ndarray,
               lower: np.ndarray, upper: np.ndarray, deadline: float) -> object | None:
    """``min cost @ y`` over the LP relaxation of ``lo <= A y <= hi`` (equations where
    ``lo == hi``: the counts; lower bounds elsewhere: known rows) with ``lower <= y <=
    upper`` (HiGHS), or None once ``deadline`` has passed."""
    from scipy.optimize import linprog

    seconds = seconds_until(deadline)
    if seconds <= 0:
        return None
    equal = lo == hi
    A_ub = -A[np.flatnonzero(~equal)]
    ub = {"A_ub": A_ub, "b_ub": -lo[~equal]} if A_ub.shape[0] else {}
    return linprog(cost, A_eq=A[np.flatnonzero(equal)], b_eq=lo[equal], **ub,
                   bounds=np.column_stack([lower, upper]), method="highs",
                   options={"time_limit": seconds})


def _placement_system(
    model: ReleasedModel, cells: Cells, cell: np.ndarray, row: np.ndarray, cls: np.ndarray,
) -> tuple[sp.csr_matrix, np.ndarray]:
    """``A y = b`` over the placements: one per row, then per tree the weighted
    (leaf, class) counts and the leaves' distinct-row counts."""
    n_rows, n_classes = len(model.trees[0].draws), model.n_classes
    n_vars = cell.size
    blocks, targets = [sp.csr_matrix((np.ones(n_vars), (row, np.arange(n_vars))),
                                     shape=(n_rows, n_vars))], [np.ones(n_rows)]
    for t, tree in enumerate(model.trees):
        leaf = cells.leaf[cell, t].astype(np.int64)
        drawn = tree.draws[row]
        inbag = np.flatnonzero(drawn > 0)
        blocks.append(sp.csr_matrix(
            (drawn[inbag], (leaf[inbag] * n_classes + tree.count_column(cls[inbag]), inbag)),
            shape=(tree.n_leaves * n_classes, n_vars)))
        targets.append(tree.counts.ravel())
        if tree.n_samples is not None:
            blocks.append(sp.csr_matrix((np.ones(inbag.size), (leaf[inbag], inbag)),
                                        shape=(tree.n_leaves, n_vars)))
            targets.append(tree.n_samples)
    return (sp.vstack(blocks, format="csr").astype(np.int64),
            np.concatenate(targets).astype(np.int64))


def _solve_highs(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray, deadline: float,
                 ) -> tuple[np.ndarray | None, SolverStatus]:
    """HiGHS on the placements until ``deadline``."""
    from scipy.optimize import Bounds, LinearConstraint

    from treeleaks.counts.bounded_milp import bounded_milp

    result = bounded_milp(np.zeros(A.shape[1]), constraints=LinearConstraint(A, lo, hi),
                          integrality=np.ones(A.shape[1]), bounds=Bounds(0, 1),
                          options={"time_limit": seconds_until(deadline, 0.01)})
    if result.x is not None:
        return np.flatnonzero(result.x > 0.5), SolverStatus.OPTIMAL
    return None, SolverStatus.INFEASIBLE if result.status == 2 else SolverStatus.UNKNOWN


def _solve_cp_sat(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray, deadline: float,
                  threads: int, seed: int) -> tuple[np.ndarray | None, SolverStatus]:
    """CP-SAT on the placements until ``deadline``, building the model included (it takes
    seconds on millions of nonzeros)."""
    from ortools.sat.python import cp_model

    cp = cp_model.CpModel()
    placed = np.array([cp.new_bool_var("") for _ in range(A.shape[1])], dtype=object)
    for i in np.flatnonzero(np.diff(A.indptr)):
        first, last = A.indptr[i], A.indptr[i + 1]
        cp.add_linear_constraint(
            cp_model.LinearExpr.weighted_sum(list(placed[A.indices[first:last]]),
                                             A.data[first:last].tolist()), int(lo[i]), int(hi[i]))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds_until(deadline, 0.01)
    solver.parameters.num_workers = max(1, int(threads))
    solver.parameters.random_seed = int(seed)
    solver.parameters.catch_sigint_signal = False  # Ctrl-C must reach the CLI
    code = solver.solve(cp)
    if code == cp_model.INFEASIBLE:
        return None, SolverStatus.INFEASIBLE
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, SolverStatus.UNKNOWN
    values = np.array([solver.boolean_value(x) for x in placed], dtype=bool)
    return np.flatnonzero(values), SolverStatus.OPTIMAL


def _nothing(model: ReleasedModel, status: Status, clock: RunClock, n_cells: int,
             message: str) -> Reconstruction:
    """A result without rows."""
    return Reconstruction.empty(model, status=status, time_s=clock.elapsed(),
                                message=message, solver="highs+cp-sat", n_cells=n_cells,
                                timings=clock.timings, formulation=FORMULATION)
