"""``treeleaks audit --synthetic``: audit a synthetic-data release of the custodian's table
(PrivBayes at --epsilon) instead of a model, and write the same report.html and
report.json."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from treeleaks.cli.app import (
    EXIT_BAD_INPUT,
    describe,
    fail,
    guard_outputs,
    read_csv,
    write_reports,
)
from treeleaks.cli.synthetic import stderr_note
from treeleaks.runtime.display import live_progress
from treeleaks.runtime.errors import TreeleaksError

if TYPE_CHECKING:
    from treeleaks.report.findings import Audit

RISK_STYLE = {"HIGH": "bold white on red", "MEDIUM": "bold black on yellow",
              "LOW": "bold white on green"}


def audit_release(out: Path, data: Path | None, population: Path | None,
                  epsilon: float | None, label: str | None, budget: float,
                  anonymeter_python: Path | None, force: bool = False) -> None:
    """Check the inputs, run the synthetic-release audit, write and print it."""
    from treeleaks.report.synthetic_audit import SyntheticInput, run_synthetic_audit
    from treeleaks.report.synthetic_html import render_release
    from treeleaks.synthetic import anonymeter_check

    data, population, epsilon = _checked(data, population, epsilon)
    html_path, json_path = out / "report.html", out / "report.json"
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"cannot create the folder {str(out)!r}: {describe(exc)}", EXIT_BAD_INPUT)
    guard_outputs(data, population, [html_path, json_path], force)
    inp = SyntheticInput(read_csv(data, "private table"), read_csv(population, "population"),
                         epsilon, data.name, population.name, budget, label,
                         anonymeter_python=anonymeter_python)
    console = Console(stderr=True)
    try:
        if anonymeter_python is not None:
            anonymeter_check.check_interpreter(anonymeter_python)
        with live_progress(console) as progress:
            audit = run_synthetic_audit(inp, progress)
    except TreeleaksError as exc:
        fail(describe(exc), EXIT_BAD_INPUT)
    write_reports(audit, html_path, json_path, render_release)
    figures = audit.attacks[0].figures
    if "risk" not in figures["anonymeter"]:
        stderr_note(anonymeter_check.summary(figures["anonymeter"]))
    Console().print(_verdict_table(data, audit))
    Console().print(Text(f"Wrote {html_path} and {json_path}"
                         + (" (partial)" if audit.partial else ""), style="bold"),
                    soft_wrap=True)


def _checked(data: Path | None, population: Path | None, epsilon: float | None
             ) -> tuple[Path, Path, float]:
    """--data, --population and --epsilon, each given and epsilon within PrivBayes's
    range."""
    from treeleaks.synthetic.privbayes import MAX_EPSILON

    if data is None or population is None or epsilon is None:
        fail("--synthetic needs --data (your private table), --population (the public rows "
             "that hold it) and --epsilon (PrivBayes's privacy budget)", EXIT_BAD_INPUT)
    if not math.isfinite(epsilon) or not 0 < epsilon <= MAX_EPSILON:
        fail(f"--epsilon must be a positive finite number (e.g. 1.0) up to {MAX_EPSILON:g} "
             f"(past it PrivBayes's noise falls below what its arithmetic holds), not "
             f"{epsilon:g}", EXIT_BAD_INPUT)
    return data, population, epsilon


def _verdict_table(data: Path, audit: Audit) -> Table:
    from treeleaks.report.synthetic_audit import WHICH
    from treeleaks.synthetic.anonymeter_check import summary

    f, risk = audit.attacks[0].figures, audit.risk
    table = Table(title=escape(f"Audit of a synthetic release of {data.name} (PrivBayes, "
                               f"ε = {f['epsilon']:g})"), show_header=False,
                  title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Risk", Text.assemble((f" {risk['level']} ", RISK_STYLE[risk["level"]]),
                                        f" {risk['why']}"))
    table.add_row("Singled out, study targets", _rate(f))
    if f["worst_case"] is not None:
        table.add_row("Singled out, your rows", _rate(f["worst_case"]))
    table.add_row("The risk reads", f"the attack {WHICH[f['risk_from']]}")
    table.add_row("Utility", f"mean Jensen-Shannon distance "
                  f"{f['utility']['js_distance_mean']:.3f}")
    table.add_row("anonymeter", escape(summary(f["anonymeter"])))
    return table


def _rate(r: dict[str, Any]) -> str:
    low, high = r["ci"]
    return (f"{r['success_rate']:.1%} of releases (95% interval {low:.1%} to {high:.1%}; "
            f"{r['successes']} of {r['attacks']}; baseline {r['baseline']:.1%})")
