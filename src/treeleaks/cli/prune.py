"""``treeleaks prune``: the pruning defence that removes the predicates singling out one
training row, with the attack re-run on the result."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from treeleaks.cli.app import (
    EXIT_BAD_INPUT,
    Force,
    LabelOption,
    ModelArg,
    TrustPickle,
    app,
    describe,
    fail,
    guard_outputs,
    read_data,
)
from treeleaks.runtime.errors import TreeleaksError


@app.command("prune")
def prune_command(
    model_path: ModelArg,
    min_count: Annotated[int, typer.Option(
        "--min-count", help="k: no node may show a class count (a regressor: a row count) "
        "from 1 to k-1. 2 removes singling out; larger k gives k-anonymous leaves.",
        show_default=False)],
    out: Annotated[Path, typer.Option(help="Write the pruned model here (.skops).",
                                      show_default=False)],
    data: Annotated[Path | None, typer.Option(
        help="CSV (features and label) to measure accuracy before and after on, e.g. a "
        "test set.")] = None,
    label: LabelOption = None,
    trust_pickle: TrustPickle = False,
    force: Force = False,
) -> None:
    """Prune a scikit-learn tree model so no node shows a count below --min-count, and
    re-run the single-out attack on the result."""
    from treeleaks.attacks.singling_out import single_out, split_data
    from treeleaks.defences.prune import prune
    from treeleaks.frontends.sklearn import from_sklearn
    from treeleaks.io import load_estimator

    if min_count < 1:
        fail(f"--min-count must be at least 1, not {min_count} (2 removes singling out)",
             EXIT_BAD_INPUT)
    if out.suffix.lower() != ".skops":
        fail(f"--out {str(out)!r}: the pruned model is written with skops; name it *.skops",
             EXIT_BAD_INPUT)
    guard_outputs(model_path, data, [out], force)
    frame = read_data(data, label) if data is not None else None
    try:
        estimator = load_estimator(model_path, trust_pickle)
        before = from_sklearn(estimator, allow_regression=True)
        held_out = None if frame is None else split_data(before, frame, label)[0]
        pruned, summary = prune(estimator, min_count)
        after = single_out(from_sklearn(pruned, allow_regression=True), cells=False)
    except (TreeleaksError, ValueError, OSError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)
    _save(pruned, out)
    table = Table(title=escape(f"Pruned {model_path.name} (k = {min_count})"),
                  show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Nodes", f"{summary.nodes_before:,} → {summary.nodes_after:,}")
    table.add_row("Leaves", f"{summary.leaves_before:,} → {summary.leaves_after:,}")
    table.add_row("Vulnerable nodes after (single-out)", str(len(after.predicates)))
    if held_out is not None:
        metric = "R²" if before.is_regression else "Accuracy"
        y = frame[label]
        table.add_row(f"{metric} on {escape(data.name)}",
                      f"{estimator.score(held_out, y):.4f} → {pruned.score(held_out, y):.4f}")
    if before.n_trees > 1:
        table.add_row("Note", "every tree is pruned: no tree singles a row out, but the "
                      "forest's reconstruction attack still reads the counts that remain")
    table.add_row("Written", escape(str(out)))
    Console().print(table)


def _save(estimator: Any, path: Path) -> None:
    """Write the skops archive beside ``path`` first, then rename it over ``path``."""
    from treeleaks.io import save_model

    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp.skops")
    try:
        save_model(estimator, partial)
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        fail(f"cannot write {str(path)!r}: {describe(exc)}", EXIT_BAD_INPUT)
