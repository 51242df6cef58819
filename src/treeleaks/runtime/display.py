"""Rich renderings shared by the CLI and the demo: the certificate line and live progress."""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

    from treeleaks.runtime.progress import Progress as Event
    from treeleaks.runtime.progress import ProgressCallback

# stage -> (what it is doing, what its done/total count)
STAGES = {
    "cells": ("Listing cells", "trees"),
    "pin": ("Pinning rows from single-row leaves", "rows pinned"),
    "generate": ("Generating cells", "rows placed"),
    "solve": ("Solving for the most likely dataset", ""),
    "certainty": ("Proving rows", "candidates"),
    "verify": ("Checking every leaf count", ""),
    "shadows": ("Fitting PrivBayes on shadow pairs", "pairs"),
    "attacks": ("Attacking synthetic releases", "releases"),
}
# detail key -> how the figure reads; other keys are shown under their own name
FIGURES = {
    "cells": "cells",
    "columns": "cells generated",
    "iteration": "round",
    "variables": "variables",
    "rows": "rows placed",
    "whole_rows": "whole rows within the counts",
    "incumbent": "best",
    "bound": "bound",
}


def certificate_text(summary: dict[str, Any]) -> Text:
    """The certificate line of a result summary: verified, or how many counts differ."""
    certificate = summary["certificate"]
    if certificate is None or summary.get("n_rows") == 0:
        return Text("none: no rows to check", "red")
    checked = certificate["counts_checked"]
    if summary.get("partial"):
        return (Text(f"within every count: no leaf holds more of these rows than it released "
                     f"({checked} leaf counts checked)", "green") if summary["verified"] else
                Text(f"not within the counts: {certificate['counts_wrong']} of {checked} leaf "
                     "counts exceeded", "red"))
    if summary["verified"]:
        drawn = (" with the draws inferred for them"
                 if summary.get("formulation") == "bootstrap-unknown" else "")
        text = Text(f"verified: the rows reproduce all {checked} released leaf counts{drawn}",
                    "green")
        match = certificate.get("leaf_values_match")
        if match is not None:  # a booster's leaf values, checked beside the counts
            text.append(f"; {certificate['leaf_values']}", "green" if match else "yellow")
        return text
    wrong = certificate["counts_wrong"]
    return Text(f"not verified: {wrong} of {checked} leaf counts differ", "red")


@contextmanager
def live_progress(console: Console) -> Iterator[ProgressCallback | None]:
    """A callback that draws the engine's progress events on ``console`` while the block
    runs (stage, a bar when the total is known, its figures, time in the stage) and clears
    it afterwards; None when the console is not a terminal, so pipes and CI logs get only
    the results."""
    if not console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(),
               TextColumn("{task.fields[figures]}", markup=False), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bars:
        yield StageDisplay(bars)


class StageDisplay:
    """Draws the current stage as one task of a rich `Progress`; a new stage replaces it."""

    def __init__(self, bars: RichProgress) -> None:
        self.bars = bars
        self.stage: str | None = None
        self.task: TaskID | None = None

    def __call__(self, event: Event) -> None:
        label, unit = STAGES.get(event.stage, (event.stage.replace("_", " ").capitalize(), ""))
        if event.stage != self.stage:
            if self.task is not None:
                self.bars.remove_task(self.task)
            self.stage = event.stage
            self.task = self.bars.add_task(label, total=event.total, figures="")
        count = "" if event.total is None else f"{event.done:,}/{event.total:,} {unit}".strip()
        parts = (count, figures_text(event.detail))
        self.bars.update(self.task, completed=event.done, total=event.total,
                         figures=" · ".join(part for part in parts if part))


def figures_text(detail: dict[str, Any]) -> str:
    """A progress event's detail as ``cells 3,412 · cells generated 120``."""
    return " · ".join(f"{FIGURES.get(k, k.replace('_', ' '))} {_number(v)}"
                      for k, v in detail.items())


def _number(value: Any) -> str:
    """Whole numbers with thousands separators, others to four significant digits."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.4g}"
