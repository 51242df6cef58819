"""Bootstrap forests with known draws, when no complete dataset is found: the draw search's
partial dataset (issue 38).

Row by row (`treeleaks.attacks.reconstruction.per_row`) needs the rows' classes before it can place
them, and on most real tables the trees' class totals do not settle them: breast cancer's
default forest came back with 0 rows. The draw search (`treeleaks.counts.draw_search`)
moves rows as points with their class instead, and at every moment holds a set of rows at
their training positions within every count. Its rows are filled inside the common box of
their leaves, routed through the model again, and kept only where they land in the leaves
the search gave them, and whose box holds a value the schema allows (the search's grid knows
no one-hot group: a point may set two of its members, or none); the rest are checked leaf
by leaf (`verify_within_draws`), or, all N of them, as a complete dataset (`verify`).
"""

from __future__ import annotations

import numpy as np

from treeleaks.attacks.reconstruction.options import RunOptions
from treeleaks.counts.draw_search import DrawnRows, search_drawn_rows
from treeleaks.counts.materialize import rows_in_boxes
from treeleaks.counts.paths import leaves_of, path_boxes_of
from treeleaks.counts.verify import verify, verify_within_draws
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import BootstrapDetails, Reconstruction
from treeleaks.runtime.clock import RunClock
from treeleaks.runtime.progress import report
from treeleaks.runtime.vocabulary import Formulation, Status, Strategy

PROOF = ("none: rows within every count are not proven training rows; each sits on one "
         "training position's draws (a device of the search, not a claim that it is that "
         "row), its class and values as the search found them")


def reconstruct_drawn_partial(model: ReleasedModel, schema: FeatureSchema, run: RunOptions,
                              why: str = "") -> Reconstruction:
    """The largest partial dataset the draw search finds within ``run.time_limit`` (see the
    module doc); ``why`` says why a complete reconstruction was not had, for the message."""
    clock = RunClock(run.time_limit)
    n = len(model.trees[0].draws)

    def better(found: DrawnRows) -> None:
        report(run.progress, "draw-search", len(found), n, whole_rows=len(found))

    found = search_drawn_rows(model, clock.deadline, seed=run.seed,
                              on_better=better)
    clock.lap("draw_search")
    frames, positions = landed_rows(model, schema, found)
    clock.lap("fill")
    clock.timings.update(searched_rows=len(found), kept_rows=len(positions))
    kept = len(positions)
    if kept == n:  # every row, in training order (the search lists them by position)
        certificate = verify(model, frames["rows"])
    elif kept:
        certificate = verify_within_draws(model, frames["rows"], positions)
    else:  # no row: nothing is checked, and nothing may be called verified
        certificate = None
    clock.lap("verify")
    before = f"{why}; " if why else ""
    dropped = (f"; {len(found) - kept} rows whose values the schema keeps out of their "
               "leaves were dropped" if kept < len(found) else "")
    if certificate is not None and not certificate.verified:
        message = f"the rows exceed a count: {certificate.first_mismatch}"
    elif kept == n:
        message = (f"{before}a complete dataset found by the draw search (rows as points "
                   "with their class), checked against every count; no row is proven")
    elif kept:
        message = (f"{before}a partial dataset: {kept} of {n} rows ({kept / n:.0%}) within "
                   f"every count, found by the draw search "
                   f"in the {run.time_limit:.3g} s it was given{dropped}; their classes "
                   "and values fit the counts, and are not proven")
    else:
        message = (f"{before}the draw search placed no row within every count in the "
                   f"{run.time_limit:.3g} s it was given; a longer --time-limit gives it more")
    return Reconstruction(
        **frames, status=Status.FEASIBLE if kept else Status.UNKNOWN, certificate=certificate,
        time_s=clock.elapsed(), message=message, solver="draw-search", n_cells=0,
        certainty_complete=False, timings=clock.timings, strategy=Strategy.PER_ROW,
        proof=PROOF, formulation=Formulation.BOOTSTRAP_KNOWN,
        partial=0 < kept < n, interrupted=found.interrupted,
        bootstrap=BootstrapDetails(positions=positions))


def landed_rows(model: ReleasedModel, schema: FeatureSchema,
                found: DrawnRows) -> tuple[dict, np.ndarray]:
    """The found rows filled inside their boxes, as the frames of a `Reconstruction`, and
    their training positions; a row whose box holds no value the schema allows (the
    search's grid knows no one-hot group), or whose filled values leave one of its leaves
    (in a tree that drew it), is dropped (any path of the leaf will do)."""
    draws = np.vstack([tree.draws for tree in model.trees]).T
    paths, cls, positions = found.paths, found.cls, found.positions
    while True:
        drawn = draws[positions] > 0
        lower, upper = path_boxes_of(model, paths, drawn)
        frames = rows_in_boxes(model, schema, lower, upper, cls,
                               np.zeros(len(cls), dtype=bool))
        values = frames["rows"][list(model.feature_names)].to_numpy(dtype=float)
        landed = ((model.apply(values) == leaves_of(model, paths)) | ~drawn).all(axis=1)
        landed &= schema.feasible(lower, upper)  # a grid point no row can be (two of a
        if landed.all():  # one-hot group at 1, or none of an exactly-one group) is dropped
            return frames, positions
        paths, cls, positions = paths[landed], cls[landed], positions[landed]

