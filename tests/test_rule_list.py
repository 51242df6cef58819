"""The rule-list IR (JSON in and out, every field checked) and the greedy learner."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from treeleaks.attacks.probabilistic import rule_list_reconstruction
from treeleaks.evaluation.entropy import summarize
from treeleaks.frontends.rule_list import RuleList, RuleListFormatError
from treeleaks.learners.greedy_rule_list import GreedyRuleListClassifier

from conftest import binary_frame

PAPER = {
    "format": "treeleaks.RuleList", "feature_names": ["a1", "a2", "a3"], "classes": [0, 1],
    "rules": [{"if": [{"feature": "a1", "op": "==", "value": 1},
                      {"feature": "a2", "op": "==", "value": 1}], "then": 1, "counts": [0, 2]},
              {"if": [{"feature": "a3", "op": "==", "value": 1}], "then": 0, "counts": [2, 0]}],
    "default": {"then": 1, "counts": [0, 1]}, "n_rows": 5,
}


def with_change(path: list, value: object) -> dict:
    data = json.loads(json.dumps(PAPER))
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data



def assert_counts_are_the_captured_rows(rules: RuleList, X: pd.DataFrame, y: np.ndarray) -> None:
    """Each rule's class counts are those of the rows it captures (it matches them and no
    earlier rule does)."""
    free = np.ones(len(X), dtype=bool)
    for rule, (lower, upper) in zip(rules.all_rules, rules.boxes()):
        hit = free & np.all((lower < X.to_numpy()) & (upper >= X.to_numpy()), axis=1)
        assert list(rule.counts) == np.bincount(y[hit], minlength=2).tolist()
        free &= ~hit

def test_json_round_trip() -> None:
    rules = RuleList.from_dict(PAPER)
    again = RuleList.from_dict(json.loads(rules.to_json()))
    assert again.to_dict() == rules.to_dict()
    assert [str(r) for r in again.all_rules] == [
        "if a1 == 1 and a2 == 1 then 1", "if a3 == 1 then 0", "else 1"]
    assert again.n_rows == 5
    X = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 0]])
    assert again.predict(X).tolist() == [1, 0, 1]


@pytest.mark.parametrize(("path", "value", "message"), [
    (["n_rows"], 6, "supports add up to 5 rows but n_rows is 6"),
    (["rules", 0, "counts"], [0, 2, 1], "one count of 0 or more per class"),
    (["rules", 1, "counts"], KeyError, "counts are given for some rules but not others"),
    (["rules", 0, "then"], 7, "rule 1 predicts 7, which is not one of the classes"),
    (["rules", 1, "if", 0, "feature"], "a9", "rule 2 tests 'a9'"),
    (["rules", 1, "if", 0, "op"], "<", "rules.1.if.0.op"),
    (["rules", 1, "if", 0, "value"], 0.5, "'==' tests whole values"),
    (["rules", 1, "if"], [], "rules.1.if"),
    (["feature_names"], ["a1", "a1", "a3"], "names a feature twice"),
    (["default"], KeyError, "default"),
    (["extra"], 1, "extra"),
])
def test_malformed_rule_lists(path: list, value: object, message: str) -> None:
    with pytest.raises(RuleListFormatError, match=message.replace(".", r"\.")):
        RuleList.from_dict(with_change(path, value))


def test_not_an_object() -> None:
    with pytest.raises(RuleListFormatError, match="holds a JSON object, not list"):
        RuleList.from_dict([])


@parametrize_with_checks([GreedyRuleListClassifier()])
def test_sklearn_compatible(estimator, check) -> None:
    check(estimator)


def test_learner_fits_and_releases_its_supports() -> None:
    """y = f0 and f1: the greedy list fits it exactly, and each released rule's per-class
    counts are the training rows that rule captures first."""
    X, _ = binary_frame(400, 5, seed=1)
    y = (X.f0 & X.f1).to_numpy()
    model = GreedyRuleListClassifier(max_length=3, max_width=2).fit(X, y)
    assert model.score(X, y) == 1.0
    rules = model.rule_list_
    assert rules.n_rows == 400
    assert rules.predict(X.to_numpy()).astype(int).tolist() == model.predict(X).tolist()
    assert_counts_are_the_captured_rows(rules, X, y)
    summary = summarize(rule_list_reconstruction(rules))
    assert 0 < summary.dist_g < 1


def test_learner_limits() -> None:
    X, y = binary_frame(300, 6, seed=2)
    for width, length, support in ((1, 4, 0.01), (3, 2, 0.2)):
        model = GreedyRuleListClassifier(max_length=length, max_width=width,
                                         min_support=support).fit(X, y)
        rules = model.rule_list_.rules
        assert len(rules) <= length
        assert all(len(r.conditions) <= width for r in rules)
        assert all(sum(r.counts) >= support * len(X) for r in rules)


def test_learner_feature_names_from_arrays() -> None:
    X = pd.DataFrame({"a": [0, 1, 0, 1], "b": [0, 0, 1, 1]}).to_numpy()
    model = GreedyRuleListClassifier().fit(X, ["n", "y", "n", "y"])
    assert model.rule_list_.feature_names == ["x0", "x1"]
    assert model.rule_list_.classes == ["n", "y"]


def test_imodels_greedy_rule_list() -> None:
    """imodels' rule list, imported: the same predictions, and supports that add up to the
    training rows and match the rows each rule captures."""
    imodels = pytest.importorskip("imodels")
    from treeleaks.frontends.rule_list import from_imodels

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.integers(0, 5, (400, 4)), columns=list("abcd"))
    y = ((X.a > 2) & (X.b < 3) | (X.c == 0)).astype(int).to_numpy()
    model = imodels.GreedyRuleListClassifier(max_depth=4).fit(X, y)
    rules = from_imodels(model)
    assert rules.n_rows == 400 and rules.feature_names == list("abcd")
    assert rules.predict(X.to_numpy()).astype(int).tolist() == model.predict(X).tolist()
    assert_counts_are_the_captured_rows(rules, X, y)
    again = RuleList.from_dict(json.loads(rules.to_json()))
    assert summarize(rule_list_reconstruction(again)).n_rows == 400
