"""A booster's later leaf values as gradient sums (issue 30): the training rows meet every
one of them, a flipped label breaks them, and the engine's rows meet them too."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier

from treeleaks import FeatureSchema, from_sklearn, reconstruct
from treeleaks.counts.gradient_rows import largest_gradient_miss
from treeleaks.demos.demo_data import LABEL, demo_data
from treeleaks.evaluation.metrics import evaluate
from treeleaks.frontends.lightgbm import read_lightgbm
from treeleaks.runtime.errors import TreeleaksError

lgb = pytest.importorskip("lightgbm")


def boosters() -> list:
    return [
        lambda: GradientBoostingClassifier(n_estimators=20, max_depth=4),
        lambda: HistGradientBoostingClassifier(max_iter=20, l2_regularization=1.0,
                                               early_stopping=False),
        lambda: lgb.LGBMClassifier(n_estimators=20, reg_lambda=1.0, verbose=-1),
    ]


def read(fitted, names=None, label=LABEL):
    if hasattr(fitted, "booster_"):
        return read_lightgbm(fitted, names, label_name=label)
    return from_sklearn(fitted, names, label_name=label)


@pytest.mark.parametrize("make", boosters())
def test_the_training_rows_meet_every_gradient_sum_and_a_flipped_label_does_not(make) -> None:
    X, y = load_breast_cancer(return_X_y=True)
    fitted = make().fit(X, y)
    model = read(fitted, label="label")
    gradients = model.gradients
    leaves = model.apply(X)
    added = np.column_stack([gradients.values[t][leaves[:, t]] for t in range(model.n_trees)])
    raw = fitted.predict(X, raw_score=True) if hasattr(fitted, "booster_") else (
        fitted.decision_function(X))
    assert np.allclose(gradients.start + added.sum(axis=1), raw)  # the model's own score
    miss, _ = largest_gradient_miss(model, leaves, y)
    assert miss <= 1.0
    flipped = y.copy()
    flipped[np.flatnonzero(leaves[:, 1] == leaves[0, 1])[0]] ^= 1
    miss, where = largest_gradient_miss(model, leaves, flipped)
    assert miss > 1.0 and "leaf value needs" in where


def test_gradient_sums_restore_the_labels_pooled_counts_lose() -> None:
    X, y = demo_data()
    X, y = X.iloc[:100].reset_index(drop=True), np.asarray(y)[:100]
    schema = FeatureSchema.from_frame(X)
    fitted = GradientBoostingClassifier(n_estimators=30, random_state=0).fit(
        X.to_numpy(dtype=float), y)
    model = read(fitted, list(X.columns))
    truth = X.assign(**{LABEL: y})
    rec = reconstruct(model, schema, time_limit=60)
    assert rec.verified and rec.certificate.leaf_values_match
    with_sums = evaluate(truth, rec.rows, schema, label=LABEL).label_agreement
    model.gradients = None  # what the counts alone give
    rec = reconstruct(model, schema, time_limit=60)
    assert rec.verified and rec.certificate.leaf_values_match is None
    without = evaluate(truth, rec.rows, schema, label=LABEL).label_agreement
    assert with_sums >= 0.95 and with_sums > without


def test_cp_sat_is_refused_with_gradient_sums() -> None:
    X, y = demo_data()
    X, y = X.iloc[:60].reset_index(drop=True), np.asarray(y)[:60]
    fitted = GradientBoostingClassifier(n_estimators=5).fit(X.to_numpy(dtype=float), y)
    with pytest.raises(TreeleaksError, match="use the solver 'highs'"):
        reconstruct(read(fitted, list(X.columns)), FeatureSchema.from_frame(X),
                    time_limit=20, solver="cp-sat")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(20, 60), trees=st.integers(2, 12))
def test_reconstructions_meet_the_counts_and_the_leaf_values(seed: int, n: int,
                                                             trees: int) -> None:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.integers(0, 2, (n, 5)), columns=[f"b{j}" for j in range(5)])
    y = ((X["b0"] + X["b1"] + rng.integers(0, 2, n)) >= 2).astype(int).to_numpy()
    if y.min() == y.max():
        y[0] ^= 1
    fitted = GradientBoostingClassifier(n_estimators=trees, max_depth=3,
                                        random_state=seed).fit(X.to_numpy(dtype=float), y)
    model = read(fitted, list(X.columns))
    rec = reconstruct(model, FeatureSchema.from_frame(X), time_limit=30)
    assert rec.status in ("OPTIMAL", "FEASIBLE") and rec.n_rows == n
    assert rec.verified and rec.certificate.leaf_values_match


def test_gradient_sums_no_rows_meet_are_infeasible_naming_the_leaf() -> None:
    """Issue 41: no silent fallback to the counts alone with a verified certificate."""
    X, y = demo_data()
    X, y = X.iloc[:60].reset_index(drop=True), np.asarray(y)[:60]
    fitted = GradientBoostingClassifier(n_estimators=10).fit(X.to_numpy(dtype=float), y)
    model = read(fitted, list(X.columns))
    model.gradients.sums[1][0, 3:5] += 5.0  # a leaf value no dataset gives
    rec = reconstruct(model, FeatureSchema.from_frame(X), time_limit=30)
    assert rec.status == "INFEASIBLE" and rec.n_rows == 0 and not rec.verified
    assert "no dataset meets both the booster's counts and its leaf values" in rec.message
    assert "contradict each other at tree " in rec.message
