"""``treeleaks strip``: the release-safe copy of a model file, in its own format, written
only once the framework has loaded it back and it predicts as the original."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from treeleaks.cli.app import (
    EXIT_BAD_INPUT,
    Force,
    TrustPickle,
    app,
    describe,
    encoded_rows,
    fail,
    guard_outputs,
    positive_seconds,
    read_data,
    write_all,
)
from treeleaks.runtime.errors import TreeleaksError

if TYPE_CHECKING:
    import pandas as pd

    from treeleaks.defences.strip import StripOptions, Stripped
    from treeleaks.ir.model import ReleasedModel



@app.command("strip")
def strip_command(
    model_path: Annotated[Path, typer.Argument(
        metavar="MODEL", show_default=False,
        help="A framework's model file: scikit-learn .skops, LightGBM .txt, XGBoost .json, "
             "an R model .rds (rpart, randomForest, ranger), or a pickle (with "
             "--trust-pickle); a treeleaks .json has no framework's file to strip.")],
    out: Annotated[Path, typer.Option(help="Write the stripped model here, in the input's "
                                      "format (same extension).", show_default=False)],
    data: Annotated[Path | None, typer.Option(
        help="CSV of the training data (features and label): predictions are also compared "
        "on its rows.")] = None,
    label: Annotated[str | None, typer.Option(help="The label column of --data.")] = None,
    thresholds: Annotated[str | None, typer.Option(
        help="'simplest': move each threshold of a scikit-learn model to the shortest "
        "decimal between the training values it separates (with --data: every training "
        "row keeps its prediction; without: halfway to the neighbouring thresholds, "
        "weaker). Off by default.", show_default=False)] = None,
    round_values: Annotated[int | None, typer.Option(
        help="Round a scikit-learn regressor's leaf values (its training targets) to this "
        "many significant digits. Off by default.", show_default=False)] = None,
    measure: Annotated[bool, typer.Option(
        help="Run the attacks on the original and on the stripped file and print what "
        "each gets.")] = True,
    time_limit: Annotated[float, typer.Option(
        callback=positive_seconds, help="Seconds each attack may take with --measure (the "
        "reconstruction may take as long again for its proofs).")] = 30.0,
    trust_pickle: TrustPickle = False,
    force: Force = False,
) -> None:
    """Write a copy of the model without what prediction does not need (row counts,
    weighted counts, impurities, hessian sums, random states), checked to predict as the
    original, and show what each attack gets from both."""
    from treeleaks.io import load_model

    suffix = model_path.suffix.lower()
    if out.suffix.lower() != suffix:
        fail(f"--out {str(out)!r}: the stripped model keeps the input's format; name it "
             f"*{suffix}", EXIT_BAD_INPUT)
    guard_outputs(model_path, data, [out], force)
    frame = _training_rows(data, label)
    result = _strip(model_path, trust_pickle, frame, label, (thresholds, round_values))
    write_all({out: result.content})
    console = Console()
    console.print(_summary(model_path, out, data, result))
    try:
        original = load_model(model_path, trust_pickle=trust_pickle, allow_regression=True)
        stripped = load_model(out, trust_pickle=True, allow_regression=True,
                              counts_removed_ok=True)  # the file just written
    except (TreeleaksError, ValueError) as exc:
        console.print(Text(f"Not described{' nor measured' if measure else ''}: "
                           f"{describe(exc)}", style="yellow"))
        return
    console.print(_described(model_path, out, original, stripped))
    if measure:
        if frame is not None and original.inputs is not None:  # a pipeline's: encoded
            frame = encoded_rows(original, frame, label)
        console.print(_leak_table(model_path, out, original, stripped, frame, label,
                                  time_limit))


def _training_rows(data: Path | None, label: str | None) -> pd.DataFrame | None:
    """The rows of --data with their label column (None: not given)."""
    if data is None:
        return None
    frame = read_data(data, label)
    if label not in frame.columns:
        fail(f"--label {label!r} is not a column of {data.name}", EXIT_BAD_INPUT)
    return frame


def _strip(model_path: Path, trust_pickle: bool, frame: pd.DataFrame | None,
           label: str | None, options: tuple[str | None, int | None]) -> Stripped:
    """The framework's file read and checked before any framework loads it, then stripped
    in a child process with ``options`` (--thresholds, --round-values) and checked to
    predict as before (on ``frame``'s rows too); an R model's through `_strip_r`."""
    from treeleaks.defences.strip import StripOptions
    from treeleaks.defences.strip_child import strip_in_child
    from treeleaks.io import load_framework_file

    rows = None if frame is None else frame.drop(columns=[label])
    try:
        chosen = StripOptions(*options)
        if model_path.suffix.lower() == ".rds":
            return _strip_r(model_path, rows, chosen)
        file = load_framework_file(model_path, trust_pickle)  # checked before any framework
        released = None  # a pipeline's IR, to draw random rows in its columns
        if _holds_pipeline(file.held):
            if file.model is None:
                raise TreeleaksError(file.unread)
            released = file.model
        return strip_in_child(file.held, file.format, rows,
                              labels=None if frame is None else frame[label],
                              options=chosen, released=released)
    except (TreeleaksError, ValueError, OSError) as exc:
        said = describe(exc)
        fail(said if model_path.name in said else f"{model_path.name}: {said}",
             EXIT_BAD_INPUT)


def _strip_r(model_path: Path, rows: pd.DataFrame | None, options: StripOptions
             ) -> Stripped:
    """An R model stripped (`treeleaks.defences.strip_r`); the options that move
    thresholds or round values are scikit-learn's only."""
    from treeleaks.defences.strip import StripOptions
    from treeleaks.defences.strip_r import strip_r_release
    from treeleaks.frontends.r_models import read_r_model

    if options != StripOptions():
        raise TreeleaksError("--thresholds and --round-values change scikit-learn models "
                             "only; strip an R model without them")
    return strip_r_release(model_path, read_r_model, rows)


def _summary(model_path: Path, out: Path, data: Path | None, result: Stripped) -> Table:
    table = Table(title=escape(f"Stripped {model_path.name} ({result.kind})"),
                  show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for field in result.removed:
        table.add_row("Removed", escape(field))
    for kept in result.kept:
        table.add_row("Kept", escape(kept))
    for change in result.changes:
        table.add_row("Changed", escape(change))
    for compared in result.compared:
        table.add_row("Predictions", escape(compared.replace("--data", data.name)
                                            if data is not None else compared))
    table.add_row("Compared", escape(", ".join(result.outputs)))
    table.add_row("Checked", escape(result.checked))
    if result.score is not None:
        s = result.score
        table.add_row(f"{s.metric} on {escape(data.name)}", f"{s.before:.4f} → {s.after:.4f}")
    table.add_row("Still leaks", "the structure, each leaf's fractions or value, and the "
                  "thresholds" + ("" if any("thresholds moved" in c for c in result.changes)
                                  else " (midpoints of neighbouring training values)"))
    table.add_row("Written", escape(str(out)))
    return table


def _described(model_path: Path, out: Path, original: ReleasedModel,
               stripped: ReleasedModel) -> Table:
    """What each file is and gives away, in its reader's words (`ModelDescription.rows`)."""
    table = Table(title="What each file gives away", title_justify="left")
    for column in ("", model_path.name, out.name):
        table.add_column(escape(column))
    after = dict(stripped.described().rows())
    for name, words in original.described().rows():
        table.add_row(escape(name), escape(words), escape(after.pop(name, "-")))
    for name, words in after.items():  # what the stripped file lists removed
        table.add_row(escape(name), "-", escape(words))
    return table


def _leak_table(model_path: Path, out: Path, original: ReleasedModel,
                stripped: ReleasedModel, frame: pd.DataFrame | None, label: str | None,
                time_limit: float) -> Table | Text:
    """What each attack gets from the original and from the stripped file, or one line
    saying why it was not measured."""
    from treeleaks.report.strip_effect import leak_before_after

    try:
        rows = leak_before_after(original, stripped, frame, label, time_limit)
    except (TreeleaksError, ValueError) as exc:
        return Text(f"Leak not measured: {describe(exc)}", style="yellow")
    table = Table(title=escape(f"What each attack gets (each within {time_limit:g} s)"),
                  title_justify="left")
    for column in ("attack", model_path.name, out.name):
        table.add_column(escape(column))
    for row in rows:
        table.add_row(escape(row.attack), escape(row.original), escape(row.stripped))
    return table


def _holds_pipeline(held: Any) -> bool:
    """Whether the file's object is a pipeline, or a search around one."""
    from treeleaks.wrapper_kinds import is_search

    while is_search(held) and hasattr(held, "best_estimator_"):
        held = held.best_estimator_
    return type(held).__name__ == "Pipeline"
