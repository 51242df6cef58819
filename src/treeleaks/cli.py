"""The ``treeleaks`` command line: a thin shell over the library.

Exit codes: 0 success; 1 a reconstruction that fails its own certificate (a bug, please
report it); 2 bad input (unreadable model or schema, unsupported model); 3 no complete
reconstruction (the counts admit no dataset, or the solver ran out of time).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from treeleaks.display import certificate_text, live_progress
from treeleaks.errors import TreeleaksError
from treeleaks.io import load_model

if TYPE_CHECKING:  # the solvers, pandas and scipy load only for the commands that need them
    import pandas as pd

    from treeleaks.model import ReleasedModel
    from treeleaks.result import Reconstruction
    from treeleaks.schema import FeatureSchema
    from treeleaks.schema_hints import SuggestedGroup

EXIT_UNVERIFIED = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3

app = typer.Typer(
    help="What does a released tree model reveal about its training data?",
    no_args_is_help=True,
    add_completion=False,
)

ModelArg = Annotated[
    Path,
    typer.Argument(
        metavar="MODEL",
        help="The model: treeleaks .json, scikit-learn .skops, or a pickle (with --trust-pickle).",
        show_default=False,
    ),
]
SchemaOption = Annotated[
    Path | None,
    typer.Option(help="Feature schema JSON (one_hot_groups, at_most_one_groups, numerical, "
                 "ordinal). Default: inferred from the model's splits."),
]
STRATEGIES = {  # how Reconstruction.strategy found the cells
    "enumerate": "every cell listed (enumerate)",
    "generate": "cells generated on demand (generate)",
}
PROBE_SECONDS = 1.5  # inspect lists cells at most this long to estimate the cost
TrustPickle = Annotated[
    bool,
    typer.Option(
        "--trust-pickle",
        help="Allow .pkl/.pickle/.joblib files. Loading a pickle runs code from the file.",
    ),
]


@app.command()
def demo(seed: Annotated[int, typer.Option(help="Random state of the forest.")] = 0) -> None:
    """Train a forest on built-in data, reconstruct its training set from the model, score it."""
    from treeleaks.demo import run_demo

    summary = run_demo(seed=seed, console=Console())
    _check_outcome(summary["status"], summary["verified"], summary["message"])


@app.command("reconstruct")
def reconstruct_command(
    model_path: ModelArg,
    schema: SchemaOption = None,
    out: Annotated[
        Path | None, typer.Option(help="Write the reconstructed rows to this CSV.")
    ] = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the result summary to this JSON file.")
    ] = None,
    details: Annotated[
        Path | None,
        typer.Option(help="Write per-row proofs and bounds to this CSV: proven, proven_pattern, "
                     "and <column>:free / :lower / :upper for every feature."),
    ] = None,
    time_limit: Annotated[
        float,
        typer.Option(min=0, help="Time limit in seconds for finding the reconstruction: cell "
                     "enumeration or generation and the solver."),
    ] = 60.0,
    strategy: Annotated[
        Literal["auto", "enumerate", "generate"],
        typer.Option(help="List every cell (enumerate), generate cells on demand (generate), "
                     "or enumerate within a budget and generate beyond it (auto)."),
    ] = "auto",
    threads: Annotated[int, typer.Option(min=1, help="CP-SAT worker threads.")] = 2,
    seed: Annotated[int, typer.Option(help="CP-SAT random seed.")] = 0,
    solver: Annotated[Literal["highs", "cp-sat"], typer.Option(help="Solver backend.")] = "highs",
    certainty_time_limit: Annotated[
        float, typer.Option(min=0, help="Time for tightening the proofs (they stay sound if cut).")
    ] = 30.0,
    trust_pickle: TrustPickle = False,
) -> None:
    """Reconstruct the training rows of a forest whose trees each saw every row once."""
    from treeleaks.attacks.exact import reconstruct

    _check_outputs(model_path, schema, out, json_path, details)
    model = _load(model_path, trust_pickle)
    bound = _bound_schema(schema, model)
    if schema is None and not model.bootstrap and model.noise is None:  # else refused below
        _hint_groups(model, model_path)
    try:
        with live_progress(Console(stderr=True)) as progress:
            recon = reconstruct(
                model, bound, time_limit=time_limit, threads=threads, seed=seed, solver=solver,
                certainty_time_limit=certainty_time_limit, strategy=strategy, progress=progress,
            )
    except TreeleaksError as exc:
        _fail(str(exc), EXIT_BAD_INPUT)
    out_console = Console()
    out_console.print(_summary_table(model_path, model, recon))
    try:
        if out is not None:
            _integral(recon.rows).to_csv(out, index=False)
            out_console.print(f"Wrote {len(recon.rows)} rows to {escape(str(out))}")
        if details is not None:
            _details(recon).to_csv(details, index=False)
            out_console.print(f"Wrote per-row proofs and bounds to {escape(str(details))}")
        if json_path is not None:
            summary = {**recon.summary(), "model_path": str(model_path)}
            json_path.write_text(json.dumps(summary, indent=2) + "\n")
            out_console.print(f"Wrote the summary to {escape(str(json_path))}")
    except OSError as exc:
        _fail(_describe(exc), EXIT_BAD_INPUT)
    _check_outcome(recon.status, recon.verified, recon.message)


@app.command()
def inspect(
    model_path: ModelArg,
    schema: SchemaOption = None,
    suggest_schema: Annotated[
        Path | None,
        typer.Option(help="Write the one-hot / at-most-one groups the column names and the "
                     "model suggest to this schema JSON, for review and --schema."),
    ] = None,
    trust_pickle: TrustPickle = False,
) -> None:
    """Show what a model file exposes to anyone who holds it, and what rebuilding its
    training set would take."""
    from treeleaks.schema_hints import schema_json, suggest_groups

    _check_outputs(model_path, schema, suggest_schema)
    model = _load(model_path, trust_pickle)
    bound = _bound_schema(schema, model)
    groups = suggest_groups(model)
    table = _inspect_table(model_path, model)
    if model.n_rows is not None and model.trees:
        table.add_row("Estimated cost", _cost_estimate(model, bound))
    if groups:
        table.add_row("Looks one-hot encoded", _groups_text(groups, suggest_schema is None))
    Console().print(table)
    if suggest_schema is not None:
        try:
            suggest_schema.write_text(json.dumps(schema_json(groups), indent=2) + "\n")
        except OSError as exc:
            _fail(_describe(exc), EXIT_BAD_INPUT)
        Console().print(f"Wrote {len(groups)} suggested group(s) to {escape(str(suggest_schema))}"
                        "; check them before passing --schema")


def _bound_schema(path: Path | None, model: ReleasedModel) -> FeatureSchema:
    """The schema file bound to the model's columns, or the one inferred from its splits."""
    from treeleaks.schema import FeatureSchema

    if path is None:
        return FeatureSchema.infer(model).bind(model)
    if not path.is_file():
        _fail(f"schema file {str(path)!r} does not exist", EXIT_BAD_INPUT)
    try:
        return FeatureSchema.from_json(path).bind(model)
    except (TreeleaksError, ValueError, OSError) as exc:
        _fail(_describe(exc), EXIT_BAD_INPUT)


def _groups_text(groups: list[SuggestedGroup], how_to_use: bool) -> Text:
    """Each suggested group: its prefix, kind and columns (the first few); with
    ``how_to_use``, how to turn them into a schema."""
    lines = []
    for g in groups:
        kind = "one-hot" if g.exactly_one else "at most one"
        shown = ", ".join(g.columns[:4]) + (f", ... ({len(g.columns)})" if len(g.columns) > 4
                                             else "")
        lines.append(f"{g.prefix} ({kind}): {shown}")
    if how_to_use:
        lines.append("not assumed; --suggest-schema FILE writes them for --schema")
    return Text("\n".join(lines))


def _hint_groups(model: ReleasedModel, path: Path) -> None:
    """Say when columns look one-hot encoded: declaring them can save orders of magnitude."""
    from treeleaks.schema_hints import suggest_groups

    groups = suggest_groups(model)
    if not groups:
        return
    names = ", ".join(f"{g.prefix} ({len(g.columns)} columns)" for g in groups[:4])
    more = f" and {len(groups) - 4} more" if len(groups) > 4 else ""
    Console(stderr=True).print(Text(
        f"note: columns look one-hot encoded: {names}{more}; treeleaks does not assume it. "
        f"If they are, declaring them can make this much faster: run treeleaks inspect "
        f"{shlex.quote(str(path))} --suggest-schema schema.json, check the file, then pass "
        "--schema schema.json",
        style="yellow"), soft_wrap=True)


def _check_outputs(model: Path, schema: Path | None, *outputs: Path | None) -> None:
    """Refuse outputs in missing folders, or that would overwrite an input or each other."""
    inputs = {p.resolve(): p for p in (model, schema) if p is not None}
    seen: dict[Path, Path] = {}
    for target in outputs:
        if target is None:
            continue
        if not target.parent.is_dir():
            _fail(f"cannot write {str(target)!r}: its folder does not exist", EXIT_BAD_INPUT)
        if target.is_dir():
            _fail(f"cannot write {str(target)!r}: it is a folder; name a file", EXIT_BAD_INPUT)
        resolved = target.resolve()
        if resolved in inputs:
            _fail(f"output {str(target)!r} would overwrite the input {str(inputs[resolved])!r}; "
                  "choose another file name", EXIT_BAD_INPUT)
        if resolved in seen:
            _fail(f"two outputs name the same file {str(target)!r}; give each its own name",
                  EXIT_BAD_INPUT)
        seen[resolved] = target


def _details(recon: Reconstruction) -> pd.DataFrame:
    """Per row: proven, proven_pattern, and each feature's free flag and bounds."""
    import numpy as np
    import pandas as pd

    parts = {"row": np.arange(recon.n_rows), "proven": recon.proven,
             "proven_pattern": recon.proven_pattern}
    for name in recon.free.columns:
        parts[f"{name}:free"] = recon.free[name].to_numpy()
        parts[f"{name}:lower"] = recon.lower[name].to_numpy()
        parts[f"{name}:upper"] = recon.upper[name].to_numpy()
    return pd.DataFrame(parts)


def _load(path: Path, trust_pickle: bool) -> ReleasedModel:
    try:
        return load_model(path, trust_pickle=trust_pickle)
    except (TreeleaksError, ValueError, OSError) as exc:
        _fail(_describe(exc), EXIT_BAD_INPUT)


def _describe(exc: Exception) -> str:
    """One line for an error; OS errors name the file and the reason, not an errno."""
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"cannot access {exc.filename!r}: {exc.strerror}"
    return str(exc)


def _fail(message: str, code: int) -> NoReturn:
    """Print one red line on stderr and exit with ``code``."""
    Console(stderr=True).print(
        Text.assemble(("error: ", "bold red"), (message, "red")), soft_wrap=True
    )
    raise typer.Exit(code)


def _check_outcome(status: str, verified: bool, message: str) -> None:
    """Exit non-zero when there is no complete reconstruction, or it fails its certificate."""
    if status in ("INFEASIBLE", "UNKNOWN"):
        _fail(message or f"no complete reconstruction (status {status})", EXIT_INCOMPLETE)
    if not verified:
        _fail(message or "the reconstruction does not reproduce the model", EXIT_UNVERIFIED)


def _summary_table(path: Path, model: ReleasedModel, recon: Reconstruction) -> Table:
    s = recon.summary()
    table = Table(title="Reconstruction", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Model", escape(f"{path} ({model.source or 'treeleaks JSON'}, "
                                  f"{model.n_trees} trees, {model.n_features} features)"))
    status_style = "green" if s["status"] == "OPTIMAL" else "yellow"
    solver = f" ({s['solver']})" if s["solver"] else ""
    table.add_row("Status", Text(f"{s['status']} in {s['time_s']:.2f} s{solver}", status_style))
    how = STRATEGIES.get(s["strategy"], s["strategy"])
    table.add_row("Cells", escape(f"{s['n_cells']:,}: {how}"))
    if s["certificate"] is not None:
        table.add_row("Certificate", certificate_text(s))
    table.add_row("Rows reconstructed", str(s["n_rows"]))
    table.add_row("Rows proven to be training rows", f"{s['proven_rows']} of {s['n_rows']}")
    table.add_row(
        "Rows whose pinned values are proven",
        f"{s['proven_pattern_rows']} of {s['n_rows']}",
    )
    table.add_row("Values the model leaves open", f"{s['free_values']} (filled in)")
    if s["numerical_width_mean"] is not None:
        table.add_row("Numerical values pinned to",
                      f"{s['numerical_width_mean']:.1%} of their range on average")
    if s["proof"]:
        table.add_row("Proofs", escape(s["proof"]))
    if s["message"]:
        table.add_row("Note", escape(s["message"]))
    return table


def _inspect_table(path: Path, model: ReleasedModel) -> Table:
    table = Table(title=escape(f"What {path.name} exposes"), show_header=False,
                  title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    leaves = [tree.n_leaves for tree in model.trees]
    depths = [tree.depth for tree in model.trees]
    table.add_row("Source", escape(model.source or "treeleaks JSON"))
    table.add_row("Trees", str(model.n_trees))
    table.add_row("Leaves per tree", _spread(leaves))
    table.add_row("Depth", _spread(depths))
    table.add_row("Classes", escape(", ".join(map(str, model.classes))))
    table.add_row("Label column", escape(model.label_name))
    names = model.feature_names
    table.add_row("Features", escape(f"{len(names)}: {', '.join(names[:8])}"
                                     f"{', ...' if len(names) > 8 else ''}"))
    unsplit = sum(t.size == 0 for t in model.thresholds())
    table.add_row("Features never split on", str(unsplit))
    table.add_row("Bootstrap", "yes" if model.bootstrap else "no: every tree saw every row once")
    exposed = bool(model.trees) and all(t.multiplicities is not None for t in model.trees)
    table.add_row("Per-tree multiplicities", "exposed" if exposed else "not exposed")
    table.add_row("Training rows N", _rows_known(model, exposed))
    noise = model.noise
    table.add_row("Noise", "none (exact counts)" if noise is None else
                  f"{noise.kind}, epsilon={noise.epsilon:g}, scale={noise.scale:g}")
    for key, value in model.facts.items():
        table.add_row(escape(key), escape(str(value)))
    return table


def _cost_estimate(model: ReleasedModel, schema: FeatureSchema) -> str:
    """How far listing the cells gets within the engine's budget (and at most
    `PROBE_SECONDS`), so which strategy `reconstruct` will use."""
    import time

    from treeleaks.cells import CellBudget, probe_cells

    deadline = time.perf_counter() + PROBE_SECONDS
    probe = probe_cells(model, schema, CellBudget(deadline=deadline))
    if probe.complete:
        return f"all {probe.n_trees} trees: {probe.n_cells:,} cells → cells enumerated"
    if time.perf_counter() > deadline:
        return (f"listing did not finish in {PROBE_SECONDS:g} s ({probe.trees_done} of "
                f"{probe.n_trees} trees, {probe.n_cells:,} cells) → probably generated on "
                "demand (reconstruct lists for a quarter of --time-limit, at least 2 s)")
    return (f"stopped after {probe.trees_done} of {probe.n_trees} trees at {probe.n_cells:,} "
            "cells → cells generated on demand (see docs/engine.md)")


def _rows_known(model: ReleasedModel, multiplicities_exposed: bool) -> str:
    """N and the class balance when the counts give them away."""
    if model.n_rows is not None:
        per_class = model.trees[0].counts.sum(axis=0)
        balance = ", ".join(f"{c}: {int(k)}" for c, k in zip(model.classes, per_class))
        return escape(f"{model.n_rows} ({balance})")
    if multiplicities_exposed:
        return f"{len(model.trees[0].multiplicities)} (length of the multiplicities)"
    return "not exposed"


def _integral(rows: pd.DataFrame) -> pd.DataFrame:
    """Float columns holding only whole numbers as integers, so 0/1 data stays 0/1 in the CSV."""
    import numpy as np
    import pandas as pd

    rows = rows.copy()
    for name in rows.columns:
        values = rows[name]
        if pd.api.types.is_float_dtype(values) and np.isfinite(values).all() and (
            values == values.round()
        ).all():
            rows[name] = values.astype(np.int64)
    return rows


def _spread(values: list[Any]) -> str:
    import numpy as np

    if not values:
        return "-"
    return f"min {min(values)}, median {np.median(values):g}, max {max(values)}"
