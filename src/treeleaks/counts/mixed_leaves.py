"""A regression leaf of several targets split into its targets' rows and draws.

A fully grown tree splits until a node's rows share one target or share every feature; a
leaf of the second kind (rows equal in every column, different targets) keeps the
draw-weighted mean m of its targets as its value and their weighted variance s as its
impurity, beside its distinct rows n and draws w. Its rows are then a multiset of n
(target, draws) pairs, each drawn at least once, with

    sum of draws = w,   sum of draws x (y - m) = 0,   sum of draws x (y - m)^2 = s w.

Taking the targets from the values the forest's pure leaves hold (a target of the leaf is
usually held alone in some other tree), a depth-first search lists the ways to meet the
three sums, per target its draws and rows; when they all put the same draws on each
target, the leaf's split is read off them (its rows per target where they agree). Every
row lies within ``sqrt(s (w - 1))`` of m (`regression_leaves`), which bounds the targets
tried; pruning uses the range of the targets left (the rest's mean lies between them, and
its variance between Cauchy-Schwarz's bound and the range's). A leaf with no split, or
splits putting other draws on some target, within the search's steps stays undecided:
its rows' targets are not told apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LeafSplit", "split_leaf"]

MAX_STEPS = 5_000  # most search steps per leaf; past it the leaf stays undecided
MEAN_RTOL = 1e-7  # the sums' tolerance, relative to the largest |target| (and 1)
SQUARE_RTOL = 1e-6  # the squares', relative to the largest target squared: the file's
# impurity is a difference of squares, good to about this


@dataclass(frozen=True)
class LeafSplit:
    """A leaf's rows by target: ``target[i]`` (index into the candidates) holds
    ``draws[i]`` draws from ``rows[i]`` distinct rows (-1: splits differing only in how
    many rows bring the draws)."""

    target: np.ndarray
    draws: np.ndarray
    rows: np.ndarray


def split_leaf(candidates: np.ndarray, n_rows: int, weight: int, mean: float,
               variance: float, scale: float, bootstrap: bool) -> LeafSplit | None:
    """The one split of a leaf of ``n_rows`` distinct rows and ``weight`` draws, value
    ``mean`` and impurity ``variance``, into the sorted ``candidates`` (see the module
    doc); None when there is none, or several putting other draws on some target, within
    `MAX_STEPS`. ``scale``: the largest |value| in the model, for the tolerances; without
    ``bootstrap`` every row is drawn once."""
    found = _splits(candidates, n_rows, weight, mean, variance, scale, bootstrap)
    if not found or _differ(found) or len(found[0]) < 2:
        return None
    target, draws, rows = (np.array(column, dtype=np.int64) for column in zip(*found[0]))
    for other in found[1:]:  # the same draws on each target, other rows: rows not known
        rows[rows != np.array([c[2] for c in other])] = -1
    return LeafSplit(target, draws, rows)


def _differ(found: list[list[tuple[int, int, int]]]) -> bool:
    """Whether the last split found puts other draws on some target than the first."""
    return len(found) > 1 and [c[:2] for c in found[-1]] != [c[:2] for c in found[0]]


def _splits(candidates: np.ndarray, n_rows: int, weight: int, mean: float, variance: float,
            scale: float, bootstrap: bool) -> list[list[tuple[int, int, int]]] | None:
    """The splits of the leaf as (candidate, draws, rows) per target (`split_leaf`'s
    arguments), every one until two differ in draws; None past `MAX_STEPS`."""
    if n_rows < 2 or weight < n_rows or (not bootstrap and weight != n_rows):
        return []
    reach = np.sqrt(max(variance, 0.0) * (weight - 1)) * (1 + 1e-9) + MEAN_RTOL * scale
    near = np.flatnonzero(np.abs(candidates - mean) <= reach)
    z = candidates[near] - mean
    tol_sum = MEAN_RTOL * max(scale, 1.0) * weight
    tol_square = SQUARE_RTOL * max(scale, 1.0) ** 2 * weight
    found: list[list[tuple[int, int, int]]] = []
    steps = 0

    def search(i: int, rows_left: int, draws_left: int, total: float, squares: float,
               chosen: list[tuple[int, int, int]]) -> None:
        nonlocal steps
        steps += 1
        if _differ(found) or steps > MAX_STEPS:
            return
        if rows_left == 0:
            if draws_left == 0 and _fits(z[i:], 0, total, squares, tol_sum, tol_square):
                found.append(list(chosen))
            return
        if not _fits(z[i:], draws_left, total, squares, tol_sum, tol_square):
            return
        for rows in range(1, rows_left + 1):
            for draws in range(rows, draws_left - (rows_left - rows) + 1):
                chosen.append((int(near[i]), draws, rows))
                search(i + 1, rows_left - rows, draws_left - draws, total - draws * z[i],
                       squares - draws * z[i] ** 2, chosen)
                chosen.pop()
        search(i + 1, rows_left, draws_left, total, squares, chosen)

    search(0, n_rows, weight, 0.0, variance * weight, [])
    return None if steps > MAX_STEPS else found


def _fits(z: np.ndarray, draws_left: int, total: float, squares: float, tol_sum: float,
          tol_square: float) -> bool:
    """Whether ``draws_left`` draws of the sorted deviations ``z`` can add up to ``total``
    and their squares to ``squares``, by the bounds of the module doc."""
    if draws_left == 0:
        return abs(total) <= tol_sum and abs(squares) <= tol_square
    if not len(z):
        return False
    low, high = z[0], z[-1]
    if not (draws_left * low - tol_sum <= total <= draws_left * high + tol_sum):
        return False
    least = total * total / draws_left  # Cauchy-Schwarz
    most = (low + high) * total - low * high * draws_left
    return least - tol_square <= squares <= most + tol_square
