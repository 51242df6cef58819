"""Run every attack that applies to a model, within the budget, and gather the audit.

Which attacks apply: a forest (or a bootstrap or DP forest) gets the reconstruction; every
model with counts gets singling out; every model with exact counts gets the probabilistic
reconstruction tree by tree; a bootstrap forest exposing its draws gets the worst case
(with the data) and the attack without its random states; with rows of the population, the
leak test. A step that does not apply is listed as such with why (also one that finds,
when it runs, that it cannot read the model); one that raises is listed as failed with the
error; one that stops without a complete answer as partial, cut short when it used its
share of the budget (measured), else with what stopped it; one the budget had no time
left for as not run. Ctrl-C stops the audit, and what was gathered is reported as
partial. The whole audit has one budget (``inp.total_budget``), shared among the steps
(`treeleaks.report.audit_steps.STEPS`) by the rule of `treeleaks.report.budget`; each step
is given its share as ``seconds``, and the input is never rebound.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from treeleaks.report import remedies
from treeleaks.report.audit_steps import STEPS, AuditStep, StepInputs
from treeleaks.report.budget import AuditClock
from treeleaks.report.custodian import row_table
from treeleaks.report.evidence import AuditInput, Evidence
from treeleaks.report.findings import (
    FAILED,
    NOT_APPLICABLE,
    NOT_RUN,
    PARTIAL,
    AttackRun,
    Audit,
    Defence,
    Verdict,
    ran_out_of_time,
)
from treeleaks.report.rebuilt import rebuilt_rows
from treeleaks.report.risk import assess

if TYPE_CHECKING:
    from treeleaks.ir.model import ReleasedModel
    from treeleaks.runtime.progress import ProgressCallback


class Interrupted(Exception):
    """Ctrl-C during a step."""


OnStep = Callable[[str, int, int, float], None]  # title, index, steps, its seconds
OnDone = Callable[[AttackRun, float], None]  # the step's record, seconds left to the attacks


def run_audit(inp: AuditInput, progress: ProgressCallback | None = None,
              on_step: OnStep | None = None, on_done: OnDone | None = None) -> Audit:
    """Audit ``inp.model`` within ``inp.total_budget`` seconds for the whole audit (each
    attack at most ``inp.attack_budget``): run the steps that apply (`STEPS`), each with its
    share (``on_step(title, i, n, seconds)`` before each, ``on_done(run, left)`` after;
    ``progress`` receives the reconstruction engine's events), and assemble the verdict,
    the risk, the custodian's rows, the defences and the assumptions."""
    clock = AuditClock(inp.total_budget, inp.attack_budget)
    audit = Audit(model=model_facts(inp), exposed=exposed_facts(inp.model),
                  assumptions=assumptions(inp), estimator=inp.estimator)
    inputs = StepInputs(inp, Evidence(), [], progress)
    why_not = {step.name: step.applies(inputs) for step in STEPS}
    runnable = [step.name for step in STEPS if not why_not[step.name]]
    for index, step in enumerate(STEPS):
        if why_not[step.name]:
            audit.attacks.append(AttackRun(step.name, step.title, NOT_APPLICABLE,
                                           why_not[step.name]))
        elif audit.interrupted:
            audit.attacks.append(AttackRun(step.name, step.title, NOT_RUN, "the audit was "
                                           "interrupted (Ctrl-C) before this attack"))
        else:
            seconds = clock.share(step.name, runnable[runnable.index(step.name) + 1:])
            _run_step(audit, inputs, step, seconds, (index, len(STEPS)), on_step)
            if on_done is not None:
                on_done(audit.attacks[-1], clock.left())
    _conclude(audit, inp, inputs.evidence, inputs.defences)
    audit.budget = clock.record()
    return audit


def _run_step(audit: Audit, inputs: StepInputs, step: AuditStep, seconds: float | None,
              place: tuple[int, int], on_step: OnStep | None) -> None:
    """Run one step within ``seconds`` (None: the budget ran out before it) and record it."""
    name, title = step.name, step.title
    if seconds is None:  # not run for want of time: the audit's figures are lower bounds
        audit.attacks.append(AttackRun(name, title, NOT_RUN, "the audit's budget ran out "
                                       "before this attack; the figures are lower bounds"))
        return
    if on_step is not None:
        on_step(title, *place, seconds)
    try:
        record = attempt(name, title, lambda: step.run(inputs, seconds))
        record.budget_s = seconds
        record.cut_short = record.status == PARTIAL and (  # the step's say, or the clock's
            record.cut_short or ran_out_of_time(record.time_s, seconds))
        audit.attacks.append(record)
        # an attack that keeps what it had at Ctrl-C returns it and says so
        audit.interrupted = bool(record.figures.get("interrupted"))
    except Interrupted:
        audit.interrupted = True
        audit.attacks.append(AttackRun(name, title, NOT_RUN, "interrupted (Ctrl-C) while it "
                                       "ran", budget_s=seconds))


def attempt(name: str, title: str, step: Callable[[], AttackRun]) -> AttackRun:
    """Run one step; an error becomes a failed record naming it, and a refusal of the model
    (`UnsupportedModelError`: the attack cannot read it) a record of why it does not
    apply."""
    from treeleaks.runtime.errors import TreeleaksError, UnsupportedModelError

    start = time.perf_counter()
    try:
        run = step()
    except KeyboardInterrupt:
        raise Interrupted from None
    except MemoryError:
        return AttackRun(name, title, FAILED, "memory ran out", time.perf_counter() - start)
    except UnsupportedModelError as exc:
        return AttackRun(name, title, NOT_APPLICABLE, " ".join(str(exc).split()),
                         time.perf_counter() - start)
    except Exception as exc:  # one failing attack must not sink the report
        kind = "" if isinstance(exc, TreeleaksError | ValueError) else (
            f"unexpected {type(exc).__name__} (a bug, please report it): ")
        return AttackRun(name, title, FAILED, kind + " ".join(str(exc).split()),
                         time.perf_counter() - start)
    run.time_s = max(run.time_s, time.perf_counter() - start)  # the step's wall time
    return run


def _conclude(audit: Audit, inp: AuditInput, ev: Evidence, defences: list[Defence]) -> None:
    """Verdict, risk, custodian's rows, defences and the data behind the pictures."""
    try:
        audit.rows = row_table(inp, ev) if inp.data is not None else None
    except KeyboardInterrupt:
        audit.interrupted = True
    audit.rebuilt = rebuilt_rows(ev.recon, inp.model.n_rows)
    audit.verdict = verdict(inp, audit)
    audit.risk = assess(audit.verdict, audit.partial)
    if inp.release_table is None:
        audit.release_command = remedies.release_command(inp)
    audit.defences = _defences(audit, inp, defences)
    if ev.singling is not None and inp.model.n_trees == 1:
        audit.vulnerable_nodes = sorted({p.node for p in ev.singling.predicates})
    audit.plots_data = plot_data(inp, ev, audit)


def _defences(audit: Audit, inp: AuditInput, measured: list[Defence]) -> list[Defence]:
    """The defences in the report's order: the release search's table (when quoted), those
    the steps measured, stripping the counts (when it helps) and retraining with DP (a
    classifier's)."""
    singling = audit.attack("single-out")
    checked = singling if singling and singling.figures and inp.model.counts_released \
        else None
    counts = remedies.strip_counts(checked, inp.path,
                                   checked.figures.get("rows_singled_out_by_guesses")
                                   if checked else None)
    dp = [] if inp.model.is_regression else [remedies.retrain_with_dp(inp.model.noise)]
    release = [] if inp.release_table is None else [remedies.release_search(inp.release_table)]
    return [*release, *measured, *([counts] if counts else []), *dp]


def _rows_established(inp: AuditInput, recon: dict[str, Any], leak: dict[str, Any]
                      ) -> tuple[Any, Any, Any]:
    """Rows rebuilt exactly, proven, and proven with their values: the reconstruction's
    (a DP forest's prove none), or for a single tree its probabilistic reconstruction's
    fully determined rows."""
    model = inp.model
    exact = recon.get("exact_rows")
    proven = recon.get("proven_rows") if recon.get("formulation") != "dp" else 0
    pinned = recon.get("proven_pinned_rows") if proven else proven
    if model.n_trees == 1 and not model.bootstrap and leak:
        exact = leak["rows_fully_determined"]
        proven = exact if model.n_rows is not None else 0
        pinned = proven if _all_discrete(inp) else 0
    return exact, proven, pinned


def verdict(inp: AuditInput, audit: Audit) -> dict[str, Any]:
    """The headline figures (`Verdict`; None: not measured)."""
    model = inp.model
    figures = {a.name: a.figures for a in audit.attacks if a.figures}
    leak = figures.get("leak", {})
    recon = figures.get("reconstruct", {})
    exact, proven, pinned = _rows_established(inp, recon, leak)
    singled = figures.get("single-out", {})
    leak_test = figures.get("leak-test", {})
    return Verdict(
        rows_reconstructed=recon.get("n_rows"),
        rows_reconstructed_partial=bool(recon.get("partial", False)),
        rows_pinned=recon.get("pinned_rows"),
        rows_reconstructed_exactly=exact,
        rows_proven=proven,
        rows_proven_pinned=pinned,
        targets_given_away=recon.get("targets_exact"),
        rows_singled_out=singled.get("rows_singled_out",
                                     singled.get("rows_singled_out_at_least")),
        rows_singled_out_proven=singled.get("rows_singled_out_at_least"),
        singled_out_measured_on_data="rows_singled_out" in singled,
        singling_predicates=singled.get("n_predicates"),
        singling_predicates_proven=singled.get("n_proven"),
        singling_predicates_valid=singled.get("predicates_matching_one_row"),
        singling_guesses_open=singled.get("open_guesses"),
        dist_g=leak.get("dist_g"),
        error=recon.get("error"),
        baseline_error=recon.get("baseline_error"),
        values_pinned_within_5pct=recon.get("pinned_within_5pct"),
        leak_test_p_value=leak_test.get("p_value"),
        leak_test_leak=leak_test.get("leak"),
        n_rows_given_away=audit.exposed["n_rows"],
        class_balance_given_away=audit.exposed["class_balance"],
        class_balance_estimated=audit.exposed.get("class_balance_estimated", False),
        rows_in_data=None if inp.data is None else len(inp.data),
        fields_per_row=_per_row_fields(model),
    ).as_dict()


def _per_row_fields(model: ReleasedModel) -> list[str] | None:
    """The fields the file stores row by row and still holds (None: none)."""
    return [f.name for f in model.described().fields if f.per_row and not f.removed] or None


def _all_discrete(inp: AuditInput) -> bool:
    """Whether every column is 0/1 or integer, so a leaf that admits one attribute vector
    pins a row's values (on measured columns it pins only intervals)."""
    return all(spec.kind in ("binary", "ordinal") for spec in inp.bound.features.values())


def plot_data(inp: AuditInput, ev: Evidence, audit: Audit) -> dict[str, Any]:
    """What the pictures draw: per-row exposure and the error beside the baseline."""
    out: dict[str, Any] = {}
    if ev.row_error is not None:
        out["row_error"] = ev.row_error[~np.isnan(ev.row_error)].tolist()
    if ev.leaks and inp.model.n_trees == 1:
        out["row_ratio"] = ev.leaks[0].row_ratios().tolist()
    bars = {}
    if ev.score is not None:
        bars["reconstruction vs your rows"] = ev.score.error
        strip = audit.attack("strip-random-states")
        if strip is not None and strip.figures.get("error") is not None:
            bars["without random states"] = strip.figures["error"]
        bars["random guesses"] = ev.score.baseline_error
    if ev.leak_test is not None:
        bars["reconstruction vs population samples"] = ev.leak_test.mean
    if bars:
        out["error_bars"] = bars
    return out


def model_facts(inp: AuditInput) -> dict[str, Any]:
    """What the model is, for the report's header: its reader's description."""
    model = inp.model
    about = model.described()
    return {"path": inp.path, "source": model.source or "treeleaks JSON", "kind": about.kind,
            "task": about.task, "framework": about.framework, "estimator": about.estimator,
            "n_trees": model.n_trees, "n_features": model.n_features,
            "feature_names": list(model.feature_names),
            "classes": [str(c) for c in model.classes], "label": model.label_name,
            "max_depth": max((t.depth for t in model.trees), default=0)}


def exposed_facts(model: ReleasedModel) -> dict[str, Any]:
    """What anyone holding the file reads off it (as `treeleaks inspect` shows), from its
    reader's description: N and the class balance, the per-tree draws, the noise, each
    stored field (``description``, whole)."""
    about = model.described()
    n_rows: Any = about.n_rows if about.n_rows_given_away else None
    if about.n_rows_bounds is not None:  # a DP forest's: stated, or estimated in bounds
        low, high = about.n_rows_bounds
        n_rows = {"stated": None if about.n_rows_estimated else about.n_rows,
                  "estimate": about.n_rows if about.n_rows_estimated else None,
                  "low": low, "high": high}
    return {
        "n_rows": n_rows,
        "class_balance": None if about.class_balance is None else dict(about.class_balance),
        "class_balance_estimated": about.class_balance_estimated,
        "bootstrap": about.bootstrap,
        "multiplicities_exposed": about.draws_exposed,
        "noise": None if model.noise is None else {
            "kind": model.noise.kind, "epsilon": model.noise.epsilon,
            "scale": model.noise.scale},
        "counts_released": not about.stripped and model.counts_released,
        "description": about.to_dict(),
    }


def assumptions(inp: AuditInput) -> dict[str, Any]:
    """What the adversary was assumed to know, and the budget (the whole audit's)."""
    return {
        "model_file": "the whole file, as released (every tree, split and leaf count)",
        "schema": "given (--schema)" if inp.schema is not None else
        "inferred from the model's splits (or the domains its file records)",
        "n_rows": "read off the model when it gives it away (see what the file exposes); "
        "a DP model's N as its file states it, else inferred from the noisy counts",
        "side_knowledge": "none: no known rows or columns",
        "custodian_data": "your training rows (--data) are used only to score the attacks "
        "and never leave this machine" if inp.data is not None else "not given",
        "population": "given (--population): rows of the same population not trained on"
        if inp.population is not None else "not given",
        "budget_s": inp.total_budget if math.isfinite(inp.total_budget) else None,
        "attack_budget_s": inp.attack_budget,
    }
