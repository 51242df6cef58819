"""``treeleaks train-dp``: train a differentially private forest and write its model file."""

from __future__ import annotations

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
    force: Force = False,
) -> None:
    """Train an ε-differentially private random forest (random splits from the schema's
    domains, Laplace noise on every leaf count) and write it as a model file."""

    from treeleaks.defences.dp_forest import DPRandomForestClassifier
    from treeleaks.frontends.dp import from_dp_forest
    from treeleaks.ir.schema import FeatureSchema

    guard_outputs(data, schema, [out], force)
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
