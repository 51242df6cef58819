"""The count-system solver: wide blocks solved first over the cells of random LP vertices."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier

from treeleaks import FeatureSchema, from_sklearn, reconstruct
from treeleaks.counts import solve as solve_module
from treeleaks.counts.cells import enumerate_cells
from treeleaks.counts.system import build_system, propagate
from treeleaks.counts.vertex_support import vertex_supports

from conftest import binary_frame


def shallow_system(seed: int, n_rows: int = 60, n_features: int = 8, depth: int = 2):
    X, y = binary_frame(n_rows, n_features, seed)
    forest = RandomForestClassifier(n_estimators=12, bootstrap=False, max_depth=depth,
                                    random_state=seed).fit(X, y)
    model = from_sklearn(forest, label_name="y")
    schema = FeatureSchema.from_frame(X).bind(model)
    return model, schema, propagate(build_system(model, enumerate_cells(model, schema)))


def force_restriction(patch: pytest.MonkeyPatch) -> None:
    patch.setattr(solve_module, "RESTRICT_MIN_CELLS", 0)
    patch.setattr(solve_module, "RESTRICT_CELLS_PER_EQUATION", 0)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), depth=st.sampled_from([1, 2, 3]),
       n_rows=st.integers(5, 60), solver=st.sampled_from(["highs", "cp-sat"]))
def test_restricted_solutions_meet_every_count_and_claim_optimality_only_when_it_holds(
    monkeypatch, seed, depth, n_rows, solver
):
    *_, system = shallow_system(seed, n_rows=n_rows, depth=depth)
    everything = solve_module.solve(system, deadline=time.perf_counter() + 30, solver=solver)
    assert everything.status == "OPTIMAL"
    with monkeypatch.context() as patch:
        force_restriction(patch)
        restricted = solve_module.solve(system, deadline=time.perf_counter() + 30, seed=seed,
                                        solver=solver)
    assert restricted.counts is not None
    np.testing.assert_array_equal(system.A @ restricted.counts, system.b)
    assert np.all(restricted.counts >= system.lb) and np.all(restricted.counts <= system.ub)
    # Never more orderings than the optimum over every cell; as many when it says OPTIMAL.
    assert restricted.objective <= everything.objective + 1e-6
    if restricted.status == "OPTIMAL":
        assert restricted.objective == pytest.approx(everything.objective, abs=1e-6)


def test_a_forced_restriction_still_reconstructs_the_training_set(monkeypatch):
    force_restriction(monkeypatch)
    X, y = binary_frame(80, 10, seed=3)
    forest = RandomForestClassifier(n_estimators=30, bootstrap=False, max_depth=2,
                                    random_state=3).fit(X, y)
    model = from_sklearn(forest, label_name="y")
    result = reconstruct(model, FeatureSchema.from_frame(X), time_limit=30)
    assert result.status in ("OPTIMAL", "FEASIBLE")
    assert result.verified and result.certificate.n_counts_wrong == 0
    assert result.n_rows == 80


def test_rounds_that_find_no_cell_fall_back_to_every_cell(monkeypatch):
    *_, system = shallow_system(seed=5)
    force_restriction(monkeypatch)
    import treeleaks.counts.vertex_support as vertex_support

    monkeypatch.setattr(vertex_support, "vertex_supports",
                        lambda A, *args, **kwargs: np.zeros(A.shape[1], dtype=bool))
    solution = solve_module.solve(system, deadline=time.perf_counter() + 30)
    assert solution.status == "OPTIMAL"
    np.testing.assert_array_equal(system.A @ solution.counts, system.b)


def test_vertex_supports_hold_a_fractional_solution_and_stop_at_the_deadline():
    from scipy.optimize import linprog

    *_, system = shallow_system(seed=11)
    open_part = system.open_part()
    A, rhs = open_part.A, open_part.rest
    upper = (system.ub - system.lb)[open_part.vars].astype(float)
    rhs = rhs - A @ system.lb[open_part.vars]
    rng = np.random.default_rng(0)
    used = vertex_supports(A, rhs, upper, np.zeros(A.shape[1]), 3, rng,
                           deadline=time.perf_counter() + 30)
    assert 0 < used.sum() <= 3 * A.shape[0]
    only_used = linprog(np.zeros(int(used.sum())), A_eq=A[:, used], b_eq=rhs,
                        bounds=np.column_stack([np.zeros(int(used.sum())), upper[used]]))
    assert only_used.status == 0
    late = vertex_supports(A, rhs, upper, np.zeros(A.shape[1]), 3, rng,
                           deadline=time.perf_counter() - 1)
    assert not late.any()


def test_the_counts_alone_are_solved_before_the_gradient_sums() -> None:
    """A booster's gradient sums (side rows) refine a solution of the counts alone: sums
    the counts meet give a solution within both; sums no dataset meets, or no time left
    for them, leave the counts' solution standing, saying so."""
    import dataclasses

    import scipy.sparse as sp

    from treeleaks.counts.gradient_rows import SideRows

    model, _, system = shallow_system(3)
    n_rows = model.n_rows
    every = sp.csr_matrix(np.ones((1, system.n_vars)))

    def meets_counts(counts: np.ndarray) -> bool:
        return bool((system.A @ counts == system.b).all() and (counts >= system.lb).all()
                    and (counts <= system.ub).all())

    held = dataclasses.replace(system, side=SideRows(every, np.array([n_rows - 0.5]),
                                                     np.array([n_rows + 0.5])))
    solution = solve_module.solve(held, deadline=time.perf_counter() + 20, threads=1)
    assert solution.counts is not None and meets_counts(solution.counts)
    assert solution.bounded is not None and not solution.note
    contradicted = dataclasses.replace(system, side=SideRows(every, np.array([n_rows + 5.0]),
                                                             np.array([n_rows + 6.0])))
    solution = solve_module.solve(contradicted, deadline=time.perf_counter() + 20, threads=1)
    assert solution.counts is not None and meets_counts(solution.counts)
    assert solution.sums_infeasible and "counts alone" in solution.note


def test_the_sums_take_at_most_their_share(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    import scipy.sparse as sp

    from treeleaks.counts.gradient_rows import SideRows

    model, _, system = shallow_system(4)
    monkeypatch.setattr(solve_module, "SIDE_SHARE", 0.0)
    every = sp.csr_matrix(np.ones((1, system.n_vars)))
    held = dataclasses.replace(system, side=SideRows(every, np.array([model.n_rows - 0.5]),
                                                     np.array([model.n_rows + 0.5])))
    solution = solve_module.solve(held, deadline=time.perf_counter() + 20, threads=1)
    assert solution.counts is not None and (system.A @ solution.counts == system.b).all()
    assert not solution.sums_infeasible and "0 s it gave them" in solution.note
