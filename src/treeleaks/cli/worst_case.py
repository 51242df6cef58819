"""``treeleaks worst-case``: the custodian's proven bound on any consistent reconstruction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from treeleaks.cli.app import (
    EXIT_BAD_INPUT,
    EXIT_INCOMPLETE,
    Force,
    ModelArg,
    SchemaOption,
    TrustPickle,
    app,
    bound_schema,
    fail,
    guard_outputs,
    load,
    positive_seconds,
    write_all,
)
from treeleaks.runtime.errors import TreeleaksError
from treeleaks.runtime.paths import unreadable


@app.command("worst-case")
def worst_case_command(
    model_path: ModelArg,
    truth: Annotated[
        Path,
        typer.Option(help="CSV of the training rows (every feature and the label) in the order "
                     "the forest was fitted on: the custodian's data.", show_default=False),
    ],
    schema: SchemaOption = None,
    time_limit: Annotated[
        float, typer.Option(callback=positive_seconds, help="Time limit in seconds; cut "
                            "short, the bounds stay sound but looser.")
    ] = 60.0,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the summary to this JSON file.")
    ] = None,
    trust_pickle: TrustPickle = False,
    force: Force = False,
) -> None:
    """For the custodian: how far from the training set can any dataset that reproduces a
    bootstrap forest be? Bounds every row's error, proven."""
    import pandas as pd

    from treeleaks.attacks.worst_case import worst_case

    guard_outputs(model_path, schema, [json_path] if json_path is not None else [], force)
    model = load(model_path, trust_pickle)
    bound = bound_schema(schema, model)
    if problem := unreadable(truth, "training rows file"):
        fail(problem, EXIT_BAD_INPUT)
    try:
        rows = pd.read_csv(truth)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        fail(f"cannot read the training rows {str(truth)!r}: {exc}", EXIT_BAD_INPUT)
    try:
        result = worst_case(model, bound, truth=rows, time_limit=time_limit)
    except TreeleaksError as exc:
        fail(str(exc), EXIT_BAD_INPUT)
    s = result.summary()
    table = Table(title="Worst case over every dataset that reproduces the model",
                  show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Status", f"{s['status']} in {s['time_s']:.2f} s")
    if s["n_rows"]:
        table.add_row("Guaranteed recovery",
                      f"every consistent reconstruction recovers at least "
                      f"{s['guaranteed_recovery']:.1%} of every row's values")
        table.add_row("Rows at their bound", f"{s['rows_settled']} of {s['n_rows']} (a "
                      "consistent dataset reaches it)")
        table.add_row("Farthest dataset", f"mean error {s['mean_error_found']:.4f} (none "
                      f"exceeds {s['mean_error_bound']:.4f})")
    if s["message"]:
        table.add_row("Note", escape(s["message"]))
    Console().print(table)
    if json_path is not None:
        write_all({json_path: json.dumps(s, indent=2) + "\n"})
    if not s["n_rows"]:
        fail(s["message"] or f"no worst case (status {s['status']})", EXIT_INCOMPLETE)
