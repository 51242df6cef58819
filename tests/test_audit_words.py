"""Words that say what happened (issue 48, item 4): an attack that does not apply says so
and why, one that raised says it failed and why, one that used its time is "cut short at
S s of T s" from the measured times, and one that stopped before its time without a
complete answer says that, never "out of budget"."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier
from typer.testing import CliRunner

from treeleaks import from_sklearn
from treeleaks.cli import app
from treeleaks.io import save_model
from treeleaks.report import evidence
from treeleaks.report.collect import run_audit
from treeleaks.report.evidence import AuditInput, engine_run
from treeleaks.report.html_report import render
from treeleaks.report.json_report import to_json, validate
from treeleaks.result import Reconstruction
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.runtime.vocabulary import Status

from conftest import binary_frame

runner = CliRunner()


@pytest.fixture(scope="module")
def forest():
    X, y = binary_frame(60, 5, seed=1)
    return from_sklearn(RandomForestClassifier(n_estimators=3, max_depth=3, bootstrap=False,
                                               random_state=0).fit(X, y))


def test_a_single_trees_audit_says_the_reconstruction_does_not_apply_and_why(
        tmp_path: Path) -> None:
    X, y = binary_frame(40, 4, seed=0)
    path = save_model(DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y),
                      tmp_path / "tree.skops")
    result = runner.invoke(app, ["audit", str(path), "--budget", "10", "--out",
                                 str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.replace("│", " ").split())
    assert "Reconstruction of the training set does not apply (a single tree: the " \
           "probabilistic reconstruction and singling out are its attacks)" in text
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    run = next(a for a in report["attacks"] if a["name"] == "reconstruct")
    assert run["status"] == "does not apply" and run["why"].startswith("a single tree")
    assert not report["partial"]  # an attack that does not apply takes nothing away
    page = (tmp_path / "a" / "report.html").read_text()
    assert '<td class="status-does-not-apply">does not apply</td>' in page


def test_an_attack_that_raises_is_failed_with_why_and_a_refusal_does_not_apply(
        forest, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object) -> None:
        raise RuntimeError("the solver fell over")

    def refuses(*args: object) -> None:
        raise UnsupportedModelError("this attack reads classifiers")

    monkeypatch.setattr(evidence, "singling_out", boom)
    monkeypatch.setattr(evidence, "entropy_leak", refuses)
    audit = run_audit(AuditInput(forest, "forest", total_budget=20.0))
    failed, refused = audit.attack("single-out"), audit.attack("leak")
    assert failed.words == ("failed (unexpected RuntimeError (a bug, please report it): the "
                            "solver fell over)")
    assert refused.words == "does not apply (this attack reads classifiers)"
    validate(json.loads(to_json(audit)))
    assert "<td class=\"status-failed\">failed</td>" in render(audit)


def test_an_attack_given_too_little_time_is_cut_short_at_what_it_used() -> None:
    X, y = binary_frame(200, 8, seed=2)
    many = from_sklearn(RandomForestClassifier(n_estimators=300, max_depth=5, bootstrap=False,
                                               random_state=0).fit(X, y))
    audit = run_audit(AuditInput(many, "many", total_budget=120.0, attack_budget=1.0))
    leak = audit.attack("leak")  # measured tree by tree until its time is up
    used, share = map(float, re.fullmatch(r"cut short at (\S+) s of (\S+) s", leak.outcome)
                      .groups())
    assert leak.status == "partial" and leak.cut_short and share == 1.0
    assert 0.9 * share <= used <= share + 1.0  # S close to T: it stops between two trees
    assert leak.words.startswith(f"{leak.outcome} (measured ")
    assert audit.partial
    page = render(audit)
    assert "<strong>Cut short at their budget:</strong>" in page
    assert f"{leak.title} ({leak.outcome})" in page
    assert "Out of budget" not in page


@pytest.mark.parametrize(("used", "words"), [
    (8.7, "stopped without a complete answer after 8.7 s (no complete reconstruction: too "
          "many cells to list without the draws; the figures are lower bounds)"),
    (59.0, "cut short at 59.0 s of 60.0 s (no complete reconstruction: too many cells to "
           "list without the draws; the figures are lower bounds)"),
])
def test_a_reconstruction_is_cut_short_only_when_it_used_its_time(forest, used: float,
                                                                    words: str) -> None:
    """The audit said "out of budget" of a run that stopped at 8.7 s of its 60 s because
    its cells could not be listed: now it says that."""
    recon = Reconstruction.empty(forest, status=Status.UNKNOWN, time_s=used,
                                 message="too many cells to list without the draws")
    run = engine_run("strip-random-states", "title", recon, 60.0, {})
    run.budget_s = 60.0
    assert run.status == "partial" and run.words == words


def test_the_budget_running_out_before_an_attack_is_not_run_not_partial(forest) -> None:
    audit = run_audit(AuditInput(forest, "forest", total_budget=0.05))
    skipped = [a for a in audit.attacks if a.status == "not run"]
    assert skipped and all("budget ran out before this attack" in a.why for a in skipped)
    assert audit.partial and json.loads(to_json(audit))["partial"] is True
