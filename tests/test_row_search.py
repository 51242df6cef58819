"""The per-row search for partial datasets (`counts/row_search.py`, issue 29 step 3): the
rows it returns fit every released count, their boxes are not empty, and on an easy forest
every training row comes back."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier

from treeleaks import from_sklearn
from treeleaks.counts.row_search import row_points, search_rows
from treeleaks.counts.verify import verify_within
from treeleaks.ir.model import ReleasedModel


def forest(n_rows: int, n_features: int, n_trees: int, seed: int, *, extra: bool = False,
           bootstrap: bool = False, max_depth: int | None = None,
           ) -> tuple[ReleasedModel, pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n_rows, n_features)).round(2),
                     columns=[f"x{j}" for j in range(n_features)])
    y = ((X["x0"] + rng.normal(0, 0.7, n_rows)) > 0).astype(int).to_numpy()
    kind = (ExtraTreesClassifier(n_estimators=n_trees, random_state=seed, max_depth=max_depth)
            if extra else RandomForestClassifier(n_estimators=n_trees, bootstrap=bootstrap,
                                                 random_state=seed, max_depth=max_depth))
    return from_sklearn(kind.fit(X, y), label_name="label"), X, y


def check_within(model: ReleasedModel, leaves: np.ndarray, cls: np.ndarray) -> None:
    """The rows' points (one in each row's box: `row_points` refuses an empty box) land in
    the leaves returned and fill no leaf beyond its count."""
    points = row_points(model, leaves)
    np.testing.assert_array_equal(model.apply(points), leaves)
    rows = pd.DataFrame(points, columns=list(model.feature_names)).assign(
        label=np.asarray(model.classes)[cls])
    certificate = verify_within(model, rows)
    assert certificate.verified, certificate


def test_an_easy_forest_gives_back_every_row() -> None:
    model, X, y = forest(40, 3, 5, seed=1, max_depth=3)
    leaves, cls = search_rows(model, time.perf_counter() + 20)
    assert len(cls) == len(X)
    check_within(model, leaves, cls)
    assert np.bincount(cls, minlength=2).tolist() == np.bincount(y, minlength=2).tolist()


@pytest.mark.parametrize("extra", [False, True])
def test_full_depth_forests_give_rows_within_every_count(extra: bool) -> None:
    model, X, _ = forest(120, 5, 20, seed=2, extra=extra)
    told: list[int] = []
    leaves, cls = search_rows(model, time.perf_counter() + 3, seed=3,
                              on_better=lambda _, c: told.append(len(c)))
    check_within(model, leaves, cls)
    assert len(cls) >= 0.7 * len(X)
    assert told and told == sorted(told) and told[-1] == len(cls)


def test_start_rows_are_kept_or_bettered() -> None:
    model, X, y = forest(120, 5, 20, seed=4)
    true_leaves = model.apply(X.to_numpy())
    start = (true_leaves[:100], y[:100])
    first: list[int] = []
    leaves, cls = search_rows(model, time.perf_counter() + 1, start=start,
                              on_better=lambda _, c: first.append(len(c)))
    assert first[0] >= 100 and len(cls) >= 100
    check_within(model, leaves, cls)


def test_pinned_start_rows_stay() -> None:
    model, X, y = forest(120, 5, 20, seed=6, extra=True)
    true_leaves = model.apply(X.to_numpy())
    leaves, cls = search_rows(model, time.perf_counter() + 2, start=(true_leaves[:60], y[:60]),
                              pinned=30)
    check_within(model, leaves, cls)
    returned = {(tuple(row), c) for row, c in zip(leaves.tolist(), cls.tolist())}
    assert all((tuple(row), c) in returned
               for row, c in zip(true_leaves[:30].tolist(), y[:30].tolist()))


def test_refuses_start_rows_beyond_a_count() -> None:
    model, X, y = forest(60, 3, 5, seed=7)
    true_leaves = model.apply(X.to_numpy())
    copies = int(model.trees[0].counts[true_leaves[0, 0], y[0]]) + 1
    over = (np.repeat(true_leaves[:1], copies, axis=0), np.full(copies, y[0]))
    with pytest.raises(ValueError, match="beyond its count"):
        search_rows(model, time.perf_counter() + 1, start=over)


def test_refuses_a_bootstrap_forest() -> None:
    model, _, _ = forest(60, 3, 5, seed=5, bootstrap=True)
    with pytest.raises(ValueError, match="saw every row once"):
        search_rows(model, time.perf_counter() + 1)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_rows=st.integers(2, 40), n_features=st.integers(1, 4), n_trees=st.integers(1, 6),
       seed=st.integers(0, 10_000), extra=st.booleans(),
       max_depth=st.one_of(st.none(), st.integers(1, 4)))
def test_any_small_forest_gives_rows_within_every_count(
        n_rows: int, n_features: int, n_trees: int, seed: int, extra: bool,
        max_depth: int | None) -> None:
    model, _, _ = forest(n_rows, n_features, n_trees, seed, extra=extra, max_depth=max_depth)
    leaves, cls = search_rows(model, time.perf_counter() + 0.3, seed=seed)
    assert leaves.shape == (len(cls), model.n_trees)
    if len(cls):
        check_within(model, leaves, cls)
