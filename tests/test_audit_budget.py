"""One budget for the whole audit (issue 41, item 5): the rule that shares it among the
attacks, an audit that keeps it, the report that states it, and bad values refused."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from typer.testing import CliRunner

from treeleaks import from_sklearn
from treeleaks.cli import app
from treeleaks.cli.audit import _attack_line
from treeleaks.io import save_model
from treeleaks.report import collect
from treeleaks.report.audit_steps import STEPS, AuditStep, StepInputs, markdown_table
from treeleaks.report.budget import (
    ATTACKS_SHARE,
    MIN_SECONDS,
    RULE,
    AuditClock,
    share,
    weight,
)
from treeleaks.report.collect import run_audit
from treeleaks.report.evidence import AuditInput, engine_seconds
from treeleaks.report.findings import AttackRun, RunStatus
from treeleaks.report.json_report import to_json, validate

from conftest import binary_frame, one_line_error

DOCS = Path(__file__).resolve().parents[1] / "docs"
GRACE = 20.0  # seconds an audit may overrun its budget: an attack's stop and the report
runner = CliRunner()


def test_each_attack_gets_its_weight_over_the_weights_still_to_run() -> None:
    waiting = ["single-out", "leak", "worst-case", "prune", "strip-random-states"]
    assert weight("reconstruct") == 4 and weight("leak") == 1
    assert share(110.0, "reconstruct", waiting) == pytest.approx(110 * 4 / 11)
    assert share(110.0, "worst-case", ["prune", "strip-random-states"]) == \
        pytest.approx(110 * 2 / 5)
    assert share(10.0, "prune", []) == 10.0  # the last step gets all that is left
    assert share(110.0, "reconstruct", waiting, cap=5.0) == 5.0  # --attack-budget
    assert share(math.inf, "leak", waiting, cap=7.0) == 7.0  # per attack only (a sweep)


def test_the_weights_are_written_once_on_the_steps_and_the_rule_and_help_follow() -> None:
    assert {s.name: s.weight for s in STEPS} == {
        "reconstruct": 4, "single-out": 1, "leak": 1, "worst-case": 2, "leak-test": 1,
        "prune": 1, "strip-random-states": 2}
    assert all(weight(s.name) == s.weight for s in STEPS)
    said = ("(reconstruction 4, worst case 2, the attack without the random states 2, "
            "{} 1)")
    assert said.format("every other step") in RULE
    shown = runner.invoke(app, ["audit", "--help"], terminal_width=400).output
    assert said.format("the others") in " ".join(shown.replace("│", " ").split())
    assert "| `reconstruct` | Reconstruction of the training set | 4 |" in markdown_table()
    assert "<!-- treeleaks-audit-steps -->" in (DOCS / "audit.md").read_text()


def test_the_audit_lists_every_step_in_order() -> None:
    X, y = binary_frame(40, 4, seed=2)
    tree = from_sklearn(RandomForestClassifier(n_estimators=1, bootstrap=False,
                                               random_state=0).fit(X, y))
    audit = run_audit(AuditInput(tree, "tree", total_budget=30.0))
    assert [a.name for a in audit.attacks] == [s.name for s in STEPS]
    assert audit.attack("reconstruct").status == "does not apply"  # a single tree
    assert audit.attack("leak").status == "complete"


class CountTrees(AuditStep):
    """A new step, as docs/layout.md describes one: a subclass and a line in STEPS."""

    name = "count-trees"
    title = "Trees counted"
    rule_words = "the tree count"

    def applies(self, inputs: StepInputs) -> str:
        return "" if inputs.audit.model.n_trees > 1 else "needs a forest"

    def run(self, inputs: StepInputs, seconds: float) -> AttackRun:
        return AttackRun(self.name, self.title, RunStatus.COMPLETE,
                         figures={"n_trees": inputs.audit.model.n_trees, "seconds": seconds})


def test_a_new_step_is_one_object_and_one_registry_line(monkeypatch) -> None:
    monkeypatch.setattr(collect, "STEPS", (*STEPS, CountTrees()))
    X, y = binary_frame(40, 4, seed=2)
    forest = from_sklearn(RandomForestClassifier(n_estimators=3, bootstrap=False,
                                                 random_state=0).fit(X, y))
    audit = run_audit(AuditInput(forest, "forest", total_budget=30.0))
    run = audit.attack("count-trees")
    assert [a.name for a in audit.attacks][-1] == "count-trees"
    assert run.status == "complete" and run.figures["n_trees"] == 3
    assert 0 < run.budget_s == run.figures["seconds"] <= 30.0 * ATTACKS_SHARE
    tree = from_sklearn(RandomForestClassifier(n_estimators=1, bootstrap=False,
                                               random_state=0).fit(X, y))
    alone = run_audit(AuditInput(tree, "tree", total_budget=30.0)).attack("count-trees")
    assert alone.status == "does not apply" and alone.why == "needs a forest"


def test_the_reconstruction_gets_the_largest_share() -> None:
    steps = ["reconstruct", "single-out", "leak", "worst-case", "prune",
             "strip-random-states"]
    shares = {n: share(100.0, n, [m for m in steps if m != n]) for n in steps}
    assert max(shares, key=shares.get) == "reconstruct"


def test_time_an_attack_leaves_passes_to_the_next_and_none_starts_past_the_end() -> None:
    clock = AuditClock(100.0)
    first = clock.share("reconstruct", ["leak"])
    assert first == pytest.approx(100 * ATTACKS_SHARE * 4 / 5, rel=0.01)
    clock.start -= 10.0  # the reconstruction used 10 s of its 76
    assert clock.share("leak", []) == pytest.approx(100 * ATTACKS_SHARE - 10, rel=0.01)
    clock.start -= 100.0
    assert clock.share("leak", []) is None  # the audit's budget ran out
    assert AuditClock(1.0, attack_budget=0.01).share("leak", []) == MIN_SECONDS


def test_scoring_against_the_data_comes_out_of_the_reconstructions_share() -> None:
    assert engine_seconds(20.0, None) == 20.0  # nothing to score
    assert engine_seconds(20.0, 1000) == pytest.approx(14.0)  # ~6 s to score 1,000 rows
    assert engine_seconds(20.0, 5000) == 10.0  # at most half the share
    assert engine_seconds(math.inf, 1000) == math.inf


def test_an_attack_the_budget_left_no_time_for_makes_the_audit_partial() -> None:
    X, y = binary_frame(60, 4, seed=1)
    model = from_sklearn(RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y))
    audit = run_audit(AuditInput(model, "model", total_budget=MIN_SECONDS / 2))
    skipped = [a for a in audit.attacks if "budget ran out" in a.why]
    assert skipped and all(a.status == "not run" for a in skipped) and audit.partial
    assert all(a.words.startswith("not run (the audit's budget ran out") for a in skipped)
    validate(json.loads(to_json(audit)))


@pytest.fixture(scope="module")
def bootstrap_forest() -> tuple[RandomForestClassifier, pd.DataFrame]:
    X, y = binary_frame(150, 6, seed=3)
    forest = RandomForestClassifier(n_estimators=20, random_state=0).fit(X, y)
    return forest, X.assign(label=y)


def test_an_audit_keeps_its_budget_and_the_report_states_it(bootstrap_forest) -> None:
    forest, data = bootstrap_forest
    model = from_sklearn(forest)
    model.label_name = "label"
    audit = run_audit(AuditInput(model, "model", None, forest, data, "label", None, 6.0))
    ran = [a for a in audit.attacks if a.budget_s is not None]
    assert {a.name for a in ran} >= {"reconstruct", "worst-case", "strip-random-states"}
    assert sum(a.time_s for a in audit.attacks) <= 6.0 + GRACE
    used = 0.0
    for run in ran:  # each share ends by the attacks' part of the budget (the rule)
        assert used + run.budget_s <= 6.0 * ATTACKS_SHARE + MIN_SECONDS
        used += run.time_s
    report = json.loads(to_json(audit))
    assert report["budget"]["budget_s"] == 6.0 and report["budget"]["attack_budget_s"] is None
    assert "weight" in report["budget"]["rule"]
    assert 0 < report["budget"]["wall_time_s"] <= 6.0 + GRACE
    assert report["assumptions"]["budget_s"] == 6.0
    assert all(a["budget_s"] is None or a["budget_s"] > 0 for a in report["attacks"])


def test_attack_budget_caps_every_share(bootstrap_forest, tmp_path: Path) -> None:
    forest, data = bootstrap_forest
    path = save_model(forest, tmp_path / "forest.skops")
    data.to_csv(tmp_path / "train.csv", index=False)
    result = runner.invoke(app, ["audit", str(path), "--data", str(tmp_path / "train.csv"),
                                 "--label", "label", "--budget", "100", "--attack-budget", "1",
                                 "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    validate(report)
    assert report["budget"]["attack_budget_s"] == 1.0
    assert all(a["budget_s"] is None or a["budget_s"] <= 1.0 for a in report["attacks"])
    assert "Budget:" in (tmp_path / "out" / "report.html").read_text()


@pytest.mark.parametrize("option", ["--budget", "--attack-budget"])
@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf"])
def test_bad_budgets_are_one_line_errors(bootstrap_forest, tmp_path: Path, option: str,
                                         value: str) -> None:
    forest, _ = bootstrap_forest
    path = save_model(forest, tmp_path / "forest.skops")
    result = runner.invoke(app, ["audit", str(path), option, value, "--out",
                                 str(tmp_path / "out")])
    assert "must be a positive number of seconds" in one_line_error(result)
    assert not (tmp_path / "out").exists()


def test_the_progress_line_says_the_time_used_of_the_share_and_what_is_left() -> None:
    run = AttackRun("reconstruct", "Reconstruction", RunStatus.COMPLETE, time_s=12.34,
                    budget_s=40.0)
    assert _attack_line(run, 30.2) == ("Reconstruction: complete in 12.3 s of 40.0 s; 30 s "
                                       "of the budget left")
