"""The risk level of an audit and the rule that set it: one table of rules, each a level, a
basis and a test on the verdict's figures.

A rule's basis says what stands behind it. *Proven*: the file alone shows it (labels or
leaves stored row by row, proven rows, predicates the counts prove isolate a row, targets
every leaf reproduces, a tree that narrows its rows down). *Measured*: the custodian's
rows (``--data``) measured it (rows singled out, rows rebuilt exactly, a reconstruction
close to the rows, the leak test). *Presumed*: the file holds evidence that only the data
can confirm (singling-out candidates no proof settles, rows rebuilt from the file whose
closeness nobody has measured); a presumed rule holds only while its measurement is
missing, and says which check settles it. So an audit without the data fails safe: it is
never LOW while such evidence exists, and the data replaces each presumption with a
measurement but never lowers what the file alone proves.

Rules are checked from the most to the least severe; the first that holds sets the level
and the report quotes it with its basis. LOW when none holds; an attack cut short means the
level is a lower bound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

CLOSE_TO_BASELINE = 0.5  # MEDIUM when the error is below this share of the random baseline
DIST_G_MEDIUM = 0.5  # MEDIUM when a tree leaves less than this share of the rows' entropy
SINGLING_CHECK = ("pass your training rows (--data): the audit counts the candidates that "
                  "match exactly one of them")
CLOSENESS_CHECK = ("pass your training rows (--data): the audit measures how close the "
                   "rebuilt rows are to yours (rows rebuilt exactly, error beside random "
                   "guessing)")


class Basis(StrEnum):
    """What stands behind a rule (`Rule.basis`)."""

    PROVEN = "proven"  # the model file alone shows it
    MEASURED = "measured"  # the custodian's rows measured it
    PRESUMED = "presumed"  # evidence in the file that only the custodian's rows can settle


@dataclass(frozen=True)
class Rule:
    """``level`` when ``holds(verdict)``; ``says(verdict)`` states it with the numbers,
    ``text`` is the rule in words for the report's list, ``basis`` what stands behind it and
    ``check`` (a presumed rule's) what settles it."""

    level: str
    name: str
    holds: Callable[[dict[str, Any]], bool]
    says: Callable[[dict[str, Any]], str]
    text: str
    basis: Basis = Basis.PROVEN
    check: str = ""


def _count(v: dict[str, Any], key: str) -> int:
    return v.get(key) or 0


def _unproven_exact(v: dict[str, Any]) -> int:
    """Rows rebuilt exactly beyond the proven ones (which are rebuilt exactly too)."""
    return _count(v, "rows_reconstructed_exactly") - _count(v, "rows_proven")


def _singled_proven(v: dict[str, Any]) -> int:
    """Rows the model alone proves singled out (older verdicts: ``rows_singled_out`` when it
    was not measured on the data)."""
    if v.get("rows_singled_out_proven") is not None:
        return v["rows_singled_out_proven"]
    return 0 if v.get("singled_out_measured_on_data") else _count(v, "rows_singled_out")


def singling_candidates(v: dict[str, Any]) -> int:
    """Singling-out predicates no proof settles: the model's unproven ones, and the leaf
    guesses its counts leave open (any leaf of a bootstrap, pooled or stripped tree)."""
    return (_count(v, "singling_predicates") - _count(v, "singling_predicates_proven")
            + _count(v, "singling_guesses_open"))


def _unmeasured_rebuilt(v: dict[str, Any]) -> bool:
    """Rows rebuilt from the file whose closeness to the training rows nobody measured."""
    return _count(v, "rows_reconstructed") > 0 and v.get("error") is None


def p_value_text(p: float) -> str:
    """``p = 0.0123``, or ``p < 0.001`` for smaller ones (a normal tail that far out says
    no more)."""
    return f"p = {p:.3g}" if p >= 0.001 else "p < 0.001"


def _proven_pinned(v: dict[str, Any]) -> int:
    """Proven rows whose values the file pins (older verdicts: every proven row)."""
    pinned = v.get("rows_proven_pinned")
    return _count(v, "rows_proven") if pinned is None else pinned


def _boxes_too(v: dict[str, Any]) -> str:
    """The proven rows the file gives only as boxes, beside the pinned ones."""
    boxes = _count(v, "rows_proven") - _proven_pinned(v)
    return (f"; {boxes} more are proven only as boxes, their values not pinned" if boxes
            else "")


def _how_measured(v: dict[str, Any]) -> str:
    """Whether the singled-out rows' predicates are proven or only checked on the data."""
    if v.get("singling_predicates_proven"):
        return " (checked against your data)"
    return (f" (checked against your data; the model does not prove its predicates, and "
            f"{v.get('singling_predicates_valid')} of its {v.get('singling_predicates')} "
            "candidates match exactly one of your rows)")


def _rebuilt_says(v: dict[str, Any]) -> str:
    pinned = v.get("rows_pinned")
    of_them = f", {pinned} of them pinned within 5% of every range" if pinned else ""
    kind = "a partial dataset of " if v.get("rows_reconstructed_partial") else ""
    return (f"the file gives back {kind}{v['rows_reconstructed']} row(s) the model allows"
            f"{of_them}; such rows are not the training rows until your data measures how "
            "close they are")


RULES = (
    Rule("HIGH", "proven rows", lambda v: _proven_pinned(v) > 0,
         lambda v: f"the model file alone proves {_proven_pinned(v)} row(s) to be in the "
         "training data with their values (each exact, or within 5% of its column's range)"
         f"{_boxes_too(v)}",
         "HIGH if the model proves a training row with its values (a row proven only as a "
         "wide box is not one)"),
    Rule("HIGH", "stored row by row", lambda v: bool(v.get("fields_per_row")),
         lambda v: f"the model file stores {', '.join(v['fields_per_row'])} row by row, in "
         "training order: each training row's label (or leaf, or values) is read off it "
         "without any attack",
         "HIGH if the file stores each training row's label, leaf or values outright (R's "
         "y and where)"),
    Rule("HIGH", "singled out (proven)", lambda v: _singled_proven(v) > 0,
         lambda v: f"the model file alone proves that {_singled_proven(v)} training row(s) "
         "are each singled out by a predicate it gives away",
         "HIGH if the model proves that a predicate it gives away singles out a training row"),
    Rule("HIGH", "singled out",
         lambda v: bool(v.get("singled_out_measured_on_data"))
         and _count(v, "rows_singled_out") > 0,
         lambda v: f"{v['rows_singled_out']} training row(s) are singled out by a predicate "
         f"the model gives away{_how_measured(v)}",
         "HIGH if a predicate the model gives away singles out one of your rows (measured "
         "with --data)", Basis.MEASURED),
    Rule("HIGH", "leak test", lambda v: v.get("leak_test_leak") is True,
         lambda v: "the reconstruction is closer to the training rows than to samples of the "
         f"population ({p_value_text(v['leak_test_p_value'])})",
         "HIGH if the reconstruction is significantly closer to the training rows than to "
         "the population (leak test with --data and --population, p < 0.05)", Basis.MEASURED),
    Rule("HIGH", "singling-out candidates",
         lambda v: not v.get("singled_out_measured_on_data") and singling_candidates(v) > 0,
         lambda v: f"the model gives away {singling_candidates(v)} predicate(s) (its own "
         "candidates and the leaves its counts leave open to guessing) that may each single "
         "out a training row; no proof settles them",
         "HIGH (presumed) if the model gives away singling-out candidates that only your data "
         "can check", Basis.PRESUMED, SINGLING_CHECK),
    Rule("MEDIUM", "rows rebuilt exactly", lambda v: _unproven_exact(v) > 0,
         lambda v: f"{_unproven_exact(v)} training row(s) are rebuilt exactly without proof",
         "MEDIUM if your rows are rebuilt exactly beyond those proven (measured with --data)",
         Basis.MEASURED),
    Rule("MEDIUM", "targets given away",
         lambda v: _count(v, "targets_given_away") > _count(v, "rows_proven"),
         lambda v: f"{v['targets_given_away']} training row(s)' targets are rebuilt exactly "
         "(every leaf's rows and value reproduced), beyond those proven",
         "MEDIUM if a regressor's training targets are rebuilt exactly beyond those proven"),
    Rule("MEDIUM", "close reconstruction",
         lambda v: v.get("error") is not None and v.get("baseline_error") is not None
         and v["error"] < CLOSE_TO_BASELINE * v["baseline_error"],
         lambda v: f"the reconstruction error {v['error']:.3f} is under "
         f"{CLOSE_TO_BASELINE:.0%} of the random baseline {v['baseline_error']:.3f}",
         f"MEDIUM if the reconstruction error is under {CLOSE_TO_BASELINE:.0%} of random "
         "guessing's (measured with --data)", Basis.MEASURED),
    Rule("MEDIUM", "narrowed down",
         lambda v: v.get("dist_g") is not None and v["dist_g"] < DIST_G_MEDIUM,
         lambda v: f"a tree leaves only {v['dist_g']:.0%} of its rows' entropy (dist_g "
         f"{v['dist_g']:.3f})",
         f"MEDIUM if a tree leaves less than {DIST_G_MEDIUM:.0%} of its rows' entropy "
         "(dist_g)"),
    Rule("MEDIUM", "rows rebuilt", _unmeasured_rebuilt, _rebuilt_says,
         "MEDIUM (presumed) if rows are rebuilt from the file and your data has not measured "
         "how close they are", Basis.PRESUMED, CLOSENESS_CHECK),
)


def rule_texts(rules: tuple[Rule, ...]) -> list[str]:
    """Every rule in words, in order, with LOW last (the report's list)."""
    return [r.text for r in rules] + ["LOW otherwise"]


def apply_rules(rules: tuple[Rule, ...], figures: dict[str, Any], partial: bool,
                low_why: str) -> dict[str, Any]:
    """The level the first rule that holds sets, why, its basis (and for a presumed level
    the check that settles it), the other rules that hold too, and every rule (for the
    report); LOW with ``low_why`` when none holds. A partial run's level below HIGH is a
    lower bound."""
    holding = [rule for rule in rules if rule.holds(figures)]
    checks = list(dict.fromkeys(r.check for r in holding if r.basis == Basis.PRESUMED))
    if holding:
        first = holding[0]
        return {"level": first.level, "rule": first.name, "why": first.says(figures),
                "basis": first.basis, "presumed": first.basis == Basis.PRESUMED,
                "checks": checks, "also": [rule.says(figures) for rule in holding[1:]],
                "lower_bound": partial and first.level != "HIGH",
                "rules": rule_texts(rules)}
    return {"level": "LOW", "rule": "none", "why": low_why, "basis": None,
            "presumed": False, "checks": [], "also": [], "lower_bound": partial,
            "rules": rule_texts(rules)}


def assess(verdict: dict[str, Any], partial: bool) -> dict[str, Any]:
    """The model audit's level (see `apply_rules`)."""
    why = ("no training row is proven, rebuilt or singled out, no singling-out candidate "
           "is left unchecked, and no figure is close to the training rows")
    if partial:
        why += ("; some attacks were cut short, stopped without a complete answer or were not "
                "run, so this is a lower bound on the risk")
    return apply_rules(RULES, verdict, partial, why)
