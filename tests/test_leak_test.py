"""treeleaks.evaluation.leak_or_distribution (the leak test), and the per-row errors of
metrics.row_errors it uses."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linear_sum_assignment
from sklearn.ensemble import IsolationForest

from treeleaks.evaluation import metrics
from treeleaks.evaluation.leak_or_distribution import LeakTest, leak_test
from treeleaks.evaluation.metrics import evaluate, row_distances, row_errors
from treeleaks.ir.schema import FeatureSchema
from treeleaks.ir.schema_columns import feature_scales

N_TRAIN = 40


def sparse_frame(n_rows: int, n_features: int, seed: int, p: float = 0.1) -> pd.DataFrame:
    """Binary rows near the all-zero row (so an isolation forest finds inliers and outliers)
    with a label: many duplicate rows."""
    rng = np.random.default_rng(seed)
    X = (rng.random((n_rows, n_features)) < p).astype(int)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(n_features)])
    frame["y"] = X[:, 0] ^ (rng.random(n_rows) < 0.2)
    return frame


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, pd.DataFrame, FeatureSchema]:
    """Training rows, a disjoint population of the same distribution, and their schema."""
    frame = sparse_frame(40 * N_TRAIN, 8, seed=0)
    return frame.iloc[:N_TRAIN], frame.iloc[N_TRAIN:], FeatureSchema.from_frame(frame)


# --- row_errors ------------------------------------------------------------------------


@pytest.mark.parametrize("solver", ["lsa", "dense flow", "graph flow"])
@pytest.mark.parametrize("seed", range(6))
def test_row_errors_average_to_evaluate_error_and_total_the_optimal_cost(
    solver: str, seed: int, monkeypatch: pytest.MonkeyPatch
):
    if solver != "lsa":
        monkeypatch.setattr(metrics, "_LSA_MAX_CELLS", 0)
    if solver == "dense flow":
        monkeypatch.setattr(metrics, "_product_graph", lambda *args: None)
    rng = np.random.default_rng(seed)
    truth = sparse_frame(int(rng.integers(5, 40)), 4, seed, p=0.4)
    truth["level"] = rng.integers(0, 4, len(truth))  # an ordinal column: fractional costs
    recon = sparse_frame(int(rng.integers(5, 40)), 4, seed + 100, p=0.4)
    recon["level"] = rng.integers(0, 4, len(recon))
    schema = FeatureSchema.from_frame(pd.concat([truth, recon]))

    errors = row_errors(truth, recon, schema, label="y")
    score = evaluate(truth, recon, schema, label="y", n_baseline_draws=0)

    assert errors.shape == (len(truth),)
    assert np.isnan(errors).sum() == max(0, len(truth) - len(recon))
    assert np.nanmean(errors) == pytest.approx(score.error)
    assert np.nanmax(errors) == pytest.approx(score.worst_row_error)
    assert np.mean(errors == 0) == pytest.approx(score.exact_share)
    names, scale = feature_scales(truth, schema, label="y")
    distance = row_distances(truth[names].to_numpy(float), recon[names].to_numpy(float), scale)
    rows, cols = linear_sum_assignment(distance)
    assert np.nansum(errors) == pytest.approx(distance[rows, cols].sum())


def test_row_errors_follow_truth_order_and_mark_unmatched_rows_nan():
    truth = pd.DataFrame({"a": [0, 1], "b": [0, 1]})
    recon = pd.DataFrame({"a": [1, 1], "b": [1, 0]})
    np.testing.assert_array_equal(row_errors(truth, recon, FeatureSchema.from_frame(truth)),
                                  [0.5, 0.0])

    truth = pd.DataFrame({"a": [0, 1, 1, 0], "b": [0, 1, 1, 1], "c": [0, 1, 1, 1]})
    recon = pd.DataFrame({"a": [1, 1], "b": [1, 1], "c": [1, 0]})
    errors = row_errors(truth, recon, FeatureSchema.from_frame(truth))
    # one (1, 1, 1) row pairs with its copy, the other with (1, 1, 0); the rest go unmatched
    np.testing.assert_allclose(np.sort(errors[1:3]), [0.0, 1 / 3])
    assert np.isnan(errors[[0, 3]]).all()


# --- the leak test ---------------------------------------------------------------------


def test_the_training_set_itself_is_a_leak(data):
    truth, population, schema = data
    result = leak_test(truth, truth=truth, population=population,
                       schema=schema, label="y", n_samples=50)
    assert result.error == 0.0
    assert result.perfect_share == 1.0
    assert result.worst_row_error == 0.0
    assert result.mean > 0.0
    assert result.p_value < 1e-6
    assert result.leak
    assert result.reference_errors.shape == (50,)
    assert result.mean == pytest.approx(result.reference_errors.mean())
    assert result.std == pytest.approx(result.reference_errors.std())


def test_a_fresh_population_sample_is_not_a_leak(data):
    truth, population, schema = data
    fresh, rest = population.iloc[:N_TRAIN], population.iloc[N_TRAIN:]
    result = leak_test(fresh, truth=truth, population=rest,
                       schema=schema, label="y", n_samples=100, seed=3)
    assert result.p_value > result.alpha
    assert not result.leak
    assert result.perfect_share < 1.0


def test_alpha_is_the_leak_threshold(data):
    truth, population, schema = data
    result = leak_test(population.iloc[:N_TRAIN], truth=truth, population=population.iloc[N_TRAIN:],
                       schema=schema,
                       label="y", n_samples=20, alpha=0.05)
    assert dataclasses.replace(result, alpha=min(result.p_value * 2, 0.99)).leak
    assert not dataclasses.replace(result, alpha=result.p_value).leak


def test_same_seed_draws_the_same_reference_datasets(data):
    truth, population, schema = data
    runs = [leak_test(truth, truth=truth, population=population,
                      schema=schema, n_samples=5, seed=s) for s in (1, 1, 2)]
    np.testing.assert_array_equal(runs[0].reference_errors, runs[1].reference_errors)
    assert not np.array_equal(runs[0].reference_errors, runs[2].reference_errors)


def test_inlier_and_outlier_figures_split_the_row_errors(data):
    truth, population, schema = data
    recon = population.iloc[:N_TRAIN]
    result = leak_test(recon, truth=truth, population=population.iloc[N_TRAIN:],
                       schema=schema, label="y",
                       n_samples=5, seed=7)
    features = truth.drop(columns="y").to_numpy(float)
    outlier = IsolationForest(random_state=7).fit(features).predict(features) == -1
    errors = row_errors(truth, recon, schema, label="y")
    assert 0 < result.n_outliers == outlier.sum() < len(truth)
    assert result.inlier_error == pytest.approx(errors[~outlier].mean())
    assert result.outlier_error == pytest.approx(errors[outlier].mean())
    assert result.inlier_perfect_share == pytest.approx(np.mean(errors[~outlier] == 0))
    assert result.outlier_perfect_share == pytest.approx(np.mean(errors[outlier] == 0))
    assert result.error == pytest.approx(errors.mean())
    assert result.worst_row_error == errors.max()


def test_equal_reference_errors_give_a_step_law():
    truth = pd.DataFrame({"a": [0, 1, 0, 1], "b": [0, 0, 1, 1]})
    population = pd.DataFrame({"a": [1] * 6, "b": [1] * 6})
    result = leak_test(truth, truth=truth, population=population,
                       schema=FeatureSchema.from_frame(truth), n_samples=3)
    assert result.std == 0.0
    assert result.p_value == 0.0
    assert result.leak


def test_summary_is_plain_json(data):
    truth, population, schema = data
    result = leak_test(truth.iloc[:10], truth=truth, population=population,
                       schema=schema, n_samples=3)
    record = dataclasses.replace(result, outlier_error=float("nan")).summary()
    assert json.loads(json.dumps(record, allow_nan=False)) == record
    assert record["outlier_error"] is None
    assert record["leak"] is result.leak
    assert isinstance(record["n_outliers"], int)
    assert len(record["reference_errors"]) == 3
    assert set(record) == {f.name for f in dataclasses.fields(LeakTest)} | {"leak"}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda truth, pop: {"n_samples": 1}, "n_samples must be at least 2"),
        (lambda truth, pop: {"alpha": 1.0}, "alpha must lie strictly between 0 and 1"),
        (lambda truth, pop: {"population": pop.drop(columns="f3")},
         r"population lacks column\(s\) \['f3'\]"),
        (lambda truth, pop: {"population": pop.iloc[: N_TRAIN - 1]},
         "population has 39 rows, fewer than the 40 .*larger population"),
        (lambda truth, pop: {"reconstruction": truth.iloc[:0]}, "reconstruction has no rows"),
    ],
)
def test_bad_inputs_are_explained(data, change, match):
    truth, population, schema = data
    arguments = {"reconstruction": truth, "truth": truth, "population": population,
                 "schema": schema, "label": "y", **change(truth, population)}
    with pytest.raises(ValueError, match=match):
        leak_test(**arguments)
