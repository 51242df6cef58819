"""One door for model files (issue 49, item 1): every format through one registry, the same
checks after every reader (a regressor unasked, renamed features, the file named), rule lists
told apart by the registry, and the commands that audit classifiers refusing every regressor
alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from test_rule_list import PAPER
from typer.testing import CliRunner

import treeleaks
from treeleaks.cli import app
from treeleaks.frontends.registry import READERS, SUFFIXES, ModelFile, reader_for
from treeleaks.frontends.rule_list import RuleList
from treeleaks.io import load_any, load_model, save_model
from treeleaks.ir.model import ModelFormatError
from treeleaks.runtime.errors import UnsupportedModelError

from conftest import one_line_error

runner = CliRunner()
X, Y = load_diabetes(return_X_y=True)
X, Y = X[:80, :4], Y[:80]


def _skops(tmp_path: Path) -> Path:
    return save_model(RandomForestRegressor(n_estimators=3, random_state=0).fit(X, Y),
                      tmp_path / "r.skops")


def _lightgbm(tmp_path: Path) -> Path:
    lightgbm = pytest.importorskip("lightgbm")
    path = tmp_path / "r.txt"
    lightgbm.LGBMRegressor(n_estimators=3, verbose=-1).fit(X, Y).booster_.save_model(str(path))
    return path


def _xgboost(suffix: str) -> Any:
    def write(tmp_path: Path) -> Path:
        xgboost = pytest.importorskip("xgboost")
        path = tmp_path / f"r{suffix}"
        xgboost.XGBRegressor(n_estimators=3).fit(X, Y).get_booster().save_model(str(path))
        return path
    return write


REGRESSORS = {"skops": _skops, "lightgbm": _lightgbm, "xgboost-json": _xgboost(".json"),
              "xgboost-ubj": _xgboost(".ubj")}


@pytest.mark.parametrize("kind", REGRESSORS)
def test_every_regressor_is_refused_alike_unless_asked(kind: str, tmp_path: Path) -> None:
    path = REGRESSORS[kind](tmp_path)
    with pytest.raises(UnsupportedModelError, match=rf"^{path.name} holds a .* regressor"):
        load_model(path)
    assert load_model(path, allow_regression=True).is_regression


@pytest.mark.parametrize("kind", REGRESSORS)
@pytest.mark.parametrize("command", ["worst-case", "leak"])
def test_the_classifier_commands_refuse_every_regressor(kind: str, command: str,
                                                        tmp_path: Path) -> None:
    path = REGRESSORS[kind](tmp_path)
    truth = tmp_path / "truth.csv"
    truth.write_text("x0,label\n0,1\n")
    extra = ["--truth", str(truth)] if command == "worst-case" else []
    line = one_line_error(runner.invoke(app, [command, str(path), *extra]))
    assert f"{path.name} holds a" in line and "regressor" in line
    assert "reconstruct, single-out and audit read regressors" in line  # where to go instead


@pytest.mark.parametrize("kind", REGRESSORS)
def test_inspect_reads_every_regressor(kind: str, tmp_path: Path) -> None:
    path = REGRESSORS[kind](tmp_path)
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0, result.output
    assert "regress" in result.stdout.lower()


@pytest.mark.parametrize("kind", REGRESSORS)
def test_feature_names_replace_the_files_in_every_format(kind: str, tmp_path: Path) -> None:
    path = REGRESSORS[kind](tmp_path)
    names = ["a", "b", "c", "label"]
    model = load_model(path, allow_regression=True, feature_names=names)
    assert model.feature_names == names and model.label_name not in names
    with pytest.raises(treeleaks.TreeleaksError, match=rf"^{path.name}: 2 feature names"):
        load_model(path, allow_regression=True, feature_names=["a", "b"])


def test_a_rule_list_comes_through_the_registry_not_load_model(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(PAPER))
    assert isinstance(load_any(path), RuleList)
    with pytest.raises(UnsupportedModelError, match=r"rules\.json is a rule list"):
        load_model(path)
    with pytest.raises(ModelFormatError, match="is a treeleaks rule-list file, not an XGBoost"):
        treeleaks.load_xgboost(path)


def test_a_broken_rule_list_is_named(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({**PAPER, "rules": "none"}))
    line = one_line_error(runner.invoke(app, ["inspect", str(path)]))
    assert "rules.json" in line and "rule-list file" in line


def test_json_is_sniffed_in_table_order(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 2, (30, 3))
    path = tmp_path / "forest.json"
    treeleaks.from_sklearn(RandomForestClassifier(n_estimators=2, random_state=0).fit(
        rows, rows[:, 0])).to_json(path)
    assert reader_for(ModelFile(path)).name == "treeleaks"
    (tmp_path / "rules.json").write_text(json.dumps(PAPER))
    assert reader_for(ModelFile(tmp_path / "rules.json")).name == "rule list"


def test_the_table_names_every_suffix_once_and_each_shared_one_has_a_fallback() -> None:
    assert len(SUFFIXES) == len(set(SUFFIXES))
    for suffix in SUFFIXES:
        sharing = [r for r in READERS if suffix in r.suffixes]
        assert len(sharing) == 1 or sharing[-1].sniff is None, suffix
    assert {s for r in READERS if r.runs_code for s in r.suffixes} == {
        ".pkl", ".pickle", ".joblib"}


def test_the_old_names_still_read(tmp_path: Path) -> None:
    path = _lightgbm(tmp_path)
    from treeleaks.frontends.lightgbm import read_lightgbm

    assert treeleaks.load_lightgbm(path).n_trees == read_lightgbm(path).n_trees == 3


@pytest.mark.parametrize(("kind", "name"), [
    ("skops", "model"), ("lightgbm", "booster.model"), ("xgboost-ubj", "0001.model"),
    ("xgboost-json", "booster.bin")])
def test_a_file_of_another_extension_is_told_by_its_content(kind: str, name: str,
                                                            tmp_path: Path) -> None:
    """A file saved as ``.model``, ``.bin`` or without an extension (XGBoost writes binary
    JSON there by default) is read as what its first bytes say."""
    original = REGRESSORS[kind](tmp_path)
    renamed = tmp_path / name
    renamed.write_bytes(original.read_bytes())
    want = load_model(original, allow_regression=True)
    got = load_model(renamed, allow_regression=True)
    assert got.n_trees == want.n_trees and got.source == want.source
    for a, b in zip(got.trees, want.trees, strict=True):
        assert np.array_equal(a.threshold, b.threshold, equal_nan=True)


def test_a_pickle_told_by_its_content_still_needs_the_opt_in(tmp_path: Path) -> None:
    import pickle

    forest = RandomForestClassifier(n_estimators=2, random_state=0).fit(X, Y.mean() < Y)
    path = tmp_path / "finalized_model.sav"
    path.write_bytes(pickle.dumps(forest))
    assert "--trust-pickle" in one_line_error(runner.invoke(app, ["inspect", str(path)]), 2)
    assert load_model(path, trust_pickle=True).n_trees == 2
    out = tmp_path / "stripped.sav"
    result = runner.invoke(app, ["strip", str(path), "--out", str(out), "--trust-pickle",
                                 "--no-measure"])
    assert result.exit_code == 0, result.output
    assert not pickle.loads(out.read_bytes()).estimators_[0].tree_.n_node_samples.any()


def test_a_file_of_no_known_kind_is_refused_naming_both_checks(tmp_path: Path) -> None:
    path = tmp_path / "notes.dat"
    path.write_text("hello\n")
    message = one_line_error(runner.invoke(app, ["inspect", str(path)]), 2)
    assert "unknown model file type '.dat'" in message and "first bytes" in message


def test_strip_writes_binary_json_back_as_binary_json(tmp_path: Path) -> None:
    xgboost = pytest.importorskip("xgboost")
    path = tmp_path / "0001.model"
    booster = xgboost.XGBClassifier(n_estimators=3).fit(X, Y.mean() < Y).get_booster()
    booster.save_model(str(path))  # binary JSON, XGBoost's default for this extension
    out = tmp_path / "stripped.model"
    result = runner.invoke(app, ["strip", str(path), "--out", str(out), "--no-measure"])
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:2] == b"{L"
    stripped = xgboost.Booster(model_file=str(out))
    matrix = xgboost.DMatrix(X)
    assert (stripped.predict(matrix) == booster.predict(matrix)).all()
    assert not load_model(out, counts_removed_ok=True).counts_released
