"""The black-box singling-out attack on PrivBayes releases: it beats the baseline at a large
ε on a population with planted outliers, stays near it at a tiny ε, and refuses bad tables
with one line."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from treeleaks.runtime.errors import BudgetError
from treeleaks.synthetic import shadows
from treeleaks.synthetic.encoding import Encoding, TableMismatchError
from treeleaks.synthetic.privbayes import PrivBayes
from treeleaks.synthetic.setup import Setup
from treeleaks.synthetic.singling_out import (
    AttackSizes,
    SyntheticSinglingOut,
    single_out_synthetic,
)
from treeleaks.synthetic.targets import most_vulnerable
from treeleaks.synthetic.white_box import model_features

from conftest import outlier_population

SIZES = AttackSizes(n_targets=6, n_shadows=12, n_attacks=50)


@pytest.fixture(scope="module")
def pop() -> pd.DataFrame:
    return outlier_population()


def run(pop: pd.DataFrame, epsilon: float, **options: object) -> SyntheticSinglingOut:
    """The study's protocol on ``pop`` (sizes given by name override `SIZES`)."""
    sizes = {k: options.pop(k) for k in ("n_targets", "n_shadows", "n_attacks") if k in options}
    return single_out_synthetic(None, pop, epsilon, seed=3, **options,
                                sizes=replace(SIZES, n_private=len(pop) // 5, **sizes))


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
    assert result.status == "done" and result.attacks == SIZES.n_attacks


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


def isolated_private(pop: pd.DataFrame, n_targets: int) -> pd.DataFrame:
    """47 ordinary rows and one outlier that is not among the study's n targets (the
    population's most isolated records, as the attack ranks them)."""
    encoding = Encoding.fit(pop)
    unique = np.unique(encoding.codes(pop, "population"), axis=0)
    study = {encoding.decode(unique[i])["rare"]
             for i in most_vulnerable(unique, encoding.sizes, n_targets)}
    outlier = pop[(pop["rare"] > 0) & ~pop["rare"].astype(str).isin(study)].iloc[:1]
    return pd.concat([outlier, pop[pop["rare"] == 0].iloc[:47]])


@pytest.mark.parametrize("epsilon", [1e4, 1e-3])
def test_the_worst_case_aims_at_the_custodians_own_isolated_row(pop: pd.DataFrame,
                                                                epsilon: float) -> None:
    # The study's targets are not private: no release of X can be singled out through
    # them. X's own outlier, attacked among 3 decoys, is found at a large ε only.
    private = isolated_private(pop, 4)
    result = single_out_synthetic(private, pop, epsilon, seed=1, sizes=AttackSizes(
        n_targets=4, n_shadows=10, n_attacks=30))
    assert result.successes == 0 and not any(t["in_private"] for t in result.targets)
    worst = result.worst_case
    assert worst is not None and worst.baseline == 0.25 and worst.attacks == 30
    assert [t["in_private"] for t in result.worst_case_targets] == [True, False, False, False]
    assert result.risk_from == "worst_case"
    summary = result.summary()
    assert summary["risk_from"] == "worst_case"
    assert summary["worst_case"]["successes"] == worst.successes
    if epsilon > 1:
        assert worst.ci[0] > worst.baseline and worst.verdict == "above the baseline"
    else:
        assert worst.ci[0] <= worst.baseline <= worst.ci[1]


def test_without_the_custodians_table_there_is_no_worst_case(pop: pd.DataFrame) -> None:
    result = run(pop, 1.0, n_targets=2, n_shadows=2, n_attacks=3)
    assert result.worst_case is None and result.risk_from == "study_targets"
    assert result.summary()["worst_case"] is None


def test_shadow_training_keeps_time_for_its_forests(pop: pd.DataFrame,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # A forest said to take 10 s: after the first pair, a second target's forest would not
    # fit before the deadline (2 forests x 2 x 10 s > 5 s), so one target is trained, on one
    # pair, however fast the machine.
    monkeypatch.setattr(shadows, "_forest_seconds", lambda rows: 10.0)
    setup = Setup(pop.to_numpy(), [4] * 6 + [9], 48, 1.0)
    training = shadows.train_targets(setup, np.arange(20), 50, np.random.SeedSequence(0),
                                     time.monotonic() + 5.0)
    assert [m.pairs for m in training.models] == [1] and not training.complete
    assert training.note(50) == ("time ran out during shadow training: 1 of 20 targets "
                                 "trained, 1 to 1 pairs each of 50")


def test_a_small_budget_stops_training_and_attacks_early(pop: pd.DataFrame) -> None:
    # 248 targets x 50 pairs and their forests take minutes; 2 s leaves some targets
    # untrained and the rest with a few pairs, then at least one round of attacks.
    result = single_out_synthetic(isolated_private(pop, 4), pop, 1.0,
                                  sizes=AttackSizes(n_targets=1000, n_attacks=1000),
                                  deadline=time.monotonic() + 2.0)
    pairs = [t["shadow_pairs"] for t in result.targets + result.worst_case_targets]
    assert result.status == "partial" and 1 <= result.attacks < 1000
    assert len(result.targets) < 248 and 1 <= min(pairs) <= max(pairs) < 50
    assert any("targets trained" in note for note in result.notes)
    assert any("every one is a target" in note for note in result.notes)


def test_the_custodians_own_table_is_attacked(pop: pd.DataFrame) -> None:
    private = pop.iloc[-8:].sample(4, random_state=0)  # half the outliers are in it
    private = pd.concat([private, pop.iloc[:44]])
    result = single_out_synthetic(private, pop, 1e4, seed=1, sizes=SIZES)
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
        single_out_synthetic(stranger, pop, 1.0, sizes=SIZES)
    seen = set(map(tuple, pop.to_numpy()))
    absent = next(row for row in ((a, b, 0, 0, 0, 0, 0) for a in range(4) for b in range(4))
                  if row not in seen)  # every value exists in the population, this row not
    unseen = pd.DataFrame([absent], columns=pop.columns)
    with pytest.raises(TableMismatchError, match="1 private rows are not in the population"):
        single_out_synthetic(unseen, pop, 1.0, sizes=SIZES)


def test_mismatched_columns_are_refused(pop: pd.DataFrame) -> None:
    with pytest.raises(TableMismatchError, match=r"missing \['rare'\].*same header"):
        single_out_synthetic(pop.iloc[:30].drop(columns="rare"), pop, 1.0, sizes=SIZES)


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
