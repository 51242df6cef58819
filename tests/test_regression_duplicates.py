"""Issue 50's bad input for regressors: rows equal in every feature with different targets.

A fully grown tree cannot split such rows apart: their leaf holds several targets, its
value their mean and its impurity their variance. They come back with their multiplicity
and their exact targets (the leaf split into its targets), never a proof that no dataset
exists (anes96's `RandomForestRegressor` was refused INFEASIBLE for one such pair)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor
from test_regression_exact import proven_boxes_hold_the_truth

from treeleaks import FeatureSchema, from_sklearn, reconstruct
from treeleaks.attacks.reconstruction import regression
from treeleaks.counts.mixed_leaves import split_leaf
from treeleaks.counts.verify import verify_regression, verify_regression_within
from treeleaks.evaluation.recovered import References, rows_recovered
from treeleaks.runtime.vocabulary import Status

PAIR = [9.0, 9.0, 9.0]  # two rows here, targets no other row has
TRIPLE = [7.0, 7.0, 7.0]  # three rows here, two targets
TWINS = [8.0, 8.0, 8.0]  # two rows here, one target


def table(seed: int, n_rows: int = 60) -> tuple[pd.DataFrame, np.ndarray]:
    """Small integers (so random rows collide too) and integer targets, with the three
    groups above."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, size=(n_rows, 3)).astype(float)
    y = rng.integers(0, 12, size=n_rows).astype(float)
    X[0] = X[1] = PAIR
    y[0], y[1] = 100.5, 200.25
    X[2] = X[3] = X[4] = TRIPLE
    y[2:5] = [3.0, 3.0, 8.0]
    X[5] = X[6] = TWINS
    y[5:7] = 4.0
    return pd.DataFrame(X, columns=["a", "b", "c"]), y


def mixed_feature_rows(X: pd.DataFrame, y: np.ndarray) -> int:
    """Rows sharing every feature with a row of another target."""
    frame = X.assign(y=y)
    return int((frame.groupby(list(X.columns))["y"].transform("nunique") > 1).sum())


MODELS = {
    "random forest": lambda seed: RandomForestRegressor(n_estimators=10, random_state=seed),
    "extra trees": lambda seed: ExtraTreesRegressor(n_estimators=10, random_state=seed),
    "decision tree": lambda seed: DecisionTreeRegressor(random_state=seed),
}


def leaves_and_targets(model, rows: pd.DataFrame, y: np.ndarray) -> list[tuple]:
    """The multiset of (leaf in every tree, target): what the model tells of the rows."""
    leaves = model.apply(rows[list(model.feature_names)].to_numpy(dtype=np.float64))
    return sorted(zip(map(tuple, leaves.tolist()), np.round(y, 9).tolist()))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kind", list(MODELS))
def test_rows_sharing_every_feature_come_back_with_their_targets(kind: str, seed: int):
    X, y = table(seed)
    assert mixed_feature_rows(X, y) >= 5  # the pair and the triple at least
    estimator = MODELS[kind](seed).fit(X, y)
    model = from_sklearn(estimator, allow_regression=True)
    assert any((tree.impurity > 0).any() for tree in model.trees)  # leaves of several
    rec = reconstruct(model, time_limit=30)
    assert rec.status == Status.OPTIMAL, rec.message
    assert rec.certificate.verified and rec.n_rows == len(X)
    assert verify_regression(model, rec.rows).verified  # every count, value, impurity
    got = rec.rows["label"].to_numpy(dtype=float)
    # the multiplicity: each group's rows come back, each with its own target
    assert sorted(got) == sorted(y)
    if not model.bootstrap:  # every tree saw every row: the multiset is what it tells
        assert leaves_and_targets(model, rec.rows, got) == leaves_and_targets(model, X, y)
        assert proven_boxes_hold_the_truth(rec, X, y)
    else:  # the draws place rows: a proven row is the training row at its position
        truth = X.assign(label=y)
        score = rows_recovered(model, truth, rec.rows, FeatureSchema.infer(model),
                               references=References(n_random=0, true_boxes=False))
        assert score.recovered_share == 1.0  # each true row, its target and its leaves
        proven = rec.proven.astype(bool)
        assert np.array_equal(got[proven], y[proven])
        drawn = np.vstack([tree.draws for tree in model.trees]).T > 0  # (rows, trees)
        leaves = model.apply(rec.rows[["a", "b", "c"]].to_numpy(dtype=np.float64))
        truth = model.apply(X.to_numpy(dtype=np.float64))
        assert ((leaves == truth) | ~drawn)[proven].all()
    for target in (100.5, 200.25):  # the pair's targets, held by no other row
        assert (got == target).sum() == 1


def test_a_pair_held_in_no_other_leaf_is_split_by_its_mean_and_variance():
    """A single tree: the pair's leaf is the only leaf holding their targets."""
    X, y = table(3)
    model = from_sklearn(DecisionTreeRegressor(random_state=0).fit(X, y),
                         allow_regression=True)
    rec = reconstruct(model, time_limit=30)
    assert rec.status == Status.OPTIMAL
    at = rec.rows["label"].isin([100.5, 200.25]).to_numpy()
    assert at.sum() == 2
    leaves = model.apply(rec.rows.loc[at, ["a", "b", "c"]].to_numpy(dtype=np.float64))
    assert (leaves == model.apply(np.array([PAIR]))).all()  # in their leaf


def test_a_leaf_split_is_taken_only_when_it_is_the_only_one():
    """Targets 30 and 65 drawn 2 and 3 times: mean 51, variance 294. So are 37 and 72
    drawn 3 and 2 times; with both pairs possible the leaf stays undecided."""
    split = split_leaf(np.array([20.0, 30.0, 65.0]), 2, 5, 51.0, 294.0, 65.0, True)
    assert split is not None
    assert split.target.tolist() == [1, 2] and split.draws.tolist() == [2, 3]
    assert split.rows.tolist() == [1, 1]
    assert split_leaf(np.array([30.0, 37.0, 65.0, 72.0]), 2, 5, 51.0, 294.0, 72.0,
                      True) is None
    # without bootstrap every row is drawn once: 2 rows, 5 draws is no leaf's
    assert split_leaf(np.array([30.0, 65.0]), 2, 5, 51.0, 294.0, 65.0, False) is None


def test_rows_the_draws_tell_are_returned_when_the_rest_cannot_be_placed(monkeypatch):
    """The per-row placement's classifier view past its memory bound: the rows the draws
    tell come back, at their training positions, within every count (never nothing)."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(80, 3)), columns=["a", "b", "c"])
    y = rng.integers(0, 3, size=80).astype(float)  # ~27 rows a target: past the draws'
    y[:10] = 100.0 + np.arange(10)  # search; ten targets of their own, told by the draws
    model = from_sklearn(RandomForestRegressor(n_estimators=10, random_state=0).fit(X, y),
                         allow_regression=True)
    monkeypatch.setattr(regression, "MAX_VIEW_ENTRIES", 0)
    rec = reconstruct(model, time_limit=30)
    assert rec.status == Status.FEASIBLE and rec.partial, rec.message
    assert "kept in memory" in rec.message
    positions = rec.bootstrap.positions
    assert set(range(10)) <= set(positions.tolist()) and len(positions) < len(X)
    got = rec.rows["label"].to_numpy(dtype=float)
    assert np.array_equal(got, y[positions])
    assert verify_regression_within(model, rec.rows, positions).verified


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(list(MODELS)),
       n_rows=st.integers(12, 50))
@example(seed=31, kind="random forest", n_rows=30)  # a reading that overfilled a leaf
def test_never_a_false_proof_of_impossibility(seed: int, kind: str, n_rows: int):
    """Random small tables full of rows sharing every feature: the true rows produce the
    counts, so no reconstruction may say none does; what comes back fits the model."""
    X, y = table(seed, n_rows)
    estimator = MODELS[kind](seed).fit(X, y)
    model = from_sklearn(estimator, allow_regression=True)
    rec = reconstruct(model, time_limit=20)
    assert rec.status != Status.INFEASIBLE, rec.message
    assert rec.n_rows > 0
    assert rec.certificate.verified, rec.certificate.first_mismatch
