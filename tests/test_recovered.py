"""Rows recovered (`treeleaks.evaluation.recovered`): the true rows' own boxes score 100%,
random rows about 0%, a permutation 100%; a flipped label or target is not recovered; rows
are a multiset; the sparse matching for large tables agrees with the exact one."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

import treeleaks.evaluation.recovered as recovered
from treeleaks import FeatureSchema, from_sklearn
from treeleaks.evaluation.recovered import References, ScoreError, rows_recovered, true_box_rows

UNSCORED = References(n_random=0, true_boxes=False)  # no random rows, no floor


def _default_forest(load):
    data = load(as_frame=True)
    model = from_sklearn(RandomForestClassifier(random_state=0).fit(data.data, data.target),
                         label_name="label")
    return model, data.data.assign(label=data.target.to_numpy()), \
        FeatureSchema.from_frame(data.data)


@pytest.fixture(scope="module", params=[load_wine, load_breast_cancer],
                ids=["wine", "cancer"])
def forest(request):
    return _default_forest(request.param)


def test_true_boxes_score_every_row_and_random_rows_about_none(forest):
    model, truth, schema = forest
    assert model.bootstrap and all(tree.draws is not None for tree in model.trees)
    boxes = true_box_rows(model, truth)
    outside = (boxes[list(truth.columns[:-1])] != truth[truth.columns[:-1]]).to_numpy().mean()
    assert outside > 0.5  # a box fill, not the truth copied
    score = rows_recovered(model, truth, boxes, schema, references=References(n_random=2))
    assert score.rows_recovered == len(truth) and score.recovered_share == 1.0
    assert score.optimal and score.rows_returned == len(truth)
    assert score.matched_error == pytest.approx(score.true_box_error)
    assert 0 < score.true_box_error < score.random_error
    columns = recovered.feature_columns(truth, schema, "label")
    random = recovered._random_rows(columns, truth["label"], np.random.default_rng(1))
    assert rows_recovered(model, truth, random, schema,
                          references=UNSCORED).recovered_share < 0.02


def test_the_sparse_matching_agrees_with_the_exact_one(forest, monkeypatch):
    model, truth, schema = forest
    half = truth.sample(frac=0.5, random_state=0)
    returned = pd.concat([half, true_box_rows(model, truth).iloc[::3]], ignore_index=True)
    exact = rows_recovered(model, truth, returned, schema,
                           references=UNSCORED)
    monkeypatch.setattr(recovered, "DENSE_CELLS", 2000)
    sparse = rows_recovered(model, truth, returned, schema,
                            references=UNSCORED)
    assert exact.optimal and not sparse.optimal
    assert sparse.rows_recovered == exact.rows_recovered
    assert exact.rows_recovered >= len(half)


def test_without_the_draws_every_tree_counts(forest):
    model, truth, schema = forest
    boxes = true_box_rows(model, truth)  # boxes of the drawing trees only
    every = np.ones((len(truth), model.n_trees), dtype=np.int64)
    score = rows_recovered(model, truth, boxes, schema, draws=every,
                           references=UNSCORED)
    assert score.rows_recovered <= len(truth)
    own = true_box_rows(model, truth, draws=every)
    assert rows_recovered(model, truth, own, schema, draws=every,
                          references=UNSCORED).recovered_share == 1.0


@st.composite
def tables(draw):
    """A small table of integer, one-hot and numerical columns with duplicate rows."""
    n = draw(st.integers(8, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    distinct = pd.DataFrame({
        "age": rng.integers(18, 25, n), "num": np.round(rng.normal(size=n), 2),
        "red": rng.integers(0, 2, n)}).assign(blue=lambda f: 1 - f["red"],
                                             label=rng.integers(0, 2, n))
    copies = rng.integers(0, n, draw(st.integers(0, n)))
    return pd.concat([distinct, distinct.iloc[copies]], ignore_index=True), \
        draw(st.booleans())


def _small_forest(table, bootstrap):
    X = table.drop(columns=["label"])
    forest = RandomForestClassifier(n_estimators=5, bootstrap=bootstrap, random_state=0)
    return from_sklearn(forest.fit(X, table["label"]), label_name="label"), \
        FeatureSchema.from_frame(X)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(0, 10**6))
def test_permutations_flipped_labels_and_duplicates(drawn, seed):
    table, bootstrap = drawn
    model, schema = _small_forest(table, bootstrap)

    def score(rows):
        return rows_recovered(model, table, rows, schema,
                              references=UNSCORED)

    shuffled = table.sample(frac=1, random_state=seed % 2**32)
    assert score(shuffled).rows_recovered == len(table)
    flipped = shuffled.copy()
    flipped.iloc[0, flipped.columns.get_loc("label")] = 1 - flipped["label"].iloc[0]
    assert score(flipped).rows_recovered == len(table) - 1  # the class totals differ by one
    once = table.drop_duplicates()
    assert score(once).rows_recovered == len(once)  # a row returned once counts once
    twice = pd.concat([table, once])
    assert score(twice).rows_recovered == len(table)
    with patch.object(recovered, "DENSE_CELLS", 20):  # the sparse matching, by groups
        for rows in (shuffled, flipped, once, twice):
            sparse = score(rows)
            assert not sparse.optimal
            assert sparse.rows_recovered == min(len(rows), len(table)) - (rows is flipped)


def test_a_regressor_recovers_exact_targets_only():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.integers(0, 50, 60), "b": rng.normal(size=60)})
    y = np.round(rng.normal(size=60), 3)
    model = from_sklearn(RandomForestRegressor(n_estimators=10, random_state=0).fit(X, y),
                         label_name="y", allow_regression=True)
    truth, schema = X.assign(y=y), FeatureSchema.from_frame(X)
    assert rows_recovered(model, truth, truth[::-1], schema).recovered_share == 1.0
    nudged = truth.assign(y=truth["y"] + 1e-9)
    assert rows_recovered(model, truth, nudged, schema,
                          references=References(n_random=0)).rows_recovered == 0
    assert rows_recovered(model, truth, true_box_rows(model, truth), schema,
                          references=UNSCORED).recovered_share == 1.0


def test_frames_and_draws_that_do_not_fit_are_refused(forest):
    model, truth, schema = forest
    with pytest.raises(ScoreError, match="no label column 'label'"):
        rows_recovered(model, truth, truth.drop(columns=["label"]), schema)
    with pytest.raises(ScoreError, match="lacks the model's column"):
        rows_recovered(model, truth, truth.drop(columns=[truth.columns[0]]), schema,
                       references=UNSCORED)
    with pytest.raises(ScoreError, match="draws have shape"):
        rows_recovered(model, truth, truth, schema, draws=np.ones((3, 3)))


def test_the_matching_pairs_each_true_row_with_its_own_copy(forest):
    model, truth, schema = forest
    shuffled = truth.sample(frac=1, random_state=2)
    pairs = recovered.recovery_matching(model, truth, shuffled, schema)
    assert pairs["recovered"].all() and (pairs["shared"] == 1).all()
    assert (pairs["true_row"].to_numpy() == np.arange(len(truth))).all()
    assert (shuffled.index[pairs["returned_row"]] == truth.index).all()
    assert (pairs["error"] == 0).all()
