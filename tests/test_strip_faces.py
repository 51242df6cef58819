"""``treeleaks strip`` keeps what the wrappers people load a file in read to predict, and
checks through them: an XGBoost model trained with early stopping predicts with the trees
up to its ``best_iteration`` in ``XGBClassifier``, not in ``Booster.predict``. Also: an
existing ``--out`` is kept without ``--force``, a regressor's reconstruction is reported
as run, and a booster trained on row samples is told so."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import skops.io
import xgboost
from sklearn.datasets import load_breast_cancer
from sklearn.tree import DecisionTreeRegressor
from typer.testing import CliRunner

from treeleaks.cli import app
from treeleaks.defences import strip as strip_module
from treeleaks.defences.strip import strip
from treeleaks.defences.strip_check import StripCheckError
from treeleaks.frontends.xgboost import read_xgboost
from treeleaks.runtime.errors import UnsupportedModelError

from conftest import one_line_error

runner = CliRunner()


@pytest.fixture(scope="module")
def early(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """An XGBClassifier stopped early on breast cancer (fewer trees used than kept), saved
    with its own save_model, and the rows to predict."""
    X, y = load_breast_cancer(return_X_y=True)
    model = xgboost.XGBClassifier(n_estimators=41, early_stopping_rounds=4, max_depth=3,
                                  learning_rate=0.3)
    model.fit(X[200:], y[200:], eval_set=[(X[:200], y[:200])], verbose=False)
    assert model.best_iteration + 1 < model.get_booster().num_boosted_rounds()
    path = tmp_path_factory.mktemp("early") / "early.json"
    model.save_model(path)
    return path, X


def in_wrapper(path_or_bytes: Path | bytes) -> xgboost.XGBClassifier:
    wrapper = xgboost.XGBClassifier()
    wrapper.load_model(bytearray(path_or_bytes) if isinstance(path_or_bytes, bytes)
                       else path_or_bytes)
    return wrapper


def test_early_stopping_predicts_as_before_in_the_wrapper(early, tmp_path: Path) -> None:
    path, X = early
    out = tmp_path / "safe.json"
    result = runner.invoke(app, ["strip", str(path), "--out", str(out), "--no-measure"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "XGBClassifier.predict," in text and "XGBClassifier.predict_proba" in text
    assert "best_iteration" in text
    before, after = in_wrapper(path), in_wrapper(out)
    assert after.best_iteration == before.best_iteration
    np.testing.assert_array_equal(after.predict_proba(X), before.predict_proba(X))
    attributes = json.loads(out.read_text())["learner"]["attributes"]
    assert "best_score" not in attributes and "scikit_learn" in attributes


def test_a_strip_that_loses_the_round_is_caught_through_the_wrapper(
        early, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without best_iteration the raw booster predicts alike (it uses every tree either
    way); XGBClassifier does not, and the check says so."""
    path, X = early

    def forgets(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        stripped, removed = strip_xgboost(data)
        stripped["learner"]["attributes"] = {}
        return stripped, removed

    strip_xgboost = strip_module.strip_xgboost
    monkeypatch.setattr(strip_module, "strip_xgboost", forgets)
    # the Booster's outputs come first and match: the wrapper's are the ones that differ
    with pytest.raises(StripCheckError, match=r"XGBClassifier\.predict of the stripped "
                       r"file differs from the original's on \d+ of 569 rows of --data"):
        strip(json.loads(path.read_text()), "xgboost", X)


def test_an_existing_output_is_kept_unless_forced(early, tmp_path: Path) -> None:
    path, _ = early
    out = tmp_path / "safe.json"
    out.write_text("a previous run's file")
    line = one_line_error(runner.invoke(app, ["strip", str(path), "--out", str(out),
                                              "--no-measure"]))
    assert "already exists" in line and "--force" in line
    assert out.read_text() == "a previous run's file"
    damaged = tmp_path / "damaged.json"  # a refused input leaves it too, even with --force
    damaged.write_text(path.read_text()[:100])
    one_line_error(runner.invoke(app, ["strip", str(damaged), "--out", str(out),
                                       "--no-measure", "--force"]))
    assert out.read_text() == "a previous run's file"
    before = path.read_bytes()
    done = runner.invoke(app, ["strip", str(path), "--out", str(out), "--no-measure",
                               "--force"])
    assert done.exit_code == 0, done.output
    assert path.read_bytes() == before and in_wrapper(out).best_iteration is not None
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp


def test_a_regressor_is_reported_reconstructed_not_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (30, 2)).astype(float)
    y = X[:, 0] * 2 + X[:, 1] + rng.integers(0, 2, 30)
    path = tmp_path / "regressor.skops"
    skops.io.dump(DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y), path)
    result = runner.invoke(app, ["strip", str(path), "--out", str(tmp_path / "safe.skops"),
                                 "--time-limit", "3"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "Reconstruction" in line)
    cells = [cell.strip() for cell in row.split("│")]
    assert "does not apply" not in result.output
    assert cells[2].split()[1].rstrip(",") == "rows" and int(cells[2].split()[0]) > 0
    assert "not possible: the" in cells[3]  # the stripped copy: its counts went


def test_a_booster_fitted_on_row_samples_is_told_so(tmp_path: Path) -> None:
    X, y = load_breast_cancer(return_X_y=True)
    model = xgboost.XGBClassifier(n_estimators=5, subsample=0.5, max_depth=3,
                                  random_state=0).fit(X, y)
    with pytest.raises(UnsupportedModelError, match=r"trained with subsample=0\.5, which "
                       "the derivation leaves out"):
        read_xgboost(pickle.loads(pickle.dumps(model)))
    path = tmp_path / "sampled.json"
    model.save_model(path)  # the file does not record subsample: named as the likely cause
    line = one_line_error(runner.invoke(app, ["inspect", str(path)]))
    assert "subsample below 1" in line
