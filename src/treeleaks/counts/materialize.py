"""Turn cell counts into rows: pin what the cell and the schema determine, fill the rest.

A cell fixes a feature when only one value the schema allows lies in its interval (a
one-hot group can fix members the box leaves open: if one member is forced to 1, the
others are 0). Features left open are filled and flagged: binary ones with the value most
common among the reconstructed rows where that feature *is* determined (a prior fitted on
the cells), ordinal and numerical ones in the middle of the part of their interval where
the model's split thresholds say training values lie (`feature_reach`). Where the file
gives away a column's training values (`ReleasedModel.revealed`), a fill moves to the one
of them inside the box nearest it (`treeleaks.counts.on_revealed`).

A row is *proven* when every dataset that reproduces the counts holds a row in its cell
with its label, and the cell pins each of its binary and ordinal values. It is proven on
the columns the model constrains: numerical values are proven to lie in
``lower < x <= upper`` (the filled value is a guess within those bounds), and a column no
tree splits on that the schema does not describe (kind ``unknown``) stays empty and is no
part of the proof.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from treeleaks.counts.cells import Cells
from treeleaks.counts.on_revealed import inside, nearest
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.revealed import RevealedValues
from treeleaks.ir.schema import FeatureSchema

# relative: how close a lone threshold must be to k + 1/2 (XGBoost's float32 thresholds sit
# just below it) to be read as the cut between the integers k and k + 1
HALF_INTEGER = 1e-6


@dataclass
class CellValues:
    """Per-cell features, ``(K, M)`` each: ``determined`` (one value possible), ``value``
    (filled where not determined), the bounds ``low``/``high`` the box and the schema leave
    (open below and closed above for numerical features, closed for the others), and
    ``width``, how much of its column's extent the value may still take (`_widths`)."""

    determined: np.ndarray
    value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    width: np.ndarray


def cell_values(
    schema: FeatureSchema,
    lower: np.ndarray,
    upper: np.ndarray,
    weight: np.ndarray,
    thresholds: list[np.ndarray] | None = None,
    revealed: dict[int, RevealedValues] | None = None,
    fallback: np.ndarray | None = None,
) -> CellValues:
    """Resolve each cell's features; ``weight`` (rows per cell) fits the binary fill prior.

    ``thresholds`` are each feature's split thresholds over all trees
    (`ReleasedModel.thresholds`), which place the fills of ordinal and numerical features;
    by default the finite bounds of the boxes, which are thresholds the trees split at.
    ``revealed`` (`ReleasedModel.revealed`) puts them on training values the file gives.
    ``fallback`` marks the group members a fill sets to 1 only where the box leaves no
    other member (`fallback_features`).
    """
    k, m = lower.shape
    kinds = schema.kind_array()
    range_low, range_high = schema.range_arrays()
    split_at = _box_thresholds(lower, upper) if thresholds is None else thresholds
    reach_low, reach_high = feature_reach(schema, split_at, lower, upper, weight)
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

    ranged = ordinal | (kinds == "numerical")
    determined[:, ranged] = low[:, ranged] == high[:, ranged]
    value[:, ranged] = _reach_fill(
        low[:, ranged], high[:, ranged], reach_low[ranged], reach_high[ranged]
    )
    value[:, ordinal] = np.clip(np.floor(value[:, ordinal] + 0.5), first, last)
    # A box is open below: a fill on its lower bound (the midpoint of two adjacent floats
    # rounds down to it) moves to the next float up, which the box holds.
    numerical = kinds == "numerical"
    open_low = np.nextafter(lower[:, numerical], np.inf)
    value[:, numerical] = np.maximum(value[:, numerical], open_low)
    determined[:, numerical] |= open_low == high[:, numerical]

    _fill_binary(schema, can0, can1, determined, value, weight, fallback)
    width = np.full((k, m), np.nan)
    width[:, ranged] = _widths(
        low[:, ranged], high[:, ranged], range_low[ranged], range_high[ranged],
        reach_low[ranged], reach_high[ranged],
    )
    for j, known in (revealed or {}).items():
        if ranged[j]:
            first, end = inside(known.values, lower[:, j], upper[:, j], range_low[j],
                                range_high[j])
            nearest(known, first, end, value[:, j], determined[:, j], width[:, j])
    return CellValues(determined, value, low, high, width)


def feature_reach(
    schema: FeatureSchema,
    thresholds: list[np.ndarray],
    lower: np.ndarray,
    upper: np.ndarray,
    weight: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per feature, the finite interval where its training values plausibly lie.

    scikit-learn puts a threshold half-way between two neighbouring training values, so
    values lie among the thresholds, and the first value past an extreme threshold about
    half a spacing (`_spacing`) past it. Trees stop splitting where a region is pure, so the
    rows past the extreme thresholds (``weight`` of the boxes ``lower < x <= upper`` there)
    can reach much further: they are taken to spread at the density of the rows between the
    extreme thresholds. The reach ends one spacing plus that spread past each extreme
    threshold, so the middle of an end interval is the middle of the rows estimated there,
    rather than of a schema range that may be far wider than the data. A feature no tree
    splits on reaches over its schema range (an unbounded end one unit past the finite
    one, or [-0.5, 0.5] when neither is finite: nothing gives a scale there).
    """
    range_low, range_high = schema.range_arrays()
    reach_low = np.where(
        np.isfinite(range_low), range_low,
        np.where(np.isfinite(range_high), range_high - 1.0, -0.5),
    )
    reach_high = np.where(np.isfinite(range_high), range_high, reach_low + 1.0)
    total = float(weight.sum())
    scale = _table_scale(thresholds)
    for j, split_at in enumerate(thresholds):
        if not split_at.size:
            continue
        first, last = split_at[0], split_at[-1]
        below = float(weight[upper[:, j] <= first].sum())
        above = float(weight[lower[:, j] >= last].sum())
        between = total - below - above
        per_row = (last - first) / between if between > 0 else 0.0
        gap = _spacing(split_at, range_low[j], range_high[j], scale)
        reach_low[j] = first - gap - below * per_row
        reach_high[j] = last + gap + above * per_row
    return reach_low, reach_high


def _table_scale(thresholds: list[np.ndarray]) -> float:
    """Half the median span of the thresholds of the columns split at several points: how
    far apart a table's values typically lie (NaN when no column is). A standardised table
    (the columns scaled alike) shows its scale there."""
    spans = [float(t[-1] - t[0]) / 2 for t in thresholds if t.size >= 2]
    return float(np.median(spans)) if spans else np.nan


def _spacing(thresholds: np.ndarray, range_low: float, range_high: float,
             scale: float = np.nan) -> float:
    """Typical gap between neighbouring training values of one feature (positive).

    The median gap between consecutive thresholds: each threshold lies between two
    neighbouring values, so consecutive thresholds are about one value gap apart, and the
    median ignores the few wide gaps between clusters of values. A single threshold gives
    no gap: then the schema range's width (so the reach covers the range); else, at a
    half-integer t, 1: a column split once, however many trees, holds two values, and at
    k + 1/2 they are most likely the integers k and k + 1 (a 0/1 flag, a 1/2 code); else
    max(|t|, 1), or the table's ``scale`` (`_table_scale`) when smaller: a two-valued
    column of a standardised table (sex, -0.04 and 0.05 in scikit-learn's scaled diabetes)
    lies at the other columns' scale, not a unit apart.
    """
    if thresholds.size >= 2:
        return float(np.median(np.diff(thresholds)))
    width = range_high - range_low
    if np.isfinite(width) and width > 0:
        return float(width)
    only = float(thresholds[0])
    if abs(2 * only - round(2 * only)) <= HALF_INTEGER * max(abs(only), 1.0) and (
            round(2 * only) % 2 == 1):
        return 1.0
    fallback = max(abs(only), 1.0)
    return min(fallback, scale) if scale > 0 else fallback


def _box_thresholds(lower: np.ndarray, upper: np.ndarray) -> list[np.ndarray]:
    """Each feature's distinct finite box bounds: thresholds some tree splits at."""
    bounds = np.vstack([lower, upper])
    return [np.unique(column[np.isfinite(column)]) for column in bounds.T]


def _reach_fill(
    low: np.ndarray, high: np.ndarray, reach_low: np.ndarray, reach_high: np.ndarray
) -> np.ndarray:
    """Middle of each interval's part inside its feature's reach: between two thresholds the
    middle of the interval, past the extreme ones the middle of the rows estimated there.
    An interval wholly outside the reach (a schema range at odds with the splits) gets its
    point nearest the reach's middle."""
    start, end = np.maximum(low, reach_low), np.minimum(high, reach_high)
    nearest = np.clip((reach_low + reach_high) / 2, low, high)
    return np.where(start <= end, (start + end) / 2, nearest)


def _widths(
    low: np.ndarray,
    high: np.ndarray,
    range_low: np.ndarray,
    range_high: np.ndarray,
    reach_low: np.ndarray,
    reach_high: np.ndarray,
) -> np.ndarray:
    """Share of its column's extent each interval spans: 0 for a pinned value, 1 when the
    model does not narrow the value at all.

    The extent is the span a guess could take without the model: the schema range where
    finite, else the reach (`feature_reach`: the extreme thresholds, widened by one spacing
    and the spread of the rows past them). An interval unbounded on a side is cut to the
    extent.
    """
    extent_low = np.where(np.isfinite(range_low), range_low, np.minimum(reach_low, range_high))
    extent_high = np.where(
        np.isfinite(range_high), range_high, np.maximum(reach_high, range_low)
    )
    span = np.minimum(high, extent_high) - np.maximum(low, extent_low)
    extent = np.broadcast_to(extent_high - extent_low, span.shape)
    return np.divide(np.maximum(span, 0.0), extent, out=np.zeros(span.shape), where=extent > 0)


def rows_from_counts(
    model: ReleasedModel,
    schema: FeatureSchema,
    cells: Cells,
    var_cell: np.ndarray,
    var_cls: np.ndarray,
    counts: np.ndarray,
    lower: np.ndarray,
    *,
    with_width: bool = False,
) -> dict:
    """Expand variable counts into the row frames of a `Reconstruction`.

    The first ``lower[j]`` rows of variable j are in every dataset the counts admit
    (``proven_pattern``); they are ``proven`` when their cell also pins every binary and
    ordinal value (see the module docstring). ``with_width`` adds ``width``, how much of
    each numerical and ordinal column's extent the value may still take (0 when pinned,
    NaN for binary and unknown columns).
    """
    used = np.flatnonzero(counts > 0)
    per_cell_rows = np.bincount(var_cell[used], weights=counts[used], minlength=len(cells))
    values = cell_values(
        schema, cells.lower, cells.upper, per_cell_rows, thresholds=model.thresholds(),
        revealed=model.revealed, fallback=fallback_features(model),
    )
    reps = counts[used]
    cell_of_row = np.repeat(var_cell[used], reps)
    cls_of_row = np.repeat(var_cls[used], reps)
    rank = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    proven_here = rank < np.repeat(lower[used], reps)
    constrained = schema.kind_array() == "binary"
    pinned = values.determined[:, constrained].all(axis=1)[cell_of_row]
    names = list(model.feature_names)
    rows = pd.DataFrame(values.value[cell_of_row], columns=names)
    rows[model.label_name] = np.asarray(model.classes, dtype=object)[cls_of_row]
    if len(rows):
        rows[model.label_name] = rows[model.label_name].infer_objects()
    frames = {
        "rows": rows,
        "free": pd.DataFrame(~values.determined[cell_of_row], columns=names),
        "lower": pd.DataFrame(values.low[cell_of_row], columns=names),
        "upper": pd.DataFrame(values.high[cell_of_row], columns=names),
        "proven": proven_here & pinned,
        "proven_pattern": proven_here,
    }
    if with_width:
        frames["width"] = pd.DataFrame(values.width[cell_of_row], columns=names)
    return frames


def fallback_features(model: ReleasedModel) -> np.ndarray | None:
    """Per model feature, whether a rebuilt row takes it only where the box leaves its
    group no other member (`treeleaks.ir.inputs.InputMap.fallbacks`: a gap the file cannot
    tell the table held); None when the model has none."""
    names = [] if model.inputs is None else model.inputs.fallbacks()
    if not names:
        return None
    return np.isin(np.asarray(model.feature_names, dtype=object), names)


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


def _fill_binary(
    schema: FeatureSchema,
    can0: np.ndarray,
    can1: np.ndarray,
    determined: np.ndarray,
    value: np.ndarray,
    weight: np.ndarray,
    fallback: np.ndarray | None = None,
) -> None:
    """Fill open binary features (and groups) with the value most common where determined;
    a ``fallback`` member of a group only where no other may be 1."""
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
        prior = share_one[cols] - (0.0 if fallback is None else 2.0 * fallback[cols])
        score = np.where(can1[np.ix_(open_rows, cols)], prior, -np.inf)
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


def rows_in_boxes(model: ReleasedModel, schema: FeatureSchema, lower: np.ndarray,
                  upper: np.ndarray, cls: np.ndarray, proven: np.ndarray) -> dict:
    """Rows each with a box of its own (``lower < x <= upper``, ``(R, M)``) and a class,
    filled inside it, as the frames of a `Reconstruction` (with ``width``); row i is proven
    where ``proven[i]``. What the row-by-row attacks return: a row is not a cell's."""
    n_rows = len(cls)
    cells = Cells(lower, upper, np.ones((n_rows, 1), dtype=bool),
                  np.zeros((n_rows, 0), dtype=np.int64))
    return rows_from_counts(model, schema, cells, np.arange(n_rows), cls,
                            np.ones(n_rows, dtype=np.int64), proven.astype(np.int64),
                            with_width=True)
