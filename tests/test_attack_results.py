"""Every attack returns one shape of result: a `.status` from the shared vocabulary and a
JSON-ready `.summary()` that carries it, so the report, the sweep and the CLI read them
alike; each attack and its result type are public names of `treeleaks`."""

from __future__ import annotations

import dataclasses
import json

import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

import treeleaks
from treeleaks import AttackResult, FeatureSchema, RegressionDetails, Status, from_sklearn
from treeleaks.runtime.vocabulary import SolverStatus

from conftest import binary_frame


def _checked(result: object) -> dict:
    """The result's summary, after checking the shape every attack result has."""
    assert isinstance(result, AttackResult)
    summary = result.summary()
    assert json.loads(json.dumps(summary, allow_nan=False)) == summary
    assert summary["status"] == result.status
    assert result.status in set(Status) and isinstance(result.status, Status)
    return summary


@pytest.fixture(scope="module")
def forest():
    X, y = binary_frame(40, 6, seed=4)
    fitted = RandomForestClassifier(n_estimators=8, max_depth=3, bootstrap=False,
                                    random_state=0).fit(X, y)
    return from_sklearn(fitted, label_name="label"), X.assign(label=y)


def test_the_reconstruction(forest) -> None:
    model, truth = forest
    rec = treeleaks.reconstruct(model, FeatureSchema.from_frame(truth.drop(columns="label")),
                                time_limit=20)
    summary = _checked(rec)
    assert summary["status"] == Status.OPTIMAL and summary["n_rows"] == len(truth)
    # a forest that saw every row once: no formulation adds anything
    assert (rec.dp, rec.bootstrap, rec.regression, rec.packing) == (None, None, None, None)
    assert rec.checked == rec.verified and (rec.training_positions() == range(len(truth))).all()


def test_the_details_are_frozen() -> None:
    details = RegressionDetails(targets_exact=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        details.targets_exact = 4  # type: ignore[misc]


def test_solver_words_reach_a_result_only_through_status_solved() -> None:
    for word in (SolverStatus.OPTIMAL, SolverStatus.FEASIBLE, SolverStatus.INFEASIBLE,
                 SolverStatus.UNKNOWN):
        assert Status.solved(word) is Status(word.value)
    assert Status.solved(SolverStatus.MODEL_INVALID) is Status.UNKNOWN
    # the attack's own words are no solver's
    assert not {Status.DONE.value, Status.PARTIAL.value} & {w.value for w in SolverStatus}


def test_singling_out(forest) -> None:
    model, _ = forest
    result = treeleaks.single_out(model, time_limit=10)
    summary = _checked(result)
    assert summary["status"] == Status.DONE
    assert summary["n_predicates"] == len(summary["predicates"]) == len(result.predicates)
    assert all(p["text"].endswith(f"label = {p['label']}") for p in summary["predicates"])


def test_the_probabilistic_reconstruction() -> None:
    X, y = binary_frame(60, 5, seed=1)
    tree = from_sklearn(DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y))
    summary = _checked(treeleaks.tree_reconstruction(tree))
    assert summary["n_rows"] == 60 and 0.0 <= summary["dist_g"] <= summary["dist"] <= 1.0
    assert sum(leaf["support"] for leaf in summary["per_leaf"]) == 60


def test_the_leak_test(forest) -> None:
    _, truth = forest
    schema = FeatureSchema.from_frame(truth.drop(columns="label"))
    population, _ = binary_frame(200, 6, seed=9)
    population["label"] = population["f0"]
    result = treeleaks.leak_test(truth, truth=truth, population=population, schema=schema,
                                 label="label", n_samples=5)
    summary = _checked(result)
    assert summary["leak"] is True and summary["error"] == 0.0


def test_the_worst_case() -> None:
    X, y = binary_frame(30, 5, seed=2)
    bagged = RandomForestClassifier(n_estimators=10, max_depth=2, random_state=0).fit(X, y)
    model = from_sklearn(bagged, label_name="label")
    summary = _checked(treeleaks.worst_case(model, truth=X.assign(label=y), time_limit=20))
    assert summary["n_rows"] == 30


def test_the_informed_adversary(forest) -> None:
    model, truth = forest
    schema = FeatureSchema.from_frame(truth.drop(columns="label"))
    result = treeleaks.informed_adversary(model, schema, train=truth, label="label", n_targets=2,
                                          time_limit=10)
    summary = _checked(result)
    assert summary["n_targets"] == 2 and 0.0 <= summary["error"] <= 1.0
