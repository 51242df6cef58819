"""Turn cell counts into rows: pin what the cell and the schema determine, fill the rest.

A cell fixes a feature when only one value the schema allows lies in its interval (a
one-hot group can fix members the box leaves open: if one member is forced to 1, the
others are 0). Features left open are filled with the value most common among the
reconstructed rows where that feature *is* determined (a prior fitted on the cells), or
the middle of the cell's interval for ordinal and numerical features, and flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from treeleaks.cells import Cells
from treeleaks.model import ReleasedModel
from treeleaks.schema import FeatureSchema


@dataclass
class CellValues:
    """Per-cell ``determined`` mask and ``value`` (filled where not determined), ``(K, M)``."""

    determined: np.ndarray
    value: np.ndarray
    low: np.ndarray
    high: np.ndarray


def cell_values(
    schema: FeatureSchema, lower: np.ndarray, upper: np.ndarray, weight: np.ndarray
) -> CellValues:
    """Resolve each cell's features; ``weight`` (rows per cell) fits the fill prior."""
    k, m = lower.shape
    kinds = schema.kind_array()
    range_low, range_high = schema.range_arrays()
    low = np.maximum(lower, range_low)
    high = np.minimum(upper, range_high)
    determined = np.zeros((k, m), dtype=bool)
    value = np.full((k, m), np.nan)

    can0, can1 = schema.binary_options(lower, upper)
    binary = kinds == "binary"
    _resolve_groups(schema, can0, can1)
    determined[:, binary] = (can0 ^ can1)[:, binary]
    value[:, binary] = np.where(can1[:, binary] & ~can0[:, binary], 1.0, 0.0)
    low[:, binary], high[:, binary] = np.where(can0, 0.0, 1.0)[:, binary], np.where(
        can1, 1.0, 0.0
    )[:, binary]

    ordinal = kinds == "ordinal"
    first = np.maximum(range_low[ordinal], np.floor(lower[:, ordinal]) + 1)
    last = np.minimum(range_high[ordinal], np.floor(upper[:, ordinal]))
    low[:, ordinal], high[:, ordinal] = first, last
    determined[:, ordinal] = first == last
    value[:, ordinal] = np.floor((first + last) / 2)

    numerical = kinds == "numerical"
    value[:, numerical] = _interval_fill(low[:, numerical], high[:, numerical])

    _fill_binary(schema, can0, can1, determined, value, weight)
    return CellValues(determined, value, low, high)


def rows_from_counts(
    model: ReleasedModel,
    schema: FeatureSchema,
    cells: Cells,
    var_cell: np.ndarray,
    var_cls: np.ndarray,
    counts: np.ndarray,
    lower: np.ndarray,
) -> dict:
    """Expand variable counts into rows; the first ``lower[j]`` rows of variable j are proven."""
    used = np.flatnonzero(counts > 0)
    per_cell_rows = np.bincount(var_cell[used], weights=counts[used], minlength=len(cells))
    values = cell_values(schema, cells.lower, cells.upper, per_cell_rows)
    reps = counts[used]
    cell_of_row = np.repeat(var_cell[used], reps)
    cls_of_row = np.repeat(var_cls[used], reps)
    rank = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    proven_here = rank < np.repeat(lower[used], reps)
    pinned = values.determined.all(axis=1)[cell_of_row]
    names = list(model.feature_names)
    rows = pd.DataFrame(values.value[cell_of_row], columns=names)
    rows[model.label_name] = np.asarray(model.classes, dtype=object)[cls_of_row]
    if len(rows):
        rows[model.label_name] = rows[model.label_name].infer_objects()
    return {
        "rows": rows,
        "free": pd.DataFrame(~values.determined[cell_of_row], columns=names),
        "lower": pd.DataFrame(values.low[cell_of_row], columns=names),
        "upper": pd.DataFrame(values.high[cell_of_row], columns=names),
        "proven": proven_here & pinned,
        "proven_pattern": proven_here,
    }


def _resolve_groups(schema: FeatureSchema, can0: np.ndarray, can1: np.ndarray) -> None:
    """Narrow 0/1 options inside groups, in place: a forced 1 zeroes the rest; in a one-hot
    group, a single member that may be 1 must be 1."""
    for cols, exactly_one in schema.group_indices():
        forced_one = (can1[:, cols] & ~can0[:, cols]).any(axis=1)
        sub0, sub1 = can0[:, cols], can1[:, cols]
        is_forced = sub1 & ~sub0
        sub1 = np.where(forced_one[:, None], is_forced, sub1)
        sub0 = np.where(forced_one[:, None], ~is_forced, sub0)
        if exactly_one:
            single = sub1.sum(axis=1) == 1
            sub0 = np.where(single[:, None], ~sub1, sub0)
        can0[:, cols], can1[:, cols] = sub0, sub1


def _interval_fill(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Middle of each numerical interval; half a unit inside when one end is unbounded
    (the model and schema give no scale there), 0 when both are."""
    has_low, has_high = np.isfinite(low), np.isfinite(high)
    mid = np.zeros(low.shape)
    both = has_low & has_high
    mid[both] = (low[both] + high[both]) / 2
    mid[has_low & ~has_high] = low[has_low & ~has_high] + 0.5
    mid[~has_low & has_high] = high[~has_low & has_high] - 0.5
    return mid


def _fill_binary(
    schema: FeatureSchema,
    can0: np.ndarray,
    can1: np.ndarray,
    determined: np.ndarray,
    value: np.ndarray,
    weight: np.ndarray,
) -> None:
    """Fill open binary features (and groups) with the value most common where determined."""
    binary = schema.kind_array() == "binary"
    w = weight.astype(np.float64)[:, None]
    known_ones = (w * (determined & (value == 1))).sum(axis=0)
    known = (w * determined).sum(axis=0)
    share_one = np.divide(known_ones, known, out=np.full(known.shape, 0.0), where=known > 0)
    grouped = np.zeros(value.shape[1], dtype=bool)
    for cols, exactly_one in schema.group_indices():
        grouped[cols] = True
        open_rows = np.flatnonzero(~determined[:, cols].all(axis=1))
        if not open_rows.size:
            continue
        score = np.where(can1[np.ix_(open_rows, cols)], share_one[cols], -np.inf)
        best = score.argmax(axis=1)
        best_score = score[np.arange(open_rows.size), best]
        all_zero_ok = can0[np.ix_(open_rows, cols)].all(axis=1)
        none_share = 1.0 - share_one[cols].sum()
        prefer_none = (none_share > best_score) | ~np.isfinite(best_score)
        choose_none = all_zero_ok & prefer_none if not exactly_one else np.zeros_like(all_zero_ok)
        fill = np.zeros((open_rows.size, cols.size))
        fill[np.arange(open_rows.size), best] = 1.0
        fill[choose_none] = 0.0
        sub = value[np.ix_(open_rows, cols)]
        sub_det = determined[np.ix_(open_rows, cols)]
        value[np.ix_(open_rows, cols)] = np.where(sub_det, sub, fill)
    lone = binary & ~grouped
    open_lone = ~determined & lone[None, :]
    value[open_lone] = np.broadcast_to(share_one > 0.5, value.shape)[open_lone].astype(float)
