"""Regression forests with known draws: every row's target, in training order (issue 39,
step 1: a bootstrap forest of fully grown trees, `RandomForestRegressor`'s default).

A fully grown tree's leaves each hold rows of one target, so the forest reads as a
classifier whose classes are its leaf values (`treeleaks.counts.target_classes`), and the
per-row formulation places every (row, drawing tree) pair in a leaf with its target as its
class (`treeleaks.attacks.reconstruction.per_row`): a leaf of one row drawn w times holds a row
that tree drew exactly w times, the leaves of one row share a point, and they all hold its target.
The rows are then checked against the regression model itself (`verify_regression`: every
leaf's distinct rows, weighted rows and value), so a verified result is one whatever the
reading. What step 1 does not read is refused up front (`refuse_regression`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from treeleaks.attacks.reconstruction.options import RunOptions
from treeleaks.attacks.reconstruction.per_row import PROOF, reconstruct_per_row
from treeleaks.attacks.reconstruction.regression_draws import complete_by_draws, partial_by_draws
from treeleaks.attacks.reconstruction.regression_leaves import reads_leaf_intervals
from treeleaks.counts.target_classes import (
    LeafTargets,
    leaf_targets,
    target_class_view,
    unheld_leaf,
)
from treeleaks.counts.target_draws import targets_by_draws
from treeleaks.counts.verify import verify_regression
from treeleaks.ir.description import ModelKind
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import Reconstruction, RegressionDetails
from treeleaks.runtime.clock import RunClock
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.runtime.vocabulary import Formulation, Status

SPLIT_SHARE = 0.2  # of the limit, at most, for splitting the leaves of several targets
DRAWS_SHARE = 0.25  # of what is left, at most, for the targets told apart by their draws
# Most (leaf, target) counts of the per-row placement's classifier view: it holds them
# densely, about three copies of 8 bytes each.
# Figures: docs/lab/2026-11-28-constants.md#attacks-regression
MAX_VIEW_ENTRIES = 20_000_000
MEAN_CRITERIA = ("squared_error", "friedman_mse")  # leaf value: the mean of its targets
# The growth limits that leave leaves of several targets, with the value of no limit.
FULL_GROWTH = {"max_depth": None, "min_samples_split": 2, "min_samples_leaf": 1,
               "min_weight_fraction_leaf": 0.0, "max_leaf_nodes": None,
               "min_impurity_decrease": 0.0, "ccp_alpha": 0.0}
READS = "not supported yet: treeleaks reconstructs regression forests and trees of fully " \
    "grown trees, bootstrap forests with their draws (RandomForestRegressor's and " \
    "ExtraTreesRegressor's defaults, DecisionTreeRegressor)"
REGRESSION_PROOF = (f"{PROOF}; a leaf holds the rows of its value's target (a fully grown "
                    "tree's leaves do, unless rows share every feature: such a leaf, its "
                    "impurity above 0, holds the targets its value, impurity and rows "
                    "allow in one way only, among those other leaves hold)")


def refuse_regression(model: ReleasedModel) -> None:
    """Raise `UnsupportedModelError` naming what of ``model`` step 1 does not read, if
    anything (the options it does not take are
    `treeleaks.attacks.reconstruction.route_options`')."""
    if model.described().kind == ModelKind.GRADIENT_BOOSTED or any(
            tree.values is None for tree in model.trees):
        raise UnsupportedModelError(f"boosted regressors are {READS}")
    if model.bootstrap and any(tree.draws is None or tree.n_samples is None
                               for tree in model.trees):
        raise UnsupportedModelError(f"a regression forest whose draws are not in this file is "
                                    f"{READS}")
    criterion = model.facts.get("criterion", "squared_error")
    if criterion not in MEAN_CRITERIA:
        raise UnsupportedModelError(
            f"criterion {criterion!r} (leaf values that are not the mean of the leaf's "
            f"targets) is {READS}")
    limit = growth_limit(model)
    if limit and not reads_leaf_intervals(model):
        raise UnsupportedModelError(
            f"{limit} leaves leaves of several targets, and this file keeps no leaf "
            f"variance to bound them by, which is {READS}")


def growth_limit(model: ReleasedModel) -> str:
    """The first growth limit the model's facts record (``name=value``), or ""."""
    for name, unlimited in FULL_GROWTH.items():
        if model.facts.get(name, unlimited) != unlimited:
            return f"{name}={model.facts[name]!r}"
    return ""


def reconstruct_regression(model: ReleasedModel, schema: FeatureSchema | None,
                           run: RunOptions) -> Reconstruction:
    """Every training row of a bootstrap regression forest with its target, in training
    order (see the module doc; `refuse_regression` first). ``schema``: unbound, or None to
    infer it from the splits. Rows told apart by their draws come first, with no solver
    (`treeleaks.attacks.reconstruction.regression_draws`); the placement runs when they do not
    settle and every leaf's targets are known, and the rows the draws told are returned when it
    cannot."""
    clock = RunClock(run.time_limit)
    bound = (schema if schema is not None else FeatureSchema.infer(model)).bind(model)
    held = leaf_targets(model, clock.share(SPLIT_SHARE, clock.search_deadline), assume=True)
    clock.lap("leaf targets")
    found = targets_by_draws(model, held, clock.share(DRAWS_SHARE, clock.search_deadline))
    clock.lap("targets")
    complete = complete_by_draws(model, bound, found, clock)
    if complete is not None:
        return complete
    why_not = _why_not_placed(model, held)
    if why_not:
        return partial_by_draws(model, bound, found, clock, why_not)
    view = target_class_view(model, held)
    rest = replace(run, time_limit=max(run.time_limit - clock.elapsed(), 0.1))
    rec = reconstruct_per_row(view, bound.bind(view), rest)
    common = {"formulation": Formulation.REGRESSION_BOOTSTRAP_KNOWN,
              "proof": REGRESSION_PROOF}
    if rec.status == Status.INFEASIBLE and not held.mixed:
        where = "".join(f"; {at}" for at in [unheld_leaf(model, held)] if at)
        return replace(rec, **common, message=(
            f"{rec.message}{where}; read with every leaf's rows sharing its value, as a "
            "fully grown tree's leaves do unless rows share every feature (no leaf's "
            "impurity says they do here)"))
    if not rec.n_rows:
        return partial_by_draws(model, bound, found, clock, (
            f"the placement of the others found no dataset with the {held.mixed} leaves "
            "of several targets split as their values tell (the split is read from the "
            "targets the other leaves hold, not proven)" if rec.status == Status.INFEASIBLE
            else f"the placement of the others: {rec.message}"))
    return _checked(model, rec, held, common)


def _why_not_placed(model: ReleasedModel, held: LeafTargets) -> str:
    """Why the rows the draws did not settle cannot be placed as classes ("" when they
    can): leaves whose targets are not told apart, or a view too large to hold."""
    if held.n_undecided:
        return (f"{held.n_undecided} of the {held.mixed} leaves holding rows that share every "
                "feature with different targets have targets the leaves' values do not tell "
                "apart, so the rows in them are not placed")
    view_size = sum(tree.n_leaves for tree in model.trees) * held.targets.size
    if view_size > MAX_VIEW_ENTRIES:
        return (f"placing the rest row by row would read {held.targets.size:,} targets in "
                f"every leaf ({view_size:,} counts, more than the {MAX_VIEW_ENTRIES:,} kept in "
                "memory)")
    return ""


def _checked(model: ReleasedModel, rec: Reconstruction, held: LeafTargets,
             common: dict) -> Reconstruction:
    """The placement's rows with the regression certificate (targets, values and
    impurities), no proof claimed where a split was assumed, and the message saying so."""
    certificate = verify_regression(model, rec.rows)
    if held.assumed:  # the placement's proofs stand on a split assumed: none is claimed
        rec = replace(rec, proven=np.zeros_like(rec.proven),
                      proven_pattern=np.zeros_like(rec.proven_pattern))
    exact = rec.proven_rows
    if not certificate.verified:
        return replace(rec, **common, certificate=certificate, status=Status.UNKNOWN,
                       message=("the rows do not reproduce the regression model: "
                                f"{certificate.first_mismatch}"))
    if held.assumed:
        message = (f"{rec.n_rows} rows whose targets reproduce every leaf's rows, weighted "
                   f"rows, value and impurity; none proven: {held.assumed} leaf(s) of rows "
                   "sharing every feature were split among the targets their neighbours "
                   "hold, assumed")
    else:
        message = (f"{exact} of {rec.n_rows} rows' targets given away exactly (proven); "
                   "every leaf's rows, weighted rows and value reproduced")
    return replace(rec, **common, certificate=certificate,
                   regression=RegressionDetails(targets_exact=exact), message=message)
