"""The reconstruction attack's one entry point.

Which formulation a released forest calls for, and the call. Each formulation lives in a
module of its own:

- ``exact``: every tree saw every row once (`treeleaks.attacks.reconstruction.exact`);
- ``bootstrap-known``: rows drawn with replacement, the draws read from the model
  (`treeleaks.attacks.reconstruction.bootstrap`);
- ``bootstrap-unknown``: the draws inferred (`treeleaks.attacks.reconstruction.bootstrap_unknown`);
- ``dp``: noisy counts (`treeleaks.attacks.reconstruction.dp`);
- ``regression-bootstrap-known``: a regression forest's rows with their targets, draws read
  from the model (`treeleaks.attacks.reconstruction.regression`).
- ``regression-exact``: a regression model whose trees each saw every row once, its rows
  with their targets, target by target (`treeleaks.attacks.reconstruction.regression_exact`).
- ``regression-leaves``: a regression forest grown with limits: one tree's rows, each target
  within what its leaf's mean and variance allow
  (`treeleaks.attacks.reconstruction.regression_leaves`).
- ``regression-boosted``: a boosted regressor's rows with their targets, from its counts and
  leaves' sums of residuals (`treeleaks.attacks.reconstruction.regression_boosted`).

Side knowledge wraps the first two (`treeleaks.attacks.reconstruction.side_knowledge`).
`reconstruct` walks `ROUTES` in order and runs the first formulation that applies, once the options
it does not take are refused (`treeleaks.attacks.reconstruction.route_options.ACCEPTS`, the table
of which route takes which option).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from treeleaks.attacks.reconstruction.bootstrap import has_draws, reconstruct_known_draws
from treeleaks.attacks.reconstruction.bootstrap_unknown import reconstruct_unknown_draws
from treeleaks.attacks.reconstruction.draw_search_stage import reconstruct_drawn_partial
from treeleaks.attacks.reconstruction.exact import reconstruct_exact
from treeleaks.attacks.reconstruction.options import Request, RunOptions, asked, split_options
from treeleaks.attacks.reconstruction.per_row import reconstruct_per_row
from treeleaks.attacks.reconstruction.regression import (
    growth_limit,
    reconstruct_regression,
    refuse_regression,
)
from treeleaks.attacks.reconstruction.regression_boosted import (
    is_boosted_regressor,
    reconstruct_boosted_regression,
)
from treeleaks.attacks.reconstruction.regression_exact import reconstruct_regression_exact
from treeleaks.attacks.reconstruction.regression_leaves import reconstruct_regression_leaves
from treeleaks.attacks.reconstruction.route_options import refuse
from treeleaks.attacks.reconstruction.side_knowledge import (
    bootstrap_with_knowledge,
    exact_with_knowledge,
)
from treeleaks.attacks.reconstruction.uncounted_trees import (
    counted_only,
    has_uncounted,
    reconstruct_with_uncounted,
)
from treeleaks.ir.knowledge import Knowledge
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import Reconstruction
from treeleaks.runtime.errors import BudgetError, CountsRemovedError
from treeleaks.runtime.vocabulary import Formulation, Status, Strategy

# Split columns cutting more than 2**this points: ``auto`` places rows one by one first,
# as the cells would number millions. Figures: docs/lab/2026-11-28-constants.md#attacks-reconstruct
RAW_DOMAIN_BITS = 24
# A bootstrap forest with its draws goes row by row first from this smaller domain on.
# Figures: docs/lab/2026-11-28-constants.md#attacks-reconstruct
ROWS_FIRST_BITS = 12
# Of per-row's time limit, the share kept for the draw search, so a run out of time still
# gives rows. Figures: docs/lab/2026-11-28-constants.md#attacks-reconstruct
SEARCH_RESERVE = 0.1
# The least time left for which the draw search runs when per-row stops early.
MIN_SEARCH_TIME = 1.0


NO_COUNTS = (
    "this model's trees hold no counts (stripped, or a format that keeps none: ONNX, R's "
    "randomForest), so no reconstruction applies; its structure, thresholds and leaf values "
    "remain: 'treeleaks single-out --no-counts' ranks the leaves to guess rows from, and "
    "--data checks them against the training rows")


def reconstruct(model: ReleasedModel, schema: FeatureSchema | None = None,
                **options: Any) -> Reconstruction:
    """Reconstruct the training set of a released tree model.

    The first formulation that applies runs (see the module doc). A run out of time returns
    its best result with status FEASIBLE, or UNKNOWN with what it proved; counts no
    dataset produces give INFEASIBLE.

    Parameters
    ----------
    model : ReleasedModel
        The released model.
    schema : FeatureSchema or None, default None
        The columns' domains. None: what the splits imply; for a DP forest, the public
        domains its file records.
    **options
        The options listed under Notes, by name: each a field of
        `treeleaks.attacks.reconstruction.options.RunOptions` or
        `treeleaks.attacks.reconstruction.options.Request` (their table:
        `treeleaks.attacks.reconstruction.options.OPTIONS`). Which formulation takes which is
        `treeleaks.attacks.reconstruction.route_options.ACCEPTS`.

    Returns
    -------
    Reconstruction
        The rows, the status, the proofs and the certificate.

    Raises
    ------
    BudgetError
        The counts imply more than ``max_rows`` rows.
    KnowledgeError
        The side knowledge does not fit the model or contradicts it.
    SchemaError
        The schema does not match the model.
    UnsupportedModelError
        No formulation reads this model, or it refuses an option given.
    TreeleaksError
        An option does not apply to this model, such as ``n_rows`` for exact counts.
    TypeError
        An option that is not one of these.
    ValueError
        ``strategy`` is unknown.

    Notes
    -----
    The options, each a keyword argument (``name`` (type, default): what it does):

    - ``time_limit`` (float, default 60.0): Seconds for the whole run.
    - ``threads`` (int, default 2): Threads the solvers may use.
    - ``seed`` (int, default 0): The solvers' random seed.
    - ``solver`` (str, default "highs"): ``highs`` or ``cp-sat``, for the exact formulation.
    - ``certainty_time_limit`` (float, default 30.0): Most seconds the proofs use; the
      search keeps ``min(certainty_time_limit, 15% of time_limit)`` for them. Cut short,
      they stay sound.
    - ``strategy`` (str, default "auto"): How the cells are found: ``auto``, ``enumerate``
      (every cell of the trees' common refinement), ``generate`` (cells on demand), or
      ``per-row`` (a bootstrap forest with its draws: no cells, one leaf per row and drawing
      tree).
    - ``cell_budget`` (CellBudget or None, default None): Limits on listing cells (count,
      memory, deadline), for every formulation.
    - ``max_rows`` (int, default 1_000_000): Counts implying more training rows than this
      are refused.
    - ``progress`` (callable or None, default None): Receives
      `treeleaks.runtime.progress.Progress` events.
    - ``knowledge`` (Knowledge or None, default None): Side knowledge (known columns, known
      rows). The rows returned respect it exactly and the proofs hold given it.
    - ``ignore_draws`` (bool, default False): Set a bootstrap forest's draws aside and infer
      them.
    - ``n_rows`` (int or None, default None): A DP forest's number of training rows N.
    - ``n_unknown`` (bool, default False): A DP forest's N is unknown: infer it.
    - ``shrinkage`` (float or None, default None): How far a DP forest's rows are pulled
      toward typical ones; None: the attack's default.
    """
    run, request = split_options("reconstruct", options)
    if model.noise is None and not model.counts_released:
        raise CountsRemovedError(NO_COUNTS)
    route = next(route for route in ROUTES if route.applies(model, request))
    refuse(route.name, model, asked(run, request), route.refuse_model)
    return route.run(model, schema, run, request)


Runner = Callable[[ReleasedModel, FeatureSchema | None, RunOptions, Request], Reconstruction]


@dataclass(frozen=True)
class Route:
    """One formulation: its name, whether it takes a model (given the request), its call.

    The options it takes are `route_options.ACCEPTS[name]`; ``refuse_model`` refuses what
    of the model itself it does not read.
    """

    name: str
    applies: Callable[[ReleasedModel, Request], bool]
    run: Runner
    refuse_model: Callable[[ReleasedModel], None] | None = None


def _regressor(formulation: Callable[[ReleasedModel, FeatureSchema | None, RunOptions],
                                     Reconstruction],
               rows: Callable[[ReleasedModel], int | None]) -> Runner:
    """A regressor's route: ``formulation``, the rows the counts imply (``rows``) in limits."""
    def run_it(model: ReleasedModel, schema: FeatureSchema | None, run: RunOptions,
               request: Request) -> Reconstruction:
        run.check(request.max_rows)
        _refuse_too_many_rows(rows(model), request.max_rows)
        return formulation(model, schema, run)
    return run_it


def _noisy_counts(model: ReleasedModel, schema: FeatureSchema | None, run: RunOptions,
                  request: Request) -> Reconstruction:
    """A DP forest: the most likely dataset (`treeleaks.attacks.reconstruction.dp`)."""
    from treeleaks.attacks.reconstruction.dp import reconstruct_dp  # OR-Tools: loaded when needed

    run.check(request.max_rows)
    bound = (schema if schema is not None else FeatureSchema.for_model(model)).bind(model)
    shrinkage = {} if request.shrinkage is None else {"shrinkage": request.shrinkage}
    return reconstruct_dp(model, bound, run, n_rows=request.n_rows,
                          n_unknown=request.n_unknown, knowledge=request.knowledge,
                          **shrinkage)


def _classifier(formulation: Callable[[ReleasedModel, FeatureSchema, RunOptions, Request],
                                      Reconstruction]) -> Runner:
    """A classifier with exact counts: the run's limits checked, the schema bound, run."""
    def run_it(model: ReleasedModel, schema: FeatureSchema | None, run: RunOptions,
               request: Request) -> Reconstruction:
        run.check(request.max_rows)
        _refuse_too_many_rows(_implied_rows(model), request.max_rows)
        bound = (schema if schema is not None else FeatureSchema.infer(model)).bind(model)
        return formulation(model, bound, run, request)
    return run_it


def _implied_rows(model: ReleasedModel) -> int | None:
    """N as the model implies it: its draws' length, or its counts' total."""
    return len(model.trees[0].draws) if has_draws(model) else model.n_rows


def _per_row(model: ReleasedModel, bound: FeatureSchema, run: RunOptions,
             request: Request) -> Reconstruction:
    return reconstruct_per_row(model, bound, run)


def _unknown_draws(model: ReleasedModel, bound: FeatureSchema, run: RunOptions,
                   request: Request) -> Reconstruction:
    return _draws_unknown(model, bound, run, request.ignore_draws)


def _knowledge(model: ReleasedModel, bound: FeatureSchema, run: RunOptions,
               request: Request) -> Reconstruction:
    assert request.knowledge is not None
    n_rows = _implied_rows(model)
    if has_uncounted(model):  # side knowledge joins the trees with counts
        model = counted_only(model)
    return _with_knowledge(model, bound, request.knowledge, n_rows, run, request.solver,
                           request.strategy)


def _exact(model: ReleasedModel, bound: FeatureSchema, run: RunOptions,
           request: Request) -> Reconstruction:
    # the row search reads every tree's counts, pooled or per class (`has_uncounted` models
    # take another route)
    return reconstruct_exact(model, bound, run, solver=request.solver,
                             strategy=request.strategy,
                             row_search=request.strategy == Strategy.AUTO
                             and raw_measurements(model))


def _counted_rows(model: ReleasedModel) -> int:
    return int(model.trees[0].counts.sum())


def _drawn_rows(model: ReleasedModel) -> int:
    return len(model.trees[0].draws)


def _contradicted(model: ReleasedModel, schema: FeatureSchema | None, run: RunOptions,
                  request: Request) -> Reconstruction:
    """Refuse to certify a file whose stored fields contradict its trees.

    INFEASIBLE, naming the fields.
    """
    return Reconstruction.empty(
        model, status=Status.INFEASIBLE, time_s=0.0,
        message="the model file contradicts itself, so no dataset produces all it stores: "
                + "; ".join(model.contradictions))


# The formulations in the order `reconstruct` tries them: the first that applies runs. A
# name is a key of `route_options.ACCEPTS`: the options the route takes.
ROUTES: tuple[Route, ...] = (
    Route("contradicted", lambda model, _: bool(model.contradictions), _contradicted),
    Route(Formulation.REGRESSION_BOOSTED,
          lambda model, _: model.is_regression and is_boosted_regressor(model),
          _regressor(reconstruct_boosted_regression, _counted_rows)),
    Route(Formulation.REGRESSION_LEAVES,
          lambda model, _: model.is_regression and bool(growth_limit(model)),
          _regressor(reconstruct_regression_leaves, _counted_rows), refuse_regression),
    Route(Formulation.REGRESSION_EXACT,
          lambda model, _: model.is_regression and not model.bootstrap,
          _regressor(reconstruct_regression_exact, _counted_rows), refuse_regression),
    Route(Formulation.REGRESSION_BOOTSTRAP_KNOWN, lambda model, _: model.is_regression,
          _regressor(reconstruct_regression, _drawn_rows), refuse_regression),
    Route(Formulation.DP, lambda model, _: model.noise is not None, _noisy_counts),
    Route("per-row",  # bootstrap-known, one row per (row, drawing tree)
          lambda _, request: request.strategy == Strategy.PER_ROW, _classifier(_per_row)),
    Route(Formulation.BOOTSTRAP_UNKNOWN,
          lambda model, request: model.bootstrap and (request.ignore_draws
                                                      or not has_draws(model)),
          _classifier(_unknown_draws)),
    Route("knowledge",  # exact or bootstrap-known: side knowledge wraps either
          lambda _, request: request.knows, _classifier(_knowledge)),
    Route(Formulation.BOOTSTRAP_KNOWN, lambda model, _: model.bootstrap,
          _classifier(lambda model, bound, run, request: _draws_known(
              model, bound, run, request.strategy))),
    Route("uncounted", lambda model, _: has_uncounted(model),
          _classifier(lambda model, bound, run, request: reconstruct_with_uncounted(
              model, bound, run, request.solver, request.strategy))),
    Route(Formulation.EXACT, lambda *_: True, _classifier(_exact)),
)


def _refuse_too_many_rows(n_rows: int | None, max_rows: int) -> None:
    if n_rows is not None and n_rows > max_rows:
        raise BudgetError(
            f"the counts imply {n_rows:,} training rows, more than the limit of "
            f"{max_rows:,}; raise it (--max-rows) if that size is right: time and memory "
            "grow with it"
        )


def _draws_unknown(model: ReleasedModel, bound: FeatureSchema, run: RunOptions,
                   set_aside: bool) -> Reconstruction:
    """A bootstrap forest without its draws (or with them set aside): draws inferred."""
    reason = ("the draws were set aside (ignore_draws)" if set_aside
              else "this forest does not expose its draws (its random states were not kept)")
    return reconstruct_unknown_draws(model, bound, run, reason=reason)


def _draws_known(model: ReleasedModel, bound: FeatureSchema, run: RunOptions,
                 strategy: str) -> Reconstruction:
    """A bootstrap forest with its draws, rebuilt in training order.

    Over its cells, or (``auto``, when they are too many to list) row by row; on raw
    measurements ``auto`` places rows first, then searches for a partial dataset with the
    time that leaves. When the cells fail for size or time, the fallback sets the draws
    aside.
    """
    if strategy == Strategy.AUTO and raw_measurements(model, ROWS_FIRST_BITS):
        return _rows_then_search(model, bound, run)

    def without_draws(seconds: float, why: str) -> Reconstruction:
        return reconstruct_unknown_draws(model, bound, replace(run, time_limit=seconds),
                                         reason=f"{why}; with the draws set aside")

    def by_rows(seconds: float, why: str) -> Reconstruction | None:
        rec = reconstruct_per_row(model, bound, replace(run, time_limit=seconds))
        return rec if rec.n_rows or rec.status == Status.INFEASIBLE else None

    # the covering problem needs N draws per tree (no max_samples)
    covering = model.facts.get("max_samples") is None
    return reconstruct_known_draws(model, bound, run,
                                   fallback=without_draws if covering else None,
                                   without_cells=by_rows if strategy == Strategy.AUTO
                                   else None)


def _rows_then_search(model: ReleasedModel, bound: FeatureSchema,
                      run: RunOptions) -> Reconstruction:
    """Raw measurements with their draws: row by row, then the draw search.

    Row by row for a complete dataset, then the draw search's partial dataset with the time
    it leaves (see `SEARCH_RESERVE`).
    """
    first = reconstruct_per_row(model, bound, replace(
        run, time_limit=(1 - SEARCH_RESERVE) * run.time_limit))
    left = run.time_limit - first.time_s
    if first.n_rows or first.status == Status.INFEASIBLE:
        return first
    if left < MIN_SEARCH_TIME:
        return replace(first, message=f"{first.message} (this run's --time-limit: "
                       f"{run.time_limit:g} s)")
    rec = reconstruct_drawn_partial(model, bound, replace(run, time_limit=left),
                                    why=f"row by row: {first.message}")
    spent = f" (this run's --time-limit: {run.time_limit:g} s)" if not rec.n_rows else ""
    return replace(rec, time_s=first.time_s + rec.time_s, message=rec.message + spent,
                   timings={**{f"per_row_{k}": v for k, v in first.timings.items()},
                            **rec.timings})


def raw_measurements(model: ReleasedModel, bits: float = RAW_DOMAIN_BITS) -> bool:
    """Whether the trees cut their finely split columns into more than ``2**bits`` points.

    Such are raw measurements, whose cells are out of reach (see `RAW_DOMAIN_BITS`).
    """
    sizes = np.array([cuts.size for cuts in model.thresholds()])
    return float(np.log2(sizes[sizes > 1] + 1).sum()) > bits


def _with_knowledge(model: ReleasedModel, bound: FeatureSchema, knowledge: Knowledge,
                    n_rows: int | None, run: RunOptions, solver: str,
                    strategy: str) -> Reconstruction:
    """Side knowledge around the exact or bootstrap-known formulation.

    ``n_rows``: the N the counts imply, when they do.
    """
    knowledge.check(model, bound, n_rows)
    bound = knowledge.schema_for(bound, model)
    if model.bootstrap:
        return bootstrap_with_knowledge(model, bound, knowledge, lambda inner, boxes, rows: (
            reconstruct_known_draws(inner, bound, run, row_boxes=boxes, known_rows=rows)))
    return exact_with_knowledge(model, bound, knowledge, lambda inner: reconstruct_exact(
        inner, bound, run, solver=solver, strategy=strategy))
