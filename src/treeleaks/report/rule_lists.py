"""The audit of a rule list: its probabilistic reconstruction (`treeleaks leak`), what its
counts give away, and the same verdict, risk rule and report as a tree's.

The singling-out and reconstruction attacks read trees, so they are listed as not applying,
with that reason; the per-row view needs a tree's leaves and is not offered for rule lists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from treeleaks.report import remedies
from treeleaks.report.budget import AuditClock
from treeleaks.report.collect import Interrupted, attempt
from treeleaks.report.evidence import fully_determined
from treeleaks.report.findings import COMPLETE, NOT_APPLICABLE, NOT_RUN, AttackRun, Audit, Verdict
from treeleaks.report.risk import assess

if TYPE_CHECKING:
    from treeleaks.frontends.rule_list import RuleList
    from treeleaks.ir.schema import FeatureSchema

TREES_ONLY = "this attack reads trees; a rule list is audited by its probabilistic reconstruction"


def run_rule_list_audit(rule_list: RuleList, path: str, schema: FeatureSchema | None = None,
                        budget: float = 300.0) -> Audit:
    """Audit ``rule_list`` from the file alone (``budget``: as for trees, recorded)."""
    from treeleaks.attacks.probabilistic import rule_list_reconstruction
    from treeleaks.evaluation.entropy import summarize

    clock = AuditClock(budget)
    about = rule_list.described()
    balance = None if about.class_balance is None else dict(about.class_balance)
    audit = Audit(
        model={"path": path, "source": rule_list.source or "rule list JSON",
               "kind": about.kind, "task": about.task, "framework": about.framework,
               "estimator": about.estimator, "n_trees": 0, "n_rules": len(rule_list.rules),
               "n_features": rule_list.n_features, "feature_names": rule_list.feature_names,
               "classes": [str(c) for c in rule_list.classes], "label": rule_list.label_name,
               "max_depth": 0},
        exposed={"n_rows": about.n_rows, "class_balance": balance, "bootstrap": False,
                 "multiplicities_exposed": False, "noise": None,
                 "counts_released": rule_list.has_counts, "description": about.to_dict()},
        assumptions={
            "model_file": "the whole file, as released (every rule and its counts)",
            "schema": "given (--schema)" if schema is not None else
            "inferred from the rules' conditions",
            "n_rows": "the sum of the rules' counts", "side_knowledge": "none",
            "custodian_data": "not used for rule lists", "population": "not used",
            "budget_s": budget})
    summaries = []

    def leak() -> AttackRun:
        summary = summarize(rule_list_reconstruction(rule_list, schema))
        summaries.append(summary)
        return AttackRun("leak", "Probabilistic reconstruction of the rule list", COMPLETE,
                         figures={"dist_g": summary.dist_g, "dist": summary.dist,
                                  "rows_fully_determined": fully_determined(summary),
                                  "quantiles": {str(k): v for k, v in
                                                summary.quantiles.items()}})

    try:
        audit.attacks.append(attempt("leak", "Probabilistic reconstruction", leak))
    except Interrupted:
        audit.interrupted = True
        audit.attacks.append(AttackRun("leak", "Probabilistic reconstruction", NOT_RUN,
                                       "interrupted (Ctrl-C) while it ran"))
    for name, title in (("reconstruct", "Reconstruction of the training set"),
                        ("single-out", "Predicate singling out")):
        audit.attacks.append(AttackRun(name, title, NOT_APPLICABLE, TREES_ONLY))
    figures = audit.attacks[0].figures
    exact = figures.get("rows_fully_determined")
    audit.verdict = Verdict(rows_reconstructed_exactly=exact, rows_proven=exact,
                            dist_g=figures.get("dist_g"), n_rows_given_away=rule_list.n_rows,
                            class_balance_given_away=balance).as_dict()
    audit.risk = assess(audit.verdict, audit.partial)
    audit.defences = [remedies.retrain_with_dp(None)]
    if summaries:
        audit.plots_data = {"row_ratio": summaries[0].row_ratios().tolist()}
    audit.budget = clock.record()
    return audit

