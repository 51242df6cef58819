"""Bootstrap forests read straight from their skops archives: the same model, count for count
and draw for draw, as skops and scikit-learn give, without importing either."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import skops.io
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

from treeleaks import from_sklearn
from treeleaks.frontends.sklearn_draws import recorded_samples
from treeleaks.frontends.skops import read_plain_skops
from treeleaks.io import load_model, save_model


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.integers(0, 3, (60, 5)), columns=[f"f{i}" for i in range(5)])
    return X, (X.f0 + X.f1 > X.f3).astype(int)


SHAPES = [
    (RandomForestClassifier, {}),
    (RandomForestClassifier, {"max_samples": 0.5}),
    (RandomForestClassifier, {"max_samples": 25, "max_depth": 3}),
    (ExtraTreesClassifier, {"bootstrap": True}),
    (ExtraTreesClassifier, {"bootstrap": True, "max_samples": 0.8}),
]


def skops_route(path: Path) -> Any:
    """The estimator as skops and scikit-learn load it."""
    return skops.io.load(path, trusted=skops.io.get_untrusted_types(file=path))


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize(("kind", "params"), SHAPES)
def test_direct_read_is_the_skops_model_draw_for_draw(
    data: tuple[pd.DataFrame, pd.Series], tmp_path: Path, kind: type, params: dict[str, Any],
    seed: int,
) -> None:
    X, y = data
    forest = kind(n_estimators=12, random_state=seed, **params).fit(X, y)
    path = save_model(forest, tmp_path / "forest.skops")
    record = read_plain_skops(path)
    assert record is not None, "the archive went through skops"
    for drawn, expected in zip(record.estimators_samples_, forest.estimators_samples_,
                               strict=True):
        np.testing.assert_array_equal(drawn, expected)
    direct, through_skops = load_model(path), from_sklearn(skops_route(path))
    assert direct.to_dict() == through_skops.to_dict() == from_sklearn(forest).to_dict()
    assert all(tree.draws is not None for tree in direct.trees)


@pytest.mark.parametrize("kind", [RandomForestRegressor, ExtraTreesRegressor])
def test_bootstrap_regressors_read_directly_too(
    data: tuple[pd.DataFrame, pd.Series], tmp_path: Path, kind: type
) -> None:
    X, y = data
    forest = kind(n_estimators=6, bootstrap=True, random_state=2).fit(X, X.f0 * 1.5 + y)
    path = save_model(forest, tmp_path / "forest.skops")
    assert read_plain_skops(path) is not None
    assert load_model(path, allow_regression=True).to_dict() == from_sklearn(
        skops_route(path), allow_regression=True).to_dict()


def test_a_forest_seeded_by_a_random_state_object_goes_through_skops(
    data: tuple[pd.DataFrame, pd.Series], tmp_path: Path
) -> None:
    """Its RandomState is an object only skops builds; the model read is the same."""
    X, y = data
    forest = RandomForestClassifier(n_estimators=5, random_state=np.random.RandomState(4))
    path = save_model(forest.fit(X, y), tmp_path / "forest.skops")
    assert read_plain_skops(path) is None
    assert load_model(path).to_dict() == from_sklearn(skops_route(path)).to_dict()


@pytest.mark.parametrize("change", [
    {"_sample_weight": [1.0] * 60}, {"_n_samples_bootstrap": None}, {"_n_samples": True},
])
def test_records_whose_draws_only_scikit_learn_repeats_give_none(
    data: tuple[pd.DataFrame, pd.Series], tmp_path: Path, change: dict[str, Any]
) -> None:
    X, y = data
    path = save_model(RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y),
                      tmp_path / "forest.skops")
    record = read_plain_skops(path)
    assert recorded_samples(record) is not None
    for name, value in change.items():
        setattr(record, name, value)
    assert recorded_samples(record) is None


def test_a_tree_seed_out_of_range_goes_through_skops(
    data: tuple[pd.DataFrame, pd.Series], tmp_path: Path
) -> None:
    X, y = data
    path = save_model(RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y),
                      tmp_path / "forest.skops")
    edited = tmp_path / "edited.skops"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(edited, "w") as target:
        schema = json.loads(source.read("schema.json"))
        tree = schema["content"]["content"]["estimators_"]["content"][1]["content"]["content"]
        tree["random_state"]["content"] = "-5"
        for item in source.infolist():
            target.writestr(item, json.dumps(schema) if item.filename == "schema.json"
                            else source.read(item))
    assert read_plain_skops(edited) is None


def test_reconstruct_of_a_bootstrap_forest_imports_no_heavy_library(
    data: tuple[pd.DataFrame, pd.Series], tmp_path: Path
) -> None:
    """Start-up is most of a small run: skops, scikit-learn and pandas take seconds to import
    and the command needs none of them."""
    X, y = data
    path = save_model(RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y),
                      tmp_path / "forest.skops")
    code = ("import sys; from treeleaks.cli import app\n"
            "try:\n    app()\nfinally:\n"
            "    heavy = ('skops', 'sklearn')\n"
            "    print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, "reconstruct", str(path), "--json",
                           str(tmp_path / "summary.json")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[]"
    assert json.loads((tmp_path / "summary.json").read_text())["status"] == "OPTIMAL"
