"""Bootstrap regression forests with their draws, row by row without a solver: each row's
target from its draws (`treeleaks.counts.target_draws`), its box from its target's leaves.

Tried before the per-row placement (`treeleaks.attacks.regression`): on continuous
targets every row has a target of its own, which the placement reads as a class of its own
(a thousand rows, a thousand classes: past its candidate guard), while here a row of a
target of its own is the training row whose draws are that target's leaves' draws. The
rows are kept only when every row's target is found and, filled inside their boxes, they
reproduce the regression model (`verify_regression`); otherwise the placement runs.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from treeleaks.attacks.options import RunOptions
from treeleaks.counts.materialize import rows_in_boxes
from treeleaks.counts.target_draws import targets_by_draws
from treeleaks.counts.verify import verify_regression
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import Reconstruction, RegressionDetails
from treeleaks.runtime.clock import RunClock
from treeleaks.runtime.vocabulary import Formulation, Status, Strategy

PROOF = ("none beyond the certificate: each row's target is the value of the leaves whose "
         "draws sum to its own, and every row's leaves meet")


def reconstruct_by_draws(model: ReleasedModel, schema: FeatureSchema, run: RunOptions,
                         share: float) -> Reconstruction | None:
    """Every training row with its target, in training order, verified; or None when a
    row's target is not found within ``share`` of the limit or the rows do not reproduce
    the model (see the module doc). ``schema`` is bound to the model."""
    clock = RunClock(run.time_limit)
    found = targets_by_draws(model, time.monotonic() + share * run.time_limit)
    clock.lap("targets")
    if not found.settled:
        return None
    labelled = replace(model, classes=found.targets.tolist())  # the label: each row's target
    frames = rows_in_boxes(labelled, schema, found.lower, found.upper, found.target,
                           np.zeros(len(found.target), dtype=bool))
    certificate = verify_regression(model, frames["rows"])
    clock.lap("verify")
    if not certificate.verified:
        return None
    n = len(found.target)
    return Reconstruction(
        **frames, status=Status.OPTIMAL, certificate=certificate, time_s=clock.elapsed(),
        timings=clock.timings, solver="", strategy=Strategy.PER_ROW, proof=PROOF,
        formulation=Formulation.REGRESSION_BOOTSTRAP_KNOWN,
        regression=RegressionDetails(targets_exact=n),
        message=(f"every row's target given away exactly ({n} of {n}), at its training "
                 "position, read off the leaves whose draws are its own; every leaf's "
                 "rows, weighted rows and value reproduced"))
