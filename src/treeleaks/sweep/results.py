"""A sweep's records as one table, and the summary printed after a sweep: per combination
of the axes other than the seed, the points solved out of those run, median memory and the mean
of each of the attack's measures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from treeleaks.sweep.attacks import ATTACKS, DONE, SOLVED
from treeleaks.sweep.grid import Grid


def records_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per point, its axes first (the log tail of failed points left out)."""
    table = pd.DataFrame.from_records(records)
    for column in table.columns:  # integer axes with "none" (depth) stay integers
        if _integers_with_none([r.get(column) for r in records]):
            table[column] = table[column].astype("Int64")
    return table.drop(columns=[c for c in ("log_tail",) if c in table.columns])


def _integers_with_none(values: list[Any]) -> bool:
    """Whether a column holds integers and at least one None (pandas would make it float)."""
    return any(v is None for v in values) and all(
        v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in values)


def write_table(records: list[dict[str, Any]], path: Path) -> pd.DataFrame:
    """Write the records as CSV to ``path`` and return the table."""
    table = records_table(records)
    table.to_csv(path, index=False)
    return table


def summarise(table: pd.DataFrame, grid: Grid) -> pd.DataFrame:
    """Per combination of the grid's varying axes (seed excluded): the points solved out of
    those run (a solver status, verified where the attack verifies; ``done`` for attacks without a
    solver), median peak memory, and the mean of each of the attack's measures."""
    by = [a for a, values in grid.axes.items() if len(values) > 1 and a != "seed"]
    solved = _solved(table)
    measures = ATTACKS[grid.attack].measures
    table = table.assign(solved=solved, **{c: pd.to_numeric(table[c], errors="coerce")
                                           if c in table else float("nan")
                                           for c in ("peak_mem_mb", *measures)})
    keyed = table.assign(**{a: table[a].astype(object).where(table[a].notna(), "none")
                            for a in by})
    rows = _group_rows(keyed, by, measures)
    return pd.DataFrame(rows).dropna(axis=1, how="all")  # memory is unknown in-process


def _group_rows(keyed: pd.DataFrame, by: list[str], measures: tuple[str, ...]
                ) -> list[dict[str, Any]]:
    """One summary row per combination of the ``by`` axes (one row without them)."""
    groups = keyed.groupby(by, sort=False, dropna=False) if by else [((), keyed)]
    rows = []
    for values, part in groups:
        values = values if isinstance(values, tuple) else (values,)
        rows.append({**dict(zip(by, values)), "solved": solved_share(part["solved"]),
                     "MB (med)": part["peak_mem_mb"].median(),
                     **{m: part[m].mean() for m in measures}})
    return rows


def _solved(table: pd.DataFrame) -> pd.Series:
    """Per point, whether it was solved: a solver status (verified where the attack
    verifies) or ``done``."""
    verified = (table["verified"].astype("boolean").fillna(False).astype(bool)
                if "verified" in table else pd.Series(True, index=table.index))
    return (table["status"].isin(SOLVED) & verified) | (table["status"] == DONE)


def solved_share(solved: pd.Series) -> str:
    """How many points were solved, of how many, and the share: ``3/4 (75%)``."""
    done, total = int(solved.sum()), len(solved)
    return f"{done}/{total} ({100 * done / total:.0f}%)" if total else "0/0"
