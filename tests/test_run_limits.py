"""One check of a run's time limits: the library refuses what the command line refuses,
in the same words (issue 53, item 1); and the one conversion of a deadline to a solver's
seconds."""

from __future__ import annotations

import math
import time

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier

from treeleaks import from_sklearn
from treeleaks.attacks.reconstruct import reconstruct
from treeleaks.cli.app import positive_seconds, seconds
from treeleaks.runtime.clock import RunClock, seconds_until
from treeleaks.runtime.errors import TreeleaksError
from treeleaks.runtime.limits import check_run_options, proof_limit_problem, time_limit_problem

from conftest import binary_frame

numbers = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-10**6, 10**6)


def small_forest():
    X, y = binary_frame(30, 4, seed=1)
    return from_sklearn(RandomForestClassifier(n_estimators=2, bootstrap=False,
                                               random_state=0).fit(X, y))


def test_the_library_refuses_a_time_limit_of_0_as_the_command_line_does():
    with pytest.raises(typer.BadParameter) as cli:
        positive_seconds(0.0)
    assert str(cli.value) == "must be a positive number of seconds, not 0"
    with pytest.raises(TreeleaksError) as library:
        reconstruct(small_forest(), time_limit=0)
    assert str(library.value) == "time_limit must be a positive number of seconds, not 0"


@pytest.mark.parametrize("value, shown", [(float("nan"), "nan"), (-1, "-1"), (0.0, "0"),
                                          (float("inf"), "inf"), ("soon", "'soon'"),
                                          (True, "True")])
def test_a_time_limit_a_run_cannot_use_is_named_with_the_value(value, shown):
    with pytest.raises(TreeleaksError) as refused:
        reconstruct(small_forest(), time_limit=value)
    assert str(refused.value) == f"time_limit must be a positive number of seconds, not {shown}"


def test_the_proofs_may_have_no_time_but_not_a_negative_or_endless_one():
    assert proof_limit_problem(0.0) is None
    with pytest.raises(TreeleaksError, match=r"^certainty_time_limit must be 0 or a positive "
                       r"number of seconds, not -1$"):
        reconstruct(small_forest(), certainty_time_limit=-1)


@given(numbers)
def test_library_and_command_line_refuse_the_same_time_limits_in_the_same_words(value):
    problem = time_limit_problem(value)
    assert (problem is None) == (math.isfinite(value) and value > 0)
    try:
        positive_seconds(value)
    except typer.BadParameter as exc:
        assert str(exc) == problem
    else:
        assert problem is None
    try:
        check_run_options(value, 0.0, 1, 0, 1)
    except TreeleaksError as exc:
        assert str(exc) == f"time_limit {problem}"
    else:
        assert problem is None


@given(numbers)
def test_library_and_command_line_refuse_the_same_proof_limits_in_the_same_words(value):
    problem = proof_limit_problem(value)
    assert (problem is None) == (math.isfinite(value) and value >= 0)
    try:
        seconds(value)
    except typer.BadParameter as exc:
        assert str(exc) == problem
    else:
        assert problem is None
    try:
        check_run_options(1.0, value, 1, 0, 1)
    except TreeleaksError as exc:
        assert str(exc) == f"certainty_time_limit {problem}"
    else:
        assert problem is None


def test_a_solver_is_given_the_seconds_to_its_deadline_never_fewer_than_its_floor():
    now = time.perf_counter()
    assert seconds_until(now + 5.0, now=now) == 5.0
    assert seconds_until(now - 5.0, now=now) == 0.0
    assert seconds_until(now - 5.0, 0.01, now) == 0.01
    assert 0.0 < seconds_until(time.perf_counter() + 5.0) <= 5.0


@given(st.floats(0.0, 100.0), st.floats(0.0, 1000.0))
def test_a_stage_deadline_within_the_run_never_passes_the_run_s_end(limit, seconds_asked):
    clock = RunClock(limit, proof_limit=seconds_asked)
    assert clock.within(seconds_asked) <= clock.deadline
    assert clock.proof_deadline() <= clock.deadline
    assert clock.start <= clock.within(seconds_asked)
