"""The random inputs a stripped file is compared on, for every kind of model in one place.

Each model's input columns are described as the framework reads them, and one generator
draws them all: a numerical column uniformly from a margin below its least threshold to a
margin above its greatest, `AT_THRESHOLD` of its values exactly at a threshold (where a
moved split would show); a booster's category codes every whole code from -1 (invalid) to
one it never saw; a column of categories (a pipeline's encoder, a histogram booster fitted
on a table of categories) its categories and one no encoder saw. Where the model routes
gaps, `GAPS` of the column's values are gaps. Every column draws from one generator, so
columns vary independently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

AT_THRESHOLD = 0.25  # share of a numerical column's values set exactly at a threshold
MARGIN = 0.1  # drawn this share of the thresholds' range beyond them, on each side
GAPS = 0.1  # share of a column's values that are gaps, where the model routes them
UNSEEN = "treeleaks-unseen"  # a category no encoder saw


@dataclass(frozen=True)
class Numbers:
    """A numerical input column: its split thresholds, and whether it may hold gaps."""

    name: str | None
    thresholds: np.ndarray
    gaps: bool = False


@dataclass(frozen=True)
class Codes:
    """A booster's categorical column read as whole codes 0 to ``n_codes`` - 1."""

    name: str | None
    n_codes: int
    gaps: bool = True


@dataclass(frozen=True)
class Categories:
    """A column of category values; ``unseen``: also one the model never saw. ``name``
    labels it in the frame of random rows (a position when the model has no names)."""

    name: str | int
    values: tuple[Any, ...]
    unseen: bool = True
    gaps: bool = True


InputColumn = Numbers | Codes | Categories


def random_inputs(columns: Sequence[InputColumn], n: int, seed: int = 0) -> Any:
    """``n`` random rows over ``columns``: a float matrix when every column is a number or a
    code, else a data frame by the columns' names (numbers as floats, categories as
    values, a gap as NaN)."""
    rng = np.random.default_rng(seed)
    drawn = [_draw(column, n, rng) for column in columns]
    if not any(isinstance(column, Categories) for column in columns):
        return np.column_stack(drawn) if drawn else np.zeros((n, 0))
    import pandas as pd

    return pd.DataFrame({column.name: values for column, values in zip(columns, drawn,
                                                                        strict=True)})


def _draw(column: InputColumn, n: int, rng: np.random.Generator) -> np.ndarray:
    if isinstance(column, Categories):
        choices = np.empty(len(column.values) + column.unseen, dtype=object)
        choices[:] = [*column.values, *([UNSEEN] if column.unseen else [])]
        values = choices[rng.integers(0, choices.size, n)]
    elif isinstance(column, Codes):
        values = rng.integers(-1, column.n_codes + 1, n).astype(np.float64)
    else:
        values = _numbers(column.thresholds, n, rng)
    if column.gaps:
        values[rng.random(n) < GAPS] = np.nan
    return values


def _numbers(thresholds: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    cuts = np.asarray(thresholds, dtype=np.float64)
    cuts = cuts[np.isfinite(cuts)]
    if cuts.size == 0:  # a column no split reads
        return rng.uniform(-1.0, 1.0, n)
    low, high = float(cuts.min()), float(cuts.max())
    margin = MARGIN * ((high - low) if high > low else max(1.0, abs(low)))
    values = rng.uniform(low - margin, high + margin, n)
    exact = rng.random(n) < AT_THRESHOLD
    values[exact] = rng.choice(cuts, int(exact.sum()))
    return values
