"""Cells on demand: column generation over the count system, for refinements too large to list.

The count system has one variable per (cell, class) and one equation per released
(tree, leaf, class) count. When the trees' common refinement holds millions of cells,
only the few a dataset needs are generated:

- **Master**: the packing LP ``max sum(n)`` subject to ``sum of n over the generated
  columns inside (t, v, c) <= count[t, v, c]``, ``n >= 0``. Every tree's counts add up to
  N, so its optimum is N exactly when the generated cells reproduce every count.
- **Pricing**: with the LP's dual prices ``pi >= 0``, a cell of class c improves the
  master when its leaves' prices sum below 1; `treeleaks.counts.pricing.Pricer` finds one (a
  point through every tree, CP-SAT). When pricing proves that no such cell exists while
  the optimum is below N, the counts admit no dataset, not even a fractional one.

The cells found are handed to the usual count system and integer solver. Their LP bounds
prove nothing about cells never generated, so proofs come from `generated_lower_bounds`:
each candidate's LP minimum over the generated cells, closed by an exact pricing run that
bounds what every other cell could add (a Lagrangian bound, sound for the whole system).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from treeleaks.counts.cells import Cells, cell_boxes
from treeleaks.counts.certainty import Certainty
from treeleaks.counts.peel import Peeled
from treeleaks.counts.system import CountSystem
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.runtime.clock import seconds_until
from treeleaks.runtime.progress import ProgressCallback, report

if TYPE_CHECKING:
    from treeleaks.counts.pricing import PricingTeam

_TOL = 1e-7
INTEGER_PACKING_S = 5.0


class Generation(StrEnum):
    """How cell generation ended (`Generated.status`), in the generator's words; the
    attack that runs it says what they make of the run (`treeleaks.runtime.vocabulary.Status`)."""

    FEASIBLE = "FEASIBLE"  # the cells hold an integer dataset
    INFEASIBLE = "INFEASIBLE"  # pricing proved no dataset, not even a fractional one
    DEAD_END = "DEAD_END"  # every rounding tried in time led where no dataset fits
    STALLED = "STALLED"  # pricing could neither find a better cell nor rule one out
    TIMEOUT = "TIMEOUT"  # the time ran out
    INTERRUPTED = "INTERRUPTED"  # Ctrl-C during generation: what was found stands


@dataclass
class Generated:
    """The cells generated, and how the generation ended.

    ``status``: ``FEASIBLE`` (these cells hold an integer dataset), ``INFEASIBLE``
    (pricing proved that no dataset, not even a fractional one, reproduces the counts),
    ``DEAD_END`` (every rounding tried before the deadline led where no dataset fits),
    ``STALLED`` (pricing could neither find a better cell nor rule one out), ``TIMEOUT``,
    ``INTERRUPTED`` (Ctrl-C: what was found so far stands, like a time limit).
    ``placed`` rows were fixed as whole rows; ``lp_placed`` is the most the LP placed.
    Column j of the pool is a row of class ``column_cls[j]`` in cell ``column_cell[j]``;
    ``partial`` is the largest set of whole rows found within every count (rows per
    column: a partial dataset when generation ends short of N), ``pinned`` the rows proven
    before generation (rows per column, part of ``partial``). ``shortfall`` says, when
    pricing proved the counts infeasible, where the LP over every cell falls short.
    """

    cells: Cells
    status: Generation
    placed: float
    lp_placed: float
    iterations: int
    pricing_calls: int
    column_cell: np.ndarray
    column_cls: np.ndarray
    partial: np.ndarray
    pinned: np.ndarray
    shortfall: str = ""


class BestPartial:
    """The largest set of whole rows seen so far that stays within every count, as rows
    per pool column (columns added later hold none)."""

    def __init__(self) -> None:
        self.rows = np.zeros(0, dtype=np.int64)

    def offer(self, rows: np.ndarray) -> int:
        """Keep ``rows`` if they are more; the most rows kept so far."""
        if rows.sum() > self.rows.sum():
            self.rows = rows.astype(np.int64).copy()
        return int(self.rows.sum())

    def over(self, n_columns: int) -> np.ndarray:
        return _padded(self.rows, n_columns)


def _padded(rows: np.ndarray, n_columns: int) -> np.ndarray:
    return np.concatenate([rows, np.zeros(n_columns - rows.size, dtype=np.int64)])


class ColumnPool:
    """Generated (cell, class) columns of the count system, deduplicated."""

    def __init__(self, model: ReleasedModel) -> None:
        self.model = model
        self.n_classes = model.n_classes
        self.offsets = np.cumsum([0] + [t.n_leaves * model.n_classes for t in model.trees])
        self.counts = np.concatenate([t.counts.ravel() for t in model.trees]).astype(np.int64)
        # column_of[t, c]: the column of tree t's counts that holds class c's rows
        self.column_of = np.array([t.count_column(np.arange(model.n_classes))
                                   for t in model.trees], dtype=np.int64).reshape(
                                       len(model.trees), model.n_classes)
        self.leaves: list[np.ndarray] = []
        self.cls: list[int] = []
        self.banned: set[int] = set()
        self._index: dict[tuple[int, bytes], int] = {}

    @classmethod
    def of_columns(cls, model: ReleasedModel, generated: Generated) -> ColumnPool:
        """The pool of ``generated``'s columns again, in their order (for their matrix)."""
        pool = cls(model)
        pool.leaves = [leaves.astype(np.int64) for leaves in
                       generated.cells.leaf[generated.column_cell]]
        pool.cls = [int(c) for c in generated.column_cls]
        return pool

    def __len__(self) -> int:
        return len(self.cls)

    def add(self, cls: int, leaves: np.ndarray) -> bool:
        key = (cls, leaves.astype(np.int64).tobytes())
        if key in self._index:
            return False
        self.leaves.append(leaves.astype(np.int64))
        self.cls.append(cls)
        self._index[key] = len(self.cls) - 1
        return True

    def settle(self) -> None:
        """Drop a cell whose `add` Ctrl-C cut between its leaves and its class."""
        del self.leaves[len(self.cls):]

    def index(self, cls: int, leaves: np.ndarray) -> int:
        """The column of the cell of class ``cls`` lying in ``leaves`` (already added)."""
        return self._index[(cls, leaves.astype(np.int64).tobytes())]

    def excluded(self, cls: int) -> list[np.ndarray]:
        """Leaves of the banned columns of class ``cls``, for pricing to skip."""
        return [self.leaves[j] for j in sorted(self.banned) if self.cls[j] == cls]

    def rows_of(self, cls: int, leaves: np.ndarray) -> np.ndarray:
        """The (tree, leaf, class) counts a cell of class ``cls`` in ``leaves`` lies in."""
        return (self.offsets[:-1] + leaves.astype(np.int64) * self.n_classes
                + self.column_of[:, cls])

    def matrix(self) -> sp.csc_matrix:
        """``(n_counts, n_columns)``: column j has a 1 in each (tree, leaf, class) it lies in."""
        leaves = np.array(self.leaves, dtype=np.int64).reshape(len(self), self.model.n_trees)
        rows = (self.offsets[:-1][None, :] + leaves * self.n_classes
                + self.column_of[:, np.array(self.cls, dtype=np.int64)].T)
        cols = np.repeat(np.arange(len(self)), leaves.shape[1])
        data = np.ones(rows.size)
        return sp.csc_matrix((data, (rows.ravel(), cols)), shape=(self.counts.size, len(self)))

    def unfilled(self, count: int, by: float) -> str:
        """Where a best LP leaves (tree, leaf, class) count ``count`` short by ``by`` rows."""
        tree = int(np.searchsorted(self.offsets, count, side="right")) - 1
        leaf, column = divmod(count - int(self.offsets[tree]), self.n_classes)
        of = self.model.trees[tree].column_name(column, self.model.classes)
        return (f"tree {tree} leaf {leaf} releases {self.counts[count]} rows of {of}, and "
                f"the cells that fit the other trees best leave {by:.3g} of them unplaced")

    def weights(self, prices: np.ndarray, cls: int) -> list[np.ndarray]:
        """Per tree, the price of each leaf for class ``cls``."""
        return [
            prices[self.offsets[t] + np.arange(tree.n_leaves) * self.n_classes
                   + tree.count_column(cls)]
            for t, tree in enumerate(self.model.trees)
        ]

    def cells(self, schema: FeatureSchema) -> tuple[Cells, np.ndarray]:
        """The distinct cells among the columns, as boxes with the classes generated there,
        and each column's cell."""
        leaves = np.array(self.leaves, dtype=np.int64).reshape(len(self), self.model.n_trees)
        unique, cell_of = np.unique(leaves, axis=0, return_inverse=True)
        allowed = np.zeros((len(unique), self.n_classes), dtype=bool)
        allowed[cell_of.ravel(), np.array(self.cls, dtype=np.int64)] = True
        return (Cells(*cell_boxes(self.model, unique, schema), allowed, unique.astype(np.int32)),
                cell_of.ravel())


def generate_cells(
    model: ReleasedModel,
    schema: FeatureSchema,
    deadline: float,
    seed: int = 0,
    progress: ProgressCallback | None = None,
    workers: int = 1,
    proven: Peeled | None = None,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> Generated:
    """Generate cells until they hold an integer dataset (see the module doc).

    Column generation makes the packing LP place all N rows; its solution is then rounded
    by diving: columns at whole values are kept, the largest fractional one is rounded
    up, and the rest of the rows are placed again by column generation on what is left
    of the counts, until every row is placed. ``proven`` rows (`peel_rows`) are placed
    first and never moved. ``workers`` threads price the classes side by side. ``start``
    rows ``(leaves, cls)`` within every count (a row search's partial dataset) seed the
    pool as columns the LP may use or leave, nothing proven, and are the first partial
    dataset.
    """
    from treeleaks.counts.pricing import PricingTeam

    pool = ColumnPool(model)
    stats = {"iterations": 0, "calls": 0, "rows": int(model.n_rows or 0), "lp_placed": 0.0}
    columns = []  # of the proven rows, one each
    for cls, leaves in zip(proven.cls, proven.leaves) if proven is not None else ():
        pool.add(int(cls), leaves)
        columns.append(pool.index(int(cls), leaves))
    fixed = np.bincount(columns, minlength=len(pool)).astype(np.int64)
    best = BestPartial()
    best.offer(fixed)
    if start is not None and len(start[1]):
        seeded = []
        for leaves, cls in zip(*start, strict=True):
            pool.add(int(cls), leaves)
            seeded.append(pool.index(int(cls), leaves))
        best.offer(_padded(fixed, len(pool)) + np.bincount(seeded, minlength=len(pool)))
    with PricingTeam(model, schema, workers) as pricers:
        try:
            run = _GenerationRun(pool, pricers, deadline, seed, progress, stats)
            status, placed = _dive(run, fixed, best)
        except KeyboardInterrupt:  # anytime: the rows in hand are the answer, as at a limit
            status, placed = Generation.INTERRUPTED, float(best.rows.sum())
    pool.settle()
    cells, column_cell = pool.cells(schema)
    return Generated(cells, status, placed, stats["lp_placed"], int(stats["iterations"]),
                     int(stats["calls"]), column_cell, np.array(pool.cls, dtype=np.int64),
                     best.over(len(pool)), _padded(fixed, len(pool)),
                     pool.unfilled(int(stats["unfilled"]), stats["unfilled_by"])
                     if "unfilled" in stats else "")


@dataclass
class _GenerationRun:
    """What the steps of one generation share: the columns so far, the pricers, the
    deadline, the pricers' base seed, where progress goes and the running figures."""

    pool: ColumnPool
    pricers: PricingTeam
    deadline: float
    seed: int
    progress: ProgressCallback | None
    stats: dict[str, float]


def _dive(run: _GenerationRun, fixed: np.ndarray, best: BestPartial
          ) -> tuple[Generation, float]:
    """Place every row by column generation and diving (see `generate_cells`), starting
    from the ``fixed`` rows per column; the status and the most rows fixed. Every LP
    solution's whole part, with the rows fixed so far, is offered to ``best``."""
    pool, deadline, stats = run.pool, run.deadline, run.stats
    n_rows = int(stats["rows"])
    start_capacity = pool.counts - (pool.matrix()[:, : fixed.size] @ fixed if fixed.size
                                    else 0)
    start_rows = n_rows - int(fixed.sum())
    capacity, left_rows = start_capacity.copy(), start_rows
    if left_rows <= 0:
        return Generation.FEASIBLE, float(n_rows)
    status, placed, rounded_up = Generation.TIMEOUT, 0.0, None
    taken = fixed.astype(np.int64)
    while time.perf_counter() < deadline:
        outcome, x = _pack(run, capacity, left_rows, lambda x, base=taken: best.offer(
            _padded(base, x.size) + np.floor(x + _TOL).astype(np.int64)))
        if (outcome in (Generation.INFEASIBLE, Generation.STALLED)
                and (left_rows < start_rows or pool.banned)):
            # A dead end of the rounding: ban the cell it last rounded up (or, before any
            # rounding, the last cell it kept) and start again from all the counts with
            # every cell generated so far.
            if _integer_packing(pool, pool.counts, n_rows, deadline) is not None:
                placed, status = n_rows, Generation.FEASIBLE
                break
            if rounded_up is None:
                status = Generation.DEAD_END
                break
            pool.banned.add(rounded_up)
            capacity, left_rows = start_capacity.copy(), start_rows
            status, rounded_up, taken = Generation.DEAD_END, None, fixed.astype(np.int64)
            continue
        if outcome != Generation.FEASIBLE:
            status = outcome
            break
        whole = np.floor(x + _TOL)
        fractional = np.flatnonzero(x - whole > _TOL)
        if (fractional.size
                and _integer_packing(pool, capacity, left_rows, deadline) is not None):
            placed, status = n_rows, Generation.FEASIBLE
            break
        take, rounded_up = _rounded(x, whole, fractional, rounded_up)
        A = pool.matrix()
        capacity = capacity - A[:, : take.size] @ take
        left_rows -= int(take.sum())
        taken = _padded(taken, take.size) + take
        best.offer(taken)
        placed = max(placed, n_rows - left_rows)
        if left_rows <= 0:
            status = Generation.FEASIBLE
            break
    return status, placed


def _rounded(x: np.ndarray, whole: np.ndarray, fractional: np.ndarray,
             rounded_up: int | None) -> tuple[np.ndarray, int | None]:
    """The rows to keep from the LP solution ``x``: its whole part (``whole``), with the
    most fractional column rounded up; and the column rounded up last (before any
    rounding, the last column kept)."""
    if fractional.size:
        j = fractional[np.argmax(x[fractional] - whole[fractional])]
        whole[j] += 1
        rounded_up = int(j)
    take = whole.astype(np.int64)
    if rounded_up is None and take.any():
        rounded_up = int(np.flatnonzero(take)[-1])
    return take, rounded_up


def _integer_packing(
    pool: ColumnPool, capacity: np.ndarray, n_rows: int, deadline: float
) -> np.ndarray | None:
    """Whole counts over the generated cells that place ``n_rows`` within ``capacity``, if
    the MIP finds them within a short time; diving is the fallback."""
    from scipy.optimize import Bounds, LinearConstraint

    from treeleaks.counts.bounded_milp import bounded_milp

    A = pool.matrix()
    live = np.flatnonzero(capacity > 0)
    dead = np.asarray(A[np.flatnonzero(capacity <= 0)].sum(axis=0)).ravel() > 0
    dead[list(pool.banned)] = True
    now = time.perf_counter()
    stop = min(deadline, now + INTEGER_PACKING_S)
    if stop <= now:
        return None
    result = bounded_milp(
        -np.ones(A.shape[1]),
        constraints=[LinearConstraint(A[live], -np.inf, capacity[live]),
                     LinearConstraint(np.ones((1, A.shape[1])), n_rows, n_rows)],
        bounds=Bounds(0, np.where(dead, 0, np.inf)),
        integrality=np.ones(A.shape[1]),
        options={"time_limit": seconds_until(stop, now=now)},
    )
    return None if result.x is None else np.rint(result.x).astype(np.int64)


def pack_whole_rows(model: ReleasedModel, generated: Generated, deadline: float
                    ) -> np.ndarray:
    """The most whole rows the generated cells hold within every count, if a MIP beats
    ``generated.partial`` by ``deadline`` (``time.perf_counter()``; rows per column, the
    pinned rows kept): the LP's whole part and the dive keep rows where they first fit, the
    MIP moves them."""
    from scipy.optimize import Bounds, LinearConstraint

    from treeleaks.counts.bounded_milp import bounded_milp

    seconds = seconds_until(deadline)
    if seconds <= 0 or not generated.partial.size:
        return generated.partial
    pool = ColumnPool.of_columns(model, generated)
    A = pool.matrix()
    result = bounded_milp(-np.ones(A.shape[1]), integrality=np.ones(A.shape[1]),
                          constraints=[LinearConstraint(A, -np.inf, pool.counts)],
                          bounds=Bounds(generated.pinned, np.inf),
                          options={"time_limit": seconds})
    if result.x is None:
        return generated.partial
    rows = np.rint(result.x).astype(np.int64)
    within = (A @ rows <= pool.counts).all()
    return rows if within and rows.sum() > generated.partial.sum() else generated.partial


def _fill_slack(
    run: _GenerationRun,
    x: np.ndarray,
    capacity: np.ndarray,
    seed: int,
    offer: Callable[[np.ndarray], int],
) -> int:
    """Greedy augmentation: add cells lying only in leaves the LP solution ``x`` leaves
    room in, each taking that room, until none fits. The LP's prices are degenerate (a
    full leaf often has price 0), so pricing on them alone adds many cells that cannot
    raise the optimum; a cell found here raises it at once. Beside it, the whole part of
    ``x`` grows by each cell's whole room, and is ``offer``-ed after every round: a
    partial dataset that grows while the LP waits. Returns how many cells were added
    (``seed`` is this round's)."""
    pool, pricers, deadline, stats = run.pool, run.pricers, run.deadline, run.stats
    whole = np.floor(x + _TOL).astype(np.int64)
    slack = capacity - (pool.matrix() @ x if len(pool) else 0)
    room = capacity - (pool.matrix() @ whole if len(pool) else 0)
    added, settled = 0, set()  # settled: classes with no cell left to add (room only shrinks)
    while len(settled) < len(pricers) and time.perf_counter() < deadline:
        full = np.where(slack > _TOL, 0.0, 1.0)
        results = pricers.best_each(partial(pool.weights, full), deadline, pool.excluded,
                                    seed=seed + added, keep=5, cutoff=0.5, skip=settled)
        stats["calls"] += len(pricers) - len(settled)
        for c, result in enumerate(results):
            if c in settled:
                continue
            fitted, whole = _fit_cells(pool, c, result[0] if result else [], slack, room,
                                       whole)
            if not fitted:
                settled.add(c)
            added += fitted
        offer(_padded(whole, len(pool)).astype(np.float64))
    return added


def _fit_cells(pool: ColumnPool, c: int, cells: list, slack: np.ndarray, room: np.ndarray,
               whole: np.ndarray) -> tuple[int, np.ndarray]:
    """Add those of class ``c``'s priced ``cells`` whose leaves all have ``slack`` left,
    each taking it (and its whole ``room`` as rows of ``whole``): how many were added, and
    ``whole`` over the columns now."""
    fitted = 0
    for cell in cells:
        rows = pool.rows_of(c, cell.leaves)
        left = slack[rows].min()
        if left > _TOL and pool.add(c, cell.leaves):
            slack[rows] -= left
            fitted += 1
            whole = _padded(whole, len(pool))
            if (fits := int(np.floor(room[rows].min() + _TOL))) >= 1:
                whole[-1] += fits
                room[rows] -= fits
    return fitted, whole


def _pack(
    run: _GenerationRun,
    capacity: np.ndarray,
    n_rows: int,
    offer: Callable[[np.ndarray], int],
) -> tuple[Generation, np.ndarray]:
    """Column generation on the packing LP with ``capacity`` until it places ``n_rows``;
    each LP solution is ``offer``-ed (its whole part is a partial dataset)."""
    pool, deadline, stats = run.pool, run.deadline, run.stats
    live = np.flatnonzero(capacity > 0)
    whole_rows = offer(np.zeros(len(pool)))
    while time.perf_counter() < deadline:
        stats["iterations"] += 1
        prices = np.zeros(pool.counts.size)
        x, placed = np.zeros(len(pool)), 0.0
        if len(pool):
            res = _packing_lp(pool, capacity, live, deadline)
            if res.status != 0:
                return Generation.TIMEOUT, x
            x, placed = res.x, -float(res.fun)
            stats["lp_placed"] = max(stats["lp_placed"], stats["rows"] - n_rows + placed)
            whole_rows = offer(x)
            prices[live] = np.maximum(-res.ineqlin.marginals, 0.0)
        prices[capacity <= 0] = 2.0  # a full leaf: no cell through it can help
        report(run.progress, "generate", int(placed), n_rows, columns=len(pool),
               iteration=stats["iterations"], whole_rows=whole_rows)
        if placed >= n_rows - 1e-6:
            return Generation.FEASIBLE, x
        if _fill_slack(run, x, capacity, run.seed + stats["iterations"], offer):
            continue
        priced = _price_columns(run, prices)
        if priced is None:
            return Generation.TIMEOUT, x
        added, proven_none = priced
        if not added:
            return _no_column_added(run, x, capacity, placed, n_rows, proven_none), x
    return Generation.TIMEOUT, np.zeros(len(pool))


def _packing_lp(pool: ColumnPool, capacity: np.ndarray, live: np.ndarray, deadline: float):
    """The packing LP over the columns so far: the most rows within the ``live`` counts'
    ``capacity``, no column through a full leaf nor a banned one (scipy's result)."""
    from scipy.optimize import linprog

    A = pool.matrix()
    dead = np.asarray(A[np.flatnonzero(capacity <= 0)].sum(axis=0)).ravel() > 0
    dead[list(pool.banned)] = True
    return linprog(-np.ones(A.shape[1]), A_ub=A[live], b_ub=capacity[live],
                   bounds=[(0, 0) if d else (0, None) for d in dead], method="highs",
                   options={"time_limit": seconds_until(deadline, 0.01, time.perf_counter())})


def _price_columns(run: _GenerationRun, prices: np.ndarray) -> tuple[int, bool] | None:
    """Add the cells of each class that weigh under 1 at ``prices``: how many were added
    and whether pricing proved there is none; None when a pricer ran out of time."""
    pool, pricers, stats = run.pool, run.pricers, run.stats
    results = pricers.best_each(partial(pool.weights, prices), run.deadline, pool.excluded,
                                seed=run.seed + stats["iterations"], keep=20,
                                cutoff=1.0 - _TOL)
    if any(result is None for result in results):
        return None
    stats["calls"] += len(pricers)
    added, proven_none = 0, True
    for c, (found, bound, finished) in enumerate(results):
        added += sum(pool.add(c, cell.leaves) for cell in found if cell.weight < 1 - _TOL)
        proven_none &= finished and bound >= 1 - 2 * _TOL
    return added, proven_none


def _no_column_added(run: _GenerationRun, x: np.ndarray, capacity: np.ndarray,
                     placed: float, n_rows: int, proven_none: bool) -> Generation:
    """INFEASIBLE when pricing proved no cell helps and the LP is clearly short of
    ``n_rows`` (noting the first count it leaves short, for the message), else STALLED."""
    # No cell weighs under 1 - 2e-7, so the LP over all cells places at most
    # placed + 2e-7 N rows: a clear gap to N proves it.
    infeasible = proven_none and placed < n_rows - 1e-3
    if infeasible:  # where this best LP leaves a count short, for the message
        pool, stats = run.pool, run.stats
        held = (pool.matrix() @ x if len(pool) else np.zeros(capacity.size))
        short = np.flatnonzero(capacity - held > 1e-6)
        if short.size:
            stats["unfilled"], stats["unfilled_by"] = short[0], float(
                capacity[short[0]] - held[short[0]])
    return Generation.INFEASIBLE if infeasible else Generation.STALLED


@dataclass(frozen=True)
class SearchSettings:
    """How a search over generated cells runs: the pricers' seed, how many threads price
    the classes side by side, and where its progress goes."""

    seed: int = 0
    workers: int = 1
    progress: ProgressCallback | None = None


def generated_lower_bounds(
    model: ReleasedModel,
    schema: FeatureSchema,
    cells: Cells,
    system: CountSystem,
    solution: np.ndarray,
    deadline: float,
    settings: SearchSettings = SearchSettings(),
    known: np.ndarray | None = None,
) -> Certainty:
    """Sound lower bounds on the variables of a system over *generated* cells, at least
    ``known`` (bounds proven otherwise, such as by `peel_rows`, which are not proven again),
    until ``deadline`` (``time.perf_counter()``).

    For a candidate j, any prices y give the bound ``y.b + N * min_k(c_k - y.a_k)`` on
    ``min n_j`` over every dataset (weak LP duality; c is 1 on j, 0 elsewhere, and every
    dataset has N rows). y comes from the LP over the generated cells; the minimum over
    the cells never generated is bounded by exact pricing (it proves none is negative, or
    finds one, which joins the LP). One joint LP first drops every candidate the generated
    cells alone can empty, since no proof can exist for those. ``settings.workers`` threads
    price the classes side by side.
    """
    from treeleaks.counts.pricing import PricingTeam

    pool = ColumnPool(model)
    for cell, cls in zip(system.cell, system.cls):
        pool.add(int(cls), cells.leaf[cell])
    lp = _GeneratedLP(pool, float(model.n_rows or 0), deadline)
    lower = np.zeros(system.n_vars, dtype=np.int64) if known is None else known.copy()
    candidates = np.flatnonzero(solution > lower)
    if not candidates.size:
        return Certainty(lower, True, 0)
    joint = np.zeros(system.n_vars)
    joint[candidates] = 1.0
    first = lp.minimum(joint)
    if first is None:
        return Certainty(lower, False, 1)
    candidates = candidates[first[2][candidates] > _TOL]
    if not candidates.size:
        return Certainty(lower, True, 1)
    n_lps, unsettled, done = 1, 0, 0
    with PricingTeam(model, schema, settings.workers) as pricers:
        for j in candidates:
            if time.perf_counter() >= deadline:
                unsettled += 1
                continue
            cost = np.zeros(system.n_vars)
            cost[j] = 1.0
            bound, n_lps = _lagrangian_bound(lp, j, cost, pricers, settings.seed), n_lps + 1
            if bound is None:
                unsettled += 1
            else:
                lower[j] = max(lower[j], int(np.ceil(bound - 1e-6)))
            done += 1
            report(settings.progress, "certainty", done, candidates.size)
    return Certainty(lower, unsettled == 0, n_lps)


class _GeneratedLP:
    """The LP over the generated cells with every (live) count met exactly: its minimum
    of a cost, with the counts' prices, by a deadline; N bounds what it leaves out."""

    def __init__(self, pool: ColumnPool, n_rows: float, deadline: float) -> None:
        self.pool, self.n_rows, self.deadline = pool, n_rows, deadline
        self.live = np.flatnonzero(pool.counts > 0)
        self.b = pool.counts[self.live].astype(np.float64)

    def minimum(self, cost: np.ndarray) -> tuple[float, np.ndarray, np.ndarray] | None:
        """The LP's minimum of ``cost`` (padded to the columns so far), the live counts'
        prices and the solution; None when HiGHS did not finish."""
        from scipy.optimize import linprog

        A = self.pool.matrix()[self.live]
        res = linprog(np.pad(cost, (0, A.shape[1] - cost.size)), A_eq=A, b_eq=self.b,
                      bounds=(0, None), method="highs",
                      options={"time_limit": seconds_until(self.deadline, 0.01,
                                                            time.perf_counter())})
        return None if res.status != 0 else (float(res.fun), res.eqlin.marginals, res.x)


def _lagrangian_bound(
    lp: _GeneratedLP,
    target: int,
    cost: np.ndarray,
    pricers: PricingTeam,
    seed: int,
) -> float | None:
    """``min n_target`` over all datasets, bounded below; None when time ran out."""
    pool, live, deadline = lp.pool, lp.live, lp.deadline
    target_cls, target_leaves = pool.cls[target], pool.leaves[target]
    while time.perf_counter() < deadline:
        optimum = lp.minimum(cost)
        if optimum is None:
            return None
        value, marginals, _ = optimum
        if value <= 1e-9:
            return 0.0  # the generated cells alone can empty it: no proof exists
        prices = np.zeros(pool.counts.size)
        prices[live] = marginals
        A = pool.matrix()[live]
        full_cost = np.pad(cost, (0, A.shape[1] - cost.size))
        reduced = full_cost - A.T @ marginals
        floor, added = min(0.0, float(reduced.min())), 0
        results = pricers.best_each(
            partial(pool.weights, -prices), deadline,
            lambda c: [target_leaves] if c == target_cls else [],
            seed=seed, keep=5, cutoff=-1e-9,
        )
        for c, result in enumerate(results):
            if result is None or not (result[0] or result[2]):
                return None
            found, bound, _ = result
            added += sum(pool.add(c, cell.leaves) for cell in found)
            floor = min(floor, bound)
        if not added:
            return float(marginals @ lp.b) + lp.n_rows * floor
    return None
