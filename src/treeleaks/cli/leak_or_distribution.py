"""``treeleaks leak-test``: is a reconstruction the training data, or only what any sample
of the population looks like?"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from treeleaks.cli.app import (
    EXIT_BAD_INPUT,
    Force,
    SchemaOption,
    app,
    describe,
    fail,
    guard_outputs,
    read_csv,
    write_all,
)
from treeleaks.runtime.errors import TreeleaksError


@app.command("leak-test")
def leak_test_command(
    rows: Annotated[Path, typer.Argument(metavar="RECONSTRUCTION", show_default=False,
                                         help="The reconstructed rows (reconstruct --out).")],
    truth: Annotated[Path, typer.Option(help="CSV of the true training rows.",
                                        show_default=False)],
    population: Annotated[Path, typer.Option(
        help="CSV of rows from the same population that were not in training.",
        show_default=False)],
    label: Annotated[str | None, typer.Option(help="The label column, if the files have one.")
                     ] = None,
    schema: SchemaOption = None,
    samples: Annotated[int, typer.Option(min=2, help="Reference datasets to draw.")] = 100,
    seed: Annotated[int, typer.Option(min=0, help="Random seed of the draws.")] = 0,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the test's figures to this JSON file.")
    ] = None,
    force: Force = False,
) -> None:
    """Is a reconstruction the training data, or only what any sample of the population
    looks like? Scores it against datasets drawn from the population (the SaTML 2026
    study's Appendix D test)."""

    from treeleaks.evaluation.leak_or_distribution import leak_test
    from treeleaks.ir.schema import FeatureSchema

    guard_outputs(rows, schema, [json_path] if json_path is not None else [], force)
    frames = {name: read_csv(path, name) for name, path in (
        ("reconstruction", rows), ("training rows", truth), ("population", population))}
    true_rows = frames["training rows"]
    try:
        features = true_rows.drop(columns=[label] if label in true_rows else [])
        domains = FeatureSchema.from_frame(features) if schema is None else (
            FeatureSchema.from_json(schema).completed(features))
        result = leak_test(frames["reconstruction"], truth=true_rows,
                           population=frames["population"], schema=domains,
                           label=label, n_samples=samples, seed=seed)
    except (TreeleaksError, ValueError, KeyError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)
    table = Table(title="Leak or distribution?", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Error against the training rows", f"{result.error:.4f}")
    table.add_row(f"Error against {samples} population samples",
                  f"{result.mean:.4f} ± {result.std:.4f}")
    table.add_row("p-value", f"{result.p_value:.3g}")
    table.add_row("Verdict", Text(
        "a leak: closer to the training rows than samples of the population get"
        if result.leak else "no evidence beyond the distribution",
        "red" if result.leak else "green"))
    table.add_row("Rows reconstructed perfectly", f"{result.perfect_share:.1%}")
    table.add_row("Inliers / outliers (error)",
                  f"{result.inlier_error:.4f} / {result.outlier_error:.4f} "
                  f"({result.n_outliers} outliers)")
    Console().print(table)
    if json_path is not None:
        write_all({json_path: json.dumps(result.summary(), indent=2) + "\n"})
