"""A sweep's records as one table, and the summary printed after a sweep: per combination
of the axes other than the seed, the points, the share solved, medians of time and memory
and the mean and median error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from treeleaks.sweep.attacks import SOLVED
from treeleaks.sweep.grid import Grid


def records_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per point, its axes first (the log tail of failed points left out)."""
    table = pd.DataFrame.from_records(records)
    for column in table.columns:  # integer axes with "none" (depth) stay integers
        values = [r.get(column) for r in records]
        if any(v is None for v in values) and all(
                v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in values):
            table[column] = table[column].astype("Int64")
    return table.drop(columns=[c for c in ("log_tail",) if c in table.columns])


def write_table(records: list[dict[str, Any]], path: Path) -> pd.DataFrame:
    """Write the records as CSV to ``path`` and return the table."""
    table = records_table(records)
    table.to_csv(path, index=False)
    return table


def summarise(table: pd.DataFrame, grid: Grid) -> pd.DataFrame:
    """Per combination of the grid's varying axes (seed excluded): points, solved share,
    median time and peak memory, mean and median error, mean baseline error (the random
    guesses' error)."""
    by = [a for a, values in grid.axes.items() if len(values) > 1 and a != "seed"]
    table = table.assign(
        solved=table["status"].isin(SOLVED) & table.get("verified", False).fillna(False)
        .astype(bool),
        **{c: table.get(c, pd.Series(float("nan"), index=table.index))
           for c in ("time_s", "peak_mem_mb", "error", "baseline_error")})
    keyed = table.assign(**{a: table[a].astype(object).where(table[a].notna(), "none")
                            for a in by})
    groups = keyed.groupby(by, sort=False, dropna=False) if by else [((), keyed)]
    rows = []
    for values, part in groups:
        values = values if isinstance(values, tuple) else (values,)
        rows.append({**dict(zip(by, values)), "points": len(part),
                     "solved": part["solved"].mean(), "time s (med)": part["time_s"].median(),
                     "MB (med)": part["peak_mem_mb"].median(),
                     "error": part["error"].mean(), "error (med)": part["error"].median(),
                     "baseline": part["baseline_error"].mean()})
    return pd.DataFrame(rows)
