"""scikit-learn's gradient-boosted classifiers read into the IR (issue 30): every tree's row
counts, the first tree's class counts derived from its leaf values, the refusals, and a
reconstruction verified against the model."""

from __future__ import annotations

import numpy as np
import pytest
import skops.io
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
)
from typer.testing import CliRunner

from treeleaks import FeatureSchema, from_sklearn, reconstruct
from treeleaks.cli import app
from treeleaks.demos.demo_data import LABEL, demo_data
from treeleaks.io import load_model
from treeleaks.runtime.errors import UnsupportedModelError


@pytest.fixture(scope="module")
def cancer() -> tuple[np.ndarray, np.ndarray]:
    return load_breast_cancer(return_X_y=True)


def assert_counts_are_true(model, X: np.ndarray, y: np.ndarray) -> None:
    """Tree 0's class counts and every later tree's pooled counts equal the training
    data's, routed through the IR."""
    for tree, held in zip(model.trees, model.leaf_counts_of(X, y)):
        if tree.pooled:
            assert (tree.counts[:, 0] == held.sum(axis=1)).all()
            assert not tree.counts[:, 1].any()
        else:
            assert (tree.counts == held).all()
    assert not model.trees[0].pooled and all(t.pooled for t in model.trees[1:])


@pytest.mark.parametrize("options", [
    {}, {"init": "zero"}, {"learning_rate": 0.5, "max_depth": 5, "min_samples_leaf": 1},
    {"n_iter_no_change": 3, "validation_fraction": 0.2, "random_state": 0},
])
def test_gradient_boosting_counts_equal_the_true_counts(cancer, options) -> None:
    X, y = cancer
    fitted = GradientBoostingClassifier(n_estimators=15, **options).fit(X, y)
    model = from_sklearn(fitted)
    if "n_iter_no_change" in options:  # the counts of the rows it trained on
        assert "early stopping" in model.facts
        assert model.n_rows == len(y) - round(len(y) * 0.2)
        return
    assert_counts_are_true(model, X, y)
    leaves = model.apply(X)
    for t, member in enumerate(fitted.estimators_[:, 0]):  # the IR routes as the model does
        node = member.apply(X.astype(np.float32))
        assert (model.trees[t].leaf_of_node[node] == leaves[:, t]).all()
    assert model.n_rows == len(y) and model.source == "sklearn.GradientBoostingClassifier"


@pytest.mark.parametrize("options", [
    {}, {"l2_regularization": 2.0}, {"min_samples_leaf": 1, "max_leaf_nodes": 63},
    {"learning_rate": 0.3, "max_depth": 3},
])
def test_hist_gradient_boosting_counts_equal_the_true_counts(cancer, options) -> None:
    X, y = cancer
    fitted = HistGradientBoostingClassifier(max_iter=15, early_stopping=False,
                                            **options).fit(X, y)
    model = from_sklearn(fitted)
    assert_counts_are_true(model, X, y)
    assert model.n_trees == 15 and model.n_rows == len(y)
    raw = fitted._raw_predict(X)[:, 0]  # the leaves' values, summed, are the model's output
    leaves = model.apply(X)
    predicted = fitted._baseline_prediction[0, 0] + sum(
        p.nodes["value"][np.flatnonzero(p.nodes["is_leaf"])[leaves[:, t]]]
        for t, (p,) in enumerate(fitted._predictors))
    assert np.allclose(predicted, raw)  # so the IR routes every row as the model does


def test_skops_files_load_and_inspect(cancer, tmp_path) -> None:
    X, y = cancer
    for name, fitted in (("gb", GradientBoostingClassifier(n_estimators=5)),
                         ("hgb", HistGradientBoostingClassifier(max_iter=5))):
        path = tmp_path / f"{name}.skops"
        skops.io.dump(fitted.fit(X, y), path)
        model = load_model(path)
        assert_counts_are_true(model, X, y)
        result = CliRunner().invoke(app, ["inspect", str(path)])
        assert result.exit_code == 0, result.output
        assert "569 given away" in result.output and "0: 212, 1: 357 given" in result.output


def test_a_boosted_model_is_reconstructed_and_verified() -> None:
    """Rows that reproduce every count. How close they come to the truth is measured by
    bench/boosted.py: with later trees pooled, coarse boosters leave much undetermined."""
    X, y = demo_data()
    X, y = X.iloc[:100].reset_index(drop=True), np.asarray(y)[:100]
    schema = FeatureSchema.from_frame(X)
    for fitted in (GradientBoostingClassifier(n_estimators=30, max_depth=6),
                   HistGradientBoostingClassifier(max_iter=30, min_samples_leaf=1,
                                                  early_stopping=False)):
        fitted.fit(X.to_numpy(dtype=float), y)
        model = from_sklearn(fitted, list(X.columns), label_name=LABEL)
        rec = reconstruct(model, schema, time_limit=60)
        assert rec.status in ("OPTIMAL", "FEASIBLE") and rec.n_rows == 100 and rec.verified
        rows = rec.rows.drop(columns=[LABEL]).to_numpy(dtype=float)
        labels = rec.rows[LABEL].to_numpy()
        for tree, rebuilt in zip(model.trees, model.leaf_counts_of(rows, labels)):
            assert (rebuilt.sum(axis=1) == tree.counts.sum(axis=1)).all()
        assert (model.leaf_counts_of(rows, labels)[0] == model.trees[0].counts).all()


def test_weights_subsamples_and_other_losses_are_refused(cancer) -> None:
    X, y = cancer
    weights = np.where(y == 1, 2.0, 1.0)
    cases = [
        (GradientBoostingClassifier(n_estimators=3), {"sample_weight": weights},
         "sample_weight"),
        (HistGradientBoostingClassifier(max_iter=3), {"sample_weight": weights},
         "no whole class counts"),
        (HistGradientBoostingClassifier(max_iter=3, class_weight="balanced"), {},
         "class_weight"),
        (GradientBoostingClassifier(n_estimators=3, subsample=0.5), {}, "subsample=0.5"),
        (GradientBoostingClassifier(n_estimators=3, loss="exponential"), {},
         "loss='exponential'"),
        (HistGradientBoostingClassifier(max_iter=3, monotonic_cst=[-1] * 30), {},
         "no whole class counts"),
    ]
    for estimator, fit, message in cases:
        with pytest.raises(UnsupportedModelError, match=message):
            from_sklearn(estimator.fit(X, y, **fit))


def test_a_custom_start_is_refused(cancer, tmp_path) -> None:
    X, y = cancer
    from sklearn.tree import DecisionTreeClassifier

    fitted = GradientBoostingClassifier(n_estimators=3,
                                        init=DecisionTreeClassifier(max_depth=2)).fit(X, y)
    with pytest.raises(UnsupportedModelError, match="initial estimator of its own"):
        from_sklearn(fitted)
    path = tmp_path / "exp.skops"
    skops.io.dump(GradientBoostingClassifier(n_estimators=2, loss="exponential").fit(X, y),
                  path)
    result = CliRunner().invoke(app, ["reconstruct", str(path)])
    assert result.exit_code == 2 and "loss='exponential'" in result.output


def test_single_out_on_a_booster_names_no_label_for_pooled_trees() -> None:
    from treeleaks.attacks.singling_out import check_against_data, single_out

    X, y = demo_data()
    X, y = X.iloc[:200].reset_index(drop=True), np.asarray(y)[:200]
    fitted = GradientBoostingClassifier(n_estimators=10, max_depth=5).fit(X, y)
    model = from_sklearn(fitted, label_name=LABEL)
    result = single_out(model, cells=False)
    pooled = [p for p in result.predicates if p.tree > 0]
    assert pooled and all(p.label is None for p in pooled)
    assert all(p.label is not None for p in result.predicates if p.tree == 0)
    assert f"{LABEL} =" not in pooled[0].text(LABEL, set())
    exposure = check_against_data(result, model, X.assign(**{LABEL: y}), LABEL)
    assert exposure.n_valid == len(result.predicates)  # each selects exactly one row


@pytest.mark.parametrize("make", [
    lambda: GradientBoostingRegressor(n_estimators=10),
    lambda: HistGradientBoostingRegressor(max_iter=10, l2_regularization=2.0,
                                          min_samples_leaf=1, early_stopping=False),
])
def test_regression_boosters_give_every_leafs_rows_and_the_first_trees_target_means(
        make, tmp_path) -> None:
    X, y = load_diabetes(return_X_y=True)
    fitted = make().fit(X, y)
    with pytest.raises(UnsupportedModelError, match="allow_regression=True"):
        from_sklearn(fitted)
    model = from_sklearn(fitted, allow_regression=True)
    leaves = model.apply(X)
    for t, tree in enumerate(model.trees):
        assert (tree.counts[:, 0] == np.bincount(leaves[:, t], minlength=tree.n_leaves)).all()
        assert (tree.values is None) == (t > 0)  # later trees hold steps, not targets
    means = np.array([y[leaves[:, 0] == leaf].mean() for leaf in range(model.trees[0].n_leaves)])
    assert np.allclose(model.trees[0].values, means, rtol=1e-6)
    path = tmp_path / "r.skops"
    skops.io.dump(fitted, path)
    result = CliRunner().invoke(app, ["single-out", str(path)])
    assert result.exit_code == 0, result.output
    with pytest.raises(UnsupportedModelError, match="loss='absolute_error'"):
        from_sklearn(GradientBoostingRegressor(n_estimators=2, loss="absolute_error").fit(X, y),
                     allow_regression=True)


def test_weighted_regression_boosters_are_refused_not_misread() -> None:
    X, y = load_diabetes(return_X_y=True)
    weights = np.where(y > 150, 3.0, 1.0)
    for estimator in (GradientBoostingRegressor(n_estimators=3),
                      HistGradientBoostingRegressor(max_iter=3, early_stopping=False)):
        with pytest.raises(UnsupportedModelError, match="sample_weight"):
            from_sklearn(estimator.fit(X, y, sample_weight=weights), allow_regression=True)
