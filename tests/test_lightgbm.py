"""LightGBM binary classifiers: the model text file read into the IR (issue 30), its first
tree's class counts derived from the leaf values, and the forest reconstructed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from typer.testing import CliRunner

from treeleaks import FeatureSchema, reconstruct
from treeleaks.cli import app
from treeleaks.demos.demo_data import LABEL, demo_data
from treeleaks.evaluation.metrics import evaluate
from treeleaks.frontends.lightgbm import read_lightgbm
from treeleaks.io import load_model
from treeleaks.ir.model import ModelFormatError
from treeleaks.runtime.errors import UnsupportedModelError

lgb = pytest.importorskip("lightgbm")


@pytest.fixture(scope="module")
def cancer() -> tuple[np.ndarray, np.ndarray]:
    return load_breast_cancer(return_X_y=True)


def true_counts(booster, X: np.ndarray, y: np.ndarray, tree: int, n_leaves: int
                ) -> np.ndarray:
    leaves = booster.predict(X, pred_leaf=True)[:, tree]
    counts = np.zeros((n_leaves, 2), dtype=np.int64)
    np.add.at(counts, (leaves, y), 1)
    return counts


@pytest.mark.parametrize("options", [
    {}, {"reg_lambda": 1.0}, {"min_child_samples": 1, "min_child_weight": 0},
    {"boost_from_average": False}, {"learning_rate": 0.3, "num_leaves": 7},
])
def test_every_derived_count_equals_the_true_count(cancer, options) -> None:
    X, y = cancer
    fitted = lgb.LGBMClassifier(n_estimators=20, verbose=-1, **options).fit(X, y)
    model = read_lightgbm(fitted)
    booster = fitted.booster_
    first = model.trees[0]
    assert not first.pooled
    assert (first.counts == true_counts(booster, X, y, 0, first.n_leaves)).all()
    for t, tree in enumerate(model.trees[1:], start=1):  # pooled over the classes
        assert tree.pooled
        held = true_counts(booster, X, y, t, tree.n_leaves).sum(axis=1)
        assert (tree.counts[:, 0] == held).all() and not tree.counts[:, 1].any()
    assert (model.apply(X) == booster.predict(X, pred_leaf=True)).all()  # same routing
    assert model.n_rows == len(y)


def test_a_saved_text_file_reads_like_the_object(cancer, tmp_path) -> None:
    X, y = cancer
    fitted = lgb.LGBMClassifier(n_estimators=5, verbose=-1).fit(X, y)
    path = tmp_path / "m.txt"
    fitted.booster_.save_model(path)
    from_file, from_object = load_model(path), read_lightgbm(fitted)
    assert from_file.source == "LightGBM" and from_file.n_trees == 5
    for a, b in zip(from_file.trees, from_object.trees):
        assert (a.counts == b.counts).all() and (a.threshold == b.threshold).all()
    result = CliRunner().invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0, result.output
    assert "569" in result.output


def test_a_lightgbm_forest_is_reconstructed_and_verified() -> None:
    X, y = demo_data()
    X, y = X.iloc[:100].reset_index(drop=True), np.asarray(y)[:100]
    fitted = lgb.LGBMClassifier(n_estimators=30, min_child_samples=1, min_child_weight=0,
                                verbose=-1).fit(X.to_numpy(dtype=float), y)
    model = read_lightgbm(fitted, list(X.columns), label_name=LABEL)
    schema = FeatureSchema.from_frame(X)
    rec = reconstruct(model, schema, time_limit=60)
    assert rec.status in ("OPTIMAL", "FEASIBLE") and rec.n_rows == 100 and rec.verified
    score = evaluate(X.assign(**{LABEL: y}), rec.rows, schema, label=LABEL)
    assert score.error < score.baseline_error


def test_sample_weights_are_refused_not_rounded(cancer) -> None:
    X, y = cancer
    weighted = lgb.LGBMClassifier(n_estimators=3, verbose=-1).fit(
        X, y, sample_weight=np.where(y == 1, 2.0, 1.0))
    with pytest.raises(UnsupportedModelError, match=r"no whole class counts.*sample weights"):
        read_lightgbm(weighted)


def test_subsampled_trees_are_refused(cancer) -> None:
    X, y = cancer
    bagged = lgb.LGBMClassifier(n_estimators=3, subsample=0.5, subsample_freq=1,
                                verbose=-1).fit(X, y)
    with pytest.raises(UnsupportedModelError, match="fit on subsamples"):
        read_lightgbm(bagged)


def test_integer_categories_and_gaps_are_read() -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"colour": rng.integers(0, 5, 300), "size": rng.normal(size=300)})
    y = (frame["colour"].isin([1, 3]) ^ (frame["size"] > 1)).astype(int)
    frame["size"] = frame["size"].where(rng.random(300) > 0.2)
    fitted = lgb.LGBMClassifier(n_estimators=3, verbose=-1, min_child_samples=5).fit(
        frame, y, categorical_feature=["colour"])
    model = read_lightgbm(fitted)
    assert model.inputs.names == ["colour", "size"]  # categories by code: no pandas list
    assert "colour=3" in model.feature_names and "size=(missing)" in model.feature_names
    encoded = model.inputs.encode(frame)[model.feature_names].to_numpy()
    for tree in model.trees:
        assert (np.bincount(tree.apply(encoded), minlength=tree.n_leaves)
                == tree.counts.sum(axis=1)).all()


def test_other_objectives_are_refused(cancer) -> None:
    X, y = cancer
    ova = lgb.LGBMClassifier(n_estimators=2, verbose=-1, objective="multiclassova").fit(
        X, np.arange(len(y)) % 3)
    with pytest.raises(UnsupportedModelError, match="objective 'multiclassova': its trees"):
        read_lightgbm(ova)


def test_a_truncated_or_edited_file_is_one_line_naming_the_field(cancer, tmp_path) -> None:
    X, y = cancer
    text = lgb.LGBMClassifier(n_estimators=3, verbose=-1).fit(X, y).booster_.model_to_string()
    cut = text[: text.index("leaf_count=", text.index("Tree=1"))]
    with pytest.raises(ModelFormatError, match=r"stops after 2 tree\(s\) of the 3 its "
                       "tree_sizes lists, before the line 'end of trees': a truncated file"):
        read_lightgbm(cut)
    edited = text.replace("leaf_count=", "leaf_count=7 ", 1)
    with pytest.raises(ModelFormatError, match="tree 0: field 'leaf_count' has"):
        read_lightgbm(edited)
    path = tmp_path / "cut.txt"
    path.write_text(cut)
    result = CliRunner().invoke(app, ["reconstruct", str(path)])
    assert result.exit_code == 2
    assert "a truncated file" in result.output
    not_lightgbm = tmp_path / "notes.txt"
    not_lightgbm.write_text("hello\n")
    result = CliRunner().invoke(app, ["inspect", str(not_lightgbm)])
    assert result.exit_code == 2 and "not a LightGBM model file" in result.output


def test_a_booster_on_raw_measurements_is_reconstructed_without_the_row_search(cancer) -> None:
    """Its later trees pool the classes, which the row search cannot read: generation alone
    runs, and whatever it returns is within every count."""
    X, y = cancer
    model = read_lightgbm(lgb.LGBMClassifier(n_estimators=5, verbose=-1).fit(X, y))
    rec = reconstruct(model, time_limit=8)  # it used to raise from the row search
    assert rec.status in ("OPTIMAL", "FEASIBLE", "UNKNOWN")
    assert "row search" not in rec.message and rec.timings.get("searched_rows") is None
    assert rec.verified or not rec.n_rows  # rows, when there are any, fit every count


@pytest.mark.parametrize("options", [{}, {"reg_lambda": 2.0, "min_child_samples": 1},
                                     {"boost_from_average": False}])
def test_a_regressor_gives_the_first_trees_target_means(options, tmp_path) -> None:
    X, y = load_diabetes(return_X_y=True)
    fitted = lgb.LGBMRegressor(n_estimators=5, verbose=-1, **options).fit(X, y)
    model = read_lightgbm(fitted)
    assert model.is_regression and model.trees[1].values is None
    leaves = model.apply(X)[:, 0]
    means = [y[leaves == leaf].mean() for leaf in range(model.trees[0].n_leaves)]
    assert np.allclose(model.trees[0].values, means, rtol=1e-6)
    path = tmp_path / "r.txt"
    fitted.booster_.save_model(path)
    with pytest.raises(UnsupportedModelError, match="holds a LightGBM regressor"):
        load_model(path)
    assert load_model(path, allow_regression=True).n_trees == 5


def test_a_near_even_class_balance_is_read_exactly() -> None:
    """p0 near 1/2 makes the root of p0(1 - p0) = ΣH/N ill-conditioned: the positive share
    k/N is snapped to (a 1,000-row COMPAS booster was refused before)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2001, 3))
    y = np.zeros(2001, dtype=int)
    y[rng.permutation(2001)[:1001]] = 1
    fitted = lgb.LGBMClassifier(n_estimators=3, min_child_samples=1, min_child_weight=0,
                                verbose=-1).fit(X, y)
    model = read_lightgbm(fitted)
    assert (model.trees[0].counts == model.leaf_counts_of(X, y)[0]).all()


def test_a_weighted_regressor_is_refused_not_misread() -> None:
    X, y = load_diabetes(return_X_y=True)
    fitted = lgb.LGBMRegressor(n_estimators=3, verbose=-1).fit(
        X, y, sample_weight=np.where(y > 150, 3.0, 1.0))
    with pytest.raises(UnsupportedModelError, match="sample weights"):
        read_lightgbm(fitted)
