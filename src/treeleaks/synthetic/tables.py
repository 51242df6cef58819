"""The private table and the population checked before anything is fitted: rows in both,
no empty cell, at least two distinct population rows, a usable seed. Each problem is one
line naming the table, the row and the column, with the fix."""

from __future__ import annotations

import numpy as np
import pandas as pd

from treeleaks.runtime.errors import TreeleaksError


def check_tables(private: pd.DataFrame | None, population: pd.DataFrame) -> None:
    """Refuse tables PrivBayes and the attack cannot read (see the module doc)."""
    tables = [("population", population)] + ([] if private is None
                                             else [("private table", private)])
    for what, frame in tables:
        if frame.shape[1] == 0:
            raise TreeleaksError(f"the {what} has no columns; give a CSV with a header row")
        if len(frame) == 0:
            raise TreeleaksError(f"the {what} has a header but no rows; give its rows too")
        empty = frame.isna().to_numpy()
        if empty.any():
            row, column = (int(i) for i in np.argwhere(empty)[0])
            raise TreeleaksError(
                f"the {what} has an empty cell at row {row + 1} (line {row + 2} of the CSV), "
                f"column {str(frame.columns[column])!r}, and {int(empty.sum())} in all: "
                "PrivBayes reads every value; fill them (e.g. with 'missing') or drop those "
                "rows")
    distinct = len(population.drop_duplicates())
    if distinct < 2:
        raise TreeleaksError(
            f"the population's {len(population)} rows hold {distinct} distinct row: "
            "singling out needs a population of at least 2 distinct rows, more than the "
            "private table's")


def check_seed(seed: int) -> int:
    """A seed NumPy takes: a whole number, 0 or more."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TreeleaksError(f"the seed must be a whole number, 0 or more, not {seed!r}")
    return seed
