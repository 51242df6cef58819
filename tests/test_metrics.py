"""treeleaks.evaluation.metrics: optimal alignment, the score's fields, the random baseline."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from treeleaks.evaluation import metrics
from treeleaks.evaluation.metrics import evaluate, random_baseline, row_distances
from treeleaks.ir.schema import FeatureSchema, FeatureSpec
from treeleaks.ir.schema_columns import feature_columns, frame_matrix

DATA = Path("/work/shared/data")
SOLVERS = ("lsa", "dense", "graph")


def binary_schema(names: list[str], **groups: list[list[str]]) -> FeatureSchema:
    return FeatureSchema({name: FeatureSpec("binary", 0.0, 1.0) for name in names}, **groups)


def match_with(
    solver: str, truth: pd.DataFrame, recon: pd.DataFrame, schema: FeatureSchema, label=None
) -> metrics._Matching:
    """Run the matching with one residual solver forced."""
    columns = feature_columns(truth, schema, label)
    recon_X = frame_matrix(recon, columns.names, "reconstruction")
    return metrics._match(columns, recon_X, metrics._label_codes(truth, recon, label), solver)


def brute_force_cost(truth_X: np.ndarray, recon_X: np.ndarray, scale: np.ndarray) -> float:
    """Total distance of an optimal matching over all rows, with no identical-first step."""
    distance = row_distances(truth_X, recon_X, scale)
    rows, cols = linear_sum_assignment(distance)
    return float(distance[rows, cols].sum())


# --- distances -------------------------------------------------------------------------


def test_row_distance_normalises_clips_and_counts_nan_as_full_disagreement():
    truth = np.array([[0.0, 5.0, 1.0]])
    recon = np.array([[1.0, np.nan, 30.0], [0.0, 7.0, 1.0]])
    distance = row_distances(truth, recon, np.array([1.0, 10.0, 10.0]))
    # (1 + nan->1 + min(29/10, 1)) / 3 and (0 + 2/10 + 0) / 3
    np.testing.assert_allclose(distance, [[1.0, 0.2 / 3]])


def test_nan_reconstructed_value_is_one_disagreement():
    truth = pd.DataFrame({"a": [0.0], "b": [1.0]})
    recon = pd.DataFrame({"a": [0.0], "b": [np.nan]})
    score = evaluate(truth, recon, binary_schema(["a", "b"]), n_baseline_draws=0)
    assert score.error == 0.5
    assert score.exact_share == 0.0


# --- alignment -------------------------------------------------------------------------


@pytest.mark.parametrize("shuffle", [False, True])
def test_identical_frames_score_perfectly(shuffle: bool):
    rng = np.random.default_rng(1)
    truth = pd.DataFrame(rng.integers(0, 2, (300, 6)), columns=list("abcdef"))
    truth["y"] = rng.integers(0, 2, 300)  # duplicate feature vectors with different labels
    recon = truth.sample(frac=1, random_state=3) if shuffle else truth.copy()
    score = evaluate(truth, recon, binary_schema(list("abcdef")), label="y", n_baseline_draws=0)
    assert score.error == 0.0
    assert score.exact_share == 1.0
    assert score.worst_row_error == 0.0
    assert score.label_agreement == 1.0
    assert (score.n_true, score.n_reconstructed, score.n_matched) == (300, 300, 300)
    assert math.isnan(score.baseline_error)


def test_hand_computed_case_where_greedy_matching_is_suboptimal():
    # x in [0, 20] and a binary b. Pair distances (summed over the two features):
    #   truth (5,1):  recon (4,0) 1.05   (9,1) 0.20   (14,1) 0.45
    #   truth (0,0):  recon (4,0) 0.20   (9,1) 1.45   (14,1) 1.70
    #   truth (10,1): recon (4,0) 1.30   (9,1) 0.05   (14,1) 0.20
    # Greedy cheapest-first takes 0.05, 0.20, 0.45 = 0.70; the optimum is 3 x 0.20 = 0.60.
    schema = FeatureSchema({"x": FeatureSpec("numerical", 0, 20), "b": FeatureSpec("binary", 0, 1)})
    truth = pd.DataFrame({"x": [5.0, 0.0, 10.0], "b": [1.0, 0.0, 1.0]})
    recon = pd.DataFrame({"x": [4.0, 9.0, 14.0], "b": [0.0, 1.0, 1.0]})
    score = evaluate(truth, recon, schema, n_baseline_draws=0)
    assert score.error == pytest.approx(0.6 / 3 / 2)
    assert score.worst_row_error == pytest.approx(0.1)
    assert score.exact_share == 0.0
    for solver in SOLVERS:
        assert match_with(solver, truth, recon, schema).error == pytest.approx(0.1)


@st.composite
def frame_pairs(draw):
    """Small truth/reconstruction frames mixing binary and numerical columns, with
    duplicate rows, NaNs and out-of-range values in the reconstruction, and labels."""
    n_binary = draw(st.integers(0, 3))
    n_numerical = draw(st.integers(0 if n_binary else 1, 2))
    binary = [f"b{i}" for i in range(n_binary)]
    names = binary + [f"x{i}" for i in range(n_numerical)]
    one_hot = [binary[:2]] if n_binary >= 2 and draw(st.booleans()) else []
    bit, number = st.sampled_from([0.0, 1.0]), st.sampled_from([0.0, 0.5, 1.5, 3.0])
    true_cells = [bit] * n_binary + [number] * n_numerical
    recon_cells = [st.one_of(c, st.just(np.nan), st.just(4.0)) for c in true_cells]
    label = st.sampled_from([0, 1])
    truth = pd.DataFrame(
        draw(st.lists(st.tuples(*true_cells, label), min_size=1, max_size=7)),
        columns=[*names, "y"],
    )
    if one_hot:  # the truth obeys the group, the reconstruction need not
        truth["b0"] = 1.0 - truth["b1"]
    recon = pd.DataFrame(
        draw(st.lists(st.tuples(*recon_cells, label), min_size=0, max_size=7)),
        columns=[*names, "y"],
    )
    specs = {n: FeatureSpec("binary", 0, 1) for n in binary} | {
        n: FeatureSpec("numerical", 0, 3) for n in names[n_binary:]
    }
    scale = np.array([1.0] * n_binary + [3.0] * n_numerical)
    return truth, recon, FeatureSchema(specs, one_hot_groups=one_hot), names, scale


@settings(max_examples=200, deadline=None)
@given(frame_pairs())
def test_identical_first_matching_equals_brute_force_assignment(pair):
    truth, recon, schema, names, scale = pair
    truth_X, recon_X = truth[names].to_numpy(float), recon[names].to_numpy(float)
    n_matched = min(len(truth), len(recon))
    best = brute_force_cost(truth_X, recon_X, scale)
    identical = Counter(map(tuple, truth_X)) & Counter(map(tuple, recon_X))

    score = evaluate(truth, recon, schema, label="y", n_baseline_draws=0)
    assert score.n_matched == n_matched
    assert score.exact_share == sum(identical.values()) / len(truth)
    if n_matched:
        assert score.error * n_matched == pytest.approx(best, abs=1e-9)
    for solver in SOLVERS:  # non-whole costs are rounded to 2^-20 in the flows
        matching = match_with(solver, truth, recon, schema, label="y")
        assert matching.n_matched == n_matched
        assert float(matching.distance @ matching.count) == pytest.approx(best, abs=1e-4)


def test_residual_solvers_agree_on_a_larger_mixed_problem():
    rng = np.random.default_rng(5)
    names = [f"b{i}" for i in range(7)] + ["level", "unknown"]
    schema = FeatureSchema(
        {n: FeatureSpec("binary", 0, 1) for n in names[:7]}
        | {"level": FeatureSpec("ordinal", 0, 4), "unknown": FeatureSpec("unknown")},
        one_hot_groups=[["b0", "b1", "b2"]],
        at_most_one_groups=[["b3", "b4"]],
    )
    truth = pd.DataFrame(rng.integers(0, 2, (400, 9)).astype(float), columns=names)
    truth[["b0", "b1", "b2"]] = np.eye(3)[rng.integers(0, 3, 400)]
    truth[["b3", "b4"]] = np.eye(3)[rng.integers(0, 3, 400)][:, :2]
    truth["level"] = rng.integers(0, 5, 400)
    recon = truth.sample(300, random_state=2).reset_index(drop=True)
    flip = rng.random((300, 5)) < 0.3
    recon[names[3:8]] = np.abs(recon[names[3:8]] - flip)
    recon["unknown"] = np.nan  # the model says nothing about it
    costs = {s: match_with(s, truth, recon, schema) for s in SOLVERS}
    totals = [float(m.distance @ m.count) for m in costs.values()]
    assert totals == pytest.approx([totals[0]] * 3, abs=1e-3)
    assert {m.n_matched for m in costs.values()} == {300}
    assert {m.n_identical for m in costs.values()} == {0}  # every row misses "unknown"


@pytest.mark.parametrize("n_recon", [3, 10])
def test_rectangular_sizes_match_the_smaller_side(n_recon: int):
    rng = np.random.default_rng(2)
    truth = pd.DataFrame(rng.integers(0, 2, (6, 8)).astype(float), columns=list("abcdefgh"))
    extra = pd.DataFrame(np.full((n_recon - 3, 8), np.nan), columns=truth.columns)
    recon = pd.concat([truth.iloc[:3], extra]) if n_recon < 6 else pd.concat([truth, extra])
    score = evaluate(truth, recon, binary_schema(list("abcdefgh")), n_baseline_draws=0)
    assert score.n_matched == min(6, len(recon))
    assert score.error == 0.0
    assert score.exact_share == score.n_matched / 6


def test_rectangular_match_picks_the_nearest_true_row():
    schema = FeatureSchema({"x": FeatureSpec("numerical", 0, 20)})
    truth = pd.DataFrame({"x": [0.0, 10.0, 20.0]})
    score = evaluate(truth, pd.DataFrame({"x": [9.0]}), schema, n_baseline_draws=0)
    assert (score.n_matched, score.error, score.exact_share) == (1, 0.05, 0.0)


def test_empty_reconstruction_matches_nothing():
    truth = pd.DataFrame({"a": [0.0, 1.0]})
    score = evaluate(truth, truth.iloc[:0], binary_schema(["a"]), n_baseline_draws=0)
    assert score.n_matched == 0
    assert score.exact_share == 0.0
    assert math.isnan(score.error) and math.isnan(score.worst_row_error)


def test_columns_the_model_says_nothing_about_cost_every_pair_one():
    rng = np.random.default_rng(4)
    n, names = 20_000, [f"b{i}" for i in range(8)]
    truth = pd.DataFrame(rng.integers(0, 2, (n, 8)).astype(float), columns=names)
    truth["x"] = rng.normal(size=n)  # all distinct, never split on
    schema = FeatureSchema(
        {b: FeatureSpec("binary", 0, 1) for b in names} | {"x": FeatureSpec("unknown")}
    )
    recon = truth.sample(frac=1, random_state=0).reset_index(drop=True)
    recon["x"] = np.nan
    recon.loc[:49, "b0"] = 1 - recon.loc[:49, "b0"]
    score = evaluate(truth, recon, schema, n_baseline_draws=0)
    assert score.exact_share == 0.0
    assert 1 / 9 <= score.error <= 1 / 9 + 50 / 9 / n


def test_fifty_thousand_rows_with_a_few_perturbed():
    rng = np.random.default_rng(7)
    n, names = 50_000, [f"b{i}" for i in range(12)]
    truth = pd.DataFrame(rng.integers(0, 2, (n, 12)).astype(float), columns=names)
    truth["x"] = rng.uniform(0, 1, n)
    schema = FeatureSchema(
        {b: FeatureSpec("binary", 0, 1) for b in names} | {"x": FeatureSpec("numerical", 0, 1)}
    )
    recon = truth.sample(frac=1, random_state=1).reset_index(drop=True)
    moved, shift = rng.choice(n, 20, replace=False), rng.uniform(0.001, 0.01, 20)
    recon.loc[moved, "x"] += shift
    score = evaluate(truth, recon, schema, n_baseline_draws=0)
    assert score.exact_share == 1 - 20 / n
    assert 0 < score.error <= shift.sum() / 13 / n + 1e-15  # at most the identity matching
    assert score.worst_row_error <= shift.max() / 13 + 1e-15


# --- labels ----------------------------------------------------------------------------


def test_identical_rows_pair_within_equal_labels_first():
    truth = pd.DataFrame({"a": [1.0, 1.0, 0.0], "y": [0, 1, 1]})
    recon = pd.DataFrame({"a": [1.0, 1.0, 0.0], "y": [1, 0, 0]})
    score = evaluate(truth, recon, binary_schema(["a"]), label="y", n_baseline_draws=0)
    assert score.error == 0.0
    assert score.label_agreement == pytest.approx(2 / 3)


def test_missing_reconstructed_label_never_agrees_nor_merges_rows():
    truth = pd.DataFrame({"a": [0.0, 1.0], "y": [0.0, 1.0]})
    recon = pd.DataFrame({"a": [1.0, 0.0], "y": [np.nan, 1.0]})
    score = evaluate(truth, recon, binary_schema(["a"]), label="y", n_baseline_draws=0)
    assert (score.error, score.exact_share, score.label_agreement) == (0.0, 1.0, 0.0)


def test_label_in_the_schema_is_not_a_feature():
    truth = pd.DataFrame({"a": [0.0, 1.0], "y": [0.0, 1.0]})
    recon = pd.DataFrame({"a": [0.0, 1.0], "y": [1.0, 0.0]})
    score = evaluate(truth, recon, FeatureSchema.from_frame(truth), label="y", n_baseline_draws=0)
    assert (score.error, score.exact_share, score.label_agreement) == (0.0, 1.0, 0.0)


def test_label_agreement_is_nan_without_a_reconstructed_label():
    truth = pd.DataFrame({"a": [0.0, 1.0], "y": [0, 1]})
    score = evaluate(truth, truth[["a"]], binary_schema(["a"]), label="y", n_baseline_draws=0)
    assert math.isnan(score.label_agreement)
    assert math.isnan(evaluate(truth, truth, binary_schema(["a"]), n_baseline_draws=0)
                      .label_agreement)


# --- errors ----------------------------------------------------------------------------


def test_missing_schema_column_names_the_frame_and_the_column():
    schema = binary_schema(["a", "b", "c"])
    full = pd.DataFrame({"a": [0.0], "b": [1.0], "c": [0.0]})
    with pytest.raises(ValueError, match=r"true frame lacks schema column\(s\) 'c'"):
        evaluate(full[["a", "b"]], full, schema)
    with pytest.raises(ValueError, match=r"reconstruction frame lacks schema column\(s\) 'b'"):
        evaluate(full, full[["a", "c"]], schema)


def test_bad_inputs_are_explained():
    schema = binary_schema(["a"])
    truth = pd.DataFrame({"a": [0.0, 1.0]})
    with pytest.raises(ValueError, match="no label column 'y'"):
        evaluate(truth, truth, schema, label="y")
    with pytest.raises(ValueError, match="missing values in 'a'"):
        evaluate(pd.DataFrame({"a": [0.0, np.nan]}), truth, schema)
    with pytest.raises(ValueError, match="no rows"):
        evaluate(truth.iloc[:0], truth, schema)
    with pytest.raises(ValueError, match="n_baseline_draws"):
        evaluate(truth, truth, schema, n_baseline_draws=-1)


def test_residual_too_large_for_memory_is_an_error(monkeypatch):
    monkeypatch.setattr(metrics, "_LSA_MAX_CELLS", 0)
    monkeypatch.setattr(metrics, "_FLOW_MAX_ARCS", 0)
    truth = pd.DataFrame({"a": [0.0, 0.0]})
    with pytest.raises(ValueError, match="too many for an exact matching"):
        evaluate(truth, pd.DataFrame({"a": [1.0, 1.0]}), binary_schema(["a"]))


# --- score -----------------------------------------------------------------------------


def test_to_dict_is_plain_json():
    truth = pd.DataFrame({"a": [0.0, 1.0, 1.0], "y": [0, 1, 1]})
    data = evaluate(truth, truth.iloc[:2], binary_schema(["a"]), label="y",
                    n_baseline_draws=2).to_dict()
    assert set(data) == {
        "error", "exact_share", "worst_row_error", "baseline_error", "label_agreement",
        "n_true", "n_reconstructed", "n_matched",
    }
    assert all(type(v) is (int if k.startswith("n_") else float) for k, v in data.items())
    assert json.loads(json.dumps(data))["n_matched"] == 2


# --- random baseline -------------------------------------------------------------------


def assert_mean_near(value: float, mean: float, variance: float, n: int) -> None:
    """Within five standard errors of the mean of n draws with this per-row variance."""
    assert abs(value - mean) < 5 * math.sqrt(variance / n)


def test_baseline_of_coin_flips_against_all_zero_truth_is_one_half():
    names = [f"b{i}" for i in range(10)]
    truth = pd.DataFrame(np.zeros((1000, 10)), columns=names)
    baseline = random_baseline(truth, binary_schema(names), n_draws=4, seed=0)
    # every true row is the same, so any matching costs the mean share of ones
    assert_mean_near(baseline, 0.5, 0.25 / 10, 1000 * 4)
    assert baseline == random_baseline(truth, binary_schema(names), n_draws=4, seed=0)


def test_baseline_respects_one_hot_and_at_most_one_groups():
    one_hot, at_most_one = ["h0", "h1", "h2", "h3"], ["m0", "m1", "m2"]
    truth = pd.DataFrame(np.zeros((2000, 7)), columns=one_hot + at_most_one)
    truth["h0"] = 1.0
    schema = binary_schema(one_hot + at_most_one, one_hot_groups=[one_hot],
                           at_most_one_groups=[at_most_one])
    columns = feature_columns(truth, schema, None)
    draws = metrics._draw(columns, np.random.default_rng(0))
    assert (draws[:, :4].sum(axis=1) == 1).all()
    assert (draws[:, 4:].sum(axis=1) <= 1).all()
    assert 0 < (draws[:, 4:].sum(axis=1) == 0).mean() < 0.5  # "none" is one of four choices
    # one-hot: same member 1/4 (0), else two columns differ (2/7); at-most-one: none 1/4
    # (0), else one column differs (1/7). Mean 3/4 * 2/7 + 3/4 * 1/7 = 9/28.
    baseline = random_baseline(truth, schema, n_draws=3, seed=1)
    per_row = [0, 2 / 7, 1 / 7, 3 / 7]  # weights 1/16, 3/16, 3/16, 9/16
    weights = np.array([1, 3, 3, 9]) / 16
    variance = float(weights @ np.square(per_row)) - (9 / 28) ** 2
    assert_mean_near(baseline, 9 / 28, variance, 2000 * 3)


def test_baseline_ranges_and_unknown_columns():
    truth = pd.DataFrame({"level": np.zeros(3000), "x": np.zeros(3000)})
    schema = FeatureSchema({"level": FeatureSpec("ordinal", 0, 4),
                            "x": FeatureSpec("numerical", 0, 1)})
    # level: |0 - U{0..4}| / 4 has mean 1/2, variance 1/8; x: U(0,1) mean 1/2, variance 1/12
    baseline = random_baseline(truth, schema, n_draws=2, seed=3)
    assert_mean_near(baseline, 0.5, (1 / 8 + 1 / 12) / 4, 3000 * 2)
    unknown = FeatureSchema({"level": FeatureSpec("unknown")})
    assert random_baseline(truth, unknown, n_draws=2, seed=0) == 1.0


def test_baseline_uses_observed_range_where_the_schema_has_none():
    truth = pd.DataFrame({"x": [2.0, 5.0, 3.0]})
    schema = FeatureSchema({"x": FeatureSpec("numerical")})
    draws = metrics._draw(feature_columns(truth, schema, None), np.random.default_rng(0))
    assert ((draws >= 2.0) & (draws <= 5.0)).all()


# --- real data -------------------------------------------------------------------------


@pytest.mark.skipif(not (DATA / "compas.csv").exists(), reason="COMPAS data not available")
def test_compas_noisy_reconstruction_scores_between_perfect_and_random():
    meta = json.loads((DATA / "datasets.json").read_text())["compas"]
    label = meta["label"]
    truth = pd.read_csv(DATA / "compas.csv")
    schema = FeatureSchema.from_frame(
        truth.drop(columns=label), meta["one_hot_groups"], meta["at_most_one_groups"]
    )
    recon = truth.sample(frac=1, random_state=0).reset_index(drop=True)
    noisy = recon.index[:300]
    recon.loc[noisy, "sex:Male"] = 1 - recon.loc[noisy, "sex:Male"]
    recon.loc[noisy, label] = 1 - recon.loc[noisy, label]
    score = evaluate(truth, recon, schema, label=label, n_baseline_draws=2)
    n = len(truth)
    assert score.n_matched == n
    assert 0 < score.error <= 300 / 14 / n  # at most the identity matching
    assert score.exact_share >= 1 - 300 / n
    assert score.label_agreement >= 1 - 300 / n
    assert 0.1 < score.baseline_error < 0.4
    assert score.baseline_error > 20 * score.error


def test_error_columns_score_only_those_columns_after_matching_on_all():
    truth = pd.DataFrame({"a": [0, 1, 0, 1], "b": [0, 0, 1, 1]})
    recon = pd.DataFrame({"a": [0, 1, 0, 1], "b": [1, 1, 1, 1]})
    schema = FeatureSchema.from_frame(truth)
    everything = evaluate(truth, recon, schema, n_baseline_draws=1)
    only_b = evaluate(truth, recon, schema, n_baseline_draws=1, error_columns=["b"])
    only_a = evaluate(truth, recon, schema, n_baseline_draws=1, error_columns=["a"])
    assert everything.error == pytest.approx(0.25)  # two rows off by one column of two
    assert only_b.error == pytest.approx(0.5)
    assert only_a.error == 0.0
    with pytest.raises(ValueError, match="must name features"):
        evaluate(truth, recon, schema, error_columns=["c"])
