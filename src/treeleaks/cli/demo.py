"""``treeleaks demo``: the main job on built-in data, from training to the scored rows."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from treeleaks.cli.app import app, check_outcome
from treeleaks.runtime.limits import SEED_MAX


@app.command()
def demo(
    seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="Random state of the forest.")
    ] = 0,
    binarized: Annotated[
        bool, typer.Option(help="Attack a forest whose trees each see every row once, on "
                           "binarized data, instead: which rows the model proves were "
                           "training rows.")
    ] = False,
) -> None:
    """Train scikit-learn's default forest on built-in raw data, reconstruct its training
    set from the model alone, score it."""
    if binarized:
        from treeleaks.demos.demo import run_demo

        summary = run_demo(seed=seed, console=Console())
    else:
        from treeleaks.demos.demo_raw import run_raw_demo

        summary = run_raw_demo(seed=seed, console=Console())
    check_outcome(summary["status"], summary["verified"], summary["message"])
