"""The IR and the scikit-learn frontend: faithful counts, routing, JSON, clear refusals."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier, RandomForestRegressor
from sklearn.tree import DecisionTreeClassifier

from treeleaks import ReleasedModel, UnsupportedModelError, from_sklearn
from treeleaks.ir.model import ModelFormatError

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


def test_bootstrap_draws_are_recorded():
    X, y = binary_frame(50, 4, seed=2)
    forest = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    model = from_sklearn(forest)
    assert model.bootstrap and model.n_rows is None
    for tree, member, samples in zip(model.trees, forest.estimators_, forest.estimators_samples_):
        assert tree.draws.sum() == len(samples) == 50
        assert tree.counts.sum() == member.tree_.weighted_n_node_samples[0]
        assert tree.n_samples.sum() == np.count_nonzero(tree.draws)


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
        np.testing.assert_array_equal(a.draws, b.draws)
        np.testing.assert_array_equal(a.apply(X.to_numpy(float)), b.apply(X.to_numpy(float)))


def test_json_with_fractional_counts_is_refused():
    X, y = binary_frame(30, 3, seed=4)
    data = from_sklearn(DecisionTreeClassifier().fit(X, y)).to_dict()
    data["trees"][0]["counts"][0][0] += 0.5
    with pytest.raises(ModelFormatError, match="whole number of training rows"):
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


@pytest.mark.parametrize("bootstrap", [False, True])
@pytest.mark.parametrize("how", ["sample_weight", "class_weight"])
def test_integer_weights_are_never_reconstructed_as_extra_rows(bootstrap, how):
    """Whole-number weights give whole-number counts: only the unweighted row counts that
    scikit-learn stores beside them (or the bootstrap draws) reveal the weighting. A bootstrap
    forest of scikit-learn >= 1.9 uses the weights only to draw rows, which the recomputed
    draws reproduce: then the model is accepted and its counts are the draws."""
    X, y = binary_frame(60, 4, seed=6)
    forest = RandomForestClassifier(n_estimators=3, bootstrap=bootstrap, random_state=0)
    if how == "class_weight":
        forest.set_params(class_weight={0: 1, 1: 3}).fit(X, y)
    else:
        forest.fit(X, y, sample_weight=np.where(np.arange(len(y)) % 3 == 0, 2, 1))
    if not bootstrap:
        with pytest.raises(UnsupportedModelError, match="sample_weight or class_weight"):
            from_sklearn(forest)
        return
    try:
        model = from_sklearn(forest)
    except UnsupportedModelError as exc:  # scikit-learn < 1.9 trains on the weights
        assert "sample_weight or class_weight" in str(exc)
        return
    for tree, member in zip(model.trees, forest.estimators_):
        assert tree.counts.sum() == tree.draws.sum()
        assert np.count_nonzero(tree.draws) == member.tree_.n_node_samples[0]


@pytest.mark.parametrize("bootstrap", [False, True])
def test_weighted_counts_in_a_json_model_are_refused(bootstrap):
    X, y = binary_frame(60, 4, seed=6)
    data = from_sklearn(
        RandomForestClassifier(n_estimators=3, bootstrap=bootstrap, random_state=0).fit(X, y)
    ).to_dict()
    leaf_counts = data["trees"][1]["counts"]
    leaf_counts[0] = [2 * c for c in leaf_counts[0]]  # as integer weights would give
    with pytest.raises(UnsupportedModelError, match=r"tree 1.*sample_weight or class_weight"):
        ReleasedModel.from_dict(data)


def test_draws_that_do_not_match_the_trees_are_refused():
    X, y = binary_frame(60, 4, seed=6)
    data = from_sklearn(RandomForestClassifier(n_estimators=2, random_state=0).fit(X, y)).to_dict()
    draws = data["trees"][0]["multiplicities"]
    first, second = draws.index(0), next(i for i, d in enumerate(draws) if d >= 2)
    draws[first], draws[second] = 1, draws[second] - 1  # same number of draws, one more row
    with pytest.raises(ModelFormatError, match=r"draws.*do not match"):
        ReleasedModel.from_dict(data)


def test_a_feature_called_label_leaves_the_label_column_another_name():
    X, y = binary_frame(40, 3, seed=2)
    X = X.rename(columns={"f2": "label"})
    model = from_sklearn(RandomForestClassifier(n_estimators=2, bootstrap=False).fit(X, y))
    assert model.label_name == "label_1" and "label" in model.feature_names
    data = model.to_dict() | {"label_name": "label"}
    with pytest.raises(ModelFormatError, match="label column 'label' has the name of a feature"):
        ReleasedModel.from_dict(data)


def valid_tree_dict() -> dict:
    X, y = binary_frame(60, 4, seed=3)
    return from_sklearn(DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)).to_dict()


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("bootstrap", "false", r"'bootstrap': input should be a valid boolean"),
        ("feature_names", "f0f1f2f3", r"'feature_names': input should be a valid list"),
        ("feature_names", ["f0", "f1", "f0", "f3"], r"lists 'f0' twice"),
        ("classes", [0, 0], r"'classes': lists 0 twice"),
        ("classes", None, r"'classes': input should be a valid list"),
        ("noise", "laplace", r"'noise': input should be .*(object|dictionary)"),
        ("facts", [], r"'facts': input should be a valid dictionary"),
        ("trees", [], r"'trees': list should have at least 1 item"),
        ("boostrap", True, r"unknown model key 'boostrap'"),
        ("version", True, r"'version': input should be a valid integer"),
        ("version", 2, r"format version 2 is not supported"),
    ],
)
def test_json_fields_of_the_wrong_type_are_named(field, value, message):
    data = valid_tree_dict() | {field: value}
    with pytest.raises(ModelFormatError, match=message):
        ReleasedModel.from_dict(data)


@pytest.mark.parametrize(
    "field, index, value, message",
    [
        ("feature", 0, 1.5, r"'trees\[0\]\.feature\[0\]': input should be a valid integer"),
        ("threshold", 0, float("nan"), r"'trees\[0\]\.threshold\[0\]': a threshold must be"),
        ("threshold", 0, None, r"threshold is not a finite number"),
        ("threshold", 0, float("inf"), r"'trees\[0\]\.threshold\[0\]': a threshold must be"),
        ("n_samples", 0, [2], r"'trees\[0\]\.n_samples\[0\]': input should be a valid integer"),
        ("counts", 0, [-1, 3], r"negative count"),
        ("counts", 0, [3], r"'trees\[0\]\.counts': every leaf needs one count per class"),
        ("left", 0, 0, r"one binary tree rooted at node 0"),
    ],
)
def test_tree_fields_out_of_range_are_named(field, index, value, message):
    data = valid_tree_dict()
    data["trees"][0][field][index] = value
    with pytest.raises(ModelFormatError, match=message):
        ReleasedModel.from_dict(data)


def test_nodes_unreachable_from_the_root_are_refused():
    data = valid_tree_dict()
    tree = data["trees"][0]
    leaf = tree["feature"].index(-2) if -2 in tree["feature"] else tree["feature"].index(-1)
    # Make an internal node its own child: every node still has one parent, but a loop.
    internal = next(n for n in range(1, len(tree["feature"])) if tree["feature"][n] >= 0)
    parent = next(p for p in range(len(tree["feature"]))
                  if internal in (tree["left"][p], tree["right"][p]))
    side = "left" if tree["left"][parent] == internal else "right"
    tree[side][parent], tree["left"][internal] = tree["left"][internal], internal
    assert leaf >= 0
    with pytest.raises(ModelFormatError, match="one binary tree rooted at node 0"):
        ReleasedModel.from_dict(data)


def test_depth_does_not_depend_on_node_numbering():
    # Root 0 splits into leaf 1 and node 4; node 4 splits into leaves 2 and 3.
    tree = ReleasedModel.from_dict(valid_tree_dict() | {"trees": [{
        "feature": [0, -1, -1, -1, 1], "threshold": [0.5, None, None, None, 0.5],
        "left": [1, -1, -1, -1, 2], "right": [4, -1, -1, -1, 3],
        "leaf_of_node": [-1, 0, 1, 2, -1], "counts": [[1, 0], [0, 1], [1, 1]]}]}).trees[0]
    assert tree.depth == 2


def test_a_forest_whose_members_are_not_trees_is_refused():
    from sklearn.linear_model import LogisticRegression

    X, y = binary_frame(40, 3, seed=2)
    forest = RandomForestClassifier(n_estimators=2, bootstrap=False).fit(X, y)
    forest.estimators_[1] = LogisticRegression().fit(X, y)
    with pytest.raises(UnsupportedModelError, match="holds a LogisticRegression where a fitted"):
        from_sklearn(forest)
    forest.estimators_ = []
    with pytest.raises(UnsupportedModelError, match="holds no trees"):
        from_sklearn(forest)
