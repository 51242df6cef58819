"""``treeleaks release``: refit the model's own learner on the custodian's rows with
settings that expose less (and DP forests), audit each stripped candidate, and write the
table (``candidates.json``) and the most accurate candidate that audits lower
(``release.<format>``), or say plainly that none does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from treeleaks.cli.app import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    Force,
    TrustPickle,
    app,
    checked_data,
    describe,
    fail,
    guard_outputs,
    label_column,
    positive_seconds,
    write_all,
)
from treeleaks.report.release_table import TABLE, file_sha256
from treeleaks.runtime.errors import TreeleaksError
from treeleaks.runtime.paths import unreadable

if TYPE_CHECKING:

    from treeleaks.defences.release_grid import Learner
    from treeleaks.ir.model import ReleasedModel
    from treeleaks.report.release import Measured, Search

RELEASE = "release"


@app.command("release")
def release_command(
    model_path: Annotated[Path, typer.Argument(
        metavar="MODEL", show_default=False,
        help="The model file whose learner is refitted: scikit-learn .skops, LightGBM .txt "
        "(with its parameters section), or a pickle (with --trust-pickle; the release is "
        "written as .skops).")],
    out: Annotated[Path, typer.Option(help="Folder to write candidates.json and the release "
                                      "file to (created if missing).", show_default=False)],
    data: Annotated[Path | None, typer.Option(
        help="CSV of the training rows (features and label): every candidate is refitted "
        "on them and audited against them. The rows never leave this machine.",
        show_default=False)] = None,
    label: Annotated[str | None, typer.Option(
        help="The label column of --data (default: the label the model names, when --data "
             "has that column).", show_default=False)] = None,
    budget: Annotated[float, typer.Option(
        callback=positive_seconds, help="Seconds for the whole search: the original's audit "
        "gets budget / (candidates + 1), each candidate the time left over the candidates "
        "still to run. Too short for one candidate: refused before any.")] = 900.0,
    force: Force = False,
    trust_pickle: TrustPickle = False,
) -> None:
    """Find a release that audits lower: refit the model's learner on --data with larger
    leaves, shallower or fewer trees, pruning (and DP forests for a classifier), strip and
    audit each, score it by cross-validation, and write the most accurate one whose level
    is below the original's, or say that none is."""
    from treeleaks.report.release import BudgetTooShort, Listener, search

    if data is None or label is None:
        fail("release refits every candidate on your training rows and audits it against "
             "them: give --data (the training CSV) and --label (its label column)",
             EXIT_BAD_INPUT)
    if out.exists() and not out.is_dir():
        fail(f"--out {str(out)!r} is a file; name a folder for candidates.json and the "
             "release file", EXIT_BAD_INPUT)
    _refuse_previous(out, force)
    model, estimator, learner = _read(model_path, trust_pickle)
    label = label_column(model, data, label)
    frame = checked_data(model, data, label)
    created = not out.exists()
    _make_folder(out)
    guard_outputs(model_path, data, [out / TABLE], force)
    err = Console(stderr=True)
    try:
        found = search(model, model_path.name, estimator, learner, frame, label, budget,
                       Listener(on_candidate=lambda m, i, n: err.print(
                           Text(_line(m, i, n, learner.classifier)), soft_wrap=True),
                                on_original=lambda m, n: err.print(
                           Text(_original_line(m, n, learner.classifier)), soft_wrap=True)))
    except BudgetTooShort as exc:
        if created:
            out.rmdir()  # the folder this run made, still empty
        fail(str(exc), EXIT_BAD_INPUT)
    _write(out, found, model_path, force)
    console = Console()
    console.print(_table(found))
    console.print(Text(_conclusion(found, out), style="bold"), soft_wrap=True)
    if found.stopped and found.stopped.startswith("interrupted"):
        raise typer.Exit(EXIT_INTERRUPTED)


def _refuse_previous(out: Path, force: bool) -> None:
    """A previous run's output in ``out`` is refused unless ``--force``."""
    if force or not out.is_dir():
        return
    previous = sorted(p.name for p in out.iterdir() if p.name == TABLE
                      or p.name.startswith(f"{RELEASE}."))
    if previous:
        fail(f"--out {str(out)!r} already holds a previous run's output "
             f"({', '.join(previous)}); pass --force to replace it, or name another folder",
             EXIT_BAD_INPUT)


def _read(path: Path, trust_pickle: bool) -> tuple[ReleasedModel, Any, Learner]:
    """The model as the audit reads it, its scikit-learn object (or None) and its learner;
    a file that does not say how to refit it is refused naming what is missing."""
    from treeleaks.defences.release_grid import lightgbm_learner, sklearn_learner
    from treeleaks.io import load_estimator, load_model

    suffix = path.suffix.lower()
    try:
        if suffix in (".json", ".ubj"):
            _refuse_json(path)
        model = load_model(path, trust_pickle=trust_pickle, allow_regression=True,
                           counts_removed_ok=True)
        if suffix == ".txt":
            return model, None, lightgbm_learner(path.read_text(encoding="utf-8"))
        estimator = load_estimator(path, trust_pickle)
        return model, estimator, sklearn_learner(estimator)
    except (TreeleaksError, ValueError, OSError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)


def _refuse_json(path: Path) -> None:
    """A JSON (or UBJ) model has no learner to refit: say what the file lacks."""
    from treeleaks.frontends.xgboost import is_xgboost_json
    from treeleaks.ir.json_files import read_json
    from treeleaks.ir.model import ModelFormatError

    if problem := unreadable(path, "model file"):
        fail(problem, EXIT_BAD_INPUT)
    if path.suffix.lower() == ".json" and not is_xgboost_json(
            read_json(path, "model", ModelFormatError)):
        fail(f"cannot refit {path.name}: a treeleaks JSON model holds trees and counts, not "
             "the learner and hyperparameters they were trained with; give the framework's "
             "file (.skops, LightGBM .txt)", EXIT_BAD_INPUT)
    fail(f"cannot refit {path.name}: an XGBoost model file keeps its trees but not the "
         "parameters it was trained with (eta, max_depth, min_child_weight, subsample); "
         "release refits scikit-learn (.skops) and LightGBM (.txt) models", EXIT_BAD_INPUT)


def _make_folder(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"cannot create the folder {str(out)!r}: {describe(exc)}", EXIT_BAD_INPUT)


def _write(out: Path, found: Search, model: Path, force: bool) -> None:
    """``candidates.json`` and the chosen candidate's file; with ``--force``, a previous
    run's release file of another format is removed first."""
    chosen = found.chosen_candidate
    files: dict[Path, str | bytes] = {
        out / TABLE: json.dumps(found.table(model.name, file_sha256(model)), indent=2,
                                allow_nan=False) + "\n"}
    if chosen is not None and chosen.content is not None:
        files[out / f"{RELEASE}{chosen.suffix}"] = chosen.content
    if force:
        for stale in out.glob(f"{RELEASE}.*"):
            if stale not in files:
                stale.unlink()
    write_all(files)


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _settings(m: Measured) -> str:
    """A candidate's settings in a few words."""
    from treeleaks.defences.release_grid import DP_FOREST

    given = {k: v for k, v in m.settings.items() if k != "learner"}
    if m.settings.get("learner") == DP_FOREST:
        return (f"DP forest ε={given['epsilon']:g} ({given['n_estimators']} trees, depth "
                f"{given['max_depth']})")
    shown = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                      for k, v in given.items())
    return shown or "original settings, stripped"


def _line(m: Measured, index: int, total: int, classifier: bool) -> str:
    """One candidate's progress line."""
    word = "accuracy" if classifier else "R²"
    if m.error:
        return f"candidate {index + 1}/{total}, {_settings(m)}: failed ({m.error}) in " \
               f"{m.seconds:.1f} s"
    bound = " (a lower bound)" if m.lower_bound else ""
    return (f"candidate {index + 1}/{total}, {_settings(m)}: {m.level}{bound}, "
            f"{_count(m.rows_singled_out)} rows singled out, {word} {_score(m.score)}, "
            f"{m.seconds:.1f} s")


def _original_line(m: Measured, total: int, classifier: bool) -> str:
    """The original's progress line, before the candidates'."""
    word = "accuracy" if classifier else "R²"
    bound = " (a lower bound)" if m.lower_bound else ""
    return (f"original: {m.level}{bound}, {_count(m.rows_rebuilt)} rows rebuilt, "
            f"{_count(m.rows_singled_out)} rows singled out, {word} {_score(m.score)}, "
            f"{m.seconds:.1f} s" + (f"; {total} candidates to measure" if total else ""))


def _table(found: Search) -> Table:
    word = "accuracy" if found.metric == "accuracy" else "R²"
    table = Table(title=f"Release candidates ({word} by 5-fold cross-validation)",
                  title_justify="left")
    for column in ("#", "settings", "level", "rebuilt", "singled out", word, "s"):
        table.add_column(column, overflow="fold")
    rows = [("original", found.original), *((str(i + 1), c)
                                              for i, c in enumerate(found.candidates))]
    for mark, m in rows:
        chosen = m is found.chosen_candidate
        level = (f"failed: {m.error}" if m.error else
                 f"{m.level}{' (lower bound)' if m.lower_bound else ''}")
        settings = "as given" if m is found.original else _settings(m)
        table.add_row(mark + (" ✓" if chosen else ""), escape(settings), escape(level),
                      _count(m.rows_rebuilt), _count(m.rows_singled_out), _score(m.score),
                      f"{m.seconds:.1f}", style="bold green" if chosen else None)
    return table


def _conclusion(found: Search, out: Path) -> str:
    """The plain statement: the file written with its level and cost, or that none is
    lower; and whether the run stopped short."""
    from treeleaks.report.release_table import advice

    table = found.table("")
    short = f"Stopped short: {found.stopped}; {out / TABLE} holds what was measured. " \
        if found.stopped else ""
    if found.chosen_candidate is None:
        return f"{short}No file written: {advice(table)}. Wrote {out / TABLE}."
    return f"{short}Wrote {out / TABLE} and {out / table['chosen']['file']}: " \
           f"{advice(table)}."
