"""The exact reconstruction's row search: rows as points, for raw measurements (issue 29).

On raw numerical columns cell generation places most rows and then stalls: on breast
cancer without bootstrap its best partial dataset holds 81% of the rows after 120 s. The
row search (`treeleaks.counts.row_search`) starts from generation's rows and moves rows
as points until the limit; whatever it holds is within every count at every moment. Its
rows are filled inside their boxes as any cells' rows are, routed through the model again,
and kept only where they land in the leaves the search gave them (a schema's ranges or
groups can leave a box empty that the search's grid does not know). N rows kept form a
complete dataset, checked as one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from treeleaks.counts.cells import Cells
from treeleaks.counts.materialize import rows_from_counts
from treeleaks.counts.paths import leaves_of, path_boxes_of
from treeleaks.counts.row_search import search_rows
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.runtime.progress import ProgressCallback, report

if TYPE_CHECKING:
    from treeleaks.counts.generate import Generated


def generated_rows(generated: Generated) -> tuple[np.ndarray, np.ndarray, int]:
    """Generation's best partial dataset as rows ``(leaves, cls)``, the pinned rows first,
    and how many are pinned."""
    order = np.concatenate([np.repeat(np.arange(generated.pinned.size), generated.pinned),
                            np.repeat(np.arange(generated.partial.size),
                                      generated.partial - generated.pinned)])
    leaves = generated.cells.leaf[generated.column_cell[order]].astype(np.int64)
    return leaves, generated.column_cls[order].astype(np.int64), int(generated.pinned.sum())


def searched_rows(model: ReleasedModel, schema: FeatureSchema, deadline: float, seed: int,
                  start: tuple[np.ndarray, np.ndarray], pinned: int,
                  progress: ProgressCallback | None) -> tuple[dict, int]:
    """The row search's rows from ``start`` until ``deadline`` (``time.perf_counter()``), as
    the frames of a `Reconstruction` (`rows_from_counts`), and how many rows it found
    before those whose box holds no value the schema allows (the search knows no one-hot
    group) or whose filled values left their leaves were dropped (a row is kept in any
    path of its leaf)."""
    def better(leaves: np.ndarray, cls: np.ndarray) -> None:
        report(progress, "row-search", len(cls), model.n_rows, whole_rows=len(cls))

    paths, cls = search_rows(model, deadline, seed=seed, start=start, pinned=pinned,
                             on_better=better)
    found = len(cls)
    while True:  # fill, route again, drop the rows that left their leaves
        recon, paths, cls = _frames(model, schema, paths, cls, pinned)
        features = recon["rows"][list(model.feature_names)].to_numpy(dtype=float)
        landed = (model.apply(features) == leaves_of(model, paths)).all(axis=1)
        landed &= schema.feasible(*path_boxes_of(model, paths))  # what no row can be
        if landed.all():
            return recon, found
        pinned = int(landed[recon["proven_pattern"]].sum())
        keep = np.argsort(~recon["proven_pattern"][landed], kind="stable")  # pinned first
        paths, cls = paths[landed][keep], cls[landed][keep]


def _frames(model: ReleasedModel, schema: FeatureSchema, paths: np.ndarray, cls: np.ndarray,
            pinned: int) -> tuple[dict, np.ndarray, np.ndarray]:
    """Rows ``(paths, cls)`` (the first ``pinned`` proven) filled inside their boxes, and
    each filled row's paths and class, in the order of the frames."""
    unique, cell_of = np.unique(paths, axis=0, return_inverse=True)
    variables, var_of = np.unique(np.column_stack([cell_of.ravel(), cls]), axis=0,
                                  return_inverse=True)
    var_of = var_of.ravel()
    counts = np.bincount(var_of, minlength=len(variables))
    proven = np.bincount(var_of[:pinned], minlength=len(variables))
    allowed = np.zeros((len(unique), model.n_classes), dtype=bool)
    allowed[variables[:, 0], variables[:, 1]] = True
    cells = Cells(*path_boxes_of(model, unique), allowed,
                  leaves_of(model, unique).astype(np.int32))
    recon = rows_from_counts(model, schema, cells, variables[:, 0], variables[:, 1], counts,
                             proven, with_width=True)
    return (recon, unique[np.repeat(variables[:, 0], counts)],
            np.repeat(variables[:, 1], counts))
