"""Count-neutral crossovers: every walk keeps every released count and every column's values."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
)

from treeleaks import from_sklearn
from treeleaks.counts.crossover import (
    SHARED,
    column_units,
    crossover_walk,
    position_draws,
)
from treeleaks.counts.verify import verify, verify_regression

FORESTS = {
    "bootstrap": lambda seed: RandomForestClassifier(n_estimators=8, random_state=seed),
    "no-bootstrap": lambda seed: RandomForestClassifier(n_estimators=8, bootstrap=False,
                                                        random_state=seed),
    "extra": lambda seed: ExtraTreesClassifier(n_estimators=8, random_state=seed),
}


def real_like(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray, list[list[int]]]:
    """A small table of a custodian's kind: a number, a small integer, a one-hot group of
    three, many duplicate rows, and a label; the group's column indices."""
    rng = np.random.default_rng(seed)
    region = rng.integers(0, 3, n)
    values = np.column_stack([rng.normal(30, 8, n).round(1), rng.integers(0, 4, n),
                              *[(region == k).astype(int) for k in range(3)]])
    half = n // 8
    copies = rng.integers(0, n, 2 * half)  # exact duplicates
    values[copies[:half]] = values[copies[half:]]
    base = pd.DataFrame(values, columns=["income", "children",
                                         *[f"region:{k}" for k in range(3)]])
    label = ((base["income"] > 30) ^ (base["children"] > 1)).astype(int).to_numpy()
    return base, label, [[2, 3, 4]]


def _walk(model, X: pd.DataFrame, classes: np.ndarray, groups, tries: int, seed: int):
    return crossover_walk(model, X.to_numpy(dtype=np.float64), classes,
                          position_draws(model, np.arange(len(X))),
                          units=column_units(X.shape[1], groups),
                          deadline=time.perf_counter() + 60, max_tries=tries, seed=seed)


@settings(max_examples=12, deadline=None)
@given(n=st.integers(20, 80), seed=st.integers(0, 10_000),
       kind=st.sampled_from(sorted(FORESTS)))
def test_a_walk_keeps_every_count_and_every_columns_values(n: int, seed: int, kind: str):
    X, y, groups = real_like(n, seed)
    model = from_sklearn(FORESTS[kind](seed).fit(X, y), label_name="label")
    walk = _walk(model, X, model.class_index(y), groups, tries=60, seed=seed)
    walked = pd.DataFrame(walk.X, columns=X.columns).assign(label=y)
    certificate = verify(model, walked)
    assert certificate.verified, certificate.first_mismatch
    for column in X.columns:  # values trade between rows, never change
        assert sorted(walked[column]) == sorted(X[column].astype(float))
    group = walked[[f"region:{k}" for k in range(3)]].to_numpy()
    assert (group.sum(axis=1) == 1).all()  # a one-hot group moves whole
    assert (walk.leaves == model.apply(walk.X)).all()


def test_extra_trees_on_a_raw_table_walk_far_from_their_training_rows():
    """Extra trees on measurements leave room: the walk finds rows the training rows'
    leaves do not describe, and the dataset still fits every count."""
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(120, 6)).round(3), columns=[f"x{j}" for j in range(6)])
    y = (X["x0"] + X["x1"] > 0).astype(int).to_numpy()
    model = from_sklearn(ExtraTreesClassifier(n_estimators=10, random_state=0).fit(X, y),
                         label_name="label")
    walk = _walk(model, X, model.class_index(y), [], tries=500, seed=0)
    assert walk.moves > 10 and walk.far > 0
    walked = pd.DataFrame(walk.X, columns=X.columns).assign(label=y)
    assert verify(model, walked).verified
    shares = [((walk.leaves[k] == model.apply(X.to_numpy())).sum(axis=1) / model.n_trees).max()
              for k in range(len(X))]
    assert sum(share < SHARED for share in shares) == walk.far


def test_a_regression_forest_trades_rows_of_one_target_only():
    X, _, groups = real_like(60, 1)
    target = np.random.default_rng(1).integers(0, 3, 60).astype(float)  # few targets: trades
    model = from_sklearn(RandomForestRegressor(n_estimators=6, random_state=0).fit(X, target),
                         label_name="y", allow_regression=True)
    walk = _walk(model, X, target, groups, tries=200, seed=0)
    walked = pd.DataFrame(walk.X, columns=X.columns).assign(y=target)
    assert verify_regression(model, walked).verified


def test_boosters_and_forests_without_draws_are_refused():
    X, y, _ = real_like(40, 0)
    booster = from_sklearn(GradientBoostingClassifier(n_estimators=3).fit(X, y),
                           label_name="label")
    with pytest.raises(ValueError, match="forests only"):
        position_draws(booster, np.arange(len(X)))
    forest = from_sklearn(RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y),
                          label_name="label")
    with pytest.raises(ValueError, match="one draw count per row"):
        position_draws(forest, np.arange(len(X) + 1))
