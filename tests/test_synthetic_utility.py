"""What a PrivBayes release keeps: marginals close and a useful classifier at a huge ε,
neither at a tiny one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from treeleaks.runtime.errors import TreeleaksError
from treeleaks.synthetic.utility import release_utility

Tables = tuple[pd.DataFrame, pd.DataFrame]


@pytest.fixture(scope="module")
def tables() -> Tables:
    """Distinct rows over skewed attributes whose label copies a0 == 0 nine times in ten,
    and a private fifth of them."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.choice(3, (3000, 8), p=[0.6, 0.3, 0.1]),
                         columns=[f"a{j}" for j in range(8)])
    copy = rng.random(3000) < 0.9
    frame["label"] = np.where(copy, frame["a0"] == 0, rng.random(3000) < 0.5).astype(int)
    frame = frame.drop_duplicates(ignore_index=True).iloc[:2000]
    return frame.iloc[:400], frame


def test_a_huge_epsilon_keeps_marginals_and_the_signal(tables: Tables) -> None:
    private, population = tables
    utility = release_utility(private, population, 1e6, label="label")
    assert utility["js_distance_mean"] < 0.1
    assert utility["auc_private"] > 0.85
    assert utility["auc_synthetic"] == pytest.approx(utility["auc_private"], abs=0.05)
    assert utility["auc_test_rows"] == len(population) - len(private)


def test_a_tiny_epsilon_loses_both(tables: Tables) -> None:
    private, population = tables
    utility = release_utility(private, population, 1e-3, label="label", seed=1)
    assert utility["js_distance_mean"] > 0.2
    assert utility["auc_synthetic"] is None or utility["auc_synthetic"] < 0.7


def test_the_label_must_be_two_valued(tables: Tables) -> None:
    private, population = tables
    with pytest.raises(TreeleaksError, match="'a0' must be a column with two values"):
        release_utility(private, population, 1.0, label="a0")


def test_several_releases_average_with_their_spread(tables: Tables) -> None:
    private, population = tables
    single = [release_utility(private, population, 0.5, label="label", seed=s)
              for s in (3, 4, 5)]
    three = release_utility(private, population, 0.5, label="label", seed=3, releases=3)
    means = [u["js_distance_mean"] for u in single]
    assert three["releases"] == 3 and single[0]["js_distance_mean_sd"] == 0
    assert three["js_distance_mean"] == pytest.approx(np.mean(means))
    assert three["js_distance_mean_sd"] == pytest.approx(np.std(means))
    assert three["js_distance_mean_sd"] > 0
    assert three["auc_synthetic"] == pytest.approx(np.mean([u["auc_synthetic"] for u in single]))
    assert three["auc_private"] == single[0]["auc_private"]
    with pytest.raises(TreeleaksError, match="releases must be at least 1"):
        release_utility(private, population, 0.5, releases=0)
