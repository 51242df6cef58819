"""One account of a model file: `inspect`, `audit`, `strip` and `reconstruct` state the same
facts about it (kind, task, bootstrap, N, class balance), because each prints its reader's
`ModelDescription` (issue 48, items 1 and 6). Every model kind, each tiny."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import skops.io as sio
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.tree import DecisionTreeClassifier
from typer.testing import CliRunner

from treeleaks.cli import app
from treeleaks.defences.dp_forest import DPRandomForestClassifier
from treeleaks.frontends.dp import from_dp_forest
from treeleaks.io import load_model
from treeleaks.ir.description import ModelDescription, ModelKind
from treeleaks.learners.greedy_rule_list import GreedyRuleListClassifier

from conftest import binary_frame

runner = CliRunner(env={"COLUMNS": "300"})
HEAD = 4  # Model, Bootstrap, Training rows N, Class balance: what every command states


def _squash(text: str) -> str:
    """Text without the tables' borders and line wrapping."""
    return re.sub(r"[\s│┃┆|]+", "", text)


def _classification() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_breast_cancer(return_X_y=True)
    return X[:60, :5], y[:60]


def _regression() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_diabetes(return_X_y=True)
    return X[:40, :4], y[:40]


def _skops(path: Path, estimator: object) -> Path:
    path.write_bytes(sio.dumps(estimator))
    return path


def _lightgbm(path: Path) -> Path:
    lightgbm = pytest.importorskip("lightgbm")
    X, y = _classification()
    booster = lightgbm.train({"objective": "binary", "verbose": -1, "num_leaves": 4,
                              "min_data_in_leaf": 5}, lightgbm.Dataset(X, y),
                             num_boost_round=3)
    booster.save_model(str(path))
    return path


def _xgboost_regressor(path: Path) -> Path:
    xgboost = pytest.importorskip("xgboost")
    X, y = _regression()
    xgboost.XGBRegressor(n_estimators=3, max_depth=2).fit(X, y).save_model(str(path))
    return path


def _dp(path: Path) -> Path:
    X, y = _classification()
    binary = (np.median(X, axis=0) < X).astype(int)
    forest = DPRandomForestClassifier(n_estimators=3, max_depth=2, epsilon=5.0,
                                      random_state=0).fit(binary, y)
    from_dp_forest(forest).to_json(path)
    return path


MODELS = {
    "rf": lambda p: _skops(p / "rf.skops", RandomForestClassifier(
        n_estimators=5, random_state=0).fit(*_classification())),
    "rf-regressor": lambda p: _skops(p / "rfr.skops", RandomForestRegressor(
        n_estimators=3, random_state=0).fit(*_regression())),
    "extra-trees": lambda p: _skops(p / "et.skops", ExtraTreesClassifier(
        n_estimators=3, max_depth=3, random_state=0).fit(*_classification())),
    "tree": lambda p: _skops(p / "tree.skops", DecisionTreeClassifier(
        max_depth=3, random_state=0).fit(*_classification())),
    "gradient-boosting": lambda p: _skops(p / "gb.skops", GradientBoostingClassifier(
        n_estimators=3, max_depth=2, random_state=0).fit(*_classification())),
    "lightgbm": lambda p: _lightgbm(p / "lgb.txt"),
    "xgboost-regressor": lambda p: _xgboost_regressor(p / "xgb.json"),
    "dp": lambda p: _dp(p / "dp.json"),
}
KINDS = {"rf": ModelKind.BOOTSTRAP_FOREST, "rf-regressor": ModelKind.BOOTSTRAP_FOREST,
         "extra-trees": ModelKind.FOREST, "tree": ModelKind.SINGLE_TREE,
         "gradient-boosting": ModelKind.GRADIENT_BOOSTED,
         "lightgbm": ModelKind.GRADIENT_BOOSTED, "dp": ModelKind.DP_FOREST,
         "xgboost-regressor": ModelKind.GRADIENT_BOOSTED}
REGRESSORS = ("rf-regressor", "xgboost-regressor")


def _described(path: Path) -> ModelDescription:
    return load_model(path, allow_regression=True, counts_removed_ok=True).described()


def _states(output: str, about: ModelDescription) -> None:
    """The command's output holds the description's rows, word for word."""
    text = _squash(output)
    for name, words in about.rows()[:HEAD]:
        assert _squash(f"{name}{words}") in text, (name, words, output)


def _audit(path: Path, out: Path) -> dict:
    result = runner.invoke(app, ["audit", str(path), "--out", str(out), "--budget", "3"])
    assert result.exit_code == 0, result.output
    return json.loads((out / "report.json").read_text())


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_command_states_the_readers_facts(name: str, tmp_path: Path) -> None:
    path = MODELS[name](tmp_path)
    about = _described(path)
    assert about.kind == KINDS[name]
    assert about.task == ("regression" if name in REGRESSORS else "classification")
    if name in ("rf", "rf-regressor"):  # the draws give N away: a default forest's
        assert about.bootstrap and about.draws_exposed and about.n_rows_given_away
    inspected = runner.invoke(app, ["inspect", str(path)])
    assert inspected.exit_code == 0, inspected.output  # regressors too (item 6)
    _states(inspected.output, about)
    report = _audit(path, tmp_path / "audit")
    assert report["model"]["kind"] == about.kind and report["model"]["task"] == about.task
    assert report["exposed"]["description"] == about.to_dict()
    assert report["exposed"]["bootstrap"] == about.bootstrap
    assert (report["exposed"]["n_rows"] == about.n_rows) == (about.n_rows_given_away
                                                            and about.n_rows_bounds is None)
    summary = tmp_path / "recon.json"
    rebuilt = runner.invoke(app, ["reconstruct", str(path), "--time-limit", "1", "--json",
                                  str(summary)])
    assert summary.exists(), rebuilt.output
    assert json.loads(summary.read_text())["model"] == about.to_dict()
    _states(rebuilt.output, about)


@pytest.mark.parametrize("name", ["rf", "rf-regressor", "extra-trees", "tree",
                                  "gradient-boosting", "lightgbm", "xgboost-regressor"])
def test_a_stripped_file_is_the_same_kind_and_gives_n_away_no_more(
        name: str, tmp_path: Path) -> None:
    path = MODELS[name](tmp_path)
    about = _described(path)
    out = path.with_name("stripped" + path.suffix)
    stripped = runner.invoke(app, ["strip", str(path), "--out", str(out), "--no-measure"])
    assert stripped.exit_code == 0, stripped.output
    after = _described(out)
    assert after.stripped and not after.n_rows_given_away and after.class_balance is None
    assert (after.kind, after.task, after.bootstrap) == (about.kind, about.task,
                                                          about.bootstrap)
    text = _squash(stripped.output)
    removed = [f.name for f in after.fields if f.removed]
    assert removed and all(name in text for name in removed)  # as strip says it removed
    for (name_before, before), (name_after, words) in zip(about.rows()[:HEAD],
                                                          after.rows()[:HEAD]):
        assert name_before == name_after
        assert _squash(f"{name_before}{before}{words}") in text, stripped.output
    inspected = runner.invoke(app, ["inspect", str(out)])
    assert inspected.exit_code == 0, inspected.output
    _states(inspected.output, after)
    report = _audit(out, tmp_path / "audit")
    assert report["exposed"]["description"] == after.to_dict()
    assert report["exposed"]["bootstrap"] == about.bootstrap


def test_a_rule_list_is_stated_alike_by_inspect_and_audit(tmp_path: Path) -> None:
    from treeleaks.frontends.rule_list import RuleList

    path = tmp_path / "rules.json"
    X, _ = binary_frame(60, 4, seed=1)
    rules = GreedyRuleListClassifier(max_length=3, max_width=2).fit(
        X, (X.f0 & X.f1).to_numpy()).rule_list_
    path.write_text(rules.to_json())
    about = RuleList.from_dict(json.loads(path.read_text())).described()
    assert about.kind == ModelKind.RULE_LIST and about.n_rows_given_away
    inspected = runner.invoke(app, ["inspect", str(path)])
    assert inspected.exit_code == 0, inspected.output
    _states(inspected.output, about)
    report = _audit(path, tmp_path / "audit")
    assert report["exposed"]["description"] == about.to_dict()
    assert report["model"]["kind"] == about.kind


def test_a_treeleaks_json_keeps_the_readers_description_and_old_files_still_load(
        tmp_path: Path) -> None:
    path = MODELS["extra-trees"](tmp_path)
    model = load_model(path)
    saved = tmp_path / "model.json"
    model.to_json(saved)
    assert load_model(saved).described() == model.described()
    old = json.loads(saved.read_text())
    del old["description"]  # a file written before descriptions were kept
    saved.write_text(json.dumps(old))
    again = load_model(saved).described()
    assert (again.kind, again.n_rows, again.class_balance) == (
        ModelKind.FOREST, model.described().n_rows, model.described().class_balance)
    assert again.framework == "treeleaks JSON"


def test_an_edited_description_hides_nothing_and_a_malformed_one_is_named(
        tmp_path: Path) -> None:
    """What a treeleaks JSON gives away is read off its counts, whatever its description
    says; a description of the wrong shape is refused naming the field."""
    from treeleaks.ir.model import ModelFormatError

    model = load_model(MODELS["extra-trees"](tmp_path))
    saved = tmp_path / "model.json"
    data = json.loads(model.to_json())
    data["description"].update(n_rows=None, class_balance=None, stripped=True)
    saved.write_text(json.dumps(data))
    assert load_model(saved).described() == model.described()
    data["description"]["kind"] = "a safe model"
    saved.write_text(json.dumps(data))
    with pytest.raises(ModelFormatError, match=r"description\.kind"):
        load_model(saved)


def test_a_default_bootstrap_forest_gives_n_away_without_its_draws() -> None:
    """Each tree drew N rows (max_samples=None): its counts add up to N, draws or not; with
    max_samples set, only the class balance's estimate is left."""
    from treeleaks import from_sklearn

    X, y = _classification()
    for max_samples, given in ((None, True), (0.5, False)):
        model = from_sklearn(RandomForestClassifier(n_estimators=5, max_samples=max_samples,
                                                    random_state=0).fit(X, y))
        for tree in model.trees:
            tree.draws = None
        model.description = None  # described again, from the IR without the draws
        about = model.described()
        assert about.n_rows_given_away is given and not about.draws_exposed
        assert abs(about.n_rows - len(y)) <= (0 if given else 0.1 * len(y))
        assert about.class_balance_estimated


def test_inspect_refuses_to_suggest_a_schema_for_a_rule_list(tmp_path: Path) -> None:
    X, _ = binary_frame(40, 3, seed=2)
    path = tmp_path / "rules.json"
    path.write_text(GreedyRuleListClassifier().fit(X, X.f0.to_numpy()).rule_list_.to_json())
    refused = runner.invoke(app, ["inspect", str(path), "--suggest-schema",
                                  str(tmp_path / "s.json")])
    assert refused.exit_code == 2 and "--suggest-schema reads a tree model's" in refused.output
    assert not (tmp_path / "s.json").exists()
