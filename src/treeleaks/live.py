"""A live progress display on the terminal for the engine's `treeleaks.progress` events."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from treeleaks.progress import Progress as Event
from treeleaks.progress import ProgressCallback

_STAGES = {
    "cells": "Listing cells (trees)",
    "generate": "Generating cells (rows placed by the LP)",
    "solve": "Solving for the most likely dataset",
    "certainty": "Proving rows (candidates)",
    "verify": "Checking every leaf count",
}


@contextmanager
def live_progress(console: Console) -> Iterator[ProgressCallback | None]:
    """Yield a callback that draws each stage with a bar and its figures; None (no
    display at all) when the console is not a terminal, so pipes and CI stay clean."""
    if not console.is_terminal:
        yield None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[figures]}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bars:
        tasks: dict[str, int] = {}

        def show(event: Event) -> None:
            if event.stage not in tasks:
                for task in tasks.values():
                    bars.update(task, visible=False)
                name = _STAGES.get(event.stage, event.stage)
                tasks[event.stage] = bars.add_task(name, total=event.total, figures="")
            figures = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}"
                                for k, v in event.detail.items())
            bars.update(tasks[event.stage], completed=event.done, total=event.total,
                        figures=figures)

        yield show
