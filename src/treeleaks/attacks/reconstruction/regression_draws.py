"""Bootstrap regression forests with their draws, row by row without a solver: each row's
target from its draws (`treeleaks.counts.target_draws`), its box from its target's leaves.

Tried before the per-row placement (`treeleaks.attacks.reconstruction.regression`): on continuous
targets every row has a target of its own, which the placement reads as a class of its own
(a thousand rows, a thousand classes: past its candidate guard), while here a row of a
target of its own is the training row whose draws are that target's leaves' draws. The
rows are kept as the answer when every row's target is found and, filled inside their
boxes, they reproduce the regression model (`verify_regression`); otherwise the placement
runs, and the rows found are what is returned when it cannot (`partial_by_draws`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from treeleaks.counts.materialize import rows_in_boxes
from treeleaks.counts.target_draws import DrawnTargets
from treeleaks.counts.verify import verify_regression, verify_regression_within
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import BootstrapDetails, Reconstruction, RegressionDetails
from treeleaks.runtime.clock import RunClock
from treeleaks.runtime.vocabulary import Formulation, Status, Strategy

PROOF = ("none beyond the certificate: each row's target is the value of the leaves whose "
         "draws sum to its own, and every row's leaves meet")
COMMON = {"solver": "", "strategy": Strategy.PER_ROW, "proof": PROOF,
          "formulation": Formulation.REGRESSION_BOOTSTRAP_KNOWN}


def complete_by_draws(model: ReleasedModel, schema: FeatureSchema, found: DrawnTargets,
                      clock: RunClock) -> Reconstruction | None:
    """Every training row with its target, in training order, verified; or None when some
    row's target was not found or the rows do not reproduce the model (see the module
    doc). ``schema`` is bound to the model."""
    if not found.settled:
        return None
    frames = _frames(model, schema, found, np.arange(len(found.target)))
    certificate = verify_regression(model, frames["rows"])
    clock.lap("verify")
    if not certificate.verified:
        return None
    n = len(found.target)
    return Reconstruction(
        **frames, status=Status.OPTIMAL, certificate=certificate, time_s=clock.elapsed(),
        timings=clock.timings, **COMMON, regression=RegressionDetails(targets_exact=n),
        message=(f"every row's target given away exactly ({n} of {n}), at its training "
                 "position, read off the leaves whose draws are its own; every leaf's "
                 "rows, weighted rows and value reproduced"))


def partial_by_draws(model: ReleasedModel, schema: FeatureSchema, found: DrawnTargets,
                     clock: RunClock, why: str) -> Reconstruction:
    """The rows whose target the draws told, at their training positions, checked within
    every leaf's draws, distinct rows and value (`verify_regression_within`); ``why``: why
    the rest were not placed. FEASIBLE and partial when they check, UNKNOWN otherwise (or
    with no row)."""
    positions = np.flatnonzero(found.target >= 0)
    n, rows = len(found.target), len(positions)
    if not rows:
        return Reconstruction.empty(model, status=Status.UNKNOWN, time_s=clock.elapsed(),
                                    timings=clock.timings, **COMMON, message=(
                                        f"{why}; no row's target is told by its draws"))
    frames = _frames(model, schema, found, positions)
    certificate = verify_regression_within(model, frames["rows"], positions)
    read_whole = certificate.verified  # else the reading contradicts itself somewhere
    if not read_whole:  # keep the rows that fit together, drop the others
        kept = _fitting(model, frames["rows"], positions, np.arange(rows))
        if not len(kept):
            return Reconstruction.empty(
                model, status=Status.UNKNOWN, time_s=clock.elapsed(), timings=clock.timings,
                **COMMON, message=f"{why}; no row the draws were read to give fits the model")
        positions = positions[kept]
        rows = len(positions)
        frames = _frames(model, schema, found, positions)
        certificate = verify_regression_within(model, frames["rows"], positions)
    clock.lap("verify")
    checked = ("within every leaf's draws, distinct rows and value" if certificate.verified
               else f"but they do not fit the model: {certificate.first_mismatch}")
    exact = rows if certificate.verified and read_whole else 0
    targets = ("with their exact target, read off the leaves whose draws are their own"
               if exact else "with the targets their draws were read to have (not proven: "
               "the reading put more rows in some leaf than it holds, and the rows that did "
               "not fit were dropped)")
    return Reconstruction(
        **frames, status=Status.FEASIBLE if certificate.verified else Status.UNKNOWN,
        certificate=certificate, time_s=clock.elapsed(), timings=clock.timings, **COMMON,
        partial=True, n_cells=rows, certainty_complete=False,
        bootstrap=BootstrapDetails(positions=positions),
        regression=RegressionDetails(targets_exact=exact),
        message=(f"{rows} of {n} rows ({rows / n:.0%}) at their training positions "
                 f"{targets}, {checked}; {why}"))


def _fitting(model: ReleasedModel, rows: pd.DataFrame, positions: np.ndarray,
             candidates: np.ndarray, kept: np.ndarray | None = None) -> np.ndarray:
    """The candidates (indices into ``rows``) that fit within every count together with
    ``kept``: a block that fits is kept whole, one that does not is halved, a single row
    that does not is dropped (verifications grow with the rows dropped, not with N)."""
    kept = np.zeros(0, dtype=np.int64) if kept is None else kept
    if not len(candidates):
        return kept
    trial = np.concatenate([kept, candidates])
    if verify_regression_within(model, rows.iloc[trial], positions[trial]).verified:
        return trial
    if len(candidates) == 1:
        return kept
    half = len(candidates) // 2
    kept = _fitting(model, rows, positions, candidates[:half], kept)
    return _fitting(model, rows, positions, candidates[half:], kept)


def _frames(model: ReleasedModel, schema: FeatureSchema, found: DrawnTargets,
            positions: np.ndarray) -> dict:
    """The frames of the rows at ``positions``, filled inside their boxes, labelled with
    their targets."""
    labelled = replace(model, classes=found.targets.tolist())  # the label: each row's target
    return rows_in_boxes(labelled, schema, found.lower[positions], found.upper[positions],
                         found.target[positions], np.zeros(len(positions), dtype=bool))
