"""PrivBayes: its privacy accounting, its fidelity at a huge ε and its noise at a tiny one,
determinism under a seed, and bad budgets refused with one line."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from treeleaks.runtime.errors import TreeleaksError
from treeleaks.synthetic.privbayes import (
    PrivacyBudgetError,
    PrivBayes,
    mi_sensitivity,
    mutual_information,
)

SIZES = [3, 4, 2, 5, 3]


def correlated(n: int = 800, seed: int = 0) -> np.ndarray:
    """Columns that copy a latent code most of the time, so the network has edges to find."""
    rng = np.random.default_rng(seed)
    latent = rng.integers(0, 6, n)
    cols = [np.where(rng.random(n) < 0.8, latent % s, rng.integers(0, s, n)) for s in SIZES]
    return np.stack(cols, axis=1)


def worst_js(data: np.ndarray, synthetic: np.ndarray) -> float:
    """The largest Jensen-Shannon distance between one attribute's two marginals."""
    return max(jensenshannon(np.bincount(data[:, j], minlength=s),
                             np.bincount(synthetic[:, j], minlength=s), base=2)
               for j, s in enumerate(SIZES))


@settings(max_examples=25, deadline=None)
@given(epsilon=st.floats(1e-3, 1e4), beta=st.floats(0.05, 0.95), degree=st.integers(1, 4),
       d=st.integers(1, len(SIZES)))
def test_the_spent_budget_adds_up_to_epsilon(epsilon: float, beta: float, degree: int,
                                             d: int) -> None:
    model = PrivBayes(epsilon, degree, beta, random_state=0).fit(correlated(60)[:, :d],
                                                                 SIZES[:d])
    assert math.isclose(model.epsilon_structure + model.epsilon_tables, epsilon)
    assert model.epsilon_structure == (pytest.approx(beta * epsilon) if d > 1 else 0.0)
    assert sorted(c.attribute for c in model.conditionals) == list(range(d))
    for c in model.conditionals:  # every table is a conditional distribution
        assert len(c.parents) <= degree
        np.testing.assert_allclose(c.table.sum(axis=1), 1.0)


def test_a_huge_epsilon_keeps_the_marginals_and_the_links() -> None:
    data = correlated()
    synthetic = PrivBayes(1e6, random_state=1).fit(data, SIZES).sample(len(data))
    assert worst_js(data, synthetic) < 0.05
    agree = (data[:, 0] == data[:, 2] % 3).mean()  # both copy the latent code
    assert (synthetic[:, 0] == synthetic[:, 2] % 3).mean() == pytest.approx(agree, abs=0.1)


def test_a_tiny_epsilon_loses_the_marginals() -> None:
    data = correlated()
    distances = [worst_js(data, PrivBayes(1e-3, random_state=s).fit(data, SIZES)
                          .sample(len(data))) for s in range(3)]
    assert min(distances) > 0.1


def test_a_seed_fixes_the_release() -> None:
    data = correlated(200)
    first, again, other = (PrivBayes(1.0, random_state=s).fit(data, SIZES).sample(300)
                           for s in (7, 7, 8))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


@pytest.mark.parametrize("epsilon", [0, -1.0, math.nan, math.inf, "a lot"])
def test_a_bad_epsilon_is_one_clear_line(epsilon: object) -> None:
    with pytest.raises(PrivacyBudgetError, match="epsilon must be") as info:
        PrivBayes(epsilon)  # type: ignore[arg-type]
    assert isinstance(info.value, TreeleaksError)
    assert "\n" not in str(info.value)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 40), sizes=st.sampled_from([(2, 3), (3, 4)]))
def test_replacing_one_row_moves_the_score_within_its_sensitivity(seed: int, n: int,
                                                                   sizes: tuple[int, int]) -> None:
    rng = np.random.default_rng(seed)
    child, parent = rng.integers(0, sizes[0], n), rng.integers(0, sizes[1], n)
    before = mutual_information(child, parent, *sizes)
    child[0], parent[0] = rng.integers(0, sizes[0]), rng.integers(0, sizes[1])
    after = mutual_information(child, parent, *sizes)
    assert abs(after - before) <= mi_sensitivity(n, binary=2 in sizes) + 1e-12
