"""The audit of a synthetic-data release instead of a model: PrivBayes fitted at ε on the
custodian's table, attacked by the shadow-model singling-out attack (with anonymeter's
evaluator beside it when it is available), in the same report shape as a model's audit.

The report holds one attack run, ``synthetic_singling_out``, whose figures are the
section "Singling out from the synthetic release": the attack aimed at the study's targets
(the population's most isolated records) and at the custodian's own most isolated rows (the
worst case for this release). The risk rules are the release's own and read the worst
case, or the study's targets when only their figure lies above its baseline
(``risk_from`` says which): HIGH when its 95% interval lies above its baseline, MEDIUM
when anonymeter's risk interval lies above zero, LOW otherwise.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treeleaks.report.findings import COMPLETE, PARTIAL, AttackRun, Audit, Verdict
from treeleaks.report.risk import Rule, apply_rules
from treeleaks.runtime.vocabulary import Status
from treeleaks.synthetic import anonymeter_check
from treeleaks.synthetic.singling_out import AttackSizes, single_out_synthetic
from treeleaks.synthetic.utility import release_utility

if TYPE_CHECKING:
    import pandas as pd

    from treeleaks.runtime.progress import ProgressCallback
    from treeleaks.synthetic.singling_out import SyntheticSinglingOut

KIND = "synthetic data (PrivBayes)"
NAME = "synthetic_singling_out"
TITLE = "Singling out from the synthetic release"


@dataclass
class SyntheticInput:
    """What the custodian gives: the private table, the population it is drawn from, the
    budget PrivBayes would be fitted at, and the attack's sizes."""

    private: pd.DataFrame
    population: pd.DataFrame
    epsilon: float
    data_name: str
    population_name: str
    budget: float
    label: str | None = None
    targets: int = 10
    shadows: int = 50
    attacks: int = 100
    seed: int = 0
    releases: int = 5  # the utility's, averaged
    anonymeter_python: Path | None = None


WHICH = {"worst_case": "aimed at your own most isolated rows (the worst case)",
         "study_targets": "aimed at the population's most isolated records"}


def risk_figure(f: dict[str, Any]) -> dict[str, Any]:
    """The attack's figure the rules read, the one ``risk_from`` names."""
    return f["worst_case"] if f["risk_from"] == "worst_case" else f


def _attack_above(f: dict[str, Any]) -> bool:
    r = risk_figure(f)
    return r["ci"][0] > r["baseline"]


def _attack_says(f: dict[str, Any]) -> str:
    r = risk_figure(f)
    return (f"the shadow-model attack {WHICH[f['risk_from']]} singles out a private row in "
            f"{r['success_rate']:.1%} of releases (95% interval {r['ci'][0]:.1%} to "
            f"{r['ci'][1]:.1%}), above the {r['baseline']:.1%} a random pick among the "
            "records it attacks achieves")


def _anonymeter_above(f: dict[str, Any]) -> bool:
    return "risk" in f["anonymeter"] and f["anonymeter"]["ci"][0] > 0


RULES = (
    Rule("HIGH", "singled out from the release", _attack_above, _attack_says,
         "HIGH if the attack's 95% interval lies above its baseline: the attack aimed at "
         "your own rows (the worst case), or at the population's most isolated records "
         "when only that one does"),
    Rule("MEDIUM", "anonymeter", _anonymeter_above,
         lambda f: f"anonymeter's singling-out risk is {f['anonymeter']['risk']:.1%} (95% "
         f"interval {f['anonymeter']['ci'][0]:.1%} to {f['anonymeter']['ci'][1]:.1%}): "
         "predicates read off the release single out private rows more often than rows "
         "outside the table",
         "MEDIUM if anonymeter's singling-out risk interval lies above zero"),
)


def assess_release(figures: dict[str, Any], partial: bool) -> dict[str, Any]:
    """The release's level (see `treeleaks.report.risk.apply_rules`)."""
    r = risk_figure(figures)
    low, high = r["ci"]
    why = (f"the attack {WHICH[figures['risk_from']]}: its 95% interval ({low:.1%} to "
           f"{high:.1%}) does not lie above its baseline {r['baseline']:.1%}, and anonymeter "
           + ("finds no risk above zero" if "risk" in figures["anonymeter"] else "did not run"))
    return apply_rules(RULES, figures, partial, why)


def run_synthetic_audit(inp: SyntheticInput,
                        progress: ProgressCallback | None = None) -> Audit:
    """Attack PrivBayes releases of the private table, score their utility, run anonymeter
    when it is available, and assemble the audit."""
    start = time.monotonic()
    deadline = start + inp.budget
    utility = release_utility(inp.private, inp.population, inp.epsilon, inp.label, inp.seed,
                              inp.releases)
    result = single_out_synthetic(inp.private, inp.population, inp.epsilon,
                                  sizes=AttackSizes(n_targets=inp.targets,
                                                    n_shadows=inp.shadows,
                                                    n_attacks=inp.attacks),
                                  seed=inp.seed, deadline=deadline, progress=progress)
    anonymeter = anonymeter_check.run(inp.private, inp.population, inp.epsilon, inp.seed,
                                      inp.anonymeter_python, deadline)
    figures = {**result.summary(), "verdict": result.study.verdict, "utility": utility,
               "anonymeter": anonymeter}
    partial = result.status == Status.PARTIAL
    run = AttackRun(NAME, TITLE, PARTIAL if partial else COMPLETE,
                    "; ".join(result.notes) if partial else "",
                    time.monotonic() - start, figures, budget_s=inp.budget,
                    cut_short=partial)  # it stopped at the deadline
    return Audit(model=_release(inp, len(inp.population.columns)),
                 exposed=_exposed(inp, result), assumptions=_assumptions(inp, result),
                 attacks=[run], verdict=_headline(result), risk=assess_release(figures,
                                                                               partial))


def _release(inp: SyntheticInput, n_columns: int) -> dict[str, Any]:
    return {"path": inp.data_name, "source": "PrivBayes (treeleaks.synthetic, degree 2)",
            "kind": KIND, "n_trees": 0, "n_features": n_columns, "classes": [],
            "label": inp.label or "", "epsilon": inp.epsilon}


def _headline(result: SyntheticSinglingOut) -> dict[str, Any]:
    """The model verdict's fields: a release of |X| rows gives its size away; nothing is
    reconstructed or proven."""
    return Verdict(singled_out_measured_on_data=True, n_rows_given_away=result.n_private,
                   rows_in_data=result.n_private).as_dict()


def _exposed(inp: SyntheticInput, result: SyntheticSinglingOut) -> dict[str, Any]:
    return {"n_rows": result.n_private, "class_balance": None, "bootstrap": False,
            "multiplicities_exposed": False, "counts_released": False,
            "noise": {"kind": "PrivBayes (exponential mechanism and Laplace noise)",
                      "epsilon": inp.epsilon, "scale": None}}


def _assumptions(inp: SyntheticInput, result: SyntheticSinglingOut) -> dict[str, Any]:
    return {
        "model_file": f"one release of {result.n_private:,} synthetic rows from PrivBayes "
                      f"fitted on your table at ε = {inp.epsilon:g}; the attack is measured "
                      f"over {result.attacks:,} such releases",
        "schema": "the population's columns; a numerical column with more than 20 values in "
                  "10 quantile bins of the population",
        "n_rows": result.n_private,
        "side_knowledge": f"the population ({result.n_population:,} distinct rows) that "
                          "holds your table, to train shadow models on",
        "custodian_data": inp.data_name, "population": inp.population_name,
        "budget_s_per_attack": inp.budget, "targets": inp.targets,
        "shadow_pairs_per_target": inp.shadows, "seed": inp.seed,
    }
