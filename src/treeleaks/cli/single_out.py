"""``treeleaks single-out``: the predicates a model gives away that match one training
row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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
    encoded_rows,
    fail,
    guard_outputs,
    label_column,
    read_data,
    write_all,
)
from treeleaks.runtime.errors import TreeleaksError

if TYPE_CHECKING:
    import pandas as pd

    from treeleaks.attacks.singling_out import Exposure, SinglingOut
    from treeleaks.ir.model import ReleasedModel

DataOption = Annotated[Path | None, typer.Option(
    help="CSV of the training data (features and label) to check each predicate against.")]
SHOWN = 15  # predicates listed on screen; --json holds them all


@app.command("single-out")
def single_out_command(
    model_path: ModelArg,
    data: DataOption = None,
    label: LabelOption = None,
    json_path: Annotated[Path | None, typer.Option(
        "--json", help="Write every predicate (conditions, label, node, tree, proven, and "
        "with --data the rows it matches) to this JSON file.")] = None,
    no_counts: Annotated[bool, typer.Option(
        "--no-counts", help="Ignore the counts: list the guesses of an adversary without "
        "them (leaves deepest first, every label).")] = False,
    time_limit: Annotated[float, typer.Option(
        min=0.0, help="Seconds for the forest-wide certainty analysis (no-bootstrap "
        "forests).")] = 30.0,
    trust_pickle: TrustPickle = False,
    force: Force = False,
) -> None:
    """List the predicates the model gives away that match exactly one training row
    (singling out), and with --data check them against the training rows."""
    from treeleaks.attacks import singling_out as so

    guard_outputs(model_path, data, [json_path] if json_path is not None else [], force)
    model = _load_any(model_path, trust_pickle)
    label = label_column(model, data, label) if data is not None else label
    frame = _frame(model, data, label)
    if not (no_counts or model.counts_released or frame is not None):
        fail(f"{model_path.name}: {so.COUNTS_STRIPPED}", EXIT_BAD_INPUT)
    guessing = no_counts or not model.counts_released
    try:
        result = so.no_counts_guesses(model) if guessing else \
            so.single_out(model, time_limit=time_limit)
        exposure = None if frame is None else so.check_against_data(result, model, frame, label)
        tries = _tries(model, frame, label, use_counts=not no_counts)
    except TreeleaksError as exc:
        fail(describe(exc), EXIT_BAD_INPUT)
    Console().print(_summary_table(model_path, model, result, exposure, tries, guessing))
    Console().print(_predicate_table(model, result, guessing))
    if json_path is not None:
        write_all({json_path: json.dumps(_report(model, result, exposure, tries), indent=2)
                   + "\n"})


def _frame(model: ReleasedModel, data: Path | None, label: str | None
           ) -> pd.DataFrame | None:
    """The training rows of --data (a pipeline's columns encoded), or None; the model's
    label named after the label column, so predicates read "<label column> = <class>"."""
    if data is None:
        return None
    frame = read_data(data, label)
    if model.inputs is not None:
        frame = encoded_rows(model, frame, label)
    if label not in model.feature_names:
        model.label_name = label
    return frame


def _load_any(path: Path, trust_pickle: bool) -> ReleasedModel:
    """The model in the IR, regressors and stripped files (their structure) included."""
    from treeleaks.io import load_model

    try:
        return load_model(path, trust_pickle=trust_pickle, allow_regression=True,
                          counts_removed_ok=True)
    except (TreeleaksError, ValueError, OSError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)


def _tries(model: ReleasedModel, frame: pd.DataFrame | None, label: str | None,
           use_counts: bool) -> dict[str, Any] | None:
    """Tries the deepest-first ranking needs, per tree, by the counts or measured on the
    data; None when neither is available."""
    from treeleaks.attacks.singling_out import measured_leaf_counts, tries_without_counts

    if frame is None and not (use_counts and model.counts_released):
        return None
    per_tree = []
    for t in range(model.n_trees):
        measured = None if frame is None else measured_leaf_counts(model, frame, label, t)
        per_tree.append(tries_without_counts(model, t, measured))
    found = [tr.expected for tr in per_tree if tr.expected is not None]
    return {"measured_on": "data" if frame is not None else "counts",
            "trees_with_a_valid_guess": len(found), "n_trees": model.n_trees,
            "mean_expected_tries": sum(found) / len(found) if found else None,
            "per_tree": [vars(tr) for tr in per_tree]}


def _summary_table(path: Path, model: ReleasedModel, result: SinglingOut,
                   exposure: Exposure | None, tries: dict[str, Any] | None,
                   guessing: bool) -> Table:
    table = Table(title=escape(f"Singling out: {path.name}"), show_header=False,
                  title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    kind = "regression" if model.is_regression else "classification"
    table.add_row("Model", escape(f"{model.source or 'treeleaks JSON'}, {model.n_trees} "
                                  f"tree(s), {kind}"))
    for name, value in [*_found_rows(result, guessing), *_exposure_rows(exposure),
                        *_tries_rows(tries)]:
        table.add_row(name, value)
    for note in result.notes:
        table.add_row("Note", escape(note))
    return table


def _found_rows(result: SinglingOut, guessing: bool) -> list[tuple[str, str]]:
    """The guesses, or the vulnerable pairs (proven among them) and the shortest
    predicate."""
    if guessing:
        return [("Guesses (no counts)", f"{len(result.predicates):,}")]
    lengths = [len(p.conditions) for p in result.predicates]
    return [("Vulnerable (node, label) pairs", f"{len(result.predicates):,} "
             f"({result.n_proven:,} proven)"),
            ("Shortest predicate", f"{min(lengths)} conditions" if lengths else "-")]


def _exposure_rows(exposure: Exposure | None) -> list[tuple[str, str]]:
    """The predicates checked against the data, and the rows they single out."""
    if exposure is None:
        return []
    rows = f": rows {_short(exposure.singled_out)}" if exposure.singled_out else ""
    return [("Predicates matching one row", f"{exposure.n_valid:,} of "
             f"{exposure.n_checked:,}"),
            ("Rows singled out", f"{len(exposure.singled_out):,} of {exposure.n_rows:,} "
             f"({exposure.share_exposed:.1%}){rows}")]


def _tries_rows(tries: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The tries the deepest-first guesses need without the counts."""
    if tries is None:
        return []
    mean = tries["mean_expected_tries"]
    return [(f"Tries without counts ({tries['measured_on']})",
             "no leaf guess is valid" if mean is None else
             f"{mean:.2f} expected (deepest leaf first, every label; "
             f"{tries['trees_with_a_valid_guess']} of {tries['n_trees']} trees)")]


def _predicate_table(model: ReleasedModel, result: SinglingOut, guessing: bool) -> Table:
    binary = set(result.binary_columns)
    title = "Guesses, in the order tried" if guessing else "Predicates, shortest first"
    table = Table(title=f"{title} (first {SHOWN}; --json has all)", title_justify="left")
    for column in ("tree", "node", "predicate", "proven", "matches"):
        table.add_column(column)
    for p in result.predicates[:SHOWN]:
        table.add_row("forest" if p.tree is None else str(p.tree), str(p.node),
                      escape(p.text(model.label_name, binary,
                                     model.inputs)), "yes" if p.proven else "no",
                      "-" if p.matches is None else escape(_short(p.matches)))
    return table


def _short(rows: list[int]) -> str:
    return ", ".join(map(str, rows[:5])) + (f", ... ({len(rows)})" if len(rows) > 5 else "")


def _report(model: ReleasedModel, result: SinglingOut, exposure: Exposure | None,
            tries: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {**result.summary(), "tries_without_counts": tries}
    if model.inputs is not None:  # a pipeline's: each predicate in the custodian's words
        binary = set(result.binary_columns)
        for written, p in zip(out["predicates"], result.predicates):
            written["text"] = p.text(model.label_name, binary, model.inputs)
    if exposure is not None:
        out["exposure"] = {"n_rows": exposure.n_rows, "singled_out": exposure.singled_out,
                           "n_singled_out": len(exposure.singled_out),
                           "share_exposed": exposure.share_exposed,
                           "predicates_matching_one_row": exposure.n_valid}
    return out
