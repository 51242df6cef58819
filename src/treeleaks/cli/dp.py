"""``treeleaks train-dp`` and ``treeleaks leak-test``: train a DP forest, and test whether a
reconstruction is the training data or only the population."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from treeleaks.cli.app import (
    EXIT_BAD_INPUT,
    SchemaOption,
    app,
    describe,
    fail,
    guard_outputs,
    read_csv,
    write_all,
)
from treeleaks.errors import TreeleaksError


@app.command("train-dp")
def train_dp_command(
    data: Annotated[Path, typer.Argument(metavar="DATA", help="Training data CSV (a header "
                                         "row names the columns).", show_default=False)],
    label: Annotated[str, typer.Option(help="The label column.", show_default=False)],
    out: Annotated[Path, typer.Option(help="Write the released model (treeleaks JSON) here.",
                                      show_default=False)],
    epsilon: Annotated[float, typer.Option(help="Privacy budget ε of the whole forest.")] = 1.0,
    trees: Annotated[int, typer.Option(min=1, help="Number of trees T.")] = 10,
    depth: Annotated[int, typer.Option(min=1, help="Depth of every tree.")] = 5,
    seed: Annotated[int, typer.Option(min=0, help="Random seed (splits and noise).")] = 0,
    schema: SchemaOption = None,
) -> None:
    """Train an ε-differentially private random forest (random splits from the schema's
    domains, Laplace noise on every leaf count) and write it as a model file."""

    from treeleaks.defences.dp_forest import DPRandomForestClassifier
    from treeleaks.frontends.dp import from_dp_forest
    from treeleaks.schema import FeatureSchema

    guard_outputs(data, schema, [out])
    frame = read_csv(data, "data")
    if label not in frame.columns:
        fail(f"the data have no label column {label!r} (columns: "
              f"{', '.join(map(str, frame.columns[:8]))}); give --label", EXIT_BAD_INPUT)
    X, y = frame.drop(columns=[label]), frame[label]
    err = Console(stderr=True)
    try:
        domains = None if schema is None else FeatureSchema.from_json(schema)
        forest = DPRandomForestClassifier(n_estimators=trees, max_depth=depth, epsilon=epsilon,
                                          schema=domains, random_state=seed).fit(X, y)
        model = from_dp_forest(forest, label_name=label)
    except (TreeleaksError, ValueError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)
    write_all({out: model.to_json() + "\n"})
    if schema is None:
        err.print(Text("note: the columns' domains were read from the data; what they reveal "
                       "(ranges, which columns are 0/1) is not covered by the guarantee. "
                       "Give public domains with --schema.", style="yellow"), soft_wrap=True)
    table = Table(title="DP random forest", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Training rows", f"{len(frame):,} ({X.shape[1]} features)")
    table.add_row("Trees", f"{trees} of depth {depth} ({2 ** depth} leaves each)")
    table.add_row("Train accuracy", f"{float((forest.predict(X) == y.to_numpy()).mean()):.3f}")
    guarantee = (f"{epsilon:g}-differential privacy for adding or removing one training "
                 f"row: Laplace noise of scale {trees / epsilon:g} on every leaf count, "
                 "splits drawn without the data; the schema's domains are assumed public"
                 if math.isfinite(epsilon) else "none: epsilon=inf releases the exact counts")
    table.add_row("Guarantee", guarantee)
    table.add_row("Model", escape(str(out)))
    Console().print(table)


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
) -> None:
    """Is a reconstruction the training data, or only what any sample of the population
    looks like? Scores it against datasets drawn from the population (the SaTML 2026
    study's Appendix D test)."""

    from treeleaks.evaluation.leak_test import leak_test
    from treeleaks.schema import FeatureSchema

    guard_outputs(rows, schema, [json_path] if json_path is not None else [])
    frames = {name: read_csv(path, name) for name, path in (
        ("reconstruction", rows), ("training rows", truth), ("population", population))}
    true_rows = frames["training rows"]
    try:
        features = true_rows.drop(columns=[label] if label in true_rows else [])
        domains = FeatureSchema.from_frame(features) if schema is None else (
            FeatureSchema.from_json(schema).completed(features))
        result = leak_test(frames["reconstruction"], true_rows, frames["population"], domains,
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
