"""``treeleaks sweep plot``: one measure against one axis, a line per value of another (the
published figures: error against the number of trees, one line per depth)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, BinaryIO

import pandas as pd

from treeleaks.runtime.errors import TreeleaksError


class PlotError(TreeleaksError):
    """The table lacks a column the plot asks for."""


def plot_sweep(table: pd.DataFrame, x: str, y: str, by: str | None,
               out: Path | BinaryIO) -> Path | BinaryIO:
    """Mean of ``y`` against ``x`` (error bars: standard deviation over the other axes,
    seeds included), a line per value of ``by``; written as PNG to ``out`` (a path or a
    binary stream)."""
    missing = [c for c in (x, y, by) if c is not None and c not in table.columns]
    if missing:
        raise PlotError(f"the results have no column {missing[0]!r}; columns: "
                        f"{', '.join(map(str, table.columns))}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    table = table.assign(**{c: table[c].astype(object).where(table[c].notna(), "none")
                            for c in (by,) if c is not None})
    _draw_lines(ax, table, x, y, by)
    ax.set_xlabel(x)
    ax.set_ylabel(f"{y} (mean ± sd)")
    if by is not None:
        ax.legend()
    fig.savefig(out, dpi=120, format="png")
    plt.close(fig)
    return out


def _draw_lines(ax: Any, table: pd.DataFrame, x: str, y: str, by: str | None) -> None:
    """A line of ``y``'s mean against ``x`` (error bars: its standard deviation) per value
    of ``by`` (one line without it)."""
    groups = table.groupby(by, sort=True) if by is not None else [(None, table)]
    for value, part in groups:
        stats = part.groupby(x, sort=True)[y].agg(["mean", "std"])
        ax.errorbar(stats.index.astype(str) if stats.index.dtype == object else stats.index,
                    stats["mean"], yerr=stats["std"].fillna(0), marker="o", capsize=3,
                    label=None if by is None else f"{by} = {value}")
