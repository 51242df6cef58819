"""Materializing rows: fills placed by the model's thresholds, proofs and widths."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from treeleaks import FeatureSchema, from_sklearn, reconstruct
from treeleaks.counts.cells import enumerate_cells
from treeleaks.counts.certainty import lower_bounds
from treeleaks.counts.materialize import cell_values, feature_reach, rows_from_counts
from treeleaks.counts.solve import solve
from treeleaks.counts.system import build_system, propagate
from treeleaks.evaluation.metrics import evaluate
from treeleaks.ir.schema import FeatureSpec

from conftest import binary_frame

INF = np.inf
# One feature split at 1, 2, 3, 4: the five cells between and past the thresholds.
LOWER = np.array([[-INF], [1.0], [2.0], [3.0], [4.0]])
UPPER = np.array([[1.0], [2.0], [3.0], [4.0], [INF]])
WEIGHT = np.array([2.0, 1.0, 1.0, 1.0, 3.0])


def one_column(kind: str, low: float, high: float) -> FeatureSchema:
    return FeatureSchema({"x": FeatureSpec(kind, low, high)})


def iris(schema_range: tuple[float, float] | None = None):
    """Iris, its schema (observed ranges, or ``schema_range`` for every column) and truth."""
    data = load_iris(as_frame=True)
    X, y = data.data, data.target.to_numpy()
    schema = FeatureSchema.from_frame(X)
    if schema_range is not None:
        schema = FeatureSchema({n: FeatureSpec("numerical", *schema_range) for n in X.columns})
    return X, y, schema


def iris_result(seed: int, schema: FeatureSchema, X: pd.DataFrame, y: np.ndarray):
    forest = RandomForestClassifier(n_estimators=20, bootstrap=False, random_state=seed)
    model = from_sklearn(forest.fit(X, y), label_name="y")
    return model, reconstruct(model, schema)


# --- fills from the thresholds ---------------------------------------------------------


def test_reach_spreads_the_rows_past_the_extreme_thresholds_at_the_inner_density():
    # 3 rows lie between thresholds 1 and 4 (one per unit); 2 lie below 1 and 3 above 4.
    # Spacing 1, so the reach ends 1 + 2 units below 1 and 1 + 3 units above 4.
    reach_low, reach_high = feature_reach(
        one_column("numerical", -INF, INF), [np.array([1.0, 2.0, 3.0, 4.0])], LOWER, UPPER,
        WEIGHT,
    )
    np.testing.assert_allclose([reach_low[0], reach_high[0]], [-2.0, 8.0])


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (-INF, INF, [-0.5, 1.5, 2.5, 3.5, 6.0]),  # end intervals: middle of their reach
        (0.0, 100.0, [0.5, 1.5, 2.5, 3.5, 6.0]),  # a wide range does not pull fills out
        (0.0, 5.0, [0.5, 1.5, 2.5, 3.5, 4.5]),  # a tight range cuts the reach
    ],
)
def test_numerical_fills_sit_between_thresholds_or_amid_the_rows_past_them(low, high, expected):
    values = cell_values(one_column("numerical", low, high), LOWER, UPPER, WEIGHT)
    np.testing.assert_allclose(values.value[:, 0], expected)
    assert not values.determined.any()


def test_ordinal_fills_round_into_the_interval():
    lower, upper = LOWER + 0.5, UPPER + 0.5  # splits at 1.5 .. 4.5: values 2, 3, 4 pinned
    values = cell_values(one_column("ordinal", 0, 100), lower, upper, WEIGHT)
    np.testing.assert_array_equal(values.value[:, 0], [1.0, 2.0, 3.0, 4.0, 7.0])
    np.testing.assert_array_equal(values.determined[:, 0], [False, True, True, True, False])


def test_thresholds_default_to_the_box_bounds():
    schema = one_column("numerical", 0.0, 100.0)
    given = cell_values(schema, LOWER, UPPER, WEIGHT, thresholds=[np.array([1.0, 2, 3, 4])])
    derived = cell_values(schema, LOWER, UPPER, WEIGHT)
    np.testing.assert_array_equal(given.value, derived.value)


def test_schema_range_at_odds_with_the_splits_still_fills_inside_the_box():
    # Range [10, 20] lies past every split: the last cell's fill is its point nearest the data.
    values = cell_values(one_column("numerical", 10.0, 20.0), LOWER, UPPER, WEIGHT)
    assert values.value[4, 0] == 10.0


# --- widths ----------------------------------------------------------------------------


def test_width_is_the_share_of_the_range_or_of_the_reach():
    ranged = cell_values(one_column("numerical", 0.0, 100.0), LOWER, UPPER, WEIGHT)
    np.testing.assert_allclose(ranged.width[:, 0], [0.01, 0.01, 0.01, 0.01, 0.96])
    open_ended = cell_values(one_column("numerical", -INF, INF), LOWER, UPPER, WEIGHT)
    np.testing.assert_allclose(open_ended.width[:, 0], [0.3, 0.1, 0.1, 0.1, 0.4])  # reach [-2, 8]


def test_width_is_zero_when_pinned_and_nan_for_binary_columns():
    schema = FeatureSchema({"n": FeatureSpec("ordinal", 0, 9), "b": FeatureSpec("binary", 0, 1)})
    lower, upper = np.array([[2.5, -INF], [3.5, 0.5]]), np.array([[3.5, 0.5], [9.0, INF]])
    values = cell_values(schema, lower, upper, np.ones(2))
    np.testing.assert_allclose(values.width[:, 0], [0.0, 5 / 9])
    assert np.isnan(values.width[:, 1]).all()


# --- real forests ----------------------------------------------------------------------


@pytest.mark.parametrize("schema_range", [None, (0.0, 10.0)])
def test_iris_fills_stay_inside_their_box_and_range_and_near_the_data(schema_range):
    X, y, schema = iris(schema_range)
    model, result = iris_result(0, schema, X, y)
    assert result.verified
    rows, lower, upper = result.rows[X.columns], result.lower, result.upper
    low, high = schema.range_arrays()
    assert ((rows > lower) | (lower == low)).all().all()
    assert (rows <= upper).all().all()
    assert ((rows >= low) & (rows <= high)).all().all()
    # Filled values stay near the data, never out at a loose schema bound: within the
    # observed extent widened by one threshold spacing.
    spacing = np.array([np.median(np.diff(t)) for t in model.thresholds()])
    assert (rows.max() <= X.max() + spacing).all() and (rows.min() >= X.min() - spacing).all()


@pytest.mark.parametrize("schema_range", [None, (0.0, 10.0)])
def test_iris_error_beats_the_random_baseline(schema_range):
    X, y, schema = iris(schema_range)
    for seed in range(3):
        _, result = iris_result(seed, schema, X, y)
        truth = X.assign(y=y)
        for scored in (schema, FeatureSchema.from_frame(X)):
            score = evaluate(truth, result.rows, scored, label="y")
            assert score.error < 0.7 * score.baseline_error


def test_wine_ordinal_fills_are_integers_in_their_interval_and_beat_the_baseline():
    data = load_wine(as_frame=True)
    X, y = data.data[["alcohol", "malic_acid", "magnesium", "proline"]], data.target.to_numpy()
    schema = FeatureSchema.from_frame(X)  # magnesium and proline are whole numbers: ordinal
    forest = RandomForestClassifier(n_estimators=20, bootstrap=False, random_state=0)
    model = from_sklearn(forest.fit(X, y), label_name="y")
    result = reconstruct(model, schema)
    assert result.verified
    columns = ["magnesium", "proline"]
    ordinal, lower, upper = (frame[columns] for frame in (result.rows, result.lower, result.upper))
    assert (ordinal == ordinal.round()).all().all()
    assert ((lower <= ordinal) & (ordinal <= upper)).all().all()
    score = evaluate(X.assign(y=y), result.rows, schema, label="y")
    assert score.error < 0.5 * score.baseline_error


def test_full_depth_forest_on_numerical_data_proves_rows_that_really_were_trained_on():
    X, y, schema = iris()
    _, result = iris_result(0, schema, X, y)
    assert result.proven_rows > 0
    assert result.proven_rows <= int(result.proven_pattern.sum())
    low = schema.range_arrays()[0]
    truth = X.to_numpy()
    proven = result.proven
    boxes = np.column_stack([
        result.lower.to_numpy()[proven], result.upper.to_numpy()[proven],
        result.rows["y"].to_numpy(dtype=float)[proven],
    ])
    m = truth.shape[1]
    for box, n_proven in zip(*np.unique(boxes, axis=0, return_counts=True)):
        box_low, box_high, label = box[:m], box[m : 2 * m], box[-1]
        inside = ((truth > box_low) | (box_low == low)) & (truth <= box_high)
        assert (inside.all(axis=1) & (y == label)).sum() >= n_proven


def test_unknown_columns_do_not_block_a_proof():
    X, y = binary_frame(30, 4, seed=10)
    X["constant"] = 1
    model = from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y), label_name="y")
    result = reconstruct(model)
    assert result.verified and result.proven_rows > 0
    assert result.rows["constant"][result.proven].isna().all()


def test_binary_rows_are_proven_only_where_every_binary_value_is_pinned():
    X, y = binary_frame(60, 5, seed=0)
    forest = RandomForestClassifier(n_estimators=5, max_depth=3, bootstrap=False, random_state=0)
    model = from_sklearn(forest.fit(X, y), label_name="y")
    result = reconstruct(model, FeatureSchema.from_frame(X))
    open_rows = result.free.to_numpy().any(axis=1)
    assert (result.proven_pattern & open_rows).any() and result.proven.any()
    np.testing.assert_array_equal(result.proven, result.proven_pattern & ~open_rows)


def materialize(model, schema: FeatureSchema, **options) -> dict:
    """Run the engine's steps up to `rows_from_counts`, passing it ``options``."""
    bound = schema.bind(model)
    cells = enumerate_cells(model, bound)
    system = propagate(build_system(model, cells))
    counts = solve(system, time.perf_counter() + 20).counts
    lower = lower_bounds(system, counts, time.perf_counter() + 20).lower
    return rows_from_counts(model, bound, cells, system.cell, system.cls, counts, lower, **options)


def test_width_comes_only_when_asked_and_measures_each_interval_against_its_range():
    X, y, _ = iris()
    X = X.iloc[:, :3].assign(wide=(X.iloc[:, 3] > 1.0).astype(int))
    schema = FeatureSchema.from_frame(X)
    forest = RandomForestClassifier(n_estimators=10, bootstrap=False, random_state=0)
    model = from_sklearn(forest.fit(X, y), label_name="y")
    assert "width" not in materialize(model, schema)
    frames = materialize(model, schema, with_width=True)
    width, free = frames["width"], frames["free"]
    assert width.shape == free.shape and list(width.columns) == list(free.columns)
    assert width["wide"].isna().all()
    numerical = list(X.columns[:3])
    low, high = (bound[:3] for bound in schema.range_arrays())
    expected = (frames["upper"][numerical] - frames["lower"][numerical]) / (high - low)
    np.testing.assert_allclose(width[numerical], expected)
    assert (width[numerical] > 0).all().all() and (width[numerical] < 1).all().all()


def test_a_numerical_box_one_float_wide_is_filled_with_that_float():
    top = 11.56
    lower = np.array([[np.nextafter(top, -np.inf)]])
    values = cell_values(one_column("numerical", 0.0, 100.0), lower, np.array([[top]]),
                         np.array([1.0]))
    assert values.value[0, 0] == top and values.determined[0, 0]
