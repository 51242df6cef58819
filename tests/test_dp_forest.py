"""The DP random forest: exact counts at ε=inf, data-blind complete trees, truncated Laplace
noise, feasible splits, the scikit-learn contract, clear refusals, and the IR frontend."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from treeleaks import FeatureSchema, ReleasedModel, UnsupportedModelError
from treeleaks.defences.dp_forest import DPRandomForestClassifier
from treeleaks.frontends.dp import from_dp_forest
from treeleaks.ir.schema import FeatureSpec

from conftest import binary_frame

INF = float("inf")


def mixed_frame(n_rows: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """A binary, an ordinal in [0, 9] and a numerical column in [0, 1]; two labels."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "b": rng.integers(0, 2, n_rows),
        "o": rng.integers(0, 10, n_rows),
        "n": rng.random(n_rows),
    })
    y = ((frame["o"] > 4) ^ (frame["b"] == 1)).to_numpy().astype(int)
    return frame, y


MIXED_SCHEMA = {"ordinal": {"o": [0, 9]}, "numerical": {"n": [0, 1]}}


def true_counts(tree, X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    counts = np.zeros(tree.counts.shape, dtype=np.int64)
    np.add.at(counts, (tree.apply(X), labels), 1)
    return counts


def test_infinite_epsilon_releases_the_exact_counts():
    X, y = mixed_frame(300, seed=0)
    forest = DPRandomForestClassifier(n_estimators=7, max_depth=4, epsilon=INF, random_state=0)
    forest.fit(X, y)
    for tree in forest.trees_:
        np.testing.assert_array_equal(tree.counts, true_counts(tree, X.to_numpy(float), y))
    assert forest.n_rows_ == 300 and list(forest.feature_names_in_) == ["b", "o", "n"]


@pytest.mark.parametrize("depth", [1, 3, 6])
def test_every_tree_is_complete(depth):
    X, y = mixed_frame(100, seed=1)
    forest = DPRandomForestClassifier(n_estimators=5, max_depth=depth, random_state=1).fit(X, y)
    for tree in forest.trees_:
        tree.validate(n_classes=2, n_features=3)
        # A binary tree of depth d has 2^d leaves only when every leaf is at depth d.
        assert tree.depth == depth and tree.n_leaves == 2**depth
        assert (tree.feature >= 0).sum() == 2**depth - 1


def test_splits_read_neither_the_data_nor_epsilon():
    schema = FeatureSchema.from_dict(MIXED_SCHEMA)
    (X1, y1), (X2, _) = mixed_frame(50, seed=2), mixed_frame(400, seed=3)
    y2 = np.arange(400) % 3  # another size and another number of classes
    fits = [
        DPRandomForestClassifier(8, 5, eps, schema, random_state=4).fit(X, y)
        for X, y, eps in [(X1, y1, 1.0), (X2, y2, 0.1), (X2, y2, INF)]
    ]
    for trees in zip(*(f.trees_ for f in fits)):
        for tree in trees[1:]:
            np.testing.assert_array_equal(tree.feature, trees[0].feature)
            np.testing.assert_array_equal(tree.threshold, trees[0].threshold)


def trunc_laplace_pmf(count: int, scale: float, values: np.ndarray) -> np.ndarray:
    """P(trunc(count + Y) = v) for Y ~ Laplace(scale): v collects (v-1, v] below 0,
    (-1, 1) at 0 and [v, v+1) above."""
    cdf = stats.laplace(loc=count, scale=scale).cdf
    lo = np.where(values > 0, values, np.where(values < 0, values - 1, -1))
    hi = np.where(values > 0, values + 1, np.where(values < 0, values, 1))
    return cdf(hi) - cdf(lo)  # the distribution is continuous: open or closed ends agree


def test_noise_is_laplace_of_scale_t_over_epsilon_truncated_toward_zero():
    # Four 0/1 columns and depth 5: each leaf at depth 4 pins every column, so the last
    # splits leave one child empty. Half the counts are 0, the rest about 50.
    X, _ = binary_frame(1600, 4, seed=5)
    y = np.random.default_rng(5).integers(0, 2, 1600)
    scale = 2.0
    forest = DPRandomForestClassifier(50, 5, epsilon=50 / scale, random_state=5).fit(X, y)
    true = np.stack([true_counts(t, X.to_numpy(float), y) for t in forest.trees_]).ravel()
    released = np.stack([t.counts for t in forest.trees_]).ravel()
    assert (true == 0).sum() == 1600 and (true > 20).sum() == 1600

    values = np.arange(-200, 201)
    pmf = np.array([trunc_laplace_pmf(n, scale, values + n) for n in true])
    noise = released - true
    # Goodness of fit over all cells: bins of the noise, the tails pooled.
    edges = [-np.inf, *range(-6, 7), np.inf]
    observed = np.histogram(noise, bins=np.array(edges) + 0.5)[0]
    expected = np.array([pmf[:, (values > a) & (values < b)].sum()
                         for a, b in itertools.pairwise(np.array(edges) + 0.5)])
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    mean_abs = (pmf * np.abs(values)).sum(axis=1)
    se = np.sqrt((pmf * values**2).sum() - (mean_abs**2).sum()) / len(true)
    assert abs(np.abs(noise).mean() - mean_abs.mean()) < 4 * se
    # Empty cells: trunc(Y) is symmetric and 0 takes (-1, 1).
    empty = released[true == 0]
    assert abs((empty == 0).mean() - (1 - np.exp(-1 / scale))) < 0.05
    assert abs((empty > 0).mean() - (empty < 0).mean()) < 0.06
    # Full cells: truncation is a floor there, so the noise averages about -1/2, not 0.
    full = noise[true > 20]
    assert abs((full == 0).mean() - (1 - np.exp(-1 / scale)) / 2) < 0.05
    assert -0.75 < full.mean() < -0.25


def test_predictions():
    rng = np.random.default_rng(6)
    X = rng.random((400, 3))
    y = np.where(X[:, 0] > 0.5, "yes", "no")
    forest = DPRandomForestClassifier(30, 5, epsilon=INF, random_state=6).fit(X, y)
    proba = forest.predict_proba(X[:10])
    assert proba.shape == (10, 2) and np.allclose(proba.sum(axis=1), 1)
    assert list(forest.classes_) == ["no", "yes"] and forest.predict(X[:10]).shape == (10,)
    assert (forest.predict(X) == y).mean() > 0.9
    assert not hasattr(forest, "feature_names_in_") and forest.schema_.names == ["x0", "x1", "x2"]


def test_negative_counts_vote_nothing_and_no_vote_is_uniform():
    X, y = binary_frame(60, 3, seed=7)
    forest = DPRandomForestClassifier(3, 2, epsilon=INF, random_state=7).fit(X, y)
    for tree in forest.trees_:
        tree.counts[:] = -5
    np.testing.assert_array_equal(forest.predict_proba(X.iloc[:4]), np.full((4, 2), 0.5))
    forest.trees_[0].counts[:, 1] = 3
    np.testing.assert_array_equal(forest.predict_proba(X.iloc[:4]), [[0, 1]] * 4)


@parametrize_with_checks([DPRandomForestClassifier()])
def test_scikit_learn_contract(estimator, check):
    check(estimator)


@pytest.mark.parametrize("state", [lambda: 8, lambda: np.random.default_rng(8)],
                         ids=["int", "generator"])
def test_seeded_fits_are_reproducible(state):
    X, y = mixed_frame(200, seed=8)
    one, two = (DPRandomForestClassifier(random_state=state()).fit(X, y) for _ in range(2))
    for a, b in zip(one.trees_, two.trees_):
        np.testing.assert_array_equal(a.threshold, b.threshold)
        np.testing.assert_array_equal(a.counts, b.counts)
    other = DPRandomForestClassifier(random_state=9).fit(X, y)
    assert any((a.feature != b.feature).any() for a, b in zip(one.trees_, other.trees_))


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"epsilon": 0}, "epsilon must be a number > 0"),
        ({"epsilon": -1.0}, "epsilon must be a number > 0"),
        ({"epsilon": float("nan")}, "epsilon must be a number > 0"),
        ({"epsilon": "1"}, "epsilon must be a number > 0"),
        ({"max_depth": 0}, "max_depth must be an integer >= 1"),
        ({"max_depth": 2.5}, "max_depth must be an integer >= 1"),
        ({"max_depth": True}, "max_depth must be an integer >= 1"),
        ({"n_estimators": 0}, "n_estimators must be an integer >= 1"),
    ],
)
def test_bad_parameters_are_refused(params, match):
    X, y = binary_frame(20, 2, seed=10)
    with pytest.raises(ValueError, match=match):
        DPRandomForestClassifier(**params).fit(X, y)


def test_bad_data_is_refused():
    X, y = binary_frame(20, 2, seed=11)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        DPRandomForestClassifier().fit(X, y[:-1])
    with pytest.raises(ValueError, match="0 sample"):
        DPRandomForestClassifier().fit(X.iloc[:0], y[:0])
    with pytest.raises(NotFittedError):
        DPRandomForestClassifier().predict(X)


@pytest.mark.parametrize(
    ("schema", "match"),
    [
        ({"ordinal": {"age": [0, 9]}}, r"describes column\(s\) 'age' that X does not have"),
        ({"numerical": {"f0": [0, 1]}}, "does not describe column 'o' and its values are not"),
        ({"ordinal": {"o": [0, 5]}}, r"column 'o' holds \d, outside its domain"),
        ({"ordinal": {"o": [0, 9]}, "one_hot_groups": [["f0", "f1"]]},
         "ones in the one-hot group"),
        ({"numerical": {"o": [0, float("inf")]}}, "column 'o' has no finite domain"),
    ],
)
def test_schemas_that_do_not_fit_the_data_are_refused(schema, match):
    X, y = binary_frame(30, 2, seed=12)
    X["o"] = np.arange(30) % 10
    with pytest.raises(ValueError, match=match):
        DPRandomForestClassifier(schema=FeatureSchema.from_dict(schema)).fit(X, y)


def test_a_complete_schema_must_be_finite_and_cover_every_column():
    X, y = binary_frame(30, 2, seed=13)
    unknown = FeatureSchema({"f0": FeatureSpec("unknown"), "f1": FeatureSpec("binary", 0, 1)})
    with pytest.raises(ValueError, match="column 'f0' has no finite domain"):
        DPRandomForestClassifier(schema=unknown).fit(X, y)
    X["g"] = 1
    with pytest.raises(ValueError, match="does not describe column 'g'; give its range"):
        DPRandomForestClassifier(schema=FeatureSchema.from_frame(X[["f0", "f1"]])).fit(X, y)


def test_ordinal_and_numerical_thresholds_lie_inside_their_domains_and_regions():
    X, y = mixed_frame(100, seed=14)
    X["o"] += 2
    schema = FeatureSchema.from_dict({"ordinal": {"o": [2, 11]}, "numerical": {"n": [-1, 3]}})
    forest = DPRandomForestClassifier(40, 6, schema=schema, random_state=14).fit(X, y)
    seen = set()
    for tree in forest.trees_:
        lower, upper = tree.node_boxes(3)
        internal = np.flatnonzero(tree.feature >= 0)
        f, t = tree.feature[internal], tree.threshold[internal]
        # The numerical column always cuts, so no node is stuck: both halves hold rows.
        both = np.concatenate([tree.left[internal], tree.right[internal]])
        assert forest.schema_.feasible(lower[both], upper[both]).all()
        ordinal = t[f == 1]
        assert np.isin(ordinal, np.arange(2, 11) + 0.5).all()
        assert ((t[f == 2] > -1) & (t[f == 2] < 3)).all()
        seen.update(ordinal.tolist())
    assert seen == set(np.arange(2, 11) + 0.5)  # every cut point gets drawn


@settings(max_examples=25, deadline=None)
@given(
    group=st.integers(2, 4),
    exactly_one=st.booleans(),
    extra=st.integers(0, 2),
    depth=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_grouped_columns_are_split_only_where_both_halves_hold_rows(
    group, exactly_one, extra, depth, seed
):
    names = [f"g{j}" for j in range(group)] + [f"b{j}" for j in range(extra)]
    key = "one_hot_groups" if exactly_one else "at_most_one_groups"
    schema = FeatureSchema.from_dict({key: [names[:group]]})
    # Every row the schema allows, enumerated.
    rows = np.array([r for r in itertools.product((0, 1), repeat=len(names))
                     if sum(r[:group]) == 1 or (not exactly_one and sum(r[:group]) == 0)])
    y = np.arange(len(rows)) % 2
    frame = pd.DataFrame(rows, columns=names)
    forest = DPRandomForestClassifier(5, depth, INF, schema, random_state=seed).fit(frame, y)
    for tree in forest.trees_:
        lower, upper = tree.node_boxes(len(names))
        holds = ((rows[None] > lower[:, None]) & (rows[None] <= upper[:, None])).all(axis=2)
        for node in np.flatnonzero(tree.feature >= 0):
            inside = rows[holds[node]]
            splittable = len(inside) > 0 and (inside.min(axis=0) != inside.max(axis=0)).any()
            children = holds[tree.left[node]].any(), holds[tree.right[node]].any()
            assert all(children) == splittable


def test_released_model_round_trips_through_json_with_its_noise():
    X, y = mixed_frame(120, seed=15)
    schema = FeatureSchema.from_dict(MIXED_SCHEMA)
    forest = DPRandomForestClassifier(6, 3, 2.0, schema, random_state=15).fit(X, y)
    model = from_dp_forest(forest)
    assert (model.noise.kind, model.noise.epsilon, model.noise.scale) == ("laplace", 2.0, 3.0)
    assert model.facts["n_rows"] == 120 and model.facts["max_depth"] == 3
    back = ReleasedModel.from_json(model.to_json())
    assert back.noise == model.noise and back.facts == model.facts and not back.bootstrap
    assert back.classes == [0, 1] and back.feature_names == ["b", "o", "n"]
    for a, b in zip(back.trees, forest.trees_):
        np.testing.assert_array_equal(a.counts, b.counts)
        np.testing.assert_array_equal(a.threshold, b.threshold)
    bound = FeatureSchema.from_dict(json.loads(back.facts["schema"])).bind(back)
    assert bound.features == forest.schema_.features
    model.trees[0].counts[:] = 0  # the model holds copies
    assert forest.trees_[0].counts.any()


def test_exact_forest_exports_without_noise_and_under_given_names():
    X, y = mixed_frame(80, seed=16)
    forest = DPRandomForestClassifier(3, 2, INF, random_state=16).fit(X.to_numpy(), y)
    model = from_dp_forest(forest, feature_names=["p", "q", "r"])
    assert model.noise is None and model.n_rows == 80
    assert set(json.loads(model.facts["schema"])["ordinal"]) == {"q"}
    with pytest.raises(UnsupportedModelError, match="2 feature names given"):
        from_dp_forest(forest, feature_names=["p", "q"])
    with pytest.raises(UnsupportedModelError, match="not fitted"):
        from_dp_forest(DPRandomForestClassifier())
