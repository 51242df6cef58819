"""The black-box singling-out attack on PrivBayes releases: it beats the baseline at a large
ε on a population with planted outliers, stays near it at a tiny ε, and refuses bad tables
with one line."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from treeleaks.errors import BudgetError
from treeleaks.synthetic.encoding import TableMismatchError
from treeleaks.synthetic.privbayes import PrivBayes
from treeleaks.synthetic.singling_out import SyntheticSinglingOut, single_out_synthetic
from treeleaks.synthetic.targets import most_vulnerable
from treeleaks.synthetic.white_box import model_features

from conftest import outlier_population

SIZES = {"n_targets": 6, "n_shadows": 12, "n_attacks": 50}


@pytest.fixture(scope="module")
def pop() -> pd.DataFrame:
    return outlier_population()


def run(pop: pd.DataFrame, epsilon: float, **options: object) -> SyntheticSinglingOut:
    return single_out_synthetic(None, pop, epsilon, n_private=len(pop) // 5, seed=3,
                                **{**SIZES, **options})


def test_the_outliers_rank_most_vulnerable(pop: pd.DataFrame) -> None:
    codes = pop.to_numpy()
    top = most_vulnerable(codes, [4] * 6 + [9], 8)
    assert len(set(top) & set(range(len(pop) - 8, len(pop)))) >= 6  # one attribute apart


def test_a_large_epsilon_beats_the_baseline(pop: pd.DataFrame) -> None:
    result = run(pop, 1e4)
    low, high = result.ci
    assert result.baseline == pytest.approx(0.2, abs=0.01)
    assert low <= result.success_rate <= high
    assert low > result.baseline
    assert result.status == "done" and result.attacks == SIZES["n_attacks"]


def test_the_white_box_attack_beats_the_baseline_at_a_large_epsilon(pop: pd.DataFrame) -> None:
    result = run(pop, 1e4, white_box=True)
    assert result.summary()["attack"] == "white-box"
    assert result.ci[0] > result.baseline


def test_the_white_box_view_reads_the_network_and_the_tables(pop: pd.DataFrame) -> None:
    codes = pop.to_numpy()
    sizes = [4] * 6 + [9]
    model = PrivBayes(1.0, random_state=0).fit(codes[:50], sizes)
    features = model_features(model, codes[0])
    adjacency = features[:49].reshape(7, 7)
    for cond in model.conditionals:
        assert set(np.flatnonzero(adjacency[:, cond.attribute])) == set(cond.parents)
    probabilities = features[49:56]
    assert ((probabilities >= 0) & (probabilities <= 1)).all()
    assert features[56] == pytest.approx(np.log(np.maximum(probabilities, 1e-12)).sum())


def test_a_tiny_epsilon_stays_near_the_baseline(pop: pd.DataFrame) -> None:
    result = run(pop, 1e-3)
    low, high = result.ci
    assert low <= result.baseline <= high
    assert result.success_rate < 0.45


def test_the_custodians_own_table_is_attacked(pop: pd.DataFrame) -> None:
    private = pop.iloc[-8:].sample(4, random_state=0)  # half the outliers are in it
    private = pd.concat([private, pop.iloc[:44]])
    result = single_out_synthetic(private, pop, 1e4, seed=1, **SIZES)
    assert result.n_private == 48 and result.n_population == len(pop)
    assert result.success_rate > 0.5


def test_duplicates_in_the_population_are_dropped_and_said(pop: pd.DataFrame) -> None:
    doubled = pd.concat([pop, pop.iloc[:5]], ignore_index=True)
    result = run(doubled, 1.0, n_targets=2, n_shadows=2, n_attacks=3)
    assert result.n_population == len(pop)
    assert any("5 duplicate rows" in note for note in result.notes)


def test_private_rows_outside_the_population_are_refused(pop: pd.DataFrame) -> None:
    stranger = pop.iloc[:30].copy()
    stranger.iloc[0] = [9, 9, 9, 9, 9, 9, 0]
    with pytest.raises(TableMismatchError, match="no population row has"):
        single_out_synthetic(stranger, pop, 1.0, **SIZES)
    seen = set(map(tuple, pop.to_numpy()))
    absent = next(row for row in ((a, b, 0, 0, 0, 0, 0) for a in range(4) for b in range(4))
                  if row not in seen)  # every value exists in the population, this row not
    unseen = pd.DataFrame([absent], columns=pop.columns)
    with pytest.raises(TableMismatchError, match="1 private rows are not in the population"):
        single_out_synthetic(unseen, pop, 1.0, **SIZES)


def test_mismatched_columns_are_refused(pop: pd.DataFrame) -> None:
    with pytest.raises(TableMismatchError, match=r"missing \['rare'\].*same header"):
        single_out_synthetic(pop.iloc[:30].drop(columns="rare"), pop, 1.0, **SIZES)


def test_a_numerical_column_is_binned_and_said(pop: pd.DataFrame) -> None:
    wide = pop.assign(income=np.random.default_rng(0).normal(size=len(pop)))
    result = run(wide, 1.0, n_targets=2, n_shadows=2, n_attacks=3)
    assert any("'income'" in note and "quantile bins" in note for note in result.notes)


def test_a_deadline_stops_early_and_says_so(pop: pd.DataFrame) -> None:
    events = []
    result = run(pop, 1.0, n_shadows=1000, n_attacks=1000, deadline=time.monotonic() + 1.5,
                 progress=events.append)
    assert result.status == "partial" and 0 < result.attacks < 1000
    assert any("shadow training" in note for note in result.notes)
    assert {e.stage for e in events} == {"shadows", "attacks"}
    with pytest.raises(BudgetError, match="budget"):
        run(pop, 1.0, deadline=time.monotonic())
