"""Loading models from disk: skops, the JSON IR, and pickles only on explicit opt-in."""

from __future__ import annotations

from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
import skops.io
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

from treeleaks import ReleasedModel, TreeleaksError, UnsupportedModelError, from_sklearn
from treeleaks.io import load_model, save_model
from treeleaks.ir.model import ModelFormatError
from treeleaks.runtime.errors import UntrustedPickleError


class Stranger:
    """A type no tree model needs: a skops file holding it must be refused."""

    def __init__(self) -> None:
        self.payload = 1


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(7)
    X = pd.DataFrame(rng.integers(0, 2, (50, 5)), columns=[f"f{i}" for i in range(5)])
    return X, (X.f0 & X.f1) | X.f3


@pytest.fixture(scope="module")
def forest(data: tuple[pd.DataFrame, pd.Series]) -> RandomForestClassifier:
    X, y = data
    return RandomForestClassifier(n_estimators=8, bootstrap=False, random_state=0).fit(X, y)


def assert_same_model(a: ReleasedModel, b: ReleasedModel) -> None:
    assert a.feature_names == b.feature_names
    assert a.classes == b.classes
    assert a.bootstrap == b.bootstrap
    assert a.n_trees == b.n_trees
    for ta, tb in zip(a.trees, b.trees):
        np.testing.assert_array_equal(ta.counts, tb.counts)
        np.testing.assert_array_equal(ta.feature, tb.feature)
        np.testing.assert_array_equal(ta.threshold, tb.threshold)


def test_skops_round_trip_keeps_the_counts(forest: RandomForestClassifier, tmp_path: Path) -> None:
    path = save_model(forest, tmp_path / "forest.skops")
    assert_same_model(load_model(path), from_sklearn(forest))


def test_skops_with_an_unknown_type_is_refused_by_name(
    forest: RandomForestClassifier, tmp_path: Path
) -> None:
    path = tmp_path / "odd.skops"
    skops.io.dump({"model": forest, "extra": Stranger()}, path)
    with pytest.raises(UntrustedPickleError, match=r"test_io\.Stranger"):
        load_model(path)


def test_corrupt_skops_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.skops"
    path.write_bytes(b"not a zip archive")
    with pytest.raises(ModelFormatError, match=r"broken\.skops"):
        load_model(path)


def test_skops_regressor_loads_then_is_refused_as_a_regressor(
    data: tuple[pd.DataFrame, pd.Series], tmp_path: Path
) -> None:
    X, y = data
    path = save_model(RandomForestRegressor(n_estimators=2).fit(X, y), tmp_path / "reg.skops")
    with pytest.raises(UnsupportedModelError, match="regressor"):
        load_model(path)


@pytest.mark.parametrize("suffix", [".pkl", ".pickle", ".joblib"])
def test_pickle_needs_an_explicit_opt_in(
    forest: RandomForestClassifier, tmp_path: Path, suffix: str
) -> None:
    path = tmp_path / f"forest{suffix}"
    joblib.dump(forest, path)
    with pytest.raises(UntrustedPickleError, match="loading a pickle runs code from the file"):
        load_model(path)
    assert_same_model(load_model(path, trust_pickle=True), from_sklearn(forest))


def test_json_ir_loads(forest: RandomForestClassifier, tmp_path: Path) -> None:
    model = from_sklearn(forest, label_name="y")
    path = tmp_path / "forest.json"
    model.to_json(path)
    loaded = load_model(path)
    assert_same_model(loaded, model)
    assert loaded.label_name == "y"


def test_feature_names_override(forest: RandomForestClassifier, tmp_path: Path) -> None:
    path = tmp_path / "forest.json"
    from_sklearn(forest).to_json(path)
    names = ["a", "b", "c", "d", "e"]
    assert load_model(path, feature_names=names).feature_names == names
    assert load_model(save_model(forest, tmp_path / "f.skops"), feature_names=names).feature_names \
        == names
    with pytest.raises(TreeleaksError, match="2 feature names given"):
        load_model(path, feature_names=["a", "b"])


def test_unknown_extension_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "model.csv"
    path.write_text("a,b\n")
    with pytest.raises(TreeleaksError, match=r"unknown model file type '\.csv'"):
        load_model(path)
    with pytest.raises(TreeleaksError, match="does not exist"):
        load_model(tmp_path / "absent.skops")


def test_a_folder_is_not_called_missing(tmp_path: Path) -> None:
    (tmp_path / "model.json").mkdir()
    with pytest.raises(TreeleaksError, match="is a folder; give the model file inside it"):
        load_model(tmp_path / "model.json")


def test_a_path_starting_with_a_brace_is_a_path(
    forest: RandomForestClassifier, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    from_sklearn(forest).to_json("{odd}.json")
    assert_same_model(load_model(Path("{odd}.json")), from_sklearn(forest))


def test_a_pipeline_is_read_in_the_custodians_columns(
    forest: RandomForestClassifier, data: tuple[pd.DataFrame, pd.Series], tmp_path: Path
) -> None:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    path = tmp_path / "pipeline.skops"
    skops.io.dump(make_pipeline(StandardScaler(), forest).fit(*data), path)
    model = load_model(path)
    assert model.inputs is not None and model.inputs.names == list(data[0].columns)


def test_deeply_nested_json_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ModelFormatError, match="nests its JSON too deeply"):
        load_model(path)
