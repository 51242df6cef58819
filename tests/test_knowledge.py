"""Side knowledge: known columns and known rows are respected exactly, and bad knowledge is
refused naming the problem."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from treeleaks import FeatureSchema, Knowledge, KnowledgeError, from_sklearn, reconstruct

from conftest import binary_frame


def _forest(n_rows: int, n_features: int, seed: int, depth: int | None, bootstrap: bool = False,
            n_trees: int = 5):
    X, y = binary_frame(n_rows, n_features, seed)
    forest = RandomForestClassifier(n_estimators=n_trees, max_depth=depth, bootstrap=bootstrap,
                                    random_state=seed).fit(X, y)
    train = X.assign(label=y)
    return from_sklearn(forest, label_name="label"), train


def _tuples(frame: pd.DataFrame, names: list[str]) -> Counter:
    return Counter(map(tuple, frame[names].to_numpy(dtype=float).tolist()))


@settings(max_examples=20, deadline=None, derandomize=True)
@given(
    n_rows=st.integers(8, 40), n_features=st.integers(3, 6), seed=st.integers(0, 10**6),
    depth=st.sampled_from([2, 3, None]), n_known=st.integers(1, 3),
    with_label=st.booleans(), linked=st.booleans(), strategy=st.sampled_from(["enumerate",
                                                                             "generate"]),
)
def test_known_columns_are_respected_exactly(n_rows, n_features, seed, depth, n_known,
                                             with_label, linked, strategy):
    model, train = _forest(n_rows, n_features, seed, depth)
    names = list(train.columns[:n_known]) + (["label"] if with_label else [])
    known = Knowledge(columns=train[names], linked=linked)
    rec = reconstruct(model, time_limit=30, certainty_time_limit=2, strategy=strategy,
                      knowledge=known)
    assert rec.status in ("OPTIMAL", "FEASIBLE"), rec.message
    assert rec.verified, rec.message
    assert "side knowledge" not in rec.message
    groups = [names] if linked else [[n] for n in names]
    for group in groups:
        assert _tuples(rec.rows, group) == _tuples(train, group)
    assert rec.knowledge.startswith("known columns")


@settings(max_examples=15, deadline=None, derandomize=True)
@given(n_rows=st.integers(8, 40), seed=st.integers(0, 10**6), depth=st.sampled_from([2, None]),
       n_known=st.integers(1, 8))
def test_known_rows_are_in_the_result_and_the_rest_fits_the_counts(n_rows, seed, depth,
                                                                   n_known):
    model, train = _forest(n_rows, 5, seed, depth)
    given_rows = train.sample(min(n_known, n_rows), random_state=seed)
    rec = reconstruct(model, time_limit=30, certainty_time_limit=2,
                      knowledge=Knowledge(rows=given_rows))
    assert rec.verified, rec.message
    assert len(rec.rows) == n_rows
    names = [*model.feature_names, "label"]
    assert not _tuples(given_rows, names) - _tuples(rec.rows, names)


def test_every_row_known_needs_no_search():
    model, train = _forest(20, 4, 0, None)
    rec = reconstruct(model, knowledge=Knowledge(rows=train))
    assert rec.status == "OPTIMAL" and rec.verified
    assert _tuples(rec.rows, list(train.columns)) == _tuples(train, list(train.columns))


@pytest.mark.parametrize("linked", [True, False])
def test_bootstrap_rows_carry_their_known_values(linked):
    model, train = _forest(40, 6, 3, None, bootstrap=True, n_trees=20)
    names = ["f1", "f4", "label"] if linked else ["f1", "f4"]
    rec = reconstruct(model, time_limit=60, knowledge=Knowledge(columns=train[names],
                                                                linked=linked))
    assert rec.status == "OPTIMAL" and rec.verified, rec.message
    if linked:  # rows come back in training order, each with its own known values
        assert (rec.rows[names].to_numpy(dtype=float) == train[names].to_numpy(dtype=float)).all()
    else:
        for name in names:
            assert Counter(rec.rows[name]) == Counter(train[name])


def test_knowing_every_column_pins_the_training_set():
    model, train = _forest(60, 10, 7, 2)
    rec = reconstruct(model, time_limit=30, knowledge=Knowledge(columns=train))
    assert rec.verified, rec.message
    assert _tuples(rec.rows, list(train.columns)) == _tuples(train, list(train.columns))
    assert rec.proven.all()  # every dataset consistent with model and knowledge holds them


def test_numerical_known_values_come_back_as_given():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=30).round(3), "b": rng.normal(size=30).round(3)})
    y = (X["a"] + X["b"] > 0).astype(int).to_numpy()
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    model = from_sklearn(tree, label_name="label")
    schema = FeatureSchema.from_frame(X)
    rec = reconstruct(model, schema, knowledge=Knowledge(columns=X[["a"]]))
    assert rec.verified, rec.message
    assert sorted(rec.rows["a"]) == sorted(X["a"])


# --- bad knowledge ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def small():
    return _forest(30, 4, 1, 3)


@pytest.mark.parametrize(("knowledge", "message"), [
    (lambda t: Knowledge(columns=t[["f0"]].rename(columns={"f0": "age"})),
     "column 'age' is neither a feature"),
    (lambda t: Knowledge(columns=t[["f0"]].iloc[:10]), "have 10 rows but the model was "
     "trained on 30"),
    (lambda t: Knowledge(columns=t[["f0"]].replace({1: 2})), "outside the schema"),
    (lambda t: Knowledge(columns=t[["f0"]].astype(object).where(t["f0"] == 0, "x")),
     "not a finite number"),
    (lambda t: Knowledge(columns=t[["label"]].replace({1: 7})), "is not one of the model's "
     "classes"),
    (lambda t: Knowledge(rows=t[["f0", "f1", "label"]]), "column 'f2' is missing"),
    (lambda t: Knowledge(columns=t[["label"]].assign(label=0), linked=False),
     "the known labels contradict the model"),
])
def test_knowledge_that_does_not_fit_is_refused_naming_it(small, knowledge, message):
    model, train = small
    with pytest.raises(KnowledgeError, match=message):
        reconstruct(model, knowledge=knowledge(train))


def test_known_rows_the_counts_cannot_hold_name_the_tree_and_leaf(small):
    model, train = small
    twice = pd.concat([train, train.iloc[:1]], ignore_index=True).iloc[-20:]
    too_many = pd.concat([twice] + [train.iloc[:1]] * 25, ignore_index=True).iloc[:30]
    with pytest.raises(KnowledgeError, match=r"land in tree \d+, leaf \d+, which holds \d+ "
                       "training rows of that class"):
        reconstruct(model, knowledge=Knowledge(rows=too_many))


def test_known_columns_that_contradict_the_model_are_infeasible(small):
    model, train = small
    # each value fits some leaf, but not all 30 rows can have f0 = 1: trees send rows left
    assert (train["f0"] == 0).any()
    every_one = Knowledge(columns=train[["f0"]].assign(f0=1), linked=False)
    rec = reconstruct(model, time_limit=20, knowledge=every_one)
    assert rec.status == "INFEASIBLE"
    assert "together with the side knowledge" in rec.message
    assert not len(rec.rows)


def test_known_values_of_a_row_that_fit_no_leaf_are_refused(small):
    model, train = small
    wrong = train[["f0", "label"]].copy()
    wrong["f0"] = 1 - wrong["f0"]  # every row's f0 flipped, labels kept
    with pytest.raises(KnowledgeError, match=r"known columns, row \d+ \(f0=.*label=.*\): no "
                       r"leaf of tree \d+ holds a training row with these values"):
        reconstruct(model, time_limit=20, knowledge=Knowledge(columns=wrong))


@pytest.mark.parametrize("columns", [None, "linked", "multisets"])
def test_bootstrap_known_rows_are_among_the_rows(columns):
    model, train = _forest(40, 6, 5, None, bootstrap=True, n_trees=20)
    given_rows = train.sample(6, random_state=1)
    known = Knowledge(rows=given_rows, linked=columns != "multisets",
                      columns=None if columns is None else train[["f2"]])
    rec = reconstruct(model, time_limit=60, knowledge=known)
    assert rec.status == "OPTIMAL" and rec.verified, rec.message
    names = [*model.feature_names, "label"]
    assert not _tuples(given_rows, names) - _tuples(rec.rows, names)
    assert "side knowledge" not in rec.message


def test_bootstrap_known_row_no_training_row_can_be_is_infeasible():
    model, train = _forest(40, 6, 7, None, bootstrap=True, n_trees=20)
    impossible = train.assign(label=1 - train["label"])  # every row known, every label wrong
    assert (train["label"] == 1).sum() == 23  # of 40, so the classes' weighted counts cannot match
    rec = reconstruct(model, time_limit=30, knowledge=Knowledge(rows=impossible))
    assert rec.status == "INFEASIBLE"
    assert "known row" in rec.message or "side knowledge" in rec.message


def test_missing_csv_is_a_clear_error(tmp_path):
    with pytest.raises(KnowledgeError, match=r"known columns file .* does not exist"):
        Knowledge.from_csv(columns=tmp_path / "absent.csv")

