"""The risk level of an audit and the rule that set it.

Rules are checked from the most to the least severe; the first that holds sets the level
and the report quotes it. HIGH: the file alone exposes particular training rows beyond
doubt (proven rows, rows singled out, a reconstruction significantly closer to the training
rows than to the population). MEDIUM: rows come back exactly without proof, the
reconstruction is much closer than chance, or a tree leaves less than half of its rows'
entropy. LOW: none of these; the training-set size and class balance may still be given
away, and an attack cut short means the level is a lower bound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CLOSE_TO_BASELINE = 0.5  # MEDIUM when the error is below this share of the random baseline
DIST_G_MEDIUM = 0.5  # MEDIUM when a tree leaves less than this share of the rows' entropy
WIDE = 0.5  # below this share of numerical values pinned within 5%, proven rows are intervals


@dataclass(frozen=True)
class Rule:
    """``level`` when ``holds(verdict)``; ``says(verdict)`` states it with the numbers."""

    level: str
    name: str
    holds: Callable[[dict[str, Any]], bool]
    says: Callable[[dict[str, Any]], str]
    text: str  # the rule in words, for the report's list of rules


def _unproven_exact(v: dict[str, Any]) -> int:
    """Rows rebuilt exactly beyond the proven ones (which are rebuilt exactly too)."""
    return (v.get("rows_reconstructed_exactly") or 0) - (v.get("rows_proven") or 0)


def _positive(key: str) -> Callable[[dict[str, Any]], bool]:
    return lambda v: (v.get(key) or 0) > 0


def p_value_text(p: float) -> str:
    """``p = 0.0123``, or ``p < 0.001`` for smaller ones (a normal tail that far out says
    no more)."""
    return f"p = {p:.3g}" if p >= 0.001 else "p < 0.001"


def _proven_values(v: dict[str, Any]) -> str:
    """What a proven row's values are: themselves, or intervals when the measured values are
    mostly left wide (raw columns, leaves of several rows)."""
    pinned = v.get("values_pinned_within_5pct")
    if pinned is None or pinned >= WIDE:
        return " with their values"
    return (f", each within the intervals shown ({pinned:.0%} of their numerical values "
            "pinned within 5% of the range)")


def _how_singled(v: dict[str, Any]) -> str:
    """On what grounds rows count as singled out: proofs, or a check against the data."""
    if not v.get("singled_out_measured_on_data"):
        return " (proven from the model alone)"
    if v.get("singling_predicates_proven"):
        return " (checked against your data)"
    return (f" (checked against your data; the model does not prove its predicates, and "
            f"{v.get('singling_predicates_valid')} of its {v.get('singling_predicates')} "
            "candidates match exactly one of your rows)")


RULES = (
    Rule("HIGH", "proven rows", _positive("rows_proven"),
         lambda v: f"the model file alone proves {v['rows_proven']} row(s) to be in the "
         f"training data{_proven_values(v)}",
         "HIGH if the model proves at least one training row"),
    Rule("HIGH", "singled out", _positive("rows_singled_out"),
         lambda v: f"{v['rows_singled_out']} training row(s) are singled out by a predicate "
         f"the model gives away{_how_singled(v)}",
         "HIGH if a predicate the model gives away singles out a training row"),
    Rule("HIGH", "leak test", lambda v: v.get("leak_test_leak") is True,
         lambda v: "the reconstruction is closer to the training rows than to samples of the "
         f"population ({p_value_text(v['leak_test_p_value'])})",
         "HIGH if the reconstruction is significantly closer to the training rows than to "
         "the population (leak test, p < 0.05)"),
    Rule("MEDIUM", "rows rebuilt exactly", lambda v: _unproven_exact(v) > 0,
         lambda v: f"{_unproven_exact(v)} training row(s) are rebuilt exactly without proof",
         "MEDIUM if training rows are rebuilt exactly beyond those proven"),
    Rule("MEDIUM", "targets given away",
         lambda v: (v.get("targets_given_away") or 0) > (v.get("rows_proven") or 0),
         lambda v: f"{v['targets_given_away']} training row(s)' targets are rebuilt exactly "
         "(every leaf's rows and value reproduced), beyond those proven",
         "MEDIUM if a regressor's training targets are rebuilt exactly beyond those proven"),
    Rule("MEDIUM", "close reconstruction",
         lambda v: v.get("error") is not None and v.get("baseline_error") is not None
         and v["error"] < CLOSE_TO_BASELINE * v["baseline_error"],
         lambda v: f"the reconstruction error {v['error']:.3f} is under "
         f"{CLOSE_TO_BASELINE:.0%} of the random baseline {v['baseline_error']:.3f}",
         f"MEDIUM if the reconstruction error is under {CLOSE_TO_BASELINE:.0%} of random "
         "guessing's"),
    Rule("MEDIUM", "narrowed down",
         lambda v: v.get("dist_g") is not None and v["dist_g"] < DIST_G_MEDIUM,
         lambda v: f"a tree leaves only {v['dist_g']:.0%} of its rows' entropy (dist_g "
         f"{v['dist_g']:.3f})",
         f"MEDIUM if a tree leaves less than {DIST_G_MEDIUM:.0%} of its rows' entropy "
         "(dist_g)"),
)


def apply_rules(rules: tuple[Rule, ...], figures: dict[str, Any], partial: bool,
                low_why: str) -> dict[str, Any]:
    """The level the first rule that holds sets, why, the other rules that hold too, and
    every rule (for the report); LOW with ``low_why`` when none holds. A partial run's
    level below HIGH is a lower bound."""
    texts = [r.text for r in rules] + ["LOW otherwise"]
    holding = [rule for rule in rules if rule.holds(figures)]
    if holding:
        first = holding[0]
        return {"level": first.level, "rule": first.name, "why": first.says(figures),
                "also": [rule.says(figures) for rule in holding[1:]],
                "lower_bound": partial and first.level != "HIGH", "rules": texts}
    return {"level": "LOW", "rule": "none", "why": low_why, "also": [],
            "lower_bound": partial, "rules": texts}


def assess(verdict: dict[str, Any], partial: bool) -> dict[str, Any]:
    """The model audit's level (see `apply_rules`)."""
    why = ("no training row is proven, rebuilt exactly or singled out, and no figure is "
           "close to the training rows")
    if partial:
        why += "; some attacks were cut short, so this is a lower bound on the risk"
    return apply_rules(RULES, verdict, partial, why)
