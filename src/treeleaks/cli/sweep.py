"""``treeleaks sweep GRID.toml --out DIR``: every point of a grid trained, attacked and
scored on Dask (locally or on a cluster), resumable; ``treeleaks sweep plot DIR``: a
measure against an axis, a line per value of another."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperGroup

from treeleaks.cli.app import EXIT_BAD_INPUT, Force, app, describe, fail, guard_outputs, write_all
from treeleaks.runtime.errors import TreeleaksError


class _RunByDefault(TyperGroup):
    """``treeleaks sweep GRID.toml`` means ``treeleaks sweep run GRID.toml``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


sweep_app = typer.Typer(cls=_RunByDefault, no_args_is_help=True,
                        help="Run a grid of attacks on Dask (treeleaks sweep GRID.toml --out "
                        "DIR), or plot its results (treeleaks sweep plot DIR).")
app.add_typer(sweep_app, name="sweep")


@sweep_app.command("run")
def run_command(
    grid_path: Annotated[Path, typer.Argument(metavar="GRID", show_default=False,
                                              help="The grid (TOML): attack and axes.")],
    out: Annotated[Path, typer.Option(help="Results folder: points.jsonl (one record per "
                                      "point, appended as they finish) and results.csv.",
                                      show_default=False)],
    scheduler: Annotated[str | None, typer.Option(
        help="Address of a running Dask scheduler (tcp://host:8786). Default: a local "
        "cluster on this machine.")] = None,
    workers: Annotated[int | None, typer.Option(
        min=1, help="Local cluster: worker processes (default: one per core).")] = None,
    data_dir: Annotated[Path | None, typer.Option(
        help="Folder holding datasets.json (overrides the grid's data_dir).")] = None,
) -> None:
    """Train, attack and score every point of GRID not yet in --out."""
    from dataclasses import replace

    from treeleaks.sweep import load_grid, run_sweep
    from treeleaks.sweep.results import summarise, write_table

    try:
        grid = load_grid(grid_path)
        if data_dir is not None:
            grid = replace(grid, data_dir=data_dir.resolve())
        total = len(grid.points())
        progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        with progress:
            task = progress.add_task("points", total=total)
            records = run_sweep(grid, out, scheduler=scheduler, workers=workers,
                                on_record=lambda r: progress.update(
                                    task, advance=1, description=_describe_point(r)))
        table = write_table(records, out / "results.csv")
    except (TreeleaksError, OSError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)
    console = Console()
    console.print(_summary(summarise(table, grid), f"{grid.attack}: {len(records)} points"))
    console.print(f"Wrote {escape(str(out / 'results.csv'))} and "
                  f"{escape(str(out / 'points.jsonl'))}")


@sweep_app.command("plot")
def plot_command(
    results: Annotated[Path, typer.Argument(metavar="RESULTS", show_default=False,
                                            help="A sweep's results folder (or results.csv).")],
    x: Annotated[str, typer.Option(help="Axis on the horizontal.")] = "trees",
    y: Annotated[str, typer.Option(help="Measure on the vertical.")] = "error",
    by: Annotated[str | None, typer.Option(help="One line per value of this axis.")] = None,
    out: Annotated[Path | None, typer.Option(help="PNG to write (default: "
                                             "RESULTS/<y>_vs_<x>.png).")] = None,
    force: Force = False,
) -> None:
    """Plot a measure against an axis, a line per value of another (mean ± sd)."""
    import io

    import pandas as pd

    from treeleaks.sweep.plot import plot_sweep

    csv = results / "results.csv" if results.is_dir() else results
    target = out or csv.parent / f"{y}_vs_{x}{f'_by_{by}' if by else ''}.png"
    guard_outputs(csv, None, [target], force)
    png = io.BytesIO()
    try:
        table = pd.read_csv(csv)
        plot_sweep(table, x, y, by, png)
    except (TreeleaksError, OSError, ValueError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)
    write_all({target: png.getvalue()})
    Console().print(f"Wrote {escape(str(target))}")


def _describe_point(record: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={record[k]}" for k in ("dataset", "n", "depth", "seed")
                      if k in record)
    return escape(f"{shown}: {record['status']}")


def _summary(summary: Any, title: str) -> Table:
    table = Table(title=escape(title), title_justify="left")
    for column in summary.columns:
        table.add_column(str(column), justify="left" if summary[column].dtype == object
                         else "right")
    for row in summary.itertuples(index=False):
        table.add_row(*(escape(_cell(v)) for v in row))
    return table


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "-" if value != value else f"{value:.3g}" if abs(value) >= 1 else f"{value:.4f}"
    return str(value)
