"""Reconstructed values put on the training values a file gives away (`ReleasedModel.revealed`),
for any model that carries such values.

A numerical value left to a fill (the middle of its box's part where training values lie)
moves to the revealed value inside its box nearest that fill, and a box holding a single
one of a settled column's values pins it. The value stays inside its box, so the row routes
as before. Measured against spreading the revealed values over the rows so that each is
held by one (every revealed value is some training row's), and against the median revealed
value in the box, the nearest one scores best (docs/lab/2026-11-27-bin-edges.md).
"""

from __future__ import annotations

import numpy as np

from treeleaks.ir.revealed import RevealedValues


def inside(values: np.ndarray, lower: np.ndarray, upper: np.ndarray, range_low: float,
           range_high: float) -> tuple[np.ndarray, np.ndarray]:
    """Per box, the span ``values[first:end]`` of sorted ``values`` inside it (``lower <
    x <= upper``) and inside the schema's closed range."""
    first = np.maximum(np.searchsorted(values, lower, side="right"),
                       np.searchsorted(values, range_low, side="left"))
    end = np.minimum(np.searchsorted(values, upper, side="right"),
                     np.searchsorted(values, range_high, side="right"))
    return first, end


def nearest(known: RevealedValues, first: np.ndarray, end: np.ndarray, value: np.ndarray,
            determined: np.ndarray, width: np.ndarray) -> None:
    """Move each box's fill of one column, in place, to the revealed value among
    ``known.values[first:end]`` nearest it (a box holding none keeps its fill); a box
    holding a single one of a settled (``pinned``) column's values is determined."""
    values = np.asarray(known.values, dtype=np.float64)
    rows = np.flatnonzero(end > first)
    lo, hi, fill = first[rows], end[rows] - 1, value[rows]
    above = np.clip(np.searchsorted(values, fill), lo, hi)  # the first value >= the fill
    below = np.maximum(above - 1, lo)
    value[rows] = values[np.where(np.abs(values[below] - fill) <= np.abs(values[above] - fill),
                                  below, above)]
    single = (end - first == 1) & known.pinned
    determined[single] = True
    width[single] = 0.0
