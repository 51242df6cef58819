"""The audit's advice to strip a file states the level the stripped file audits at, measured:
the rows its guesses still single out are the rows the stripped file's own audit finds."""

from __future__ import annotations

from pathlib import Path

import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier

from treeleaks.defences.strip import strip
from treeleaks.io import load_model
from treeleaks.report.collect import run_audit
from treeleaks.report.evidence import AuditInput
from treeleaks.report.findings import Defence


def _strip_advice(defences: list[Defence]) -> Defence:
    return next(d for d in defences if "leaf counts" in d.name)


@pytest.mark.parametrize("min_samples_leaf", [1, 5])
def test_the_strip_advice_states_what_the_stripped_file_audits_at(
        tmp_path: Path, min_samples_leaf: int) -> None:
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X, y = X.iloc[:150, :6], y.iloc[:150]
    forest = RandomForestClassifier(10, min_samples_leaf=min_samples_leaf,
                                    random_state=0).fit(X, y)
    data = X.assign(y=y.to_numpy())
    original = run_audit(AuditInput(load_model(_skops(forest, tmp_path)), "f.skops",
                                    estimator=forest, data=data, label="y", total_budget=20.0))
    advice = _strip_advice(original.defences)
    said = advice.figures["guesses_single_out"]
    stripped = tmp_path / "f.stripped.skops"
    stripped.write_bytes(strip(forest, "skops").content)
    after = run_audit(AuditInput(load_model(stripped, counts_removed_ok=True),
                                 str(stripped), data=data, label="y", total_budget=20.0))
    assert after.verdict["rows_singled_out"] == said
    level = "HIGH" if said else "LOW"
    assert after.risk["level"] == level
    assert (f"single out {said} of your rows" in advice.effect if said
            else "single out none of your rows" in advice.effect)


def test_without_the_data_the_strip_advice_says_the_level_stays_presumed(
        tmp_path: Path) -> None:
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    forest = RandomForestClassifier(5, random_state=0).fit(X.iloc[:100, :5], y.iloc[:100])
    audit = run_audit(AuditInput(load_model(_skops(forest, tmp_path)), "f.skops",
                                 total_budget=10.0))
    advice = _strip_advice(audit.defences)
    assert "still audits HIGH (presumed)" in advice.effect
    assert "guesses_single_out" not in advice.figures


def _skops(estimator: object, folder: Path) -> Path:
    import skops.io

    path = folder / "f.skops"
    skops.io.dump(estimator, path)
    return path
