"""A histogram booster's bin edges read back into the training values they were cut from.

scikit-learn's ``HistGradientBoosting`` bins each numerical column before fitting: a column
with at most ``max_bins`` distinct training values v_0 < ... < v_k gets the edges
m_i = (v_i + v_{i+1}) / 2 (computed in float64), a column with more gets quantiles. The
edges stay in the file (``_bin_mapper.bin_thresholds_``). From the midpoints, every value
follows from the smallest: v_{i+1} = 2 m_i - v_i, so v_i = c_i + s_i v_0 with s_i = +1, -1,
+1, ... And each v_i < m_i bounds v_0 from above (even i) or below (odd i): an interval,
about as wide as the smallest gap between neighbouring values, that no quantile edges fit.

Which v_0 in the interval? Values are recorded in decimal: the reading is the one whose
values need the fewest decimal digits in all (summed over the column's values; a shift by
a number of e decimals gives every value e decimals, so the search over shifts of up to the
winner's largest count of decimals is complete). When one reading is the fewest, every
value is pinned; when several tie (the gaps are wider than the values' precision), the
values are known up to a shift, and the tie goes to the reading nearest the interval's
middle. ``choice="smallest"`` instead takes the smallest value with the fewest digits
alone, the simpler rule the bench measures against.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

import numpy as np

LEVELS = np.arange(-6, 16)  # decimal places a value may need: 10^6 down to 10^-15
CAP = 2000  # readings tried per level of decimals, the nearest the interval's middle
TOLERANCE = 1e-10  # relative to the column's scale: the chain's float error is far below
Choice = Literal["all", "smallest"]


class Reading(StrEnum):
    """What a column's bin edges give away."""

    PINNED = "every training value"
    SHIFTED = "every training value up to one shift"
    QUANTILES = "quantiles (more distinct values than bins): not the values"
    SINGLE = "one distinct value, not given"


@dataclass(frozen=True)
class ColumnValues:
    """One column's reading: ``values`` (sorted, None when not revealed) and the interval
    ``(low, high)`` the smallest value lies in."""

    reading: Reading
    values: np.ndarray | None = None
    low: float = -np.inf
    high: float = np.inf


def midpoints(values: np.ndarray) -> np.ndarray:
    """The bin edges scikit-learn cuts from sorted distinct ``values``, as it computes them
    (the mean of each neighbouring pair, in float64)."""
    values = np.asarray(values, dtype=np.float64)
    return np.lib.stride_tricks.sliding_window_view(values, 2).mean(axis=1)


def read_edges(edges: np.ndarray, choice: Choice = "all") -> ColumnValues:
    """The training values behind one numerical column's bin edges (see the module doc)."""
    edges = np.asarray(edges, dtype=np.float64)
    if edges.size == 0:
        return ColumnValues(Reading.SINGLE)
    if not np.isfinite(edges).all() or (np.diff(edges) <= 0).any():
        return ColumnValues(Reading.QUANTILES)
    chain, sign = _chain(edges)
    low, high = _interval(edges, chain, sign)
    if not low < high:
        return ColumnValues(Reading.QUANTILES)
    scale = max(float(np.abs(edges).max()), np.finfo(np.float64).tiny)
    tolerance = TOLERANCE * scale
    target = (low + high) / 2 if np.isfinite(low) else high
    start, pinned = _smallest(chain, sign, low, high, target, tolerance, choice)
    values = np.array([_snap(c + s * start, tolerance) for c, s in zip(chain, sign)])
    return ColumnValues(Reading.PINNED if pinned else Reading.SHIFTED, values, low, high)


def _chain(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``c`` and ``s`` with v_i = c_i + s_i v_0, from v_{i+1} = 2 m_i - v_i."""
    chain = np.zeros(edges.size + 1)
    for i, edge in enumerate(edges):
        chain[i + 1] = 2.0 * edge - chain[i]
    sign = np.where(np.arange(edges.size + 1) % 2 == 0, 1.0, -1.0)
    return chain, sign


def _interval(edges: np.ndarray, chain: np.ndarray, sign: np.ndarray) -> tuple[float, float]:
    """Where v_0 lies: each v_i < m_i, an upper bound for even i and a lower for odd."""
    gap = edges - chain[:-1]
    even = sign[:-1] > 0
    high = float(gap[even].min())
    low = float((-gap[~even]).max()) if (~even).any() else -np.inf
    return low, high


def _smallest(chain: np.ndarray, sign: np.ndarray, low: float, high: float, target: float,
              tolerance: float, choice: Choice) -> tuple[float, bool]:
    """The reading of v_0, and whether it is the only one of its cost (every level of
    decimals up to its values' most tried whole, the interval bounded)."""
    best, best_cost, ties, whole = target, np.inf, 0, []
    for level in LEVELS:
        if np.isfinite(best_cost) and level > _max_digits(chain + sign * best, tolerance):
            break  # a shift of more decimals costs every value more
        candidates, complete = _on_level(low, high, target, int(level))
        whole.append(complete)
        if not candidates.size:
            continue
        if choice == "smallest":
            return float(candidates[0]), bool(complete and candidates.size == 1
                                              and np.isfinite(low))
        values = chain[None, :] + sign[None, :] * candidates[:, None]
        cost = _digits(values, tolerance).sum(axis=1)
        least = int(cost.min())
        if least < best_cost:
            best_cost, ties = least, 0
            best = float(candidates[np.flatnonzero(cost == least)[0]])
        if least == best_cost:
            ties += int((cost == least).sum())
    needed = _max_digits(chain + sign * best, tolerance) - int(LEVELS[0]) + 1
    return best, bool(ties == 1 and all(whole[:needed]) and np.isfinite(low))


def _on_level(low: float, high: float, target: float, level: int) -> tuple[np.ndarray, bool]:
    """The numbers of exactly ``level`` decimals (multiples of 10^-level, not of 10 times
    it) strictly inside (low, high), at most `CAP` of them, the nearest ``target`` first;
    and whether that is all of them."""
    unit = 10.0 ** -level
    first = np.floor(low / unit) + 1 if np.isfinite(low) else -np.inf
    last = np.ceil(high / unit) - 1
    if first > last:
        return np.zeros(0), True
    centre = float(np.clip(np.round(target / unit), first, last))
    lo, hi = max(first, centre - CAP), min(last, centre + CAP)
    steps = np.arange(lo, hi + 1)
    if level > LEVELS[0]:
        steps = steps[steps % 10 != 0]  # those have fewer decimals: tried already
    steps = steps[np.argsort(np.abs(steps - target / unit), kind="stable")][:CAP]
    candidates = np.array([round(float(k) * unit, max(level, 0)) for k in steps])
    inside = (candidates > low) & (candidates < high)
    return candidates[inside], bool(np.isfinite(first) and last - first + 1 <= CAP)


def _digits(values: np.ndarray, tolerance: float) -> np.ndarray:
    """How many decimal places each value needs (`LEVELS`; one past the last: more)."""
    out = np.full(values.shape, LEVELS[-1] + 1, dtype=np.int64)
    for level in LEVELS[::-1]:
        unit = 10.0 ** -int(level)
        fits = np.abs(values - np.round(values / unit) * unit) <= tolerance
        out[fits] = level
    return out


def _max_digits(values: np.ndarray, tolerance: float) -> int:
    return int(_digits(values, tolerance).max())


def _snap(value: float, tolerance: float) -> float:
    """``value`` at the fewest decimal places within ``tolerance`` (its float as written
    with them), or as it is."""
    for level in LEVELS:
        rounded = round(value, int(level))
        if abs(rounded - value) <= tolerance:
            return float(rounded)
    return float(value)
