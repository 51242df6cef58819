"""FeatureSchema: inference, the --schema JSON form, and binding to a model."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeClassifier

from treeleaks import FeatureSchema, SchemaError, from_sklearn

from conftest import binary_frame


def fitted(frame: pd.DataFrame, y: np.ndarray):
    return from_sklearn(DecisionTreeClassifier(random_state=0).fit(frame, y))


def test_from_frame_infers_kinds_and_ranges():
    frame = pd.DataFrame({"b": [0, 1, 1], "o": [3, 7, 5], "n": [0.5, 2.25, 1.0]})
    schema = FeatureSchema.from_frame(frame)
    assert [s.kind for s in schema.features.values()] == ["binary", "ordinal", "numerical"]
    assert (schema.features["o"].low, schema.features["o"].high) == (3, 7)
    assert (schema.features["n"].low, schema.features["n"].high) == (0.5, 2.25)


def test_json_schema_binds_and_unlisted_columns_are_binary(tmp_path):
    X, y = binary_frame(40, 4, seed=0)
    X["f1"] = 1 - X["f0"]  # a true one-hot pair
    X["age"] = np.arange(40)
    model = fitted(X, y)
    path = tmp_path / "schema.json"
    path.write_text(json.dumps({"one_hot_groups": [["f0", "f1"]], "ordinal": {"age": [0, 99]}}))
    bound = FeatureSchema.from_json(path).bind(model)
    assert bound.names == model.feature_names
    assert bound.features["f2"].kind == "binary" and bound.features["age"].kind == "ordinal"


def test_unknown_json_key_is_named():
    with pytest.raises(SchemaError, match=r"unknown schema key 'categorical'; the schema takes"):
        FeatureSchema.from_dict({"categorical": {}})


def test_schema_column_missing_from_model_is_named():
    X, y = binary_frame(30, 3, seed=1)
    schema = FeatureSchema.from_dict({"one_hot_groups": [["f0", "colour_red"]]})
    with pytest.raises(SchemaError, match="'colour_red' are not features of the model"):
        schema.bind(fitted(X, y))


def test_frame_schema_must_cover_every_model_feature():
    X, y = binary_frame(30, 3, seed=2)
    with pytest.raises(SchemaError, match=r"does not describe model feature.*'f2'"):
        FeatureSchema.from_frame(X[["f0", "f1"]]).bind(fitted(X, y))


def test_unlisted_column_split_outside_zero_one_must_be_declared():
    X, y = binary_frame(40, 2, seed=3)
    X["age"] = np.arange(40)
    y = (X["age"] > 20).astype(int).to_numpy()
    with pytest.raises(SchemaError, match=r"'age' is split at .* not binary; list it under"):
        FeatureSchema.from_dict({}).bind(fitted(X, y))


def test_inferred_schema_marks_unsplit_features_unknown():
    X, y = binary_frame(30, 3, seed=4)
    X["never"] = 0
    schema = FeatureSchema.infer(fitted(X, y))
    assert schema.features["never"].kind == "unknown"
    assert schema.features["f0"].kind == "binary"


def test_groups_reject_overlap_and_non_binary_members():
    with pytest.raises(SchemaError, match="more than one group"):
        FeatureSchema.from_dict(
            {"one_hot_groups": [["a", "b"]], "at_most_one_groups": [["b", "c"]]}
        )
    with pytest.raises(SchemaError, match="must be binary"):
        FeatureSchema.from_dict({"ordinal": {"a": [0, 3]}, "one_hot_groups": [["a", "b"]]})


def test_feasible_respects_groups():
    schema = FeatureSchema.from_frame(
        pd.DataFrame({"a": [1, 0], "b": [0, 1], "c": [0, 0]}),
        one_hot_groups=[["a", "b", "c"]],
    )
    inf = np.inf
    lower = np.array([[0.5, 0.5, -inf], [-inf, -inf, -inf], [-inf, -inf, -inf]])
    upper = np.array([[inf, inf, inf], [0.5, 0.5, 0.5], [0.5, inf, 0.5]])
    # two members forced to 1; all forced to 0; exactly one possible
    np.testing.assert_array_equal(schema.feasible(lower, upper), [False, False, True])


def test_a_ratio_split_inside_0_1_is_not_taken_for_binary():
    from sklearn.datasets import load_wine
    from sklearn.ensemble import RandomForestClassifier

    from treeleaks import from_sklearn, reconstruct

    data = load_wine(as_frame=True)
    X = data.data[["nonflavanoid_phenols", "hue"]].iloc[::4].reset_index(drop=True)
    y = data.target.iloc[::4].to_numpy()
    forest = RandomForestClassifier(n_estimators=5, bootstrap=False, random_state=0).fit(X, y)
    model = from_sklearn(forest)
    inferred = FeatureSchema.infer(model).bind(model)
    assert inferred.features["nonflavanoid_phenols"].kind == "numerical"
    result = reconstruct(model)
    assert result.verified and result.n_rows == len(X)


def test_a_range_that_excludes_occupied_leaves_is_blamed_on_the_schema():
    X, y = binary_frame(40, 3, seed=2)
    X["age"] = np.arange(40)
    y = (X["age"] > 20).to_numpy().astype(int)
    model = fitted(X, y)
    with pytest.raises(SchemaError, match=r"column 'age' is ordinal in \[0, 15\] but the leaf "
                       r"needs 20\.5 < age"):
        FeatureSchema.from_dict({"ordinal": {"age": [0, 15]}}).bind(model)
    assert FeatureSchema.from_dict({"ordinal": {"age": [0, 39]}}).bind(model).features[
        "age"].kind == "ordinal"


def test_a_group_the_data_breaks_is_blamed_on_the_schema():
    X, _ = binary_frame(60, 3, seed=5)
    model = fitted(X, X["f0"] & X["f1"])  # some training row has f0 = f1 = 1
    with pytest.raises(SchemaError, match="several columns of a group"):
        FeatureSchema.from_dict({"at_most_one_groups": [["f0", "f1"]]}).bind(model)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_feasible_boxes_are_those_holding_an_allowed_point(seed):
    """`feasible` against brute force over a small domain: one-hot and at-most-one groups, a
    free binary column and an ordinal one in 0..3."""
    frame = pd.DataFrame({"a:0": [1, 0, 0], "a:1": [0, 1, 0], "a:2": [0, 0, 1], "b": [0, 1, 0],
                          "o": [0, 2, 3], "c:0": [1, 0, 0], "c:1": [0, 0, 1]})
    schema = FeatureSchema.from_frame(frame, one_hot_groups=[["a:0", "a:1", "a:2"]],
                                      at_most_one_groups=[["c:0", "c:1"]])
    points = np.array([[a == 0, a == 1, a == 2, b, o, c == 0, c == 1]
                       for a in range(3) for b in range(2) for o in range(4)
                       for c in range(3)], dtype=float)
    rng = np.random.default_rng(seed)
    cuts = np.array([-np.inf, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.7, 3.0, np.inf])
    ends = np.sort(rng.choice(cuts, size=(400, 7, 2)), axis=2)
    lower, upper = ends[..., 0], ends[..., 1]
    inside = np.all((points[None] > lower[:, None]) & (points[None] <= upper[:, None]), axis=2)
    assert np.array_equal(schema.feasible(lower, upper), inside.any(axis=1))


@pytest.mark.parametrize("cut", [0.5, 1.00000002e-35, 0.99999994])
def test_a_lone_cut_where_frameworks_cut_a_zero_one_column_is_binary(cut: float) -> None:
    from treeleaks.ir.schema import cuts_zero_one

    assert cuts_zero_one(cut)


def test_a_scaled_two_valued_column_is_numerical_and_filled_at_the_tables_scale() -> None:
    """scikit-learn's scaled diabetes holds sex as -0.0446 and 0.0507, cut at 0.003: read
    as binary it was filled 0 and 1, twenty times its range away."""
    from sklearn.datasets import load_diabetes
    from sklearn.ensemble import RandomForestRegressor

    from treeleaks import reconstruct

    X, y = load_diabetes(return_X_y=True)
    model = from_sklearn(RandomForestRegressor(n_estimators=20, random_state=0).fit(X, y),
                         allow_regression=True)
    assert FeatureSchema.infer(model).features["x1"].kind == "numerical"
    rec = reconstruct(model, time_limit=60)
    assert rec.verified and rec.n_rows == len(X), rec.message
    sex = rec.rows["x1"].to_numpy(dtype=float)
    assert np.abs(sex).max() < 0.2  # at the other columns' scale, not a unit apart
    spread = X[:, 1].max() - X[:, 1].min()
    assert np.abs(np.sort(sex) - np.sort(X[:, 1])).mean() < 0.25 * spread
