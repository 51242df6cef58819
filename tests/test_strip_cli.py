"""``treeleaks strip`` on the command line: the file written and its summary, every other
command's one line on the stripped file, and bad input refused with exit 2, one line on
stderr and nothing written."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path
from typing import Any

import pytest
import xgboost
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier
from typer.testing import CliRunner

from treeleaks import from_sklearn
from treeleaks.cli import app
from treeleaks.defences import strip as strip_module
from treeleaks.defences import strip_child
from treeleaks.io import save_model

from conftest import one_line_error

runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("strip")
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:200, :5].set_axis([f"x{j}" for j in range(5)], axis=1)
    y = y.iloc[:200]
    X.assign(outcome=y).to_csv(folder / "train.csv", index=False)
    forest = RandomForestClassifier(5, max_depth=4, random_state=0).fit(X, y)
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    (folder / "tree.json").write_text(from_sklearn(tree).to_json())
    (folder / "rules.json").write_text(json.dumps({"format": "treeleaks.RuleList"}))
    (folder / "linear.pkl").write_bytes(pickle.dumps(LogisticRegression(max_iter=5000).fit(X, y)))
    (folder / "forest.pkl").write_bytes(pickle.dumps(forest))
    booster = xgboost.XGBClassifier(n_estimators=3, max_depth=2).fit(X.to_numpy(), y)
    booster.get_booster().save_model(folder / "xgb.json")
    return {"forest": save_model(forest, folder / "forest.skops"),
            "train": folder / "train.csv", "tree_json": folder / "tree.json",
            "rules": folder / "rules.json", "linear": folder / "linear.pkl",
            "pickle": folder / "forest.pkl", "xgb": folder / "xgb.json"}


def test_strip_writes_a_checked_copy_that_every_attack_refuses_in_one_line(
        files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "safe.skops"
    result = runner.invoke(app, ["strip", str(files["forest"]), "--out", str(out), "--data",
                                 str(files["train"]), "--label", "outcome", "--time-limit",
                                 "3"], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    assert out.is_file()
    text = " ".join(result.stdout.split())
    assert "n_node_samples" in text and "random_state" in text
    assert "identical on the 200 rows of train.csv" in text
    assert "identical on 10,000 random inputs" in text
    assert "What each attack gets (each within 3 s)" in text
    assert "not possible: the counts were removed" in text
    assert re.search(r"Rows singled out │ \d+ of 200 rows, by \d+ of \d+ predicates .* │ "
                     r"\d+ of 200 rows, by \d+ of \d+ guesses, and nothing tells which", text)
    line = one_line_error(runner.invoke(app, ["reconstruct", str(out)]))
    assert "counts were removed" in line and "random states neutralised" in line
    assert "'treeleaks single-out' on this file with --no-counts" in line
    inspected = runner.invoke(app, ["inspect", str(out)])  # reads what audit reads
    assert inspected.exit_code == 0 and "removed (it gave away" in inspected.output
    guesses = runner.invoke(app, ["single-out", str(out), "--no-counts"])
    assert guesses.exit_code == 0, guesses.output


def test_a_pickle_is_stripped_to_a_pickle_only_when_trusted(files: dict[str, Path],
                                                            tmp_path: Path) -> None:
    out = tmp_path / "safe.pkl"
    refused = one_line_error(runner.invoke(app, ["strip", str(files["pickle"]), "--out",
                                                 str(out), "--no-measure"]))
    assert "--trust-pickle" in refused and not out.exists()
    result = runner.invoke(app, ["strip", str(files["pickle"]), "--out", str(out),
                                 "--trust-pickle", "--no-measure"])
    assert result.exit_code == 0, result.output
    assert not pickle.loads(out.read_bytes()).estimators_[0].tree_.n_node_samples.any()


@pytest.mark.parametrize(("model", "named"), [
    ("tree_json", "a treeleaks JSON model"), ("rules", "a treeleaks rule list"),
    ("linear", "cannot strip a LogisticRegression")])
def test_a_kind_it_cannot_strip_is_refused_naming_it(files: dict[str, Path], tmp_path: Path,
                                                     model: str, named: str) -> None:
    out = tmp_path / f"safe{files[model].suffix}"
    line = one_line_error(runner.invoke(app, ["strip", str(files[model]), "--out", str(out),
                                              "--trust-pickle"]))
    assert named in line and not out.exists()


@pytest.mark.parametrize(("out", "says"), [
    ("input", "would overwrite the input"), ("missing/safe.skops", "folder does not exist"),
    ("safe.pkl", "keeps the input's format")])
def test_an_output_it_cannot_write_is_refused_before_the_work(
        files: dict[str, Path], tmp_path: Path, out: str, says: str) -> None:
    target = files["forest"] if out == "input" else tmp_path / out
    before = files["forest"].read_bytes()
    line = one_line_error(runner.invoke(app, ["strip", str(files["forest"]), "--out",
                                              str(target)]))
    assert says in line
    assert files["forest"].read_bytes() == before


def test_a_stripped_file_that_predicts_differently_is_not_written(
        files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def moved_threshold(estimator: Any) -> tuple[Any, list[str]]:
        stripped, removed = strip_sklearn(estimator)
        tree = stripped.estimators_[0].tree_
        state = tree.__getstate__()
        state["nodes"]["threshold"][0] += 0.5 * abs(state["nodes"]["threshold"][0]) + 1.0
        tree.__setstate__(state)
        return stripped, removed

    strip_sklearn = strip_module.strip_estimator
    monkeypatch.setattr(strip_module, "strip_estimator", moved_threshold)
    monkeypatch.setattr(strip_child, "ISOLATED", False)  # the patch lives in this process
    out = tmp_path / "safe.skops"
    line = one_line_error(runner.invoke(app, ["strip", str(files["forest"]), "--out",
                                              str(out), "--data", str(files["train"]),
                                              "--label", "outcome"]))
    assert "differs from the original's" in line and "nothing was written" in line
    assert "predict" in line and not out.exists()
    assert not list(tmp_path.iterdir())


def test_a_stripped_file_that_does_not_load_back_is_not_written(
        files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        stripped, removed = strip_xgboost(data)
        del stripped["learner"]["gradient_booster"]["model"]["trees"][0]["split_indices"]
        return stripped, removed

    strip_xgboost = strip_module.strip_xgboost
    monkeypatch.setattr(strip_module, "strip_xgboost", broken)
    monkeypatch.setattr(strip_child, "ISOLATED", False)  # the patch lives in this process
    out = tmp_path / "safe.json"
    line = one_line_error(runner.invoke(app, ["strip", str(files["xgb"]), "--out", str(out)]))
    assert "does not load back in XGBoost" in line and not out.exists()


def test_data_without_the_label_column_is_refused(files: dict[str, Path],
                                                  tmp_path: Path) -> None:
    line = one_line_error(runner.invoke(app, [
        "strip", str(files["forest"]), "--out", str(tmp_path / "safe.skops"), "--data",
        str(files["train"]), "--label", "missing"]))
    assert "'missing' is not a column" in line
    assert not (tmp_path / "safe.skops").exists()


def test_simplest_thresholds_print_the_accuracy_before_and_after(
        files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "safe.skops"
    result = runner.invoke(app, ["strip", str(files["forest"]), "--out", str(out), "--data",
                                 str(files["train"]), "--label", "outcome", "--thresholds",
                                 "simplest", "--no-measure"], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "thresholds moved to the shortest decimal" in text
    assert re.search(r"accuracy on train.csv │ (\d\.\d{4}) → \1", text)


@pytest.mark.parametrize(("model", "option", "says"), [
    ("forest", ["--round-values", "3"], "rounds a regressor's leaf values"),
    ("forest", ["--thresholds", "shortest"], "the one choice is simplest"),
    ("xgb", ["--thresholds", "simplest"], "a XGBoost file is stripped with its thresholds")])
def test_an_option_the_model_cannot_take_is_refused_in_one_line(
        files: dict[str, Path], tmp_path: Path, model: str, option: list[str],
        says: str) -> None:
    out = tmp_path / f"safe{files[model].suffix}"
    line = one_line_error(runner.invoke(app, ["strip", str(files[model]), "--out", str(out),
                                              *option]))
    assert says in line and not out.exists()


def test_the_audit_reads_a_stripped_file_and_its_remedies_name_the_command(
        files: dict[str, Path], tmp_path: Path) -> None:
    stripped = tmp_path / "forest.stripped.skops"
    assert runner.invoke(app, ["strip", str(files["forest"]), "--out", str(stripped),
                               "--no-measure"]).exit_code == 0
    before = runner.invoke(app, ["audit", str(files["forest"]), "--out", str(tmp_path / "a"),
                                 "--budget", "2"])
    assert before.exit_code == 0, before.output
    titles = [d["name"] for d in json.loads((tmp_path / "a" / "report.json").read_text())[
        "defences"]]
    command = f"treeleaks strip {files['forest'].name} --out forest.stripped.skops"
    assert any(t.endswith(command) and "leaf counts" in t for t in titles)
    after = runner.invoke(app, ["audit", str(stripped), "--out", str(tmp_path / "b"),
                                "--data", str(files["train"]), "--label", "outcome",
                                "--budget", "2"], env={"COLUMNS": "240"})
    assert after.exit_code == 0, after.output
    assert "Counts │ removed (a stripped file)" in " ".join(after.stdout.split())
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    attacks = {a["name"]: a for a in report["attacks"]}
    assert "counts were removed" in attacks["reconstruct"]["why"]
    guesses = attacks["single-out"]["figures"]
    assert guesses["counts_removed"] and guesses["n_proven"] == 0
    assert guesses["rows_singled_out"] == report["verdict"]["rows_singled_out"]
    assert report["exposed"]["counts_released"] is False
    assert report["verdict"]["n_rows_given_away"] is None
    assert not any("strip" in d["name"] for d in report["defences"])
    assert "removed (a stripped file)" in (tmp_path / "b" / "report.html").read_text()
