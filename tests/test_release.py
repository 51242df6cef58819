"""``treeleaks release``: the table of candidates, the file written (loaded in its framework,
predicting as the chosen candidate refitted, re-audited at the level the table states), the
plain statement when no candidate audits lower, and bad input refused in one line."""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path

import lightgbm
import numpy as np
import pandas as pd
import pytest
import skops.io
import xgboost
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from typer.testing import CliRunner

from treeleaks import from_sklearn
from treeleaks.cli import app
from treeleaks.defences.release_grid import (
    DP_FOREST,
    Candidate,
    grid,
    lightgbm_learner,
    sklearn_learner,
)
from treeleaks.io import load_model, save_model
from treeleaks.report.collect import run_audit
from treeleaks.report.evidence import AuditInput
from treeleaks.report.release_table import advice, level_rank

from conftest import one_line_error

runner = CliRunner()
LABEL = "target"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("release")
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X, y = X.iloc[:120], y.iloc[:120]
    X.assign(target=y).to_csv(folder / "cancer.csv", index=False)
    forest = RandomForestClassifier(10, random_state=0).fit(X, y)
    (folder / "forest.pkl").write_bytes(pickle.dumps(forest))
    (folder / "forest.json").write_text(from_sklearn(forest).to_json())
    xgboost.XGBClassifier(n_estimators=3, max_depth=2).fit(X, y).save_model(folder / "xgb.json")
    booster = lightgbm.LGBMClassifier(n_estimators=5, verbose=-1).fit(X, y).booster_
    text = booster.model_to_string()
    (folder / "bare.txt").write_text(text[:text.index("\nparameters:")] + "\n")
    X[X.columns[:5]].assign(target=y).to_csv(folder / "narrow.csv", index=False)
    D, t = load_diabetes(return_X_y=True, as_frame=True)
    D, t = D.iloc[:150], t.iloc[:150]
    D.assign(target=t).to_csv(folder / "diabetes.csv", index=False)
    regressor = RandomForestRegressor(10, random_state=0).fit(D, t)
    return {"forest": save_model(forest, folder / "forest.skops"),
            "cancer": folder / "cancer.csv", "pickle": folder / "forest.pkl",
            "tl_json": folder / "forest.json", "xgb": folder / "xgb.json",
            "bare": folder / "bare.txt", "narrow": folder / "narrow.csv",
            "regressor": save_model(regressor, folder / "regressor.skops"),
            "diabetes": folder / "diabetes.csv"}


def release(model: Path, data: Path, out: Path, *extra: str, budget: float = 60) -> dict:
    result = runner.invoke(app, ["release", str(model), "--data", str(data), "--label", LABEL,
                                 "--out", str(out), "--budget", str(budget), *extra],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    table = json.loads((out / "candidates.json").read_text())
    lines = [line for line in result.stderr.splitlines() if line.startswith("candidate ")]
    assert len(lines) == len(table["candidates"])  # one progress line per candidate
    return table


def reaudit(path: Path, data: Path, budget: float = 30.0) -> str:
    model = load_model(path, allow_regression=True, counts_removed_ok=True)
    model.label_name = LABEL
    audit = run_audit(AuditInput(model, path.name, data=pd.read_csv(data), label=LABEL,
                                 total_budget=budget))
    return audit.risk["level"]


def test_release_writes_the_most_accurate_candidate_that_audits_lower(
        files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    table = release(files["regressor"], files["diabetes"], out)
    assert len(table["candidates"]) >= 8 and table["complete"] and not table["none_lower"]
    chosen = table["chosen"]
    row = table["candidates"][chosen["index"]]
    original = level_rank(table["original"]["level"])
    lower = [c for c in table["candidates"] if not c["lower_bound"] and c["error"] is None
             and level_rank(c["level"]) < original]
    assert row["r2"] == max(c["r2"] for c in lower)  # the most accurate of those lower
    path = out / chosen["file"]
    assert path.suffix == ".skops" and sorted(p.name for p in out.iterdir()) == [
        "candidates.json", path.name]
    written = skops.io.load(path, trusted=skops.io.get_untrusted_types(file=path))
    frame = pd.read_csv(files["diabetes"])
    X, y = frame.drop(columns=LABEL), frame[LABEL]
    settings = {k: v for k, v in row["settings"].items() if k != "learner"}
    refit = Candidate(row["settings"]["learner"], settings).estimator(
        sklearn_learner(skops.io.load(files["regressor"], trusted=skops.io.get_untrusted_types(
            file=files["regressor"])))).fit(X, y)
    assert np.array_equal(written.predict(X), refit.predict(X))
    assert not hasattr(written.estimators_[0].tree_, "n_node_samples") or \
        not written.estimators_[0].tree_.n_node_samples.any()  # stripped
    assert reaudit(path, files["diabetes"]) == row["level"] == chosen["level"]
    assert "release release.skops" in advice(table)
    assert table["model_sha256"] == hashlib.sha256(files["regressor"].read_bytes()).hexdigest()
    _the_audit_quotes_the_table(files, out, table, tmp_path)


def _the_audit_quotes_the_table(files: dict[str, Path], out: Path, table: dict,
                                tmp_path: Path) -> None:
    """The audit's "What to do" quotes the measured table of a run on this very file, and
    refuses one made from another file."""
    result = runner.invoke(app, ["audit", str(files["regressor"]), "--out",
                                 str(tmp_path / "a"), "--release", str(out), "--budget", "5"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    first = report["defences"][0]
    assert first["name"].startswith("Release the refitted model")
    assert advice(table) in first["effect"] and first["figures"]["chosen"] == table["chosen"]
    other = runner.invoke(app, ["audit", str(files["forest"]), "--out", str(tmp_path / "b"),
                                "--release", str(out / "candidates.json")])
    line = one_line_error(other)
    assert other.exit_code == 2 and "--release" in line and "another file" in line
    assert not (tmp_path / "b").exists()


def test_without_a_release_run_the_audit_names_the_command(files: dict[str, Path],
                                                           tmp_path: Path) -> None:
    result = runner.invoke(app, ["audit", str(files["forest"]), "--out", str(tmp_path / "a"),
                                 "--budget", "5"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert report["release_command"].startswith("treeleaks release forest.skops --data")
    assert not any(d["name"].startswith("Release the refitted") for d in report["defences"])
    assert report["release_command"] in " ".join(result.stdout.split())


def test_release_says_plainly_when_no_candidate_audits_lower(
        files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    table = release(files["forest"], files["cancer"], out, budget=25)
    assert len(table["candidates"]) >= 8
    assert any(c["settings"]["learner"] == DP_FOREST for c in table["candidates"])
    if table["none_lower"]:  # no file, and every candidate at the original's level or above
        assert table["chosen"] is None and [p.name for p in out.iterdir()] == [
            "candidates.json"]
        bar = level_rank(table["original"]["level"])
        assert all(c["lower_bound"] or c["error"] or level_rank(c["level"]) >= bar
                   for c in table["candidates"])
        assert advice(table).startswith("none of the")
    else:
        path = out / table["chosen"]["file"]
        assert reaudit(path, files["cancer"]) == table["chosen"]["level"]


def test_the_grid_is_settings_that_expose_less(files: dict[str, Path]) -> None:
    forest = skops.io.load(files["forest"], trusted=skops.io.get_untrusted_types(
        file=files["forest"]))
    learner = sklearn_learner(forest)
    y = pd.read_csv(files["cancer"])[LABEL].to_numpy()
    candidates = grid(learner, y)
    own = [c.settings for c in candidates if c.learner != DP_FOREST]
    assert {} in own and {"min_samples_leaf": 5} in own and {"n_estimators": 1} in own
    assert all(v > 1 for c in own for k, v in c.items() if k == "min_samples_leaf")
    assert all(c.settings["epsilon"] > 0 for c in candidates if c.learner == DP_FOREST)
    booster = lightgbm.LGBMRegressor(n_estimators=20, min_child_samples=20, verbose=-1).fit(
        np.arange(200.0).reshape(-1, 1), np.arange(200.0))
    learner = lightgbm_learner(booster.booster_.model_to_string())
    settings = [c.settings for c in grid(learner, np.arange(200.0))]
    assert {"min_child_samples": 50} in settings and {"min_child_samples": 10} not in settings
    assert {"n_estimators": 5} in settings  # a quarter of the 20 rounds


def test_release_needs_data_and_label(files: dict[str, Path], tmp_path: Path) -> None:
    for extra in ([], ["--data", str(files["cancer"])], ["--label", LABEL]):
        result = runner.invoke(app, ["release", str(files["forest"]), "--out",
                                     str(tmp_path / "o"), *extra])
        assert "--data" in one_line_error(result) and "--label" in result.stderr
    assert not (tmp_path / "o").exists()


def test_release_refuses_data_of_other_columns(files: dict[str, Path], tmp_path: Path) -> None:
    result = runner.invoke(app, ["release", str(files["forest"]), "--data",
                                 str(files["narrow"]), "--label", LABEL, "--out",
                                 str(tmp_path / "o")])
    assert "lack the model's columns mean compactness" in one_line_error(result)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("name", "says"), [
    ("tl_json", "a treeleaks JSON model holds trees and counts, not the learner"),
    ("xgb", "keeps its trees but not the parameters it was trained with"),
    ("bare", "keeps no parameters section"),
    ("pickle", "--trust-pickle"),
])
def test_release_refuses_a_learner_it_cannot_refit(files: dict[str, Path], tmp_path: Path,
                                                   name: str, says: str) -> None:
    result = runner.invoke(app, ["release", str(files[name]), "--data", str(files["cancer"]),
                                 "--label", LABEL, "--out", str(tmp_path / "o")])
    assert says in one_line_error(result)
    assert not (tmp_path / "o").exists()


def test_release_refuses_a_previous_run_unless_forced(files: dict[str, Path],
                                                      tmp_path: Path) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / "release.skops").write_bytes(b"earlier")
    (out / "candidates.json").write_text("{}")
    result = runner.invoke(app, ["release", str(files["regressor"]), "--data",
                                 str(files["diabetes"]), "--label", LABEL, "--out", str(out)])
    assert ("already holds a previous run's output (candidates.json, release.skops)"
            in one_line_error(result))
    assert (out / "release.skops").read_bytes() == b"earlier"
    release(files["regressor"], files["diabetes"], out, "--force")
    assert (out / "release.skops").read_bytes() != b"earlier"
    assert json.loads((out / "candidates.json").read_text())["format"] == "treeleaks.release"


def test_release_refuses_a_budget_too_short_for_one_candidate(files: dict[str, Path],
                                                              tmp_path: Path) -> None:
    result = runner.invoke(app, ["release", str(files["forest"]), "--data",
                                 str(files["cancer"]), "--label", LABEL, "--out",
                                 str(tmp_path / "o"), "--budget", "2"])
    line = one_line_error(result)
    assert "--budget 2 s is too short" in line and "original" in line
    assert not (tmp_path / "o").exists()


def test_the_dp_forests_file_is_checked_to_vote_as_the_forest(files: dict[str, Path]) -> None:
    from treeleaks.defences.dp_forest import DPRandomForestClassifier
    from treeleaks.frontends.dp import from_dp_forest
    from treeleaks.report.release import check_dp_file
    from treeleaks.runtime.errors import TreeleaksError

    frame = pd.read_csv(files["cancer"])
    X, y = frame.drop(columns=LABEL), frame[LABEL]
    forest = DPRandomForestClassifier(epsilon=4.0, random_state=0).fit(X, y)
    content = from_dp_forest(forest, label_name=LABEL).to_json().encode()
    check_dp_file(forest, content, X)
    forest.trees_[0].counts[0] += 50  # the forest no longer votes as its file
    with pytest.raises(TreeleaksError, match="votes differently"):
        check_dp_file(forest, content, X)


def test_a_level_that_is_only_a_lower_bound_is_never_taken_as_lower() -> None:
    from treeleaks.report.release import Measured, choose

    original = Measured({}, level="HIGH")
    candidates = [Measured({}, level="LOW", lower_bound=True, score=0.99),
                  Measured({}, level="MEDIUM", score=0.90),
                  Measured({}, level="LOW", score=0.95, error="failed"),
                  Measured({}, level="HIGH", score=0.97),
                  Measured({}, level="LOW", score=0.93)]
    assert choose(original, candidates) == 4  # the most accurate of those measured lower
    assert choose(Measured({}, level="MEDIUM"), candidates) == 4
    assert choose(Measured({}, level="LOW"), candidates) is None


def test_a_lightgbm_candidate_is_written_as_a_stripped_model_text(files: dict[str, Path]
                                                                  ) -> None:
    from treeleaks.report.release import _candidate

    frame = pd.read_csv(files["diabetes"])
    X, y = frame.drop(columns=LABEL), frame[LABEL].to_numpy()
    booster = lightgbm.LGBMRegressor(n_estimators=5, min_child_samples=5, verbose=-1).fit(X, y)
    learner = lightgbm_learner(booster.booster_.model_to_string())
    candidate = Candidate("own", {"min_child_samples": 20})
    record = _candidate(candidate, learner, X, y, frame, LABEL, 10.0)
    assert record.error is None and record.suffix == ".txt" and record.level is not None
    written = lightgbm.Booster(model_str=record.content.decode())
    refit = candidate.estimator(learner).fit(X, y)
    assert np.array_equal(written.predict(X), refit.predict(X))
    assert "leaf_count=" not in record.content.decode()  # stripped


def test_the_audit_names_the_release_command_only_for_a_learner_release_refits(
        files: dict[str, Path]) -> None:
    from treeleaks.report.remedies import release_command

    forest = pickle.loads(files["pickle"].read_bytes())
    model = from_sklearn(forest)
    said = release_command(AuditInput(model, "forest.pkl", estimator=forest))
    assert said is not None and said.count("--trust-pickle") == 2
    assert release_command(AuditInput(model, "forest.json")) is None  # no learner to refit
    assert release_command(AuditInput(model, "xgb.json")) is None
