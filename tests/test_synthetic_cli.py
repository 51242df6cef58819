"""``treeleaks synthetic`` on the command line: the JSON and the plot, and bad input as one
line on stderr with exit code 2."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from treeleaks.cli import app
from treeleaks.synthetic import anonymeter_check

from conftest import one_line_error, outlier_population

runner = CliRunner()
SMALL = ["--targets", "3", "--shadows", "4", "--attacks", "6", "--seed", "1"]
# The python of an environment with anonymeter (it pins numpy<1.27, so never treeleaks' own):
# the tests that run it are skipped without it.
ANONYMETER_PYTHON = os.environ.get("TREELEAKS_ANONYMETER_PYTHON")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("synthetic")
    pop = outlier_population(n=100, outliers=4)
    pop["flag"] = (pop["a0"] < 2).astype(int)
    pop.to_csv(folder / "population.csv", index=False)
    pop.sample(20, random_state=0).to_csv(folder / "private.csv", index=False)
    pop.iloc[:20].drop(columns="rare").to_csv(folder / "narrow.csv", index=False)
    return {"population": folder / "population.csv", "private": folder / "private.csv",
            "narrow": folder / "narrow.csv", "folder": folder}


def invoke(files: dict[str, Path], *extra: str, data: str = "private") -> Result:
    return runner.invoke(app, ["synthetic", "--data", str(files[data]), "--population",
                               str(files["population"]), *SMALL, *extra])


def test_the_json_and_the_plot_are_written(files: dict[str, Path],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(anonymeter_check, "available_in_process", lambda: False)
    out, png = files["folder"] / "out.json", files["folder"] / "out.png"
    result = invoke(files, "--epsilon", "10", "--json", str(out), "--plot", str(png),
                    "--label", "flag", "--releases", "2")
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    low, high = report["ci"]
    assert low <= report["success_rate"] <= high
    assert report["baseline"] == pytest.approx(20 / report["n_population"])
    assert (report["epsilon"], report["n_private"], report["status"]) == (10.0, 20, "done")
    assert report["attacks"] == 6 and len(report["targets"]) == 3
    assert report["attack"] == "black-box"
    assert sum(t["picked"] for t in report["targets"]) == 6
    worst = report["worst_case"]
    assert report["risk_from"] in {"worst_case", "study_targets"} and worst["attacks"] == 6
    assert sum(t["picked"] for t in worst["targets"]) == 6
    assert any(t["in_private"] for t in worst["targets"])
    assert "Success, your rows" in result.stdout and "(from the worst case" in result.stdout
    assert report["anonymeter"] == {"skipped": anonymeter_check.HOW_TO}
    assert result.stderr.strip() == f"note: {anonymeter_check.HOW_TO}"
    utility = report["utility"]
    assert set(utility["js_distance"]) == {*(f"a{j}" for j in range(6)), "rare", "flag"}
    assert 0 <= utility["js_distance_mean"] <= 1
    assert utility["auc_test_rows"] == report["n_population"] - 20
    assert utility["releases"] == 2 and "auc_synthetic_sd" in utility
    assert "Utility of 2 releases" in result.stdout
    assert png.read_bytes().startswith(b"\x89PNG")
    assert "Success, study targets" in result.stdout


def test_the_white_box_attack_runs(files: dict[str, Path]) -> None:
    out = files["folder"] / "white.json"
    result = invoke(files, "--epsilon", "10", "--white-box", "--json", str(out))
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["attack"] == "white-box" and report["attacks"] == 6
    assert "white box" in result.stdout


@pytest.mark.parametrize(("extra", "data", "says"), [
    (["--epsilon", "0"], "private", "--epsilon must be a positive finite number"),
    (["--epsilon", "nan"], "private", "--epsilon must be a positive finite number"),
    (["--epsilon", "1"], "narrow", "must have the same columns"),
    (["--epsilon", "1", "--budget", "0"], "private", "positive number of seconds"),
    (["--epsilon", "1", "--label", "a0"], "private", "'a0' must be a column with two values"),
])
def test_bad_input_is_one_line(files: dict[str, Path], extra: list[str], data: str,
                               says: str) -> None:
    out = files["folder"] / "bad.json"
    line = one_line_error(invoke(files, *extra, "--json", str(out), data=data))
    assert says in line
    assert not out.exists()


def test_an_interpreter_without_anonymeter_is_refused(files: dict[str, Path]) -> None:
    out = files["folder"] / "no_anonymeter.json"
    if anonymeter_check.available_in_process():
        pytest.skip("anonymeter is importable in treeleaks' own environment")
    line = one_line_error(invoke(files, "--epsilon", "1", "--json", str(out),
                                 "--anonymeter-python", sys.executable))
    assert "cannot import anonymeter" in line
    missing = files["folder"] / "no" / "python"
    line = one_line_error(invoke(files, "--epsilon", "1", "--json", str(out),
                                 "--anonymeter-python", str(missing)))
    assert "cannot be run" in line
    assert not out.exists()


@pytest.mark.skipif(ANONYMETER_PYTHON is None,
                    reason="set TREELEAKS_ANONYMETER_PYTHON to a python with anonymeter")
def test_anonymeter_runs_in_its_own_interpreter(files: dict[str, Path]) -> None:
    out = files["folder"] / "anonymeter.json"
    result = invoke(files, "--epsilon", "10", "--json", str(out),
                    "--anonymeter-python", str(ANONYMETER_PYTHON))
    assert result.exit_code == 0, result.output
    figures = json.loads(out.read_text())["anonymeter"]
    assert figures["interpreter"] == ANONYMETER_PYTHON
    assert figures["n_attacks"] == anonymeter_check.N_ATTACKS
    assert 0 <= figures["ci"][0] <= figures["risk"] <= figures["ci"][1] <= 1
    assert 0 < figures["n_success"] <= figures["n_attacks"]
    assert 0 <= figures["n_baseline"] <= figures["n_attacks"]
    assert figures["control_rate"] is not None
    assert "singling-out risk" in result.stdout
