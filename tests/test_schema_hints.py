"""One-hot hints: suggested from names and the model, never assumed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from typer.testing import CliRunner

from treeleaks import from_sklearn
from treeleaks.cli import app
from treeleaks.schema_hints import schema_json, suggest_groups


def one_hot_frame(seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    age = np.eye(3, dtype=int)[rng.integers(0, 3, 80)]
    frame = pd.DataFrame(age, columns=["age:young", "age:mid", "age:old"])
    frame["sex_f"] = rng.integers(0, 2, 80)
    frame["sex_m"] = rng.integers(0, 2, 80)  # shares a prefix but both can be 1
    y = (frame["age:old"] | frame["sex_f"]).to_numpy()
    return frame, y


def test_groups_are_suggested_from_names_and_checked_against_the_model() -> None:
    X, y = one_hot_frame()
    forest = RandomForestClassifier(n_estimators=30, bootstrap=False, random_state=0).fit(X, y)
    groups = suggest_groups(from_sklearn(forest))
    assert [g.columns for g in groups] == [["age:young", "age:mid", "age:old"]]
    assert groups[0].exactly_one
    assert schema_json(groups) == {"one_hot_groups": [["age:young", "age:mid", "age:old"]],
                                   "at_most_one_groups": []}


def test_cli_suggests_without_assuming(tmp_path: Path) -> None:
    X, y = one_hot_frame()
    forest = RandomForestClassifier(n_estimators=10, bootstrap=False, random_state=0).fit(X, y)
    model = tmp_path / "model.json"
    from_sklearn(forest).to_json(model)
    runner = CliRunner()
    result = runner.invoke(app, ["reconstruct", str(model)])
    assert result.exit_code == 0 and "look one-hot encoded" in result.stderr
    schema = tmp_path / "schema.json"
    result = runner.invoke(app, ["inspect", str(model), "--suggest-schema", str(schema)])
    assert result.exit_code == 0 and "Looks one-hot encoded" in result.stdout
    assert json.loads(schema.read_text())["one_hot_groups"] == [["age:young", "age:mid",
                                                                 "age:old"]]
    result = runner.invoke(app, ["reconstruct", str(model), "--schema", str(schema)])
    assert result.exit_code == 0 and "look one-hot" not in result.stderr
