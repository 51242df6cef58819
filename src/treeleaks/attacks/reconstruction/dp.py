"""Reconstruction from a differentially private forest: the most likely training set.

A DP forest releases every leaf's per-class count with Laplace noise, truncated to an
integer, so no dataset need reproduce the counts; the attack returns the dataset whose
implied counts make the released ones most likely (Gorgé, Ferry, Gambs & Vidal, SaTML
2026). It runs on the engine's cells: the trees' splits cut the schema's domain into cells
(every class may lie anywhere, since a noisy 0 may hide rows), one variable counts the rows
of each (cell, class), and `treeleaks.counts.noisy_solve` maximises the exact
log-likelihood over those counts. Rows that are known in full (the informed adversary)
are taken out of the unknowns and counted in every leaf they reach, and what they say
about typical rows becomes a prior on the rest (`treeleaks.attacks.marginal_prior`): the
most probable dataset given the counts and the known rows.

Without known rows, the most likely dataset fits the noise: a count pushed up draws rows
into its leaf. So the search runs twice: the most likely dataset first, then the most
probable one under a prior fitted on it (its columns' frequencies, the same prior as known
rows give) at half weight, which pulls rows toward typical values. One round of empirical
Bayes; the half weight was measured, not derived (COMPAS and Adult, T=10, d=5, N=100, six
seeds: mean error 0.143 -> 0.131 at eps=1, 0.063 -> 0.051 at eps=5, 0.018 -> 0.016 at
eps=30 on COMPAS; Adult 0.091 -> 0.081 at eps=5 and 0.160 -> 0.166 at eps=1, its one loss;
weight 1 made COMPAS at eps=1 worse, 0.162). ``shrinkage=0`` returns the most likely
dataset itself.

N, the number of training rows, is known by default (the trainer records it; a DP
release treats it as public). With ``n_unknown`` it is estimated from the noisy totals
(`n_rows_interval`: each tree's counts add up to N plus its noise), and the bounds around
the estimate are reported. The estimate is used as N rather than letting the solver pick
the most likely N within the bounds, as the SaTML study does: that choice runs to the
upper bound, because extra rows can always explain a count the noise pushed up while no
row can be taken out of an empty leaf whose count the noise pushed down (measured on
COMPAS, T=10, d=5: N=100 became 120-228, where the estimate gave 91-120 at eps=1 and
98-104 at eps=5).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import scipy.sparse as sp

from treeleaks.attacks.marginal_prior import marginal_log_prior, posterior_row
from treeleaks.attacks.reconstruction.options import RunOptions
from treeleaks.attacks.reconstruction.side_knowledge import with_known_rows
from treeleaks.counts.cell_pool import CellPool
from treeleaks.counts.cells import (
    CellBudget,
    CellBudgetExceeded,
    Cells,
    EveryClassOccupancy,
    enumerate_cells,
)
from treeleaks.counts.materialize import rows_from_counts
from treeleaks.counts.noise import log_mass
from treeleaks.counts.noisy_solve import NoisyCounts, most_likely, row_gains
from treeleaks.counts.system import count_incidence
from treeleaks.ir.description import noisy_row_bounds
from treeleaks.ir.knowledge import Knowledge, KnowledgeError
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import DPDetails, Reconstruction
from treeleaks.runtime.clock import RunClock
from treeleaks.runtime.errors import TreeleaksError, UnsupportedModelError
from treeleaks.runtime.progress import report
from treeleaks.runtime.vocabulary import Formulation, Status, Strategy

FORMULATION = Formulation.DP
ENUMERATION_SHARE = 0.25  # of the time limit, at most, for listing cells
SHRINKAGE = 0.5  # weight of the prior fitted on the most likely dataset (see the module doc)


@dataclass(frozen=True)
class RowCountBounds:
    """Bounds on the training-set size N from the noisy per-tree totals, and their centre."""

    low: int
    high: int
    estimate: float


def n_rows_interval(model: ReleasedModel) -> RowCountBounds:
    """Bounds on N from the released counts alone (`noisy_row_bounds` says how)."""
    return RowCountBounds(*noisy_row_bounds(model.trees, _scale(model)))


def reconstruct_dp(
    model: ReleasedModel,
    schema: FeatureSchema,
    run: RunOptions,
    *,
    n_rows: int | None = None,
    n_unknown: bool = False,
    knowledge: Knowledge | None = None,
    shrinkage: float = SHRINKAGE,
) -> Reconstruction:
    """The most likely training set of a DP forest (``model.noise`` set), within
    ``run.time_limit`` seconds, shrunk toward typical rows (``shrinkage``, see the module
    docstring; 0 returns the most likely dataset itself).

    N is ``n_rows``, else the ``n_rows`` the model's facts state; with ``n_unknown`` it is
    estimated (`n_rows_interval`). ``knowledge`` may hold known rows (every feature and the
    label), which are returned after the reconstructed ones. Cells are listed within
    ``run.cell_budget`` and generated by pricing beyond it (with ``run.seed`` and
    ``run.threads``). The status is ``OPTIMAL`` when the last search proved no dataset
    better under its objective, else ``FEASIBLE``; a complete dataset is always returned.
    """
    time_limit, progress = run.time_limit, run.progress
    clock = RunClock(time_limit)
    scale = _scale(model)
    known = _known_rows(model, schema, knowledge)
    bounds = n_rows_interval(model)
    to_find = _rows_to_find(model, n_rows, n_unknown, bounds,
                            0 if known is None else len(known[0]))
    problem = _noisy_counts(model, known, scale)
    prior = _FittedPrior(model, schema, known)
    cells, strategy, pool = _cells_or_pool(model, schema, run, clock, prior)
    clock.lap("cells")
    try:
        problem, cells = _with_variables(problem, cells, pool, model, prior, clock.deadline)
        report(progress, "solve", 0, None, variables=int(problem.A.shape[1]))
        space = _Space(model, schema, pool, prior)
        found = _searched(space, problem, cells, known, to_find, shrinkage, clock)
    finally:
        if pool is not None:
            clock.timings["pricing_calls"] = pool.pricing_calls
            pool.close()
    clock.timings.update(found.timings)
    frames = _with_known(found.frames, model, knowledge)
    report(progress, "verify", 0, None)
    checked = _rows_log_likelihood(model, frames["rows"], scale)
    consistent = math.isclose(checked, found.log_likelihood, rel_tol=1e-9, abs_tol=1e-6)
    return Reconstruction(
        **frames,
        status=found.status,
        certificate=None,
        time_s=clock.elapsed(),
        message=_notes(found, checked, consistent),
        objective=found.objective,
        solver="highs",
        n_cells=found.n_cells,
        timings=clock.timings,
        strategy=strategy,
        proof="",
        formulation=FORMULATION,
        knowledge="" if known is None else (
            f"{knowledge.describe()}, and their columns' frequencies as a prior on the rest"),
        dp=DPDetails(
            log_likelihood=checked,
            likelihood_checked=consistent,
            first_solution_s=found.first_solution_s,
            log_likelihood_bound=found.bound if known is None else None,
            n_rows_interval=(bounds.low, bounds.high) if n_unknown else None,
        ),
    )


def _noisy_counts(model: ReleasedModel, known: tuple[np.ndarray, np.ndarray] | None,
                  scale: float) -> NoisyCounts:
    """The noisy-count problem before its variables: the released counts, offset by what
    the known rows put in each leaf."""
    offset = np.zeros(sum(t.counts.size for t in model.trees), dtype=np.int64)
    if known is not None:
        offset = _flat(model.leaf_counts_of(*known))
    return NoisyCounts(sp.csr_matrix((offset.size, 0), dtype=np.int64),
                       _flat([t.counts for t in model.trees]), offset, scale, np.zeros(0))


class _FittedPrior:
    """The prior on each (cell, class) fitted on some rows (the known ones at first, the
    most likely dataset's when shrinking), at a weight; none without rows."""

    def __init__(self, model: ReleasedModel, schema: FeatureSchema,
                 rows: tuple[np.ndarray, np.ndarray] | None) -> None:
        self.model, self.schema = model, schema
        self.rows, self.weight = rows, 1.0

    def refit(self, rows: pd.DataFrame, weight: float) -> None:
        """Fit the prior on ``rows`` instead, at ``weight``."""
        self.rows = (rows[list(self.model.feature_names)].to_numpy(dtype=np.float64),
                     rows[self.model.label_name].to_numpy())
        self.weight = weight

    def __call__(self, cells: Cells) -> np.ndarray:
        """Per variable of ``cells`` (cell-major): the prior's log-probability."""
        if self.rows is None:
            return np.zeros(len(cells) * self.model.n_classes)
        return self.weight * marginal_log_prior(cells, self.schema, self.model,
                                                *self.rows).ravel()


@dataclass(frozen=True)
class _Space:
    """What every search of one run shares: the model, its schema, the cell pool when
    cells are generated (None when listed) and the prior."""

    model: ReleasedModel
    schema: FeatureSchema
    pool: CellPool | None
    prior: _FittedPrior


def _cells_or_pool(model: ReleasedModel, schema: FeatureSchema, run: RunOptions,
                   clock: RunClock,
                   prior: _FittedPrior) -> tuple[Cells | None, Strategy, CellPool | None]:
    """Every cell when they can be listed within the budget and `ENUMERATION_SHARE` of the
    time, else a pool that generates them by pricing (and no cells yet)."""
    limits = replace(run.cell_budget or CellBudget(),
                     deadline=clock.start + ENUMERATION_SHARE * float(run.time_limit))
    try:
        cells = enumerate_cells(model, schema, limits, run.progress,
                                occupancy=EveryClassOccupancy(model))
        return cells, Strategy.ENUMERATE, None
    except CellBudgetExceeded:
        return None, Strategy.GENERATE, CellPool(model, schema, run.seed, run.threads, prior)


def _with_variables(problem: NoisyCounts, cells: Cells | None, pool: CellPool | None,
                    model: ReleasedModel, prior: _FittedPrior,
                    deadline: float) -> tuple[NoisyCounts, Cells]:
    """The problem with one variable per allowed (cell, class) and their prior, and the
    cells; a pool with no cells yet first prices the best cells for a first row."""
    if pool is None:
        var_cell, var_cls = np.nonzero(cells.allowed)
        return replace(problem, A=count_incidence(model, cells.leaf[var_cell], var_cls),
                       prior=prior(cells)), cells
    if not len(pool):  # no domain to sample: the best cells for a first row
        pool.price(row_gains(problem, 0), -np.inf, deadline)
    cells = pool.cells()
    return replace(problem, A=pool.incidence(np.arange(len(pool))), prior=prior(cells)), cells


def _searched(space: _Space, problem: NoisyCounts, cells: Cells,
              known: tuple[np.ndarray, np.ndarray] | None, to_find: int, shrinkage: float,
              clock: RunClock) -> _Found:
    """The rows to find: the one unknown row's posterior beside known rows, the most likely
    dataset with known rows or no shrinkage, else the most likely dataset shrunk."""
    model, schema, pool = space.model, space.schema, space.pool
    if known is not None and to_find == 1:
        return _one_row(problem, cells, schema, model, known, clock.start)
    if known is not None or not shrinkage:
        return _most_likely_rows(problem, to_find, clock.deadline, clock.start, cells, pool,
                                 schema, model)
    return _shrunk_search(space, problem, cells, to_find, shrinkage, clock)


def _shrunk_search(space: _Space, problem: NoisyCounts, cells: Cells, to_find: int,
                   shrinkage: float, clock: RunClock) -> _Found:
    """The most likely dataset in the first half of the time, then the most probable one
    under a prior fitted on it at weight ``shrinkage`` (see the module doc)."""
    model, schema, pool = space.model, space.schema, space.pool
    first_half = clock.share(0.5)
    likeliest = _most_likely_rows(problem, to_find, first_half, clock.start, cells, pool,
                                  schema, model)
    space.prior.refit(likeliest.frames["rows"], float(shrinkage))
    if pool is not None:
        cells = pool.cells()
        problem = replace(problem, A=pool.incidence(np.arange(len(pool))))
    found = _most_likely_rows(replace(problem, prior=space.prior(cells)), to_find,
                              clock.deadline, clock.start, cells, pool, schema, model)
    return _shrunk(found, likeliest, shrinkage)


def _notes(found: _Found, checked: float, consistent: bool) -> str:
    """The run's message: the search's note, and a mismatch of the recomputed
    log-likelihood with the solver's."""
    notes = [found.note] if found.note else []
    if not consistent:
        notes.append(f"the rows' log-likelihood {checked:.6f} differs from the solver's "
                     f"{found.log_likelihood:.6f}: a bug, please report it")
    return "; ".join(notes)


def _shrunk(found: _Found, likeliest: _Found, shrinkage: float) -> _Found:
    """The shrunk search's rows, with the most likely dataset's first-solution time and
    its bound (the bound on any dataset's log-likelihood), and a note saying so."""
    return replace(found, first_solution_s=likeliest.first_solution_s, bound=likeliest.bound,
                   timings={**likeliest.timings, **{f"shrunk_{k}": v
                                                     for k, v in found.timings.items()}},
                   note=(f"shrunk toward the column frequencies of the most likely dataset "
                         f"(weight {shrinkage:g}): log-likelihood "
                         f"{found.log_likelihood:.3f}, the most likely "
                         f"{likeliest.log_likelihood:.3f}"))


@dataclass
class _Found:
    """The rows a search found (the frames of a `Reconstruction`) and its figures."""

    frames: dict
    status: Status
    log_likelihood: float
    objective: float | None
    bound: float | None
    first_solution_s: float
    n_cells: int
    timings: dict[str, float]
    note: str = ""


def _most_likely_rows(problem: NoisyCounts, n_rows: int, deadline: float, start: float,
                      cells: Cells, pool: CellPool | None, schema: FeatureSchema,
                      model: ReleasedModel) -> _Found:
    """The most probable dataset (`most_likely`), with cells generated on demand when the
    pool is given, as rows."""
    extend = None if pool is None else pool.price
    solution = most_likely(problem, n_rows, deadline, start, extend)
    if pool is not None:
        cells = pool.cells()
    var_cell, var_cls = np.divmod(np.arange(solution.counts.size), model.n_classes)
    frames = rows_from_counts(model, schema, cells, var_cell, var_cls, solution.counts,
                              np.zeros(var_cell.size, dtype=np.int64), with_width=True)
    return _Found(frames, Status.solved(solution.status), solution.log_likelihood,
                  solution.objective, solution.bound, solution.first_solution_s, len(cells),
                  solution.timings)


def _one_row(problem: NoisyCounts, cells: Cells, schema: FeatureSchema, model: ReleasedModel,
             known: tuple[np.ndarray, np.ndarray], start: float) -> _Found:
    """The informed adversary's one unknown row, value by value from its exact posterior
    over the cells (`posterior_row`): fewer wrong values expected than the most probable
    row gives."""
    log_weight = problem.A.T @ row_gains(problem, 0) + problem.prior
    values, sure, cls = posterior_row(cells, log_weight, schema, model, *known)
    names = list(model.feature_names)
    low, high = schema.range_arrays()
    certain = sure >= 1.0 - 1e-9
    rows = pd.DataFrame([values], columns=names)
    rows[model.label_name] = [model.classes[cls]]
    frames = {"rows": rows, "free": pd.DataFrame([~certain], columns=names),
              "lower": pd.DataFrame([np.where(certain, values, low)], columns=names),
              "upper": pd.DataFrame([np.where(certain, values, high)], columns=names),
              "width": pd.DataFrame([np.full(len(names), np.nan)], columns=names)}
    X = values[None, :]
    implied = _flat(model.leaf_counts_of(X, rows[model.label_name].to_numpy()))
    elapsed = time.perf_counter() - start
    return _Found(frames, Status.OPTIMAL, problem.log_likelihood(implied), None, None, elapsed,
                  len(cells), {"first_solution": elapsed},
                  note=("one unknown row: each value is the most probable given the counts "
                        f"and the known rows (exact posterior over {len(cells):,} cells); "
                        "'free' marks values that are not certain"))


def _scale(model: ReleasedModel) -> float:
    if model.noise is None or model.noise.kind != "laplace":
        raise UnsupportedModelError(
            "the DP attack needs counts released with Laplace noise; this model "
            + ("has exact counts: use the exact reconstruction" if model.noise is None
               else f"uses {model.noise.kind!r} noise"))
    return float(model.noise.scale)


def _rows_to_find(model: ReleasedModel, n_rows: int | None, n_unknown: bool,
                  bounds: RowCountBounds, n_known: int) -> int:
    """The number of rows left to reconstruct (besides the known ones)."""
    if n_unknown:
        if n_rows is not None:
            raise TreeleaksError("give N (n_rows) or ask for it to be inferred (n_unknown), "
                                 "not both")
        return max(round(bounds.estimate), n_known, 1) - n_known
    stated = model.facts.get("n_rows")
    n = n_rows if n_rows is not None else stated
    if n is None:
        raise TreeleaksError(
            "this DP model does not state its training-set size N: give it (--n-rows N) or "
            "let the attack infer it from the noisy counts (--n-unknown)")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise TreeleaksError(f"N must be a whole number of rows, 1 or more, got {n!r}")
    if n < n_known:
        raise KnowledgeError(f"{n_known} known rows, but N is {n}: give at most {n}")
    return int(n) - n_known


def _known_rows(model: ReleasedModel, schema: FeatureSchema,
                knowledge: Knowledge | None) -> tuple[np.ndarray, np.ndarray] | None:
    if knowledge is None or knowledge.empty:
        return None
    if knowledge.columns is not None:
        raise KnowledgeError("known columns are not supported for DP forests yet; give "
                             "known rows in full (--known-rows)")
    knowledge.check(model, schema, len(knowledge.rows))
    X = knowledge.rows[list(model.feature_names)].to_numpy(dtype=np.float64)
    return X, knowledge.rows[model.label_name].to_numpy()


def _flat(per_tree: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([np.asarray(c).ravel() for c in per_tree]).astype(np.int64)


def _with_known(found: dict, model: ReleasedModel, knowledge: Knowledge | None) -> dict:
    """The found frames with the known rows after them; no row is proven (noisy counts
    prove nothing, and known rows were given, not found)."""
    frames = dict(found)
    if knowledge is not None and knowledge.rows is not None and len(knowledge.rows):
        frames = with_known_rows(frames, model, knowledge.rows)
    frames["proven"] = np.zeros(len(frames["rows"]), dtype=bool)
    frames["proven_pattern"] = frames["proven"].copy()
    return frames


def _rows_log_likelihood(model: ReleasedModel, rows: pd.DataFrame, scale: float) -> float:
    """The log-likelihood of the released counts given ``rows``, recomputed by routing the
    rows through every tree: an independent check of the solver's figure."""
    X = rows[list(model.feature_names)].to_numpy(dtype=np.float64)
    implied = _flat(model.leaf_counts_of(X, rows[model.label_name].to_numpy()))
    released = _flat([t.counts for t in model.trees])
    return float(log_mass(released, implied, scale).sum())
