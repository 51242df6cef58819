"""The MIP wrapper whose time limit holds: a large model runs in a child process that is
killed at the limit, and answers as scipy's milp would."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

import treeleaks.counts.bounded_milp as bounded


def _knapsack(n: int = 30, seed: int = 0):
    """A small covering MIP with a unique optimum (distinct weights)."""
    rng = np.random.default_rng(seed)
    A = sp.csr_matrix(rng.integers(0, 2, size=(12, n)).astype(float))
    cost = rng.permutation(n) + 1.0
    return dict(c=cost, integrality=np.ones(n), bounds=Bounds(0, 1),
                constraints=LinearConstraint(A, np.ones(12), np.inf),
                options={"time_limit": 30.0})


def test_a_model_solved_in_a_child_gives_scipys_answer(monkeypatch):
    problem = _knapsack()
    expected = milp(**problem)
    monkeypatch.setattr(bounded, "CHILD_NONZEROS", 0)  # every model goes to a child
    result = bounded.bounded_milp(**problem)
    assert result.status == expected.status == 0
    np.testing.assert_array_equal(np.rint(result.x), np.rint(expected.x))
    assert result.fun == expected.fun


def test_a_child_past_its_limit_is_killed_and_reports_the_time_limit(monkeypatch):
    monkeypatch.setattr(bounded, "CHILD_NONZEROS", 0)
    monkeypatch.setattr(bounded, "GRACE_S", 0.0)
    problem = _knapsack()
    problem["options"] = {"time_limit": 0.05}  # the child needs longer just to start
    tick = time.perf_counter()
    result = bounded.bounded_milp(**problem)
    assert time.perf_counter() - tick < 5
    assert result.x is None and result.status == bounded.TIME_LIMIT_STATUS
    assert "time limit of 0.05 s" in result.message


def test_a_child_that_fails_is_not_reported_as_a_time_limit(monkeypatch):
    monkeypatch.setattr(bounded, "CHILD_NONZEROS", 0)
    real_popen = bounded.subprocess.Popen
    monkeypatch.setattr(bounded.subprocess, "Popen", lambda args, **kwargs: real_popen(
        [args[0], "-c", "raise SystemExit(3)"], **kwargs))
    result = bounded.bounded_milp(**_knapsack())
    assert result.x is None and result.status == bounded.OTHER_STATUS
    assert "exit code 3" in result.message


def test_small_models_and_models_without_a_limit_stay_in_process(monkeypatch):
    def no_child(*args, **kwargs):
        raise AssertionError("no process may be started")

    monkeypatch.setattr(bounded.subprocess, "Popen", no_child)
    assert bounded.bounded_milp(**_knapsack()).status == 0  # 12 x 30: below the threshold
    monkeypatch.setattr(bounded, "CHILD_NONZEROS", 0)
    problem = _knapsack()
    problem["options"] = {}
    assert bounded.bounded_milp(**problem).status == 0
