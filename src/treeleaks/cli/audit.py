"""``treeleaks audit``: run every attack that applies to a model and write one report a
custodian can act on (``report.html`` and ``report.json``)."""

from __future__ import annotations

from contextlib import contextmanager
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
    SchemaOption,
    TrustPickle,
    app,
    bound_schema,
    checked_data,
    describe,
    fail,
    guard_outputs,
    label_column,
    load_any_model,
    optional_positive_seconds,
    positive_seconds,
    write_reports,
)
from treeleaks.report.audit_steps import weights_words
from treeleaks.report.budget import ATTACKS_SHARE
from treeleaks.runtime.errors import TreeleaksError
from treeleaks.runtime.paths import unreadable

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    import pandas as pd

    from treeleaks.ir.model import ReleasedModel
    from treeleaks.report.evidence import AuditInput
    from treeleaks.report.findings import AttackRun, Audit

DataOption = Annotated[Path | None, typer.Option(
    help="CSV of your training rows (features and label): shows which of them are exposed "
    "and scores the reconstruction. The rows never leave this machine.")]
LabelOption = Annotated[str | None, typer.Option(
    help="The label column of --data (default: the label the model names, such as an R "
         "formula's response, when --data has that column).")]
RISK_STYLE = {"HIGH": "bold white on red", "MEDIUM": "bold black on yellow",
              "LOW": "bold white on green"}


@app.command("audit")
def audit_command(
    out: Annotated[Path, typer.Option(help="Folder to write report.html and report.json to "
                                      "(created if missing).", show_default=False)],
    model_path: Annotated[Path | None, typer.Argument(
        metavar="MODEL", help="The model: treeleaks .json, scikit-learn .skops, LightGBM "
        ".txt, XGBoost .json, or a pickle (with --trust-pickle). Omitted with --synthetic.",
        show_default=False)] = None,
    data: DataOption = None,
    label: LabelOption = None,
    population: Annotated[Path | None, typer.Option(
        help="CSV of rows from the same population that were not trained on (features and "
        "label): runs the leak-or-distribution test on a forest's reconstruction.")] = None,
    schema: SchemaOption = None,
    release: Annotated[Path | None, typer.Option(
        help="The folder a `treeleaks release` run of this very file wrote (or its "
        "candidates.json): 'What to do' quotes its measured table.", show_default=False)
    ] = None,
    budget: Annotated[float, typer.Option(
        callback=positive_seconds, help="Seconds for the whole audit, shared among its "
        f"attacks: they share {ATTACKS_SHARE:.0%} of it (the rest is for the report), each "
        "getting the time left times its weight over the weights of those still to run "
        f"({weights_words('the others')}), so time one does not use passes on. Reading the "
        "model comes before this clock. An attack cut "
        "short is reported as partial and its figures as lower bounds. With --synthetic: "
        "the attack's budget.")] = 300.0,
    attack_budget: Annotated[float | None, typer.Option(
        callback=optional_positive_seconds, help="At most this many seconds for any one "
        "attack (the old meaning of --budget); give a large --budget too to bound each "
        "attack alone.", show_default=False)] = None,
    trust_pickle: TrustPickle = False,
    synthetic: Annotated[bool, typer.Option(
        "--synthetic", help="Audit a synthetic-data release instead of a model: PrivBayes "
        "fitted on --data at --epsilon, attacked with --population as the adversary's "
        "knowledge.")] = False,
    epsilon: Annotated[float | None, typer.Option(
        help="With --synthetic: PrivBayes's privacy budget.", show_default=False)] = None,
    anonymeter_python: Annotated[Path | None, typer.Option(
        help="With --synthetic: the python of an environment with anonymeter (it needs "
        "numpy<1.27), to run its singling-out evaluator beside the attack.")] = None,
    force: Force = False,
) -> None:
    """Audit a model before release: run every attack that applies, print the verdict, and
    write report.html (self-contained) and report.json to --out. With --synthetic, audit a
    PrivBayes synthetic-data release of --data instead."""
    html_path, json_path = _report_paths(out, model_path, force)
    if synthetic:
        _audit_synthetic(out, model_path, data, label, population, schema, budget,
                         attack_budget, epsilon, anonymeter_python, force)
        return
    model_path = _model_only(model_path, epsilon, anonymeter_python)
    run = _prepared(model_path, schema, data, label, population, budget, attack_budget,
                    release, trust_pickle)
    _make_folder(out)
    for given_file in (schema, data, population):
        guard_outputs(model_path, given_file, [html_path, json_path], force)
    from treeleaks.report.html_report import render

    audit = run()
    write_reports(audit, html_path, json_path, render)
    _print_verdict(Console(), model_path, audit, (html_path, json_path))
    if audit.interrupted:
        fail("interrupted; the partial report says what ran", EXIT_INTERRUPTED)


def _report_paths(out: Path, model_path: Path | None, force: bool) -> tuple[Path, Path]:
    """report.html and report.json in --out; a file named as --out, or a previous report
    (unless --force), refused before any work."""
    if out.exists() and not out.is_dir():
        fail(f"--out {str(out)!r} is a file; name a folder for report.html and report.json",
             EXIT_BAD_INPUT)
    html_path, json_path = out / "report.html", out / "report.json"
    if out.is_dir():
        guard_outputs(model_path, None, [html_path, json_path], force)
    return html_path, json_path


def _audit_synthetic(out: Path, model_path: Path | None, data: Path | None,
                     label: str | None, population: Path | None, schema: Path | None,
                     budget: float, attack_budget: float | None, epsilon: float | None,
                     anonymeter_python: Path | None, force: bool) -> None:
    """--synthetic: the options a model's audit takes refused, then the release audited."""
    from treeleaks.cli.audit_synthetic import audit_release

    if attack_budget is not None:
        fail("--attack-budget is for a model's audit; with --synthetic, --budget is the "
             "attack's", EXIT_BAD_INPUT)
    if model_path is not None or schema is not None:
        fail("--synthetic audits a synthetic-data release, not a model: drop the MODEL "
             "and --schema, or drop --synthetic", EXIT_BAD_INPUT)
    audit_release(out, data, population, epsilon, label, budget, anonymeter_python, force)


def _model_only(model_path: Path | None, epsilon: float | None,
                anonymeter_python: Path | None) -> Path:
    """The MODEL of a model's audit; the options of --synthetic refused."""
    if model_path is None:
        fail("give the MODEL file to audit, or --synthetic with --data, --population and "
             "--epsilon to audit a synthetic-data release", EXIT_BAD_INPUT)
    if epsilon is not None or anonymeter_python is not None:
        fail("--epsilon and --anonymeter-python are for --synthetic; a model's audit reads "
             "its budget from the model file", EXIT_BAD_INPUT)
    return model_path


def _prepared(model_path: Path, schema: Path | None, data: Path | None, label: str | None,
              population: Path | None, budget: float, attack_budget: float | None,
              release: Path | None, trust_pickle: bool) -> Callable[[], Audit]:
    """The model read and every input checked; returns the audit to run (a rule list's, or
    a tree model's with its progress on stderr)."""
    from treeleaks.ir.model import ReleasedModel
    from treeleaks.report.collect import run_audit
    from treeleaks.report.rule_lists import run_rule_list_audit

    loaded = load_any_model(model_path, trust_pickle, allow_regression=True,
                            counts_removed_ok=True)
    if not isinstance(loaded, ReleasedModel):
        given = _rule_list_schema(loaded, schema, data or population)
        return lambda: run_rule_list_audit(loaded, model_path.name, given, budget)
    inp = _model_input(loaded, model_path, schema, data, label, population, budget,
                       trust_pickle)
    inp.attack_budget = attack_budget
    inp.release_table = _release_table(release, model_path)

    def run() -> Audit:
        with _progress(Console(stderr=True)) as (engine, on_step, on_done):
            return run_audit(inp, progress=engine, on_step=on_step, on_done=on_done)
    return run


def _print_verdict(console: Console, model_path: Path, audit: Audit,
                   written: tuple[Path, Path]) -> None:
    """The verdict's table, the release search to run next (when none was quoted) and the
    files written."""
    console.print(_verdict_table(model_path, audit))
    if audit.release_command is not None:
        console.print(Text(f"To find a release that audits lower: {audit.release_command}"),
                      soft_wrap=True)
    console.print(Text(f"Wrote {written[0]} and {written[1]}"
                       + (" (partial)" if audit.partial else ""), style="bold"), soft_wrap=True)


def _model_input(model: ReleasedModel, model_path: Path, schema: Path | None,
                 data: Path | None, label: str | None, population: Path | None,
                 budget: float, trust_pickle: bool) -> AuditInput:
    """Check every input as the separate commands do (the model, regressors and stripped
    files included: singling out and pruning read them, and what is left of a stripped file
    is audited)."""
    from treeleaks.report.evidence import AuditInput

    bound_schema(schema, model)  # refused here as the other commands refuse it
    label = label_column(model, data, label) if data is not None else label
    frame = _checked_data(model, data, label) if data is not None else None
    rest = _checked_population(model, population, label, data) if population else None
    return AuditInput(model, model_path.name, _schema(schema),
                      _estimator(model_path, trust_pickle), frame, label, rest, budget)


def _rule_list_schema(rule_list: Any, schema: Path | None, rows: Path | None) -> Any:
    """A rule list's schema, checked as ``treeleaks leak`` checks it (None: inferred)."""
    from treeleaks.attacks.probabilistic import bind_rule_list

    if rows is not None:
        fail("--data and --population are for tree models; a rule list is audited from the "
             "file alone", EXIT_BAD_INPUT)
    given = _schema(schema)
    try:
        bind_rule_list(rule_list, given)
    except (TreeleaksError, ValueError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)
    return given


def _make_folder(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"cannot create the folder {str(out)!r}: {describe(exc)}", EXIT_BAD_INPUT)


def _schema(path: Path | None) -> Any:
    """The schema as given, or None; refused as ``treeleaks leak`` refuses it."""
    from treeleaks.ir.schema import FeatureSchema

    if path is None:
        return None
    if problem := unreadable(path, "schema file"):
        fail(problem, EXIT_BAD_INPUT)
    try:
        return FeatureSchema.from_json(path)
    except (TreeleaksError, ValueError, OSError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)


def _estimator(path: Path, trust_pickle: bool) -> Any:
    """The scikit-learn object behind a .skops or pickle file (for pruning and drawing the
    tree), or None for a treeleaks JSON model."""
    from treeleaks.io import load_estimator

    if path.suffix.lower() == ".json":
        return None
    try:
        return load_estimator(path, trust_pickle)
    except (TreeleaksError, ValueError, OSError):
        return None  # the model loaded; only the defences that edit it will not run


def _release_table(path: Path | None, model: Path) -> dict[str, Any] | None:
    """The release table of ``--release``, checked to be this file's (None: not given)."""
    from treeleaks.report.release_table import read_table

    if path is None:
        return None
    try:
        return read_table(path, model)
    except TreeleaksError as exc:
        fail(f"--release: {exc}", EXIT_BAD_INPUT)


def _checked_data(model: ReleasedModel, path: Path, label: str | None) -> pd.DataFrame:
    """The custodian's rows, refused as ``single-out --data`` refuses them."""
    if label is not None and label not in model.feature_names:
        model.label_name = label  # predicates and rows read "<label column> = <class>"
    return checked_data(model, path, label)


def _checked_population(model: ReleasedModel, path: Path, label: str | None,
                        data: Path | None) -> pd.DataFrame:
    if data is None:
        fail("--population needs --data: the test sets the reconstruction against your "
             "training rows and the population", EXIT_BAD_INPUT)
    return checked_data(model, path, label, "--population")


@contextmanager
def _progress(console: Console) -> Iterator[tuple[Any, Any, Any]]:
    """Rich progress on stderr (on a terminal only): the attack running with its share of
    the budget, the engine's stage below it, and one line per attack when it ends. Yields
    the engine's callback and the per-attack ones (all None when stderr is not a
    terminal)."""
    if not console.is_terminal:
        yield None, None, None
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from treeleaks.runtime.display import StageDisplay

    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(),
               TextColumn("{task.fields[figures]}", markup=False), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bars:
        overall = bars.add_task("Audit", total=None, figures="")

        def on_step(title: str, index: int, total: int, seconds: float) -> None:
            bars.update(overall, description=f"Audit: {title}", completed=index, total=total,
                        figures=f"attack {index + 1} of {total}, {_seconds(seconds)}")

        def on_done(run: AttackRun, left: float) -> None:
            bars.console.print(Text(_attack_line(run, left)), soft_wrap=True)

        yield StageDisplay(bars), on_step, on_done


def _seconds(seconds: float) -> str:
    return "no limit" if seconds == float("inf") else f"up to {seconds:.1f} s"


def _attack_line(run: AttackRun, left: float) -> str:
    """One attack's progress line: what happened with the time used, time left."""
    rest = "" if left == float("inf") else f"; {max(left, 0.0):.0f} s of the budget left"
    return f"{run.title}: {run.outcome}{rest}"


def _verdict_table(path: Path, audit: Audit) -> Table:
    """The verdict: the risk and what settles a presumption, the figures, what the file
    gives away, and every attack that did not simply complete."""
    v, risk = audit.verdict, audit.risk
    table = Table(title=escape(f"Audit of {path.name}"), show_header=False,
                  title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    presumed = " (presumed)" if risk.get("presumed") else ""
    table.add_row("Risk", Text.assemble((f" {risk['level']} ", RISK_STYLE[risk["level"]]),
                                        f"{presumed} {risk['why']}"))
    for check in risk.get("checks", []):
        table.add_row("To settle a presumption", check)
    for name, value in [*_row_figures(v), *_measures(v), *_given_away(audit),
                        *_attacks_not_complete(audit)]:
        table.add_row(name, value)
    if audit.partial:
        table.add_row("Note", Text("partial: the figures are lower bounds", "yellow"))
    return table


def _measures(v: dict[str, Any]) -> list[tuple[str, str]]:
    """dist_g, the values pinned, the error beside random guesses and the leak test."""
    from treeleaks.report.risk import p_value_text

    lines = []
    if v["dist_g"] is not None:
        lines.append(("dist_g (1 = nothing revealed)", f"{v['dist_g']:.3f}"))
    if v.get("values_pinned_within_5pct") is not None:
        lines.append(("Values pinned within 5% of range",
                      f"{v['values_pinned_within_5pct']:.1%}"))
    if v["error"] is not None:
        lines.append(("Error vs random", f"{v['error']:.4f} vs {v['baseline_error']:.4f}"))
    if v.get("leak_test_p_value") is not None:
        lines.append(("Leak test", f"{p_value_text(v['leak_test_p_value'])} ("
                      + ("a leak" if v["leak_test_leak"] else "no evidence of a leak") + ")"))
    return lines


def _given_away(audit: Audit) -> list[tuple[str, str]]:
    """What the file gives away, in the reader's words as every command prints them (N
    alone for a file without a description), and the counts when they are gone."""
    from treeleaks.ir.description import ModelDescription

    v = audit.verdict
    about = audit.exposed.get("description")
    if about is not None:
        lines = [(name, escape(words))
                 for name, words in ModelDescription.from_dict(about).rows()[:4]]
    else:
        lines = [("N given away", "no" if v["n_rows_given_away"] is None
                  else f"{v['n_rows_given_away']:,}")]
    if not audit.exposed["counts_released"]:
        how = ("removed (a stripped file)" if about is None or
               ModelDescription.from_dict(about).counts_removed_by_publisher
               else "not stored (the framework keeps none)")
        lines.append(("Counts", f"{how}: the structure, thresholds and leaf values remain, "
                      "and the attacks that read counts do not apply"))
    return lines


def _attacks_not_complete(audit: Audit) -> list[tuple[str, Text]]:
    """Each attack that did not simply complete, and why (dim: it does not apply)."""
    from treeleaks.report.findings import COMPLETE, NOT_APPLICABLE

    return [(escape(run.title), Text(run.words, "dim" if run.status == NOT_APPLICABLE
                                     else "yellow"))
            for run in audit.attacks if run.status != COMPLETE]


def _row_figures(v: dict[str, Any]) -> list[tuple[str, str]]:
    """The verdict's row counts, each named for what it is: rows rebuilt within every count
    are rows the counts allow, not the training rows; the file pins or proves fewer."""
    lines = _rebuilt_lines(v)
    for name, key in (("Rows reconstructed exactly", "rows_reconstructed_exactly"),
                      ("Rows proven in the training data", "rows_proven"),
                      ("Targets given away exactly", "targets_given_away")):
        if v.get(key) is not None:
            lines.append((name, f"{v[key]:,}{_boxes(v) if key == 'rows_proven' else ''}"))
    return lines + _singled_lines(v)


def _rebuilt_lines(v: dict[str, Any]) -> list[tuple[str, str]]:
    """The rows rebuilt within every count, and those of them the file pins."""
    rebuilt = v.get("rows_reconstructed")
    if not rebuilt:
        return []
    partial = " (a partial dataset)" if v.get("rows_reconstructed_partial") else ""
    lines = [("Rows rebuilt from the file", f"{rebuilt:,}{partial}; rows the model allows, "
              "not proven to be training rows")]
    if v.get("rows_pinned") is not None:
        lines.append(("Rebuilt rows the file pins", f"{v['rows_pinned']:,} (every value "
                      "within 5% of its range)"))
    return lines


def _singled_lines(v: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows singled out on the data and proven by the file, and the candidates left
    unchecked without the data."""
    from treeleaks.report.risk import singling_candidates

    lines = []
    measured = v.get("singled_out_measured_on_data")
    if measured and v.get("rows_singled_out") is not None:
        lines.append(("Rows singled out (your data)", f"{v['rows_singled_out']:,}"))
    proven = v.get("rows_singled_out_proven", v.get("rows_singled_out"))
    if proven is not None:
        lines.append(("Rows singled out (proven by the file)", f"{proven:,}"))
    candidates = singling_candidates(v)
    if candidates and not measured:
        lines.append(("Singling-out candidates", f"{candidates:,}, unchecked (--data checks "
                      "them)"))
    return lines


def _boxes(v: dict[str, Any]) -> str:
    """How many proven rows the file gives only as boxes (their values not pinned)."""
    pinned = v.get("rows_proven_pinned")
    if pinned is None or pinned == v["rows_proven"]:
        return ""
    return f" ({pinned:,} with their values; the rest only as boxes)"
