"""``treeleaks reconstruct``: rebuild a forest's training set and show the result."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from treeleaks.cli.app import (
    EXIT_BAD_INPUT,
    EXIT_PARTIAL,
    INCOMPLETE,
    Force,
    ModelArg,
    SchemaOption,
    TrustPickle,
    app,
    bound_schema,
    check_outcome,
    fail,
    guard_outputs,
    load,
    positive_seconds,
    seconds,
    write_all,
)
from treeleaks.runtime.clock import RunClock
from treeleaks.runtime.display import certificate_text, live_progress
from treeleaks.runtime.errors import TreeleaksError
from treeleaks.runtime.limits import DEFAULT_MAX_ROWS, SEED_MAX
from treeleaks.runtime.vocabulary import Formulation, Status

if TYPE_CHECKING:
    import pandas as pd

    from treeleaks.attacks.reconstruction.pinning import OpenRows
    from treeleaks.ir.model import ReleasedModel
    from treeleaks.ir.schema import FeatureSchema
    from treeleaks.result import Reconstruction


STRATEGIES = {  # how Reconstruction.strategy found the cells
    "enumerate": "every cell listed (enumerate)",
    "generate": "cells generated on demand (generate)",
    "per-row": "no cells: one leaf per row and drawing tree (per-row)",
}
FORMULATIONS = {  # what Reconstruction.formulation solved
    "exact": "every tree saw every row once (exact)",
    "bootstrap-known": "rows drawn with replacement, draws read from the model "
                       "(bootstrap-known): each row on one training position's draws",
    "bootstrap-unknown": "rows drawn with replacement, draws inferred (bootstrap-unknown)",
    "dp": "the most likely dataset given noisy (DP) counts (dp)",
    "regression-bootstrap-known": "a regression forest's rows drawn with replacement, draws "
                                  "read from the model, each row's target among its leaves' "
                                  "values (regression-bootstrap-known): each row on one "
                                  "training position's draws",
    "regression-exact": "a regression model whose trees each saw every row once, its rows "
                        "found target by target (regression-exact)",
    "regression-leaves": "a regression forest grown with limits: one tree's rows, each "
                         "target within its leaf's interval (regression-leaves)",
    "regression-boosted": "a boosted regressor's counts and leaf sums of residuals "
                          "(regression-boosted): rows in no particular order",
}


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
        typer.Option(callback=positive_seconds, help="Time limit in seconds for the whole "
                     "run: cells and solver, then the proofs in what is left (at least "
                     "min(--certainty-time-limit, 15%))."),
    ] = 60.0,
    strategy: Annotated[
        Literal["auto", "enumerate", "generate", "per-row"],
        typer.Option(help="List every cell (enumerate), generate cells on demand (generate), "
                     "enumerate within a budget and generate beyond it (auto), or, for a "
                     "bootstrap forest with its draws, place each row leaf by leaf without "
                     "cells (per-row: raw numerical columns)."),
    ] = "auto",
    threads: Annotated[int, typer.Option(min=1, help=(
        "CP-SAT worker threads for the cells' solvers (row by row, CP-SAT runs one "
        "worker: the same answer on every run, and faster there)."))] = 2,
    seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="CP-SAT random seed (0 to 2^31-1).")
    ] = 0,
    solver: Annotated[Literal["highs", "cp-sat"], typer.Option(help="Solver backend.")] = "highs",
    certainty_time_limit: Annotated[
        float,
        typer.Option(callback=seconds,
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
    ignore_draws: Annotated[
        bool, typer.Option("--ignore-draws/--no-ignore-draws",
                           "--ignore-multiplicities/--no-ignore-multiplicities",
                           help="Treat a bootstrap forest's draws as unknown even when the "
                           "model exposes them (what an attacker without them gets). "
                           "--ignore-multiplicities, its former name, still works.")
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
    force: Force = False,
) -> None:
    """Reconstruct the training rows of a forest from its released counts (trees that each
    saw every row once, bootstrap forests, or DP forests with noisy counts).

    Exit codes: 0 a complete reconstruction; 5 a partial one (rows that fit the counts,
    fewer than N, or what a run out of time holds): a result, written under the names
    asked for, its status line and --json summary saying partial; 3 no reconstruction
    (the counts admit no dataset, or no row within the time); 1 a complete reconstruction
    failing its own certificate (a bug); 2 bad input."""
    from treeleaks.attacks.reconstruction.pinning import rows_one_of_many
    from treeleaks.counts.cells import CellBudget

    paths = _Outputs(out, details, draws, json_path)
    model, bound = _read(model_path, schema, paths, trust_pickle, force)
    clock = RunClock(time_limit)  # the run's: the reconstruction, then the probe
    recon = _reconstruct(model, bound, (known_columns, known_rows, known_columns_as), {
        "time_limit": time_limit, "threads": threads, "seed": seed, "solver": solver,
        "certainty_time_limit": certainty_time_limit, "strategy": strategy,
        "cell_budget": None if max_memory is None else CellBudget(memory_mb=max_memory),
        "max_rows": max_rows, "ignore_draws": ignore_draws, "n_rows": n_rows,
        "n_unknown": n_unknown, "shrinkage": shrinkage})
    open_rows = rows_one_of_many(model, recon, clock.deadline, bound, seed)
    out_console = Console()
    out_console.print(_summary_table(model_path, model, recon, open_rows))
    partial = recon.status in INCOMPLETE or recon.partial
    _write(paths, model_path, model, recon, open_rows, partial, out_console)
    if partial and recon.n_rows and recon.status != Status.INFEASIBLE:
        out_console.print(Text(_partial_line(model, recon), style="bold yellow"),
                          soft_wrap=True)
        raise typer.Exit(EXIT_PARTIAL)
    check_outcome(recon.status, recon.checked, recon.message, recon.partial)


class _Outputs(NamedTuple):
    """The files asked for: rows, per-row details, draws, the JSON summary."""

    out: Path | None
    details: Path | None
    draws: Path | None
    json_path: Path | None


def _read(model_path: Path, schema: Path | None, paths: _Outputs, trust_pickle: bool,
          force: bool) -> tuple[ReleasedModel, FeatureSchema]:
    """The model and its bound schema, once the outputs asked for are known writable and
    apply to it (exit 2 otherwise); a hint when its columns look one-hot encoded."""
    guard_outputs(model_path, schema, [path for path in paths if path is not None], force)
    model = load(model_path, trust_pickle, allow_regression=True)  # reconstruct() refuses
    if paths.draws is not None and not model.bootstrap:
        fail("--draws: this forest did not bootstrap, so every tree saw every row once; "
              "there are no draws to write", EXIT_BAD_INPUT)
    bound = bound_schema(schema, model)
    if schema is None and model.noise is None:  # else refused below
        _hint_groups(model, model_path)
    return model, bound


def _reconstruct(model: ReleasedModel, bound: FeatureSchema,
                 known: tuple[Path | None, Path | None, str],
                 options: dict[str, Any]) -> Reconstruction:
    """The attack, with its progress shown live and the side knowledge read from ``known``
    (known columns, known rows, how the columns are read); what the pinning probe will take
    is kept from ``options``' time limit. Bad input ends the command (exit 2)."""
    from treeleaks.attacks.reconstruct import reconstruct
    from treeleaks.attacks.reconstruction.pinning import probe_applies, probe_seconds
    from treeleaks.ir.knowledge import Knowledge

    known_columns, known_rows, known_as = known
    try:
        knowledge = Knowledge.from_csv(known_columns, known_rows, linked=known_as == "rows")
        probe = (probe_seconds(options["time_limit"], 0.0)
                 if probe_applies(model) and knowledge.empty else 0.0)
        with live_progress(Console(stderr=True)) as progress:
            return reconstruct(model, bound, **{
                **options, "time_limit": options["time_limit"] - probe,
                "progress": progress, "knowledge": knowledge})
    except TreeleaksError as exc:
        fail(str(exc), EXIT_BAD_INPUT)


def _write(paths: _Outputs, model_path: Path, model: ReleasedModel, recon: Reconstruction,
           open_rows: OpenRows | None, partial: bool, console: Console) -> None:
    """Write the files asked for, all or nothing, and say what each holds."""
    label = (" (none: no dataset produces this file)" if recon.status == Status.INFEASIBLE
             else " (partial: no complete reconstruction)" if partial else "")

    def rows() -> str:  # in the custodian's own columns
        decoded = recon.rows if model.inputs is None else model.inputs.decode(recon.rows)
        return _integral(decoded).to_csv(index=False)

    def summary() -> str:
        return json.dumps({
            **recon.summary(), "partial": partial, "model_path": str(model_path),
            "one_of_many_rows": None if open_rows is None else open_rows.n_open,
            "model": model.described().to_dict()}, indent=2) + "\n"

    files, notes = {}, []
    for path, what, content in (
        (paths.out, f"{len(recon.rows)} rows", rows),
        (paths.details, "per-row proofs and bounds",
         lambda: _details(recon, model, open_rows).to_csv(index=False)),
        (paths.draws, "each tree's draws of each row",
         lambda: _draws(model, recon).to_csv(index=False)),
        (paths.json_path, "the summary", summary),
    ):
        if path is not None:
            files[path] = content()
            notes.append(f"Wrote {what}{label} to {path}")
    write_all(files)
    for note in notes:
        console.print(Text(note), soft_wrap=True)


def _partial_line(model: ReleasedModel, recon: Reconstruction) -> str:
    """The status line of a partial reconstruction, a result of its own (exit 5)."""
    of = f" of {model.n_rows}" if model.n_rows else ""
    fit = ("within every count" if recon.checked else
           "each in the box the model gives it, not within every count")
    why = ("interrupted (Ctrl-C)" if recon.interrupted else
           f"status {recon.status} after {recon.time_s:.1f} s")
    return (f"Partial reconstruction: {recon.n_rows}{of} rows, {fit}, {recon.proven_rows} "
            f"proven training rows ({why})")


def _summary_table(path: Path, model: ReleasedModel, recon: Reconstruction,
                   open_rows: OpenRows | None = None) -> Table:
    """The result as the command prints it: how it ran, then what it found."""
    s = recon.summary()
    table = Table(title="Reconstruction", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for name, value in (*_run_rows(path, model, s), *_found_rows(model, recon, s, open_rows)):
        table.add_row(name, value)
    return table


Row = tuple[str, str | Text]


def _run_rows(path: Path, model: ReleasedModel, s: dict[str, Any]) -> list[Row]:
    """The file, its description, and how the run went: status, formulation, cells,
    certificate, side knowledge."""
    rows: list[Row] = [("File", escape(f"{path} ({model.n_trees} trees, {model.n_features} "
                                       "features)"))]
    rows += [(escape(name), escape(words))  # the words every command prints
             for name, words in model.described().rows()[:4]]
    status_style = "green" if s["status"] == Status.OPTIMAL else "yellow"
    solver = f" ({s['solver']})" if s["solver"] else ""
    rows.append(("Status", Text(f"{s['status']} in {s['time_s']:.2f} s{solver}",
                                status_style)))
    rows.append(("Formulation", FORMULATIONS.get(s["formulation"], s["formulation"])))
    how = STRATEGIES.get(s["strategy"], s["strategy"])
    pinned = int(s["timings"].get("peeled_rows", 0))
    if pinned:  # the cells are those of the other rows, beside the pinned rows' own
        how = f"{pinned} rows pinned by single-row leaves first; for the rest, {how}"
    rows.append(("Cells", escape(f"{s['n_cells']:,}: {how}")))
    if s["certificate"] is not None:
        rows.append(("Certificate", certificate_text(s)))
    if s["knowledge"]:
        rows.append(("Side knowledge", escape(s["knowledge"])))
    return rows


def _found_rows(model: ReleasedModel, recon: Reconstruction, s: dict[str, Any],
                open_rows: OpenRows | None) -> list[Row]:
    """What the run found: rows, a DP run's likelihood, targets, proofs, open values."""
    rows = [_reconstructed_row(model, s)]
    rows += _noisy_rows(s) if s["formulation"] == Formulation.DP else []
    if "targets_exact" in s:
        rows.append(("Targets given away exactly",
                     f"{s['targets_exact']} of {s['n_rows']} (in the label column)"))
    rows.append(("Rows proven to be training rows", f"{s['proven_rows']} of {s['n_rows']}"))
    if open_rows is not None:
        rows.append(("Rows one of many", escape(open_rows.words())))
    rows.append(("Rows whose pinned values are proven",
                 f"{s['proven_pattern_rows']} of {s['n_rows']}"))
    rows.append(("Values the model leaves open", f"{s['free_values']} (filled in)"))
    if s["numerical_width_mean"] is not None:
        within = s["numerical_pinned_within"] or {}
        rows.append(("Numerical values pinned to",
                     f"{s['numerical_width_mean']:.1%} of their range on average"
                     + "".join(f"; {share:.0%} within {limit}" for limit, share
                               in within.items())))
    if model.inputs is not None:
        rows.append(("Columns", escape(_columns_note(model, recon))))
    rows += [(name, escape(s[key])) for name, key in (("Proofs", "proof"), ("Note", "message"))
             if s[key]]
    return rows


def _reconstructed_row(model: ReleasedModel, s: dict[str, Any]) -> Row:
    """How many rows came back, and for a partial dataset of how many and how they fit."""
    if not s.get("partial"):
        return "Rows reconstructed", str(s["n_rows"])
    about = model.described()  # N as the file gives it away (the draws', too)
    n = about.n_rows if about.n_rows_given_away else None
    return "Rows reconstructed", Text(
        (f"{s['n_rows']} of {n} ({s['n_rows'] / n:.0%})" if n else f"{s['n_rows']}")
        + (": a partial dataset within every count (rows that fit the counts, training "
           "rows only where proven)" if s["verified"] else
           ": each row in the box the model gives it, their filled values not within "
           "every count"), "yellow")


def _columns_note(model: ReleasedModel, recon: Reconstruction) -> str:
    """How rows come back: in the custodian's columns (through a pipeline's steps, or a
    model's own gaps and categories), and the cells an imputer may have filled (its fill
    within the row's bounds, no indicator to tell)."""
    assert model.inputs is not None
    through = (f"through the pipeline's steps ({', '.join(model.inputs.steps)})"
               if model.inputs.steps else "from the model's gap and category features")
    words = (f"{len(model.inputs.names)} of yours, decoded {through}: categories as their "
             "values, gaps empty")
    if not recon.n_rows:
        return words
    maybe = model.inputs.maybe_filled(recon.lower, recon.upper)
    if maybe.empty:
        return words
    counts = ", ".join(f"{name} {int(flags.sum())}" for name, flags in maybe.items())
    return (f"{words}; values that may have been gaps the imputer filled (its fill within "
            f"the row's bounds; --details marks them): {counts}")


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


def _details(recon: Reconstruction, model: ReleasedModel,
             open_rows: OpenRows | None = None) -> pd.DataFrame:
    """Per row: the training position whose draws the search put it on, where it did (``row``;
    a device of the search: the rows are a multiset, and another training row may sit
    there), proven, proven_pattern, one_of_many (where the probe ran: the counts fit a
    second dataset without the row, `attacks.reconstruction.pinning`), and each feature's free flag
    and bounds (and, for numerical and ordinal columns, the bounds' width as a share of the
    column's range); a regressor's target interval and whether it is exact, where the
    attack gives one; for a pipeline whose imputer filled gaps unmarked,
    ``<column>:maybe_gap`` where the row's bounds hold the fill."""
    import pandas as pd

    parts = {"row": recon.training_positions(), "proven": recon.proven,
             "proven_pattern": recon.proven_pattern}
    if open_rows is not None:  # the counts fit a second dataset without this row
        parts["one_of_many"] = open_rows.one_of_many
    for name in recon.free.columns:
        parts[f"{name}:free"] = recon.free[name].to_numpy()
        parts[f"{name}:lower"] = recon.lower[name].to_numpy()
        parts[f"{name}:upper"] = recon.upper[name].to_numpy()
        if recon.width is not None and recon.width[name].notna().any():
            parts[f"{name}:width"] = recon.width[name].to_numpy()  # a share of its range
    bounds = None if recon.regression is None else recon.regression.target_bounds
    if bounds is not None:  # a regressor's targets known within an interval
        label = next(c for c in recon.rows.columns if c not in recon.free.columns)
        low, high = bounds
        parts[f"{label}:lower"], parts[f"{label}:upper"] = low, high
        parts[f"{label}:exact"] = low == high
    if model.inputs is not None and recon.n_rows:
        for name, maybe in model.inputs.maybe_filled(recon.lower, recon.upper).items():
            parts[f"{name}:maybe_gap"] = maybe.to_numpy()
    return pd.DataFrame(parts)


def _draws(model: ReleasedModel, recon: Reconstruction) -> pd.DataFrame:
    """How often each tree drew each row of ``recon`` (inferred, or the model's own draws
    for rows at their training positions), a column per tree."""
    import pandas as pd

    per_tree = None if recon.bootstrap is None else recon.bootstrap.draws
    position = recon.training_positions()
    if per_tree is None:
        per_tree = [tree.draws[position] for tree in model.trees] if recon.n_rows else []
    columns = {"row": position, **{f"tree_{t}": b for t, b in enumerate(per_tree)}}
    return pd.DataFrame(columns)


def _integral(rows: pd.DataFrame) -> pd.DataFrame:
    """Float columns holding only whole numbers as integers, so 0/1 data stays 0/1 in the CSV.
    Only whole numbers within ±2^53 are converted: they are the same number as an integer,
    so the rows written are the rows the certificate routed (never an int64 extreme)."""
    import numpy as np
    import pandas as pd

    rows = rows.copy()
    for name in rows.columns:
        values = rows[name]
        if pd.api.types.is_float_dtype(values) and (np.abs(values) <= 2.0**53).all() and (
            values == values.round()
        ).all():
            rows[name] = values.astype(np.int64)
    return rows


def _hint_groups(model: ReleasedModel, path: Path) -> None:
    """Say when columns look one-hot encoded: declaring them can save orders of magnitude."""
    from treeleaks.ir.schema_hints import suggest_groups

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
