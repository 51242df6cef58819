"""``treeleaks audit --synthetic``: the section "Singling out from the synthetic release" with
its real figures, a report.json valid against the schema, and bad input as one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from treeleaks.cli import app
from treeleaks.report.json_report import to_json
from treeleaks.report.synthetic_audit import SyntheticInput, run_synthetic_audit
from treeleaks.report.synthetic_html import render_release
from treeleaks.synthetic import anonymeter_check
from treeleaks.synthetic.encoding import Encoding, found_in
from treeleaks.synthetic.targets import most_vulnerable
from treeleaks.synthetic.utility import release_utility

from conftest import one_line_error, outlier_population

runner = CliRunner()
ANONYMETER_PYTHON = os.environ.get("TREELEAKS_ANONYMETER_PYTHON")
POPULATION = outlier_population(n=100, outliers=4)  # 104 distinct rows, 4 isolated last


def targets(n: int = 4) -> np.ndarray:
    """Which population rows the attack targets: its n most isolated."""
    encoding = Encoding.fit(POPULATION)
    codes = encoding.codes(POPULATION, "population")
    unique = np.unique(codes, axis=0)
    return found_in(codes, unique[most_vulnerable(unique, encoding.sizes, n)])


def audit(private: pd.DataFrame, epsilon: float = 1e6, n_targets: int = 4):
    inp = SyntheticInput(private, POPULATION, epsilon, "private.csv", "population.csv", 60.0,
                         targets=n_targets, shadows=5, attacks=20)
    return run_synthetic_audit(inp)


def test_a_table_holding_the_isolated_records_is_high_risk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(anonymeter_check, "available_in_process", lambda: False)
    # The 4 targets are all private: every pick singles one out.
    attacked = targets()
    private = pd.concat([POPULATION[~attacked].iloc[:16], POPULATION[attacked]])
    result = audit(private)
    report = json.loads(to_json(result))  # valid against schema.json
    (run,) = report["attacks"]
    f = run["figures"]
    assert run["name"] == "synthetic_singling_out" and run["status"] == "complete"
    assert (f["successes"], f["attacks"], f["success_rate"]) == (20, 20, 1.0)
    assert f["baseline"] == pytest.approx(20 / 104)
    assert f["ci"][0] == pytest.approx(0.8389, abs=1e-4) and f["ci"][1] == 1.0
    assert f["verdict"] == "above the baseline"
    assert all(t["in_private"] for t in f["targets"])
    assert report["risk"]["level"] == "HIGH"
    assert report["risk"]["rule"] == "singled out from the release"
    assert report["model"]["kind"] == "synthetic data (PrivBayes)"
    assert f["anonymeter"] == {"skipped": anonymeter_check.HOW_TO}
    assert f["utility"] == release_utility(private, POPULATION, 1e6, releases=5)
    page = render_release(result)
    assert "Singling out from the synthetic release" in page
    assert "100.0% (20 of 20 releases attacked)" in page
    assert "83.9% to 100.0%, above the baseline 19.2%" in page
    assert "19.2% (20 private of 104 population rows)" in page
    assert 'id="plot-synthetic"' in page and "data:image/png;base64," in page


def test_a_table_without_them_is_low_risk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(anonymeter_check, "available_in_process", lambda: False)
    # No target is private: no predicate the attack builds can match a private row.
    report = json.loads(to_json(audit(POPULATION[~targets()].iloc[:20], epsilon=1.0)))
    f = report["attacks"][0]["figures"]
    assert (f["successes"], f["attacks"]) == (0, 20)
    assert f["ci"][1] < f["baseline"] and f["verdict"] == "below the baseline"
    assert not any(t["in_private"] for t in f["targets"])
    assert report["risk"]["level"] == "LOW" and f["risk_from"] == "worst_case"
    assert f["worst_case"]["baseline"] == 0.25  # 1 of the 4 rows attacked is private
    assert ("aimed at your own most isolated rows (the worst case): its 95% interval"
            in report["risk"]["why"])
    assert "does not lie above its baseline 25.0%" in report["risk"]["why"]


def test_the_verdict_reads_the_worst_case_on_your_own_rows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(anonymeter_check, "available_in_process", lambda: False)
    # The study's 2 targets are outliers outside the table; a third outlier is private.
    outlier = POPULATION[~targets(2) & (POPULATION["rare"] > 0)].iloc[:1]
    private = pd.concat([outlier, POPULATION[POPULATION["rare"] == 0].iloc[:19]])
    result = audit(private, 1e4, n_targets=2)
    report = json.loads(to_json(result))
    f = report["attacks"][0]["figures"]
    assert (f["successes"], f["verdict"]) == (0, "below the baseline")
    w = f["worst_case"]
    assert w["baseline"] == 0.5 and w["ci"][0] > 0.5 and w["verdict"] == "above the baseline"
    assert [t["in_private"] for t in w["targets"]] == [True, False]
    assert f["risk_from"] == "worst_case" and report["risk"]["level"] == "HIGH"
    assert "aimed at your own most isolated rows" in report["risk"]["why"]
    page = render_release(result)
    assert "Success rate: Your own rows (the worst case" in page
    assert "the attack aimed at your own most isolated rows (the worst case)" in page
    assert "your rows&#x27;" in page  # the targets table names both sets


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("audit_synthetic")
    POPULATION.to_csv(folder / "population.csv", index=False)
    POPULATION.sample(20, random_state=0).to_csv(folder / "private.csv", index=False)
    return {"population": folder / "population.csv", "private": folder / "private.csv",
            "folder": folder}


def invoke(files: dict[str, Path], *extra: str, out: str = "audit"):
    return runner.invoke(app, ["audit", "--synthetic", "--data", str(files["private"]),
                               "--population", str(files["population"]),
                               "--out", str(files["folder"] / out), *extra])


def test_the_command_writes_both_reports(files: dict[str, Path],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(anonymeter_check, "available_in_process", lambda: False)
    result = invoke(files, "--epsilon", "10", "--budget", "3")
    assert result.exit_code == 0, result.output
    report = json.loads((files["folder"] / "audit" / "report.json").read_text())
    f = report["attacks"][0]["figures"]
    assert (f["n_private"], f["n_population"], f["epsilon"]) == (20, 104, 10.0)
    assert report["assumptions"]["budget_s_per_attack"] == 3.0
    assert report["risk"]["level"] in {"HIGH", "LOW"}  # MEDIUM needs anonymeter
    page = (files["folder"] / "audit" / "report.html").read_text()
    assert 'id="synthetic"' in page and 'id="targets-table"' in page
    assert result.stderr.strip() == f"note: {anonymeter_check.HOW_TO}"
    assert "Singled out" in result.stdout


@pytest.mark.parametrize(("extra", "says"), [
    ([], "--synthetic needs --data"),
    (["--epsilon", "-1"], "--epsilon must be a positive finite number"),
    (["--epsilon", "1", "model.json"], "drop the MODEL"),
])
def test_bad_synthetic_input_is_one_line(files: dict[str, Path], extra: list[str],
                                         says: str) -> None:
    assert says in one_line_error(invoke(files, *extra, out="bad"))
    assert not (files["folder"] / "bad" / "report.json").exists()


def test_a_model_audit_still_needs_its_model(tmp_path: Path) -> None:
    line = one_line_error(runner.invoke(app, ["audit", "--out", str(tmp_path)]))
    assert "give the MODEL file to audit, or --synthetic" in line


@pytest.mark.skipif(ANONYMETER_PYTHON is None,
                    reason="set TREELEAKS_ANONYMETER_PYTHON to a python with anonymeter")
def test_anonymeter_figures_reach_the_report(files: dict[str, Path]) -> None:
    result = invoke(files, "--epsilon", "10", "--budget", "3", "--anonymeter-python",
                    str(ANONYMETER_PYTHON), out="with_anonymeter")
    assert result.exit_code == 0, result.output
    folder = files["folder"] / "with_anonymeter"
    a = json.loads((folder / "report.json").read_text())["attacks"][0]["figures"]["anonymeter"]
    assert a["interpreter"] == ANONYMETER_PYTHON and a["n_attacks"] == 500
    assert a["ci"][0] <= a["risk"] <= a["ci"][1]
    assert "anonymeter: singling-out risk" in (folder / "report.html").read_text()
