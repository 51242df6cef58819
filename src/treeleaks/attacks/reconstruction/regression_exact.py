"""Regression models whose trees each saw every row once: every row with its target
(issue 39, step 2: `ExtraTreesRegressor`'s defaults, `bootstrap=False` forests, a single
`DecisionTreeRegressor`).

Fully grown, every leaf holds rows of one target, so the rows split by target and each
target's rows are the cells of its own leaves meeting their counts
(`treeleaks.counts.value_cells`); no solver sees more than one target at a time. Rows are
interchangeable here (no draws, no training order). All N rows found are checked against
the regression model itself (`verify_regression`: every leaf's rows and value); fewer,
leaf by leaf within the counts (`verify_regression_within`).
"""

from __future__ import annotations

from dataclasses import replace

from treeleaks.attacks.reconstruction.options import RunOptions
from treeleaks.counts.materialize import rows_in_boxes
from treeleaks.counts.value_cells import TargetRowsInfeasible, rows_by_target
from treeleaks.counts.verify import verify_regression, verify_regression_within
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import Reconstruction, RegressionDetails
from treeleaks.runtime.clock import RunClock
from treeleaks.runtime.vocabulary import Formulation, Status, Strategy

PROOF = ("a row whose target's cells the counts pin (the linear relaxation of its leaves' "
         "counts leaves its cell no other multiplicity), each leaf holding the rows of its "
         "value's target: a fully grown tree's leaves do unless rows share every feature, "
         "and a leaf whose file keeps an impurity above 0 holds the targets its value, "
         "impurity and rows allow in one way only, or is left out")


def reconstruct_regression_exact(model: ReleasedModel, schema: FeatureSchema | None,
                                 run: RunOptions) -> Reconstruction:
    """The training rows of a regression model whose trees each saw every row once, with
    their targets (see the module doc). ``schema``: unbound, or None to infer it."""
    clock = RunClock(run.time_limit)
    bound = (schema if schema is not None else FeatureSchema.infer(model)).bind(model)
    common = {"solver": "highs", "strategy": Strategy.ENUMERATE, "proof": PROOF,
              "formulation": Formulation.REGRESSION_EXACT}
    try:
        found = rows_by_target(model, clock.search_deadline, bound.feasibility())
    except TargetRowsInfeasible as exc:
        return Reconstruction.empty(model, status=Status.INFEASIBLE, time_s=clock.elapsed(),
                                    message=str(exc), timings=clock.timings, **common)
    clock.lap("targets")
    labelled = replace(model, classes=found.targets.tolist())  # the label: each row's target
    frames = rows_in_boxes(labelled, bound, found.lower, found.upper, found.target,
                           found.proven)
    n = int(model.trees[0].counts[:, 0].sum())
    complete = len(found.target) == n
    certificate = (verify_regression(model, frames["rows"]) if complete
                   else verify_regression_within(model, frames["rows"]))
    clock.lap("verify")
    proven = int(found.proven.sum())
    if not certificate.verified:
        return Reconstruction(**frames, status=Status.UNKNOWN, certificate=certificate,
                              time_s=clock.elapsed(), timings=clock.timings, **common,
                              message=("the rows do not reproduce the regression model: "
                                       f"{certificate.first_mismatch}"))
    rows = len(found.target)
    if complete:
        message = (f"every row's target given away exactly ({n} of {n}), {proven} rows "
                   "proven; every leaf's rows and value reproduced")
    else:
        why = ("the time limit cut the search" if found.out_of_time else
               "a leaf holds rows of several targets (rows that share every feature, or a "
               "split the tree did not make: its impurity says so, or its counts differ "
               "between trees)")
        message = (f"{rows} of {n} rows ({rows / n:.0%}) with their exact target, "
                   f"{proven} proven; the rows of {len(found.left_out)} target values are "
                   f"left out: {why}; the rows found are within every leaf's count")
    return Reconstruction(**frames, status=Status.OPTIMAL if complete else Status.FEASIBLE,
                          certificate=certificate, time_s=clock.elapsed(),
                          timings=clock.timings, message=message, n_cells=rows,
                          certainty_complete=complete, partial=not complete,
                          regression=RegressionDetails(targets_exact=rows), **common)

