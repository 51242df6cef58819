"""The IR and the scikit-learn frontend: faithful counts, routing, JSON, clear refusals."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier, RandomForestRegressor
from sklearn.tree import DecisionTreeClassifier

from treeleaks import ReleasedModel, UnsupportedModelError, from_sklearn
from treeleaks.model import ModelFormatError

from conftest import binary_frame


@pytest.mark.parametrize(
    "estimator",
    [
        DecisionTreeClassifier(random_state=0),
        RandomForestClassifier(n_estimators=7, bootstrap=False, random_state=0),
        ExtraTreesClassifier(n_estimators=5, random_state=0),
        RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0),
    ],
)
def test_counts_and_routing_match_sklearn(estimator):
    X, y = binary_frame(120, 6, seed=1)
    X = X.to_numpy()
    estimator.fit(X, y)
    model = from_sklearn(estimator)
    members = [estimator] if hasattr(estimator, "tree_") else estimator.estimators_
    leaves = model.apply(X)
    for t, (tree, member) in enumerate(zip(model.trees, members)):
        np.testing.assert_array_equal(leaves[:, t], tree.leaf_of_node[member.apply(X)])
        assert tree.counts.sum() == member.tree_.weighted_n_node_samples[0]
    if not model.bootstrap:
        assert model.n_rows == len(X)
        for tree, produced in zip(model.trees, model.leaf_counts_of(X, y)):
            np.testing.assert_array_equal(tree.counts, produced)


def test_bootstrap_multiplicities_are_recorded():
    X, y = binary_frame(50, 4, seed=2)
    forest = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    model = from_sklearn(forest)
    assert model.bootstrap and model.n_rows is None
    for tree, member, samples in zip(model.trees, forest.estimators_, forest.estimators_samples_):
        assert tree.multiplicities.sum() == len(samples) == 50
        assert tree.counts.sum() == member.tree_.weighted_n_node_samples[0]
        assert tree.n_samples.sum() == np.count_nonzero(tree.multiplicities)


def test_json_round_trip_keeps_everything(tmp_path):
    X, y = binary_frame(80, 5, seed=3)
    forest = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, np.where(y, "yes", "no"))
    model = from_sklearn(forest, label_name="outcome")
    path = tmp_path / "model.json"
    model.to_json(path)
    again = ReleasedModel.from_json(path)
    assert again.classes == ["no", "yes"] and again.label_name == "outcome"
    assert again.feature_names == list(X.columns) and again.bootstrap
    for a, b in zip(model.trees, again.trees):
        np.testing.assert_array_equal(a.counts, b.counts)
        np.testing.assert_array_equal(a.multiplicities, b.multiplicities)
        np.testing.assert_array_equal(a.apply(X.to_numpy(float)), b.apply(X.to_numpy(float)))


def test_json_with_fractional_counts_is_refused():
    X, y = binary_frame(30, 3, seed=4)
    data = from_sklearn(DecisionTreeClassifier().fit(X, y)).to_dict()
    data["trees"][0]["counts"][0][0] += 0.5
    with pytest.raises(ModelFormatError, match="whole numbers"):
        ReleasedModel.from_dict(data)


def test_unfitted_model_is_refused():
    with pytest.raises(UnsupportedModelError, match="not fitted: call fit"):
        from_sklearn(RandomForestClassifier())


def test_unsupported_estimator_lists_supported_ones():
    with pytest.raises(UnsupportedModelError, match="RandomForestClassifier"):
        from_sklearn(object())


def test_regressor_is_refused_as_not_yet_supported():
    X, y = binary_frame(30, 3, seed=5)
    with pytest.raises(UnsupportedModelError, match="regressor"):
        from_sklearn(RandomForestRegressor(n_estimators=2).fit(X, y.astype(float)))


@pytest.mark.parametrize("how", ["sample_weight", "class_weight"])
def test_weighted_training_is_refused(how):
    X, y = binary_frame(60, 4, seed=6)
    forest = RandomForestClassifier(n_estimators=3, bootstrap=False, random_state=0)
    if how == "class_weight":
        forest.set_params(class_weight={0: 1.0, 1: 2.5}).fit(X, y)
    else:
        forest.fit(X, y, sample_weight=np.linspace(0.3, 2.0, len(y)))
    with pytest.raises(UnsupportedModelError, match=r"not integers.*sample_weight or class_weight"):
        from_sklearn(forest)


def test_leaf_boxes_hold_exactly_the_rows_routed_to_each_leaf():
    X, y = binary_frame(90, 5, seed=7)
    X["age"] = np.random.default_rng(7).integers(18, 90, len(X))
    forest = RandomForestClassifier(n_estimators=4, bootstrap=False, random_state=0)
    model = from_sklearn(forest.fit(X, y))
    values = X.to_numpy(float)
    for tree, leaves in zip(model.trees, model.apply(values).T):
        lower, upper = tree.leaf_boxes(model.n_features)
        inside = (lower[None] < values[:, None]) & (values[:, None] <= upper[None])
        np.testing.assert_array_equal(inside.all(axis=2).argmax(axis=1), leaves)
        assert (inside.all(axis=2).sum(axis=1) == 1).all()
