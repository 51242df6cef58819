"""``treeleaks synthetic``: before releasing PrivBayes synthetic data of a private table,
how often does the study's shadow-model attack single out one of its rows?"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from treeleaks.cli.app import (
    EXIT_BAD_INPUT,
    Force,
    app,
    describe,
    fail,
    guard_outputs,
    positive_seconds,
    read_csv,
    write_all,
)
from treeleaks.runtime.display import live_progress
from treeleaks.runtime.errors import TreeleaksError

if TYPE_CHECKING:
    import pandas as pd

    from treeleaks.synthetic.rate import Rate
    from treeleaks.synthetic.singling_out import SyntheticSinglingOut


@app.command("synthetic")
def synthetic_command(
    data: Annotated[Path, typer.Option(help="CSV of the private table X that PrivBayes "
                                       "would be fitted on.", show_default=False)],
    population: Annotated[Path, typer.Option(help="CSV of the public population D that "
                                             "contains X (same columns).",
                                             show_default=False)],
    epsilon: Annotated[float, typer.Option(help="PrivBayes's privacy budget.",
                                           show_default=False)],
    json_path: Annotated[Path, typer.Option("--json", help="Write the success rate, its "
                                            "interval, the baseline and the settings here.",
                                            show_default=False)],
    white_box: Annotated[bool, typer.Option("--white-box", help="Attack the fitted model "
                                            "(its network and tables) instead of its "
                                            "synthetic rows.")] = False,
    targets: Annotated[int, typer.Option(min=1, help="The most vulnerable population "
                                         "records attacked.")] = 10,
    shadows: Annotated[int, typer.Option(min=1, help="Shadow pairs per target.")] = 50,
    attacks: Annotated[int, typer.Option(min=1, help="Synthetic tables released from the "
                                         "private table and attacked.")] = 100,
    seed: Annotated[int, typer.Option(min=0, help="Seed of every random draw.")] = 0,
    budget: Annotated[float, typer.Option(callback=positive_seconds, help="Seconds for the "
                                          "whole run; shadow training (its forests too) "
                                          "stops at 80% of it, the attacks at its end after "
                                          "one round.")] = 600.0,
    plot: Annotated[Path | None, typer.Option(help="Write the success rate, its interval "
                                              "and the baseline as a PNG here.")] = None,
    label: Annotated[str | None, typer.Option(help="A two-valued column: also score one "
                                              "release by the AUC of a random forest trained "
                                              "on it and tested on the non-private "
                                              "population rows.")] = None,
    releases: Annotated[int, typer.Option(min=1, help="Releases the utility is averaged "
                                          "over (mean and sd).")] = 5,
    anonymeter_python: Annotated[Path | None, typer.Option(
        help="The python of an environment with anonymeter (it needs numpy<1.27): also run "
        "its singling-out evaluator on one release. Not needed when anonymeter is "
        "importable here.")] = None,
    force: Force = False,
) -> None:
    """Fit PrivBayes at --epsilon on the private table, release synthetic tables (or, with
    --white-box, the fitted models), and measure how often the shadow-model attack singles
    out a private row, beside the baseline |X|/|D| (Sedlmeyr 2024): aimed at the
    population's most isolated records (the study's targets) and at your table's own (the
    worst case, which the verdict reads)."""
    deadline = time.monotonic() + budget  # the budget counts the imports and the reading too
    from treeleaks.synthetic import anonymeter_check
    from treeleaks.synthetic.privbayes import MAX_EPSILON
    from treeleaks.synthetic.singling_out import AttackSizes, single_out_synthetic
    from treeleaks.synthetic.utility import release_utility

    if not math.isfinite(epsilon) or not 0 < epsilon <= MAX_EPSILON:
        fail(f"--epsilon must be a positive finite number (e.g. 1.0) up to {MAX_EPSILON:g} "
             f"(past it PrivBayes's noise falls below what its arithmetic holds), not "
             f"{epsilon:g}", EXIT_BAD_INPUT)
    outputs = [json_path] + ([plot] if plot is not None else [])
    guard_outputs(data, population, outputs, force)
    private = read_csv(data, "private table")
    public = read_csv(population, "population")
    console = Console()
    try:
        if anonymeter_python is not None:
            anonymeter_check.check_interpreter(anonymeter_python)
        utility = release_utility(private, public, epsilon, label, seed, releases)
        with live_progress(console) as progress:
            result = single_out_synthetic(private, public, epsilon,
                                          sizes=AttackSizes(n_targets=targets, n_shadows=shadows,
                                                            n_attacks=attacks),
                                          seed=seed, white_box=white_box, deadline=deadline,
                                          progress=progress)
        anonymeter = _anonymeter(private, public, epsilon, seed, anonymeter_python, deadline)
    except TreeleaksError as exc:
        fail(describe(exc), EXIT_BAD_INPUT)
    console.print(_table(data, result, utility, anonymeter))
    report = {**result.summary(), "utility": utility, "anonymeter": anonymeter}
    files: dict[Path, str | bytes] = {json_path: json.dumps(report, indent=2) + "\n"}
    if plot is not None:
        from treeleaks.synthetic.plot import success_png

        files[plot] = success_png(result, utility, anonymeter)
    write_all(files)


def _anonymeter(private: pd.DataFrame, population: pd.DataFrame, epsilon: float, seed: int,
                python: Path | None, deadline: float) -> dict[str, Any]:
    """anonymeter's figures on one release, or why there are none; a run without them says
    so in one line on stderr."""
    from treeleaks.synthetic import anonymeter_check

    figures = anonymeter_check.run(private, population, epsilon, seed, python, deadline)
    if "risk" not in figures:
        stderr_note(anonymeter_check.summary(figures))
    return figures


def stderr_note(text: str) -> None:
    """One ``note:`` line on stderr."""
    Console(stderr=True).print(f"note: {text}", markup=False, highlight=False, soft_wrap=True)


def _table(data: Path, result: SyntheticSinglingOut, utility: dict[str, Any],
           anonymeter: dict[str, Any]) -> Table:
    from treeleaks.synthetic.anonymeter_check import summary

    table = Table(title=escape(f"Singling out from PrivBayes releases of {data.name} "
                               f"({'white' if result.white_box else 'black'} box)"),
                  show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Privacy budget ε", f"{result.epsilon:g}")
    table.add_row("Success, study targets", _rate_text(result.study))
    if result.worst_case is not None:
        table.add_row("Success, your rows", _rate_text(result.worst_case))
    rows = result.n_private if result.baseline_rows is None else result.baseline_rows
    dropped = (f"; {result.n_private - rows} duplicated private rows left out"
               if rows < result.n_private else "")
    table.add_row("Baseline |X|/|D|", f"{result.baseline:.1%} ({rows} of "
                  f"{result.n_population} rows{dropped})")
    table.add_row("Verdict", _verdict_text(result))
    table.add_row("Targets", _targets_text(result))
    table.add_row(f"Utility of {utility['releases']} releases", _utility_text(utility))
    table.add_row("anonymeter", escape(summary(anonymeter)))
    table.add_row("Status", str(result.status))
    for note in result.notes:
        table.add_row("Note", escape(note))
    return table


def _rate_text(rate: Rate) -> str:
    low, high = rate.ci
    return (f"{rate.success_rate:.1%} (95% interval {low:.1%} to {high:.1%}; "
            f"{rate.successes} of {rate.attacks} releases; baseline {rate.baseline:.1%})")


def _verdict_text(result: SyntheticSinglingOut) -> str:
    """Where the figure the verdict reads lies against the baseline, and which it is."""
    rate = result.risk_rate
    which = ("the worst case on your own rows" if result.worst_case is not None
             else "the study's targets")
    return {"above the baseline": "above the baseline: the releases let the attack single "
            "out private rows", "below the baseline": "below the baseline: the attack's "
            "targets are rarely private rows", "contains the baseline": "not "
            "distinguishable from the baseline"}[rate.verdict] + f" (from {which})"


def _targets_text(result: SyntheticSinglingOut) -> str:
    """How many targets each figure attacked, and the fewest shadow pairs one had."""
    both = [*result.targets, *result.worst_case_targets]
    own = (f", {len(result.worst_case_targets)} of your rows" if result.worst_case_targets
           else "")
    return (f"{len(result.targets)} of the population's{own} (shadow pairs each: at least "
            f"{min(t['shadow_pairs'] for t in both)})")


def _utility_text(utility: dict[str, Any]) -> str:
    """Mean Jensen-Shannon distance and, with --label, the two AUCs (± sd over releases)."""
    text = (f"mean Jensen-Shannon distance {utility['js_distance_mean']:.3f} ± "
            f"{utility['js_distance_mean_sd']:.3f} (0 = same marginals)")
    if "auc_synthetic" in utility:
        synthetic = ("-" if utility["auc_synthetic"] is None else
                     f"{utility['auc_synthetic']:.3f} ± {utility['auc_synthetic_sd']:.3f}")
        private = "-" if utility["auc_private"] is None else f"{utility['auc_private']:.3f}"
        text += f"; AUC trained on synthetic {synthetic}, on the private rows {private}"
    return text

