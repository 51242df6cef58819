"""The ``treeleaks`` command line: a thin shell over the library.

Exit codes: 0 success; 1 a reconstruction that fails its own certificate (a bug, please
report it); 2 bad input or usage (unreadable model or schema, unsupported model, bad option,
unwritable output); 3 no complete reconstruction (the counts admit no dataset, the solver
ran out of time, or memory ran out); 4 an unexpected error (a bug, please report it);
130 interrupted. Every error is one line on stderr.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from treeleaks.display import certificate_text, live_progress
from treeleaks.errors import TreeleaksError
from treeleaks.io import load_model
from treeleaks.limits import DEFAULT_MAX_ROWS, SEED_MAX
from treeleaks.outputs import OutputError, check_outputs, partial_path, write_outputs

if TYPE_CHECKING:  # the solvers, pandas and scipy load only for the commands that need them
    import pandas as pd

    from treeleaks.model import ReleasedModel
    from treeleaks.result import Reconstruction
    from treeleaks.schema import FeatureSchema
    from treeleaks.schema_hints import SuggestedGroup

EXIT_UNVERIFIED = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3
EXIT_BUG = 4
EXIT_INTERRUPTED = 130
INCOMPLETE = ("INFEASIBLE", "UNKNOWN")  # statuses without a complete reconstruction
DEBUG_VARIABLE = "TREELEAKS_DEBUG"  # set to 1 to see the traceback of an unexpected error
OUT_OF_MEMORY = (
    "memory ran out before the run finished; try a shorter --time-limit, --strategy "
    "generate, or a --schema declaring one-hot groups (treeleaks inspect MODEL "
    "--suggest-schema schema.json)"
)


class _OneLineErrors(TyperGroup):
    """The command group, with every way a run can fail turned into one line on stderr and
    a documented exit code (see the module docstring) instead of a box or a traceback."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except typer.TyperException as exc:  # click's usage errors (unknown option, ...)
            if type(exc).__name__ == "NoArgsIsHelpError":  # bare `treeleaks`: help shown
                code = exc.exit_code
            else:
                ctx = getattr(exc, "ctx", None)
                hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
                code = _print_error(_one_line(exc.format_message()) + hint, exc.exit_code)
        except typer.Abort:  # end of input at a prompt
            code = _print_error("interrupted", EXIT_INTERRUPTED)
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.TyperException, typer.Exit, typer.Abort):
            raise
        except KeyboardInterrupt:
            _fail("interrupted; no output file was written", EXIT_INTERRUPTED)
        except MemoryError:
            _fail(OUT_OF_MEMORY, EXIT_INCOMPLETE)
        except Exception as exc:
            if os.environ.get(DEBUG_VARIABLE):
                import traceback

                traceback.print_exc()
            _fail(f"unexpected {type(exc).__name__}: {_one_line(str(exc))}; this is a bug, "
                  f"please report it (set {DEBUG_VARIABLE}=1 to see the traceback)", EXIT_BUG)


app = typer.Typer(
    cls=_OneLineErrors,
    help="What does a released tree model reveal about its training data?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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
FORMULATIONS = {  # what Reconstruction.formulation solved
    "exact": "every tree saw every row once (exact)",
    "bootstrap-known": "rows drawn with replacement, draws read from the model "
                       "(bootstrap-known): rows in training order",
    "bootstrap-unknown": "rows drawn with replacement, draws inferred (bootstrap-unknown): "
                         "rows in no particular order",
    "dp": "the most likely dataset given noisy (DP) counts (dp)",
}
PROBE_SECONDS = 1.5  # inspect lists cells at most this long to estimate the cost
TrustPickle = Annotated[
    bool,
    typer.Option(
        "--trust-pickle",
        help="Allow .pkl/.pickle/.joblib files. Loading a pickle runs code from the file.",
    ),
]


def _positive_seconds(value: float) -> float:
    """``--time-limit``: a time the run can actually use (NaN, infinite, 0 are refused)."""
    if not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"must be a positive number of seconds, not {value:g}")
    return value


def _seconds(value: float) -> float:
    """``--certainty-time-limit``: 0 or more seconds (NaN and infinite are refused)."""
    if not (math.isfinite(value) and value >= 0):
        raise typer.BadParameter(f"must be 0 or a positive number of seconds, not {value:g}")
    return value


@app.command()
def demo(
    seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="Random state of the forest.")
    ] = 0,
    bootstrap: Annotated[
        bool, typer.Option(help="Attack scikit-learn's default forest (bootstrap=True) "
                           "instead: the rows come back in training order.")
    ] = False,
) -> None:
    """Train a forest on built-in data, reconstruct its training set from the model, score it."""
    from treeleaks.demo import run_demo

    summary = run_demo(seed=seed, console=Console(), bootstrap=bootstrap)
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
        typer.Option(callback=_positive_seconds, help="Time limit in seconds for the whole "
                     "run: cells and solver, then the proofs in what is left (at least "
                     "min(--certainty-time-limit, 15%))."),
    ] = 60.0,
    strategy: Annotated[
        Literal["auto", "enumerate", "generate"],
        typer.Option(help="List every cell (enumerate), generate cells on demand (generate), "
                     "or enumerate within a budget and generate beyond it (auto)."),
    ] = "auto",
    threads: Annotated[int, typer.Option(min=1, help="CP-SAT worker threads.")] = 2,
    seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="CP-SAT random seed (0 to 2^31-1).")
    ] = 0,
    solver: Annotated[Literal["highs", "cp-sat"], typer.Option(help="Solver backend.")] = "highs",
    certainty_time_limit: Annotated[
        float,
        typer.Option(callback=_seconds,
                     help="At most this long for tightening the proofs, within --time-limit "
                     "(they stay sound if cut)."),
    ] = 30.0,
    max_memory: Annotated[
        float | None,
        typer.Option(min=1, help="Memory in MB that listing cells may take; beyond it 'auto' "
                     "generates cells and 'enumerate' stops. Default: a quarter of this "
                     "machine's memory, 512 MB to 8 GB."),
    ] = None,
    max_rows: Annotated[
        int, typer.Option(min=1, help="Refuse models whose counts imply more training rows.")
    ] = DEFAULT_MAX_ROWS,
    known_columns: Annotated[
        Path | None,
        typer.Option(help="CSV of some columns' values for every training row (a header names "
                     "them; the label may be one): side knowledge the rows must respect."),
    ] = None,
    known_columns_as: Annotated[
        Literal["rows", "multisets"],
        typer.Option(help="rows: each CSV row is one training row's values (in training order "
                     "for a bootstrap forest); multisets: each column is only the bag of its "
                     "values."),
    ] = "rows",
    known_rows: Annotated[
        Path | None,
        typer.Option(help="CSV of training rows known in full (every feature and the label)."),
    ] = None,
    draws: Annotated[
        Path | None,
        typer.Option(help="Bootstrap forests: write how often each tree drew each "
                     "reconstructed row (read from the model, or inferred) to this CSV, a row "
                     "per line of --out and a column per tree."),
    ] = None,
    ignore_multiplicities: Annotated[
        bool, typer.Option(help="Treat a bootstrap forest's draws as unknown even when the "
                           "model exposes them (what an attacker without them gets).")
    ] = False,
    n_rows: Annotated[
        int | None,
        typer.Option(min=1, help="DP forests: the training-set size N, when the model file "
                     "does not state it."),
    ] = None,
    n_unknown: Annotated[
        bool, typer.Option(help="DP forests: infer N from the noisy counts instead of taking "
                           "it as known (the bounds it is chosen in are reported).")
    ] = False,
    shrinkage: Annotated[
        float | None,
        typer.Option(min=0, help="DP forests: weight of the prior that pulls rows toward the "
                     "typical values of the most likely dataset (default 0.5; 0 returns the "
                     "most likely dataset itself)."),
    ] = None,
    trust_pickle: TrustPickle = False,
) -> None:
    """Reconstruct the training rows of a forest from its released counts (trees that each
    saw every row once, bootstrap forests, or DP forests with noisy counts)."""
    from treeleaks.attacks.exact import reconstruct
    from treeleaks.counts.cells import CellBudget
    from treeleaks.knowledge import Knowledge

    csvs = [path for path in (out, details, draws) if path is not None]  # partial: .partial.csv
    summary_file = [json_path] if json_path is not None else []
    _check_outputs(model_path, schema, [*csvs, *map(partial_path, csvs), *summary_file])
    model = _load(model_path, trust_pickle)
    if draws is not None and not model.bootstrap:
        _fail("--draws: this forest did not bootstrap, so every tree saw every row once; "
              "there are no draws to write", EXIT_BAD_INPUT)
    bound = _bound_schema(schema, model)
    if schema is None and model.noise is None:  # else refused below
        _hint_groups(model, model_path)
    try:
        knowledge = Knowledge.from_csv(known_columns, known_rows,
                                       linked=known_columns_as == "rows")
        with live_progress(Console(stderr=True)) as progress:
            recon = reconstruct(
                model, bound, time_limit=time_limit, threads=threads, seed=seed, solver=solver,
                certainty_time_limit=certainty_time_limit, strategy=strategy, progress=progress,
                cell_budget=None if max_memory is None else CellBudget(memory_mb=max_memory),
                max_rows=max_rows, knowledge=knowledge,
                ignore_multiplicities=ignore_multiplicities, n_rows=n_rows,
                n_unknown=n_unknown, shrinkage=shrinkage,
            )
    except TreeleaksError as exc:
        _fail(str(exc), EXIT_BAD_INPUT)
    out_console = Console()
    out_console.print(_summary_table(model_path, model, recon))
    partial = recon.status in INCOMPLETE
    place = partial_path if partial else Path
    files, notes = {}, []
    label = " (partial: no complete reconstruction)" if partial else ""
    if out is not None:
        files[place(out)] = _integral(recon.rows).to_csv(index=False)
        notes.append(f"Wrote {len(recon.rows)} rows{label} to {place(out)}")
    if details is not None:
        files[place(details)] = _details(recon).to_csv(index=False)
        notes.append(f"Wrote per-row proofs and bounds{label} to {place(details)}")
    if draws is not None:
        files[place(draws)] = _draws(model, recon).to_csv(index=False)
        notes.append(f"Wrote each tree's draws of each row{label} to {place(draws)}")
    if json_path is not None:
        summary = {**recon.summary(), "partial": partial, "model_path": str(model_path)}
        files[json_path] = json.dumps(summary, indent=2) + "\n"
        notes.append(f"Wrote the summary{label} to {json_path}")
    _write(files)
    for note in notes:
        out_console.print(Text(note), soft_wrap=True)
    checked = recon.likelihood_checked if recon.formulation == "dp" else recon.verified
    _check_outcome(recon.status, checked, recon.message)


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
    import pandas as pd

    from treeleaks.defences.dp_forest import DPRandomForestClassifier
    from treeleaks.frontends.dp import from_dp_forest
    from treeleaks.schema import FeatureSchema

    _check_outputs(data, schema, [out])
    try:
        frame = pd.read_csv(data)
    except (OSError, ValueError) as exc:
        _fail(f"cannot read the data {str(data)!r}: {_describe(exc)}", EXIT_BAD_INPUT)
    if label not in frame.columns:
        _fail(f"the data have no label column {label!r} (columns: "
              f"{', '.join(map(str, frame.columns[:8]))}); give --label", EXIT_BAD_INPUT)
    X, y = frame.drop(columns=[label]), frame[label]
    err = Console(stderr=True)
    try:
        domains = None if schema is None else FeatureSchema.from_json(schema)
        forest = DPRandomForestClassifier(n_estimators=trees, max_depth=depth, epsilon=epsilon,
                                          schema=domains, random_state=seed).fit(X, y)
        model = from_dp_forest(forest, label_name=label)
    except (TreeleaksError, ValueError) as exc:
        _fail(_describe(exc), EXIT_BAD_INPUT)
    _write({out: model.to_json() + "\n"})
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

    _check_outputs(model_path, schema, [suggest_schema] if suggest_schema is not None else [])
    model = _load(model_path, trust_pickle)
    bound = _bound_schema(schema, model)
    declared = {name for group in bound.one_hot_groups + bound.at_most_one_groups
                for name in group}
    groups = [g for g in suggest_groups(model) if not declared.intersection(g.columns)]
    table = _inspect_table(model_path, model)
    if (model.n_rows is not None or model.noise is not None) and model.trees:
        table.add_row("Estimated cost", _cost_estimate(model, bound))
    if groups:
        table.add_row("Looks one-hot encoded", _groups_text(groups, suggest_schema is None))
    Console().print(table)
    if suggest_schema is not None:
        _write({suggest_schema: json.dumps(schema_json(groups), indent=2) + "\n"})
        Console().print(f"Wrote {len(groups)} suggested group(s) to {escape(str(suggest_schema))}"
                        "; check them before passing --schema")


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
    import pandas as pd

    from treeleaks.evaluation.leak_test import leak_test
    from treeleaks.schema import FeatureSchema

    _check_outputs(rows, schema, [json_path] if json_path is not None else [])
    frames = {}
    for name, path in (("reconstruction", rows), ("training rows", truth),
                       ("population", population)):
        try:
            frames[name] = pd.read_csv(path)
        except (OSError, ValueError) as exc:
            _fail(f"cannot read the {name} {str(path)!r}: {_describe(exc)}", EXIT_BAD_INPUT)
    true_rows = frames["training rows"]
    try:
        features = true_rows.drop(columns=[label] if label in true_rows else [])
        domains = FeatureSchema.from_frame(features) if schema is None else (
            FeatureSchema.from_json(schema).completed(features))
        result = leak_test(frames["reconstruction"], true_rows, frames["population"], domains,
                           label=label, n_samples=samples, seed=seed)
    except (TreeleaksError, ValueError, KeyError) as exc:
        _fail(_describe(exc), EXIT_BAD_INPUT)
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
        _write({json_path: json.dumps(result.to_dict(), indent=2) + "\n"})


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
        float, typer.Option(callback=_positive_seconds, help="Time limit in seconds; cut "
                            "short, the bounds stay sound but looser.")
    ] = 60.0,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the summary to this JSON file.")
    ] = None,
    trust_pickle: TrustPickle = False,
) -> None:
    """For the custodian: how far from the training set can any dataset that reproduces a
    bootstrap forest be? Bounds every row's error, proven."""
    import pandas as pd

    from treeleaks.attacks.worst_case import worst_case

    _check_outputs(model_path, schema, [json_path] if json_path is not None else [])
    model = _load(model_path, trust_pickle)
    bound = _bound_schema(schema, model)
    try:
        rows = pd.read_csv(truth)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        _fail(f"cannot read the training rows {str(truth)!r}: {exc}", EXIT_BAD_INPUT)
    try:
        result = worst_case(model, rows, bound, time_limit=time_limit)
    except TreeleaksError as exc:
        _fail(str(exc), EXIT_BAD_INPUT)
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
        _write({json_path: json.dumps(s, indent=2) + "\n"})
    if not s["n_rows"]:
        _fail(s["message"] or f"no worst case (status {s['status']})", EXIT_INCOMPLETE)


def _draws(model: ReleasedModel, recon: Reconstruction) -> pd.DataFrame:
    """How often each tree drew each row of ``recon`` (inferred, or the model's own draws
    for rows in training order), a column per tree."""
    import pandas as pd

    per_tree = recon.multiplicities
    if per_tree is None:
        per_tree = [tree.multiplicities for tree in model.trees] if recon.n_rows else []
    columns = {f"tree_{t}": b for t, b in enumerate(per_tree)}
    return pd.DataFrame(columns, index=pd.RangeIndex(recon.n_rows, name="row")).reset_index()


def _bound_schema(path: Path | None, model: ReleasedModel) -> FeatureSchema:
    """The schema file bound to the model's columns, or the one inferred from its splits."""
    from treeleaks.schema import FeatureSchema

    if path is not None and not path.is_file():
        _fail(f"schema file {str(path)!r} does not exist", EXIT_BAD_INPUT)
    try:
        schema = FeatureSchema.for_model(model) if path is None else FeatureSchema.from_json(path)
        return schema.bind(model)
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


def _check_outputs(model: Path, schema: Path | None, outputs: list[Path]) -> None:
    """Refuse, before the run, outputs that cannot be written or would overwrite an input
    or each other."""
    try:
        check_outputs([p for p in (model, schema) if p is not None], outputs)
    except OutputError as exc:
        _fail(str(exc), EXIT_BAD_INPUT)


def _write(files: dict[Path, str]) -> None:
    """Write the output files all or nothing; a failure is one line naming the path."""
    try:
        write_outputs(files)
    except OutputError as exc:
        _fail(str(exc), EXIT_BAD_INPUT)


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
    raise typer.Exit(_print_error(message, code))


def _print_error(message: str, code: int) -> int:
    """Print ``error: message`` as one red line on stderr; return ``code``."""
    Console(stderr=True).print(
        Text.assemble(("error: ", "bold red"), (message, "red")), soft_wrap=True
    )
    return code


def _one_line(message: str) -> str:
    """A message with its line breaks and runs of spaces folded into single spaces."""
    return " ".join(message.split())


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
    table.add_row("Formulation", FORMULATIONS.get(s["formulation"], s["formulation"]))
    how = STRATEGIES.get(s["strategy"], s["strategy"])
    table.add_row("Cells", escape(f"{s['n_cells']:,}: {how}"))
    if s["certificate"] is not None:
        table.add_row("Certificate", certificate_text(s))
    if s["knowledge"]:
        table.add_row("Side knowledge", escape(s["knowledge"]))
    table.add_row("Rows reconstructed", str(s["n_rows"]))
    for name, value in _noisy_rows(s) if s["formulation"] == "dp" else []:
        table.add_row(name, value)
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


def _noisy_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    """What a DP reconstruction adds to the summary: the likelihood it reached, the LP's
    bound on any dataset's, when a first dataset was found, and how N was set."""
    bound = s["log_likelihood_bound"]
    rows = [("Log-likelihood of the counts", f"{s['log_likelihood']:.3f}"
             + ("" if bound is None else f" (no dataset exceeds {bound:.3f})")),
            ("First complete dataset after", f"{s['first_solution_s']:.2f} s")]
    if s["n_rows_interval"] is not None:
        low, high = s["n_rows_interval"]
        rows.append(("Training-set size N", f"{s['n_rows_used']} inferred, within [{low}, "
                     f"{high}] from the noisy totals"))
    return rows


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
    if model.bootstrap:
        table.add_row("Per-tree multiplicities", (
            "exposed: the file says how often each tree drew each training row, which tells "
            "rows apart; treeleaks rebuilds them in training order (formulation "
            "bootstrap-known)") if exposed else ("not exposed: treeleaks infers draws for the "
            "rows it rebuilds (formulation bootstrap-unknown, forests over few columns)"))
    else:
        table.add_row("Per-tree multiplicities", "exposed" if exposed else "not exposed")
    table.add_row("Training rows N", _rows_known(model, exposed))
    noise = model.noise
    table.add_row("Noise", "none (exact counts)" if noise is None else
                  f"{noise.kind}, epsilon={noise.epsilon:g}, scale={noise.scale:g}")
    for key, value in model.facts.items():
        if key == "schema":  # the recorded domains, used unless --schema is given
            value = "recorded in the file (public domains the splits were drawn from)"
        table.add_row(escape(key), escape(str(value)))
    return table


def _cost_estimate(model: ReleasedModel, schema: FeatureSchema) -> str:
    """How far listing the cells gets within the engine's budget (and at most
    `PROBE_SECONDS`), so which strategy `reconstruct` will use."""
    import time

    from treeleaks.counts.cells import CellBudget, probe_cells

    deadline = time.perf_counter() + PROBE_SECONDS
    probe = probe_cells(model, schema, CellBudget(deadline=deadline))
    if probe.complete:
        return f"all {probe.n_trees} trees: {probe.n_cells:,} cells → cells enumerated"
    if model.noise is not None:  # the DP attack lists cells or stops
        return (f"stopped after {probe.trees_done} of {probe.n_trees} trees at "
                f"{probe.n_cells:,} cells → the DP attack may not finish listing them "
                "(it lists for half of --time-limit, within --max-memory)")
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
    if model.noise is not None and model.noise.kind == "laplace":
        from treeleaks.attacks.dp import n_rows_interval

        bounds = n_rows_interval(model)
        stated = model.facts.get("n_rows")
        return ((f"{stated} stated in the file; " if stated is not None else "")
                + f"about {bounds.estimate:.0f} from the noisy counts (between "
                f"{bounds.low} and {bounds.high})")
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
