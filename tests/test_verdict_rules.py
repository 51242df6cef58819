"""The verdict's rules, one by one: for each, a model on which it holds and one on which it
does not, audited with and without the custodian's rows; and the level without the rows
never below the level they measure (fail-safe)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.tree import DecisionTreeClassifier

from treeleaks import from_sklearn, load_model
from treeleaks.report.collect import run_audit
from treeleaks.report.evidence import AuditInput
from treeleaks.report.findings import Audit
from treeleaks.report.risk import RULES, Basis, assess

from conftest import binary_frame

LEVELS = {"LOW": 0, "MEDIUM": 1, "HIGH": 2}
BUDGET = 20.0


def _cancer() -> tuple[pd.DataFrame, object]:
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    return X.iloc[:80, :6], y.iloc[:80].to_numpy()


def _diabetes() -> tuple[pd.DataFrame, object]:
    X, y = load_diabetes(return_X_y=True, as_frame=True, scaled=False)
    return X.iloc[:60, :5], y.iloc[:60].to_numpy()


R_FIXTURES = Path(__file__).parent / "fixtures" / "r"


def _pima() -> tuple[pd.DataFrame, object]:
    """The rows R's rpart fixture was fitted on (tests/fixtures/r/make.R)."""
    r = json.loads((R_FIXTURES / "rpart_class.json").read_text())
    return pd.DataFrame(r["X"], columns=r["columns"]), np.array(r["y"])


MODELS = {  # name: (data, estimator); small enough for an audit in a few seconds
    "binary forest": (lambda: binary_frame(60, 8, 0),
                      lambda: RandomForestClassifier(5, bootstrap=False, random_state=0)),
    "bootstrap forest": (_cancer, lambda: RandomForestClassifier(5, random_state=0)),
    "forest of stumps": (_cancer, lambda: RandomForestClassifier(
        5, max_depth=1, random_state=0)),
    "tree": (_cancer, lambda: DecisionTreeClassifier(random_state=0)),
    "regression forest": (_diabetes, lambda: RandomForestRegressor(20, random_state=0)),
    "regression forest of leaves of 5": (_diabetes, lambda: RandomForestRegressor(
        5, min_samples_leaf=5, random_state=0)),
    "R rpart": (_pima, None),  # read from its .rds: it stores y and where row by row
}
DATA, POPULATION = "data", "data and population"


@cache
def audit_of(name: str, given: str | None) -> Audit:
    """The audit of model ``name`` with nothing, the data, or the data and a population."""
    make_data, make_estimator = MODELS[name]
    X, y = make_data()
    if make_estimator is None:  # an R model, read from its fixture
        estimator, model = None, load_model(R_FIXTURES / "rpart_class.rds")
        model.label_name = "y"
    else:
        estimator = make_estimator().fit(X, y)
        model = from_sklearn(estimator, label_name="y", allow_regression=True)
    data = None if given is None else X.assign(y=y)
    population = None
    if given == POPULATION:
        Xp, yp = binary_frame(200, X.shape[1], 7)
        population = Xp.assign(y=yp)
    return run_audit(AuditInput(model, "model.skops", None, estimator, data,
                                None if data is None else "y", population, BUDGET))


# rule: [(model, what is given, whether the rule holds)], a case where it holds and one where
# it does not, with and without the data
CASES = {
    "stored row by row": [("R rpart", None, True), ("R rpart", DATA, True),
                          ("tree", None, False), ("tree", DATA, False)],
    "proven rows": [("binary forest", None, True), ("binary forest", DATA, True),
                    ("bootstrap forest", None, False), ("bootstrap forest", DATA, False),
                    ("regression forest of leaves of 5", None, False)],
    "singled out (proven)": [("tree", None, True), ("tree", DATA, True),
                             ("bootstrap forest", None, False),
                             ("bootstrap forest", DATA, False)],
    "singled out": [("bootstrap forest", DATA, True), ("bootstrap forest", None, False),
                    ("forest of stumps", DATA, False)],
    "leak test": [("binary forest", POPULATION, True), ("binary forest", DATA, False),
                  ("binary forest", None, False)],
    "singling-out candidates": [("bootstrap forest", None, True),
                                ("bootstrap forest", DATA, False),
                                ("binary forest", None, False)],
    "rows rebuilt exactly": [("binary forest", DATA, True), ("binary forest", None, False),
                             ("forest of stumps", DATA, False)],
    "targets given away": [("regression forest", None, True),
                           ("regression forest", DATA, True),
                           ("bootstrap forest", None, False), ("bootstrap forest", DATA, False)],
    "close reconstruction": [("binary forest", DATA, True), ("binary forest", None, False),
                             ("forest of stumps", DATA, False)],
    "narrowed down": [("binary forest", None, True), ("binary forest", DATA, True),
                      ("bootstrap forest", None, False), ("bootstrap forest", DATA, False)],
    "rows rebuilt": [("bootstrap forest", None, True), ("bootstrap forest", DATA, False),
                     ("tree", None, False)],
}


def test_every_rule_has_its_cases() -> None:
    assert set(CASES) == {rule.name for rule in RULES}
    for cases in CASES.values():
        assert {holds for *_, holds in cases} == {True, False}


@pytest.mark.parametrize(("rule", "model", "given", "holds"), [
    (rule, model, given, holds) for rule, cases in CASES.items()
    for model, given, holds in cases])
def test_rule_holds_where_it_should(rule: str, model: str, given: str | None,
                                    holds: bool) -> None:
    verdict = audit_of(model, given).verdict
    assert next(r for r in RULES if r.name == rule).holds(verdict) is holds


@pytest.mark.parametrize("model", list(MODELS))
def test_the_level_without_the_data_is_never_below_the_measured_one(model: str) -> None:
    alone, measured = audit_of(model, None).risk, audit_of(model, DATA).risk
    assert LEVELS[alone["level"]] >= LEVELS[measured["level"]]
    assert measured["presumed"] is False and measured["checks"] == []
    if alone["presumed"]:  # a presumed level names the check that settles it
        assert alone["checks"] and all("--data" in check for check in alone["checks"])


def test_a_presumed_level_is_marked_and_settled_by_the_data() -> None:
    alone = audit_of("bootstrap forest", None).risk
    assert (alone["level"], alone["basis"], alone["presumed"]) == ("HIGH", Basis.PRESUMED, True)
    assert alone["rule"] == "singling-out candidates"
    assert "no proof settles them" in alone["why"]
    assert any("match exactly one" in check for check in alone["checks"])
    measured = audit_of("bootstrap forest", DATA).risk
    assert (measured["basis"], measured["rule"]) == (Basis.MEASURED, "singled out")
    stumps = audit_of("forest of stumps", DATA).risk  # the data settles it lower
    assert stumps["level"] == "LOW" and not stumps["presumed"]
    assert audit_of("forest of stumps", None).risk["level"] != "LOW"


def test_the_guesses_a_stripped_copy_allows_count_for_the_file_too() -> None:
    # a bootstrap tree's counts cover its sample only, so every leaf stays a guess
    alone = audit_of("forest of stumps", None).verdict
    assert alone["singling_guesses_open"] == 20  # 5 stumps, 2 leaves, 2 classes
    singled = audit_of("bootstrap forest", DATA).attack("single-out").figures
    assert singled["rows_singled_out"] >= max(singled["rows_singled_out_by_predicates"],
                                              singled["rows_singled_out_by_guesses"])
    # exact counts of every row settle each guess: none is left open
    assert audit_of("binary forest", None).verdict["singling_guesses_open"] == 0


def test_a_regressors_leaf_values_stay_open_guesses() -> None:
    from sklearn.tree import DecisionTreeRegressor

    from treeleaks.attacks.singling_out import open_guesses

    X, y = _diabetes()
    tree = DecisionTreeRegressor(min_samples_leaf=5, random_state=0).fit(X, y)
    # exact counts of leaves of five or more rows, yet one row may hold its leaf's mean
    assert open_guesses(from_sklearn(tree, allow_regression=True)) == tree.get_n_leaves()


def test_rebuilt_rows_are_never_called_given_away() -> None:
    v = audit_of("bootstrap forest", None).verdict
    rebuilt = next(r for r in RULES if r.name == "rows rebuilt").says(v)
    assert f"{v['rows_reconstructed']} row(s) the model allows" in rebuilt
    assert "not the training rows" in rebuilt and "given away" not in rebuilt
    assert 0 <= v["rows_pinned"] <= v["rows_reconstructed"]


def test_rows_proven_only_as_boxes_are_not_rows_given_away() -> None:
    v = audit_of("regression forest of leaves of 5", None).verdict
    assert v["rows_proven"] > 0 and v["rows_proven_pinned"] == 0  # each a leaf's box
    assert audit_of("binary forest", None).verdict["rows_proven_pinned"] > 0


def test_the_data_never_lowers_what_the_file_proves() -> None:
    # singled out from the model alone holds whatever the data says of the candidates
    figures = {"rows_singled_out_proven": 3, "rows_singled_out": 0,
               "singled_out_measured_on_data": True}
    risk = assess(figures, partial=False)
    assert (risk["level"], risk["rule"], risk["basis"]) == ("HIGH", "singled out (proven)",
                                                            Basis.PROVEN)


def test_the_report_states_every_rule_with_its_basis() -> None:
    risk = audit_of("tree", None).risk
    assert risk["rules"][:-1] == [rule.text for rule in RULES]
    assert all("presumed" in rule.text for rule in RULES if rule.basis == Basis.PRESUMED)
    assert all("--data" in rule.text for rule in RULES if rule.basis == Basis.MEASURED)
