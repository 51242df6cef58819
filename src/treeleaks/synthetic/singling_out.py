"""Singling out from PrivBayes synthetic data (Sedlmeyr 2024, part 1).

Setting: a public population D without duplicates; the private table X is a sample of D;
the publisher releases synthetic rows Y from PrivBayes fitted on X at budget ε.

Attack: rank D's records by isolation (``targets``) and keep the most vulnerable; for each
target, fit PrivBayes on shadow pairs (|X| rows drawn from D without the target, and the
same rows with one swapped for the target) and train a random forest to tell, from counting
queries about the target on the synthetic rows (``queries``; black box) or from the fitted
model's network and tables read at the target (``white_box``), whether it was in. On a
release, the target whose classifier is surest it was in gives the predicate "every
attribute equals this record's"; it succeeds when it matches exactly one row of X.

Baseline: the same predicate for a random record of D succeeds with probability |X|/|D|.
The success rate over released tables comes with a 95% Wilson interval.

With the custodian's X, the attack is also aimed at X's own most isolated rows (the worst
case for this release, ``custodian``), and that figure is the one a verdict reads, unless
only the study targets' figure lies above its baseline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from treeleaks.runtime.errors import BudgetError, TreeleaksError
from treeleaks.runtime.progress import ProgressCallback
from treeleaks.runtime.vocabulary import Status
from treeleaks.synthetic.attack import Series, attack_rounds
from treeleaks.synthetic.custodian import WorstCase, worst_case
from treeleaks.synthetic.encoding import Encoding, TableMismatchError, found_in
from treeleaks.synthetic.privbayes import check_epsilon
from treeleaks.synthetic.rate import Rate
from treeleaks.synthetic.setup import Setup
from treeleaks.synthetic.shadows import TargetModel, train_targets
from treeleaks.synthetic.tables import check_seed, check_tables
from treeleaks.synthetic.targets import most_vulnerable

TRAINING_SHARE = 0.8  # of the time left, what shadow training may use before the attacks
STUDY, WORST_CASE = "study_targets", "worst_case"  # which figure a verdict reads


@dataclass
class SyntheticSinglingOut:
    """The attack's outcome over the released tables: the study's targets' figure and,
    when the custodian's X was given, the worst case on X's own rows."""

    successes: int
    attacks: int
    baseline: float
    epsilon: float
    n_private: int
    n_population: int
    status: Status
    targets: list[dict[str, Any]]
    seconds: dict[str, float]
    white_box: bool = False
    notes: list[str] = field(default_factory=list)
    baseline_rows: int | None = None  # private rows that occur once: those a predicate singles
    worst_case: Rate | None = None
    worst_case_targets: list[dict[str, Any]] = field(default_factory=list)

    @property
    def study(self) -> Rate:
        return Rate(self.successes, self.attacks, self.baseline)

    @property
    def success_rate(self) -> float:
        return self.study.success_rate

    @property
    def ci(self) -> tuple[float, float]:
        """The 95% Wilson interval of the success rate."""
        return self.study.ci

    @property
    def risk_from(self) -> str:
        """The figure a verdict reads: the worst case when there is one, unless only the
        study targets' interval lies above its baseline (the worse of the two, then)."""
        if self.worst_case is None or (self.study.verdict == "above the baseline"
                                       and self.worst_case.verdict != "above the baseline"):
            return STUDY
        return WORST_CASE

    @property
    def risk_rate(self) -> Rate:
        return self.worst_case or self.study

    def summary(self) -> dict[str, Any]:
        worst = (None if self.worst_case is None else
                 {**self.worst_case.summary(), "targets": self.worst_case_targets})
        return {"attack": "white-box" if self.white_box else "black-box",
                "success_rate": self.success_rate, "ci": list(self.ci),
                "baseline": self.baseline, "epsilon": self.epsilon,
                "n_private": self.n_private, "n_population": self.n_population,
                "baseline_rows": self.baseline_rows,
                "status": str(self.status), "successes": self.successes,
                "attacks": self.attacks, "targets": self.targets, "worst_case": worst,
                "risk_from": self.risk_from, "seconds": self.seconds, "notes": self.notes}


@dataclass(frozen=True)
class AttackSizes:
    """How large the study is: ``n_private`` rows sampled from the population when there is
    no private table, ``n_targets`` rows attacked, ``n_shadows`` shadow pairs to train each
    target's classifier on, ``n_attacks`` rounds."""

    n_private: int | None = None
    n_targets: int = 10
    n_shadows: int = 50
    n_attacks: int = 100


def single_out_synthetic(private: pd.DataFrame | None, population: pd.DataFrame,
                         epsilon: float, *, sizes: AttackSizes = AttackSizes(), seed: int = 0,
                         white_box: bool = False, deadline: float | None = None,
                         progress: ProgressCallback | None = None) -> SyntheticSinglingOut:
    """Run the attack on PrivBayes releases of ``private`` (or, when it is None, of fresh
    samples of ``sizes.n_private`` population rows) and measure how often it singles out a
    row: black box on the synthetic rows, or with ``white_box`` on the fitted models. With
    ``private`` the attack is also aimed at its own most isolated rows (``custodian``).

    ``deadline`` (``time.monotonic()`` seconds) stops shadow training, its forests included,
    at 80% of the time left and the attacks at the deadline (after one round at least); the
    result then has status ``partial``. A deadline before one classifier per figure is
    trained is a ``BudgetError``.
    """
    start = time.monotonic()
    n_private, n_targets, n_shadows, n_attacks = (sizes.n_private, sizes.n_targets,
                                                  sizes.n_shadows, sizes.n_attacks)
    epsilon = check_epsilon(epsilon)
    check_tables(private, population)
    check_seed(seed)
    deadline = float("inf") if deadline is None else deadline
    read = _read_tables(private, population, n_private)
    _check_sizes(read, n_targets, n_shadows, n_attacks)
    unique, domains, private_codes = read.unique, read.encoding.sizes, read.private_codes
    setup = Setup(unique, domains, read.n_private, epsilon, white_box)
    baseline = read.singles / len(unique)
    train_seed, attack_seed, worst_seed = np.random.SeedSequence(seed).spawn(3)
    study = most_vulnerable(unique, domains, n_targets)
    worst = (None if private_codes is None else
             worst_case(unique, domains, private_codes, n_targets, baseline))
    if private_codes is not None and worst is None:
        read.notes.append("no row of your table occurs once in it: none can be singled out, "
                          "so there is no worst case to attack")
    training = train_targets(setup, _interleave(study, worst), n_shadows, train_seed,
                             start + TRAINING_SHARE * (deadline - start), progress)
    lap = time.monotonic()
    series = _attacked_series(setup, training.models, study, worst, private_codes,
                              (attack_seed, worst_seed))
    made = attack_rounds(setup, series, n_attacks, deadline, progress)
    notes = read.notes + _closing_notes(training.note(n_shadows),
                                        _attacks_note(made, n_attacks, worst), worst)
    end = time.monotonic()
    head = series[0]
    return SyntheticSinglingOut(
        head.successes, made, baseline, epsilon, read.n_private, len(unique),
        Status.DONE if training.complete and made == n_attacks else Status.PARTIAL,
        _described(head, read.encoding, private_codes), {"training": lap - start,
                                                         "attacks": end - lap},
        white_box, notes, read.singles,
        None if worst is None else Rate(series[1].successes, made, worst.baseline),
        [] if worst is None else _described(series[1], read.encoding, private_codes))


@dataclass
class _Read:
    """The tables as the attack reads them: the encoding, the population's distinct rows,
    the private table's codes (None: sampled from the population), its size, how many of
    its rows occur once, and the notes so far."""

    encoding: Encoding
    unique: np.ndarray
    private_codes: np.ndarray | None
    n_private: int | None
    singles: int | None
    notes: list[str]


def _read_tables(private: pd.DataFrame | None, population: pd.DataFrame,
                 n_private: int | None) -> _Read:
    """Encode the population (its duplicate rows dropped, said) and the private table."""
    encoding = Encoding.fit(population)
    codes = encoding.codes(population, "population")
    unique = np.unique(codes, axis=0)
    notes = list(encoding.notes)
    if len(unique) < len(codes):
        notes.append(f"the population had {len(codes) - len(unique)} duplicate rows: dropped, "
                     "since the baseline |X|/|D| assumes none")
    private_codes = None
    if private is not None:
        private_codes = encoding.codes(private, "private table")
        _check_inside(private_codes, unique)
        n_private = len(private_codes)
    singles = n_private if private_codes is None else _singles(private_codes, notes)
    return _Read(encoding, unique, private_codes, n_private, singles, notes)


def _check_sizes(read: _Read, n_targets: int, n_shadows: int, n_attacks: int) -> None:
    """Refuse a private table not smaller than the population, or a count below 1."""
    distinct = len(read.unique)
    if read.n_private is None or not 1 <= read.n_private < distinct:
        raise TreeleaksError(f"the private table must have between 1 and {distinct - 1} "
                             f"rows (fewer than the population's {distinct}), not "
                             f"{read.n_private}")
    for name, value in (("targets", n_targets), ("shadows", n_shadows), ("attacks", n_attacks)):
        if value < 1:
            raise TreeleaksError(f"the number of {name} must be at least 1, not {value}")
    if n_targets > distinct:
        read.notes.append(f"{n_targets} targets asked; the population has {distinct} distinct "
                          "rows, so every one is a target")


def _attacked_series(setup: Setup, models: list[TargetModel], study: np.ndarray,
                     worst: WorstCase | None, private: np.ndarray | None,
                     seeds: tuple[np.random.SeedSequence, np.random.SeedSequence]
                     ) -> list[Series]:
    """The study's series of attacks and, with a worst case, its own; `BudgetError` when a
    set of targets has no trained classifier."""
    series = [Series(_among(models, study), _tables(setup, private),
                     np.random.default_rng(seeds[0]))]
    if worst is not None:
        series.append(Series(_among(models, worst.targets), _tables(setup, private),
                             np.random.default_rng(seeds[1])))
    if not all(s.models for s in series):
        raise BudgetError("the time budget ran out before a classifier was trained for "
                          "every set of targets; give a larger --budget, fewer --targets or "
                          "smaller tables")
    return series


def _closing_notes(training: str, attacks: str, worst: WorstCase | None) -> list[str]:
    """What the run says of its training and attacks, and of the worst case's baseline."""
    notes = [n for n in (training, attacks) if n]
    if worst is not None:
        notes.append(f"the worst case aims at {worst.own} of your rows among "
                     f"{len(worst.targets) - worst.own} decoys outside your table (the "
                     "population's most isolated), so a random pick succeeds with "
                     f"probability {worst.baseline:.2f}, its baseline")
    return notes


def _interleave(study: np.ndarray, worst: WorstCase | None) -> np.ndarray:
    """The targets to train, the study's and the worst case's taking turns (each once), so
    a deadline leaves both sets with classifiers."""
    if worst is None:
        return study
    pairs = [t for both in zip(study, worst.targets) for t in both]
    rest = [*study[len(worst.targets):], *worst.targets[len(study):]]
    return np.array(list(dict.fromkeys(int(t) for t in [*pairs, *rest])), dtype=int)


def _among(models: list[TargetModel], targets: np.ndarray) -> list[TargetModel]:
    """The trained classifiers of these targets, in the targets' order."""
    by_index = {m.index: m for m in models}
    return [by_index[int(t)] for t in targets if int(t) in by_index]


def _tables(setup: Setup, private: np.ndarray | None
                  ) -> Callable[[np.random.Generator], np.ndarray]:
    """Where the attacked tables come from: the custodian's X every time, or a fresh sample
    of the population (the study's protocol)."""
    if private is not None:
        return lambda rng: private
    return lambda rng: setup.population[rng.choice(len(setup.population), setup.n_private,
                                                   replace=False)]


def _attacks_note(made: int, asked: int, worst: WorstCase | None) -> str | None:
    if made == asked:
        return None
    each = " (one release per figure each)" if worst is not None else ""
    return f"time ran out after {made} of {asked} attacks{each}"


def _singles(private: np.ndarray, notes: list[str]) -> int:
    """How many private rows occur exactly once: a predicate matching a duplicated row
    matches two, so it never singles one out and the baseline leaves them out (noted)."""
    _, counts = np.unique(private, axis=0, return_counts=True)
    singles = int((counts == 1).sum())
    if singles < len(private):
        notes.append(f"the private table has {len(private) - singles} rows that occur more "
                     f"than once ({int((counts > 1).sum())} distinct): a duplicated row can "
                     "never be singled out, so they are dropped from the baseline |X|/|D|")
    return singles


def _check_inside(private: np.ndarray, population: np.ndarray) -> None:
    """Every private row must be a population row: the attack and the baseline need X ⊂ D."""
    outside = np.flatnonzero(~found_in(private, population))
    if len(outside):
        raise TableMismatchError(
            f"{len(outside)} private rows are not in the population (first: row "
            f"{outside[0]}); the population must contain every private row")


def _described(series: Series, encoding: Encoding,
               private: np.ndarray | None) -> list[dict[str, Any]]:
    """A series' targets as the report shows them: their values, their shadow pairs, how
    often the attack picked them, and (the custodian knows) whether they are private rows."""
    return [{"record": encoding.decode(m.record), "shadow_pairs": m.pairs, "picked": p,
             "in_private": None if private is None
             else bool((private == m.record).all(axis=1).any())}
            for m, p in zip(series.models, series.picked)]
