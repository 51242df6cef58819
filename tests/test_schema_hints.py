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
from treeleaks.ir.schema_hints import schema_json, suggest_groups


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


def encoded(rng: np.random.Generator, prefix: str, values: list[str], n: int = 120,
            keep: int | None = None) -> tuple[pd.DataFrame, np.ndarray]:
    """One-hot columns ``prefix_value`` for random categories; ``keep`` drops the last ones."""
    category = rng.integers(0, len(values), n)
    frame = pd.DataFrame(np.eye(len(values), dtype=int)[category],
                         columns=[f"{prefix}_{v}" for v in values])
    return frame.iloc[:, :keep], category


def test_each_column_goes_under_the_longest_shared_prefix() -> None:
    """``cat__sex_*`` and ``cat__race_*`` are two attributes, not one ``cat`` group."""
    rng = np.random.default_rng(1)
    sex, s = encoded(rng, "cat__sex", ["f", "m"])
    race, r = encoded(rng, "cat__race", ["a", "b", "c"])
    X = pd.concat([sex, race], axis=1).assign(cat__smoker=rng.integers(0, 2, 120))
    y = (s + r + X["cat__smoker"].to_numpy()) % 2
    forest = RandomForestClassifier(n_estimators=20, bootstrap=False, random_state=0).fit(X, y)
    groups = suggest_groups(from_sklearn(forest))
    assert [(g.prefix, g.columns, g.exactly_one) for g in groups] == [
        ("cat__sex", ["cat__sex_f", "cat__sex_m"], True),
        ("cat__race", ["cat__race_a", "cat__race_b", "cat__race_c"], True),
    ]


def test_a_leaf_with_every_member_zero_makes_it_at_most_one() -> None:
    rng = np.random.default_rng(2)
    X, category = encoded(rng, "edu", ["hs", "ba", "ms", "phd"], keep=3)  # phd: all zero
    y = np.isin(category, (1, 3)).astype(int)
    forest = RandomForestClassifier(n_estimators=10, bootstrap=False, random_state=0).fit(X, y)
    groups = suggest_groups(from_sklearn(forest))
    assert schema_json(groups) == {"one_hot_groups": [],
                                   "at_most_one_groups": [["edu_hs", "edu_ba", "edu_ms"]]}


def test_columns_that_are_not_binary_are_never_suggested() -> None:
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"age_years": rng.integers(18, 90, 80), "age_months": rng.integers(0, 12, 80)})
    y = (X.age_years > 40).astype(int)
    forest = RandomForestClassifier(n_estimators=5, bootstrap=False, random_state=0).fit(X, y)
    assert suggest_groups(from_sklearn(forest)) == []


def test_cli_suggests_without_assuming(tmp_path: Path) -> None:
    X, y = one_hot_frame()
    forest = RandomForestClassifier(n_estimators=10, bootstrap=False, random_state=0).fit(X, y)
    model = tmp_path / "model.json"
    from_sklearn(forest).to_json(model)
    runner = CliRunner()
    result = runner.invoke(app, ["reconstruct", str(model)])
    assert result.exit_code == 0 and "look one-hot encoded: age (3 columns)" in result.stderr
    assert "--suggest-schema" in result.stderr
    schema = tmp_path / "schema.json"
    result = runner.invoke(app, ["inspect", str(model), "--suggest-schema", str(schema)])
    assert result.exit_code == 0 and "Looks one-hot encoded" in result.stdout
    assert json.loads(schema.read_text())["one_hot_groups"] == [["age:young", "age:mid",
                                                                 "age:old"]]
    result = runner.invoke(app, ["reconstruct", str(model), "--schema", str(schema)])
    assert result.exit_code == 0 and "look one-hot" not in result.stderr
