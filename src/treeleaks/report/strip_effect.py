"""What each attack gets from a model file and from its stripped copy (``treeleaks strip``
prints it): the reconstruction, the rows singled out (by proofs or, on a stripped file, by
the adversary's guesses checked against the data) and the tries a guessing adversary needs.
The attacks are the audit's own calls (`treeleaks.report.evidence`), each within the time
limit, so the figures are the audit's. What each file gives away (N, the class balance) is
its reader's description, which ``treeleaks strip`` prints above."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from treeleaks.report import evidence
from treeleaks.report.audit_steps import regression_refusal
from treeleaks.report.collect import attempt
from treeleaks.report.evidence import AuditInput, Evidence
from treeleaks.report.findings import FAILED, AttackRun

if TYPE_CHECKING:
    import pandas as pd

    from treeleaks.ir.model import ReleasedModel


@dataclass(frozen=True)
class LeakRow:
    """One attack's result on the original file and on the stripped one, as text."""

    attack: str
    original: str
    stripped: str


def leak_before_after(original: ReleasedModel, stripped: ReleasedModel,
                      data: pd.DataFrame | None, label: str | None, time_limit: float
                      ) -> list[LeakRow]:
    """Run the attacks on both models (``data``: the training rows with their ``label``
    column, to check the rows singled out and score the reconstruction)."""
    before = _measure(original, data, label, time_limit)
    after = _measure(stripped, data, label, time_limit)
    return [LeakRow(name, before[name], after[name]) for name in before]


def _measure(model: ReleasedModel, data: pd.DataFrame | None, label: str | None,
             time_limit: float) -> dict[str, str]:
    if data is not None and label not in model.feature_names:
        model.label_name = label  # predicates and rows read "<label column> = <class>"
    inp = AuditInput(model, "", data=data, label=label, total_budget=time_limit)
    ev = Evidence()
    singling = attempt("single-out", "", lambda: evidence.singling_out(inp, time_limit, ev)
                       if model.counts_released else evidence.guessing(inp, ev))
    return {
        f"Reconstruction ({time_limit:g} s)": _reconstruction(inp, time_limit, ev),
        "Rows singled out": _singled(singling, data),
        "Tries to single out without counts": _tries(singling),
    }


def _reconstruction(inp: AuditInput, seconds: float, ev: Evidence) -> str:
    model = inp.model
    if not model.counts_released:
        return ("not possible: the counts were removed"
                if model.described().counts_removed_by_publisher else
                "not possible: the file keeps no counts (its framework stores none)")
    refused = regression_refusal(model) if model.is_regression else ""
    if refused:
        return f"does not apply ({refused})"
    if model.n_trees == 1 and not model.bootstrap and not model.is_regression:
        return "does not apply (a single tree: singling out is its attack)"
    run = attempt("reconstruct", "", lambda: evidence.reconstruction(inp, seconds, ev, None))
    if run.status == FAILED:
        return f"failed: {run.why}"
    f = run.figures
    text = f"{f['n_rows']:,} rows, {f['status']}"
    if f.get("error") is not None:
        text += (f", {f['exact_rows']:,} rebuilt exactly, error {f['error']:.3f} vs "
                 f"random {f['baseline_error']:.3f}")
    return text + (" (partial: lower bounds)" if f.get("partial") else "")


def _singled(run: AttackRun, data: Any) -> str:
    if run.status == FAILED:
        return f"failed: {run.why}"
    f = run.figures
    if data is not None:
        right, tried = f["predicates_matching_one_row"], f["n_predicates"]
        what = ("guesses, and nothing tells which" if f.get("counts_removed")
                else "predicates")
        return (f"{f['rows_singled_out']:,} of {len(data):,} rows, by {right:,} of "
                f"{tried:,} {what} ({right / tried if tried else 0:.0%} right)")
    if f.get("counts_removed"):
        return f"none proven ({f['n_predicates']:,} guesses, unchecked without --data)"
    return (f"at least {f['rows_singled_out_at_least']:,} proven ({f['n_proven']:,} of "
            f"{f['n_predicates']:,} predicates proven)")


def _tries(run: AttackRun) -> str:
    tries = run.figures.get("mean_expected_tries_without_counts")
    return "-" if tries is None else f"{tries:.1f} expected"
