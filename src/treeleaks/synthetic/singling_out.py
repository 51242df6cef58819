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
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest
from sklearn.ensemble import RandomForestClassifier

from treeleaks.errors import BudgetError, TreeleaksError
from treeleaks.progress import ProgressCallback, report
from treeleaks.synthetic.encoding import Encoding, TableMismatchError, found_in
from treeleaks.synthetic.privbayes import PrivBayes, check_epsilon
from treeleaks.synthetic.queries import answers, query_sets
from treeleaks.synthetic.tables import check_seed, check_tables
from treeleaks.synthetic.targets import most_vulnerable
from treeleaks.synthetic.white_box import model_features
from treeleaks.vocabulary import Status

TRAINING_SHARE = 0.8  # of the time left, what shadow training may use before the attacks
TREES = 100  # the meta-classifier's


@dataclass
class Setup:
    """What the attacker and the evaluator share: the encoded population, PrivBayes's
    settings, and what is released: synthetic rows (black box) or the fitted model (white
    box)."""

    population: np.ndarray
    sizes: list[int]
    n_private: int
    epsilon: float
    white_box: bool = False
    degree: int = 2
    sets: list[tuple[int, ...]] = field(init=False)

    def __post_init__(self) -> None:
        self.sets = query_sets(self.population.shape[1])

    def release(self, rows: np.ndarray, seed: int) -> PrivBayes | np.ndarray:
        """PrivBayes fitted on ``rows``: the model, or |rows| synthetic rows from it."""
        model = PrivBayes(self.epsilon, self.degree, random_state=seed).fit(rows, self.sizes)
        return model if self.white_box else model.sample(len(rows))

    def features(self, release: PrivBayes | np.ndarray, target: np.ndarray) -> np.ndarray:
        """What the meta-classifier reads of a release about one target."""
        if isinstance(release, PrivBayes):
            return model_features(release, target)
        return answers(release, target, self.sets)


@dataclass
class TargetModel:
    """One target's membership classifier."""

    record: np.ndarray
    classifier: RandomForestClassifier
    pairs: int

    def score(self, features: np.ndarray) -> float:
        """How sure the classifier is that the target was in the table behind a release."""
        return float(self.classifier.predict_proba(features[None, :])[0, 1])


@dataclass
class SyntheticSinglingOut:
    """The attack's outcome over the released tables."""

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

    @property
    def success_rate(self) -> float:
        return self.successes / self.attacks

    @property
    def ci(self) -> tuple[float, float]:
        """The 95% Wilson interval of the success rate."""
        interval = binomtest(self.successes, self.attacks).proportion_ci(method="wilson")
        return float(interval.low), float(interval.high)

    def summary(self) -> dict[str, Any]:
        return {"attack": "white-box" if self.white_box else "black-box",
                "success_rate": self.success_rate, "ci": list(self.ci),
                "baseline": self.baseline, "epsilon": self.epsilon,
                "n_private": self.n_private, "n_population": self.n_population,
                "baseline_rows": self.baseline_rows,
                "status": str(self.status), "successes": self.successes,
                "attacks": self.attacks, "targets": self.targets, "seconds": self.seconds,
                "notes": self.notes}


def train_targets(setup: Setup, n_targets: int, n_shadows: int, seed: np.random.SeedSequence,
                  deadline: float, progress: ProgressCallback | None = None
                  ) -> tuple[list[TargetModel], bool]:
    """A membership classifier for each of the n most vulnerable records, from up to
    n_shadows shadow pairs each (round robin, so a deadline leaves every target with as many
    pairs as the others, give or take one); whether every pair was fitted."""
    population, n = setup.population, setup.n_private
    targets = most_vulnerable(population, setup.sizes, n_targets)
    rng = np.random.default_rng(seed)
    features: list[list[np.ndarray]] = [[] for _ in targets]
    done, total = 0, len(targets) * n_shadows
    for _ in range(n_shadows):
        for j, t in enumerate(targets):
            if time.monotonic() >= deadline:
                return _classifiers(population, targets, features, rng), False
            others = np.delete(np.arange(len(population)), t)
            out_rows = population[rng.choice(others, n, replace=False)]
            in_rows = out_rows.copy()
            in_rows[rng.integers(n)] = population[t]
            for rows in (out_rows, in_rows):
                release = setup.release(rows, int(rng.integers(2**63)))
                features[j].append(setup.features(release, population[t]))
            done += 1
            report(progress, "shadows", done, total)
    return _classifiers(population, targets, features, rng), True


def _classifiers(population: np.ndarray, targets: np.ndarray, features: list[list[np.ndarray]],
                 rng: np.random.Generator) -> list[TargetModel]:
    """A random forest per target with at least one shadow pair (out, in alternate)."""
    models = []
    for t, rows in zip(targets, features):
        if not rows:
            continue
        labels = np.tile([0, 1], len(rows) // 2)
        forest = RandomForestClassifier(TREES, random_state=int(rng.integers(2**31)))
        models.append(TargetModel(population[t], forest.fit(np.array(rows), labels),
                                  len(rows) // 2))
    return models


def attack_releases(setup: Setup, models: list[TargetModel], private: np.ndarray | None,
                    n_attacks: int, seed: np.random.SeedSequence, deadline: float,
                    progress: ProgressCallback | None = None) -> tuple[int, list[int], bool]:
    """Release up to n_attacks synthetic tables and attack each: the successes, how often
    each target was picked, and whether every attack was made. Each release comes from
    ``private`` (the custodian's table, refitted) or, when it is None, from a fresh sample of
    the population (the study's protocol)."""
    rng = np.random.default_rng(seed)
    successes, picked = 0, [0] * len(models)
    for a in range(n_attacks):
        if a and time.monotonic() >= deadline:  # one attack at least, so a rate exists
            return successes, picked, False
        rows = private if private is not None else setup.population[
            rng.choice(len(setup.population), setup.n_private, replace=False)]
        release = setup.release(rows, int(rng.integers(2**63)))
        best = int(np.argmax([m.score(setup.features(release, m.record)) for m in models]))
        picked[best] += 1
        successes += int((rows == models[best].record).all(axis=1).sum() == 1)
        report(progress, "attacks", a + 1, n_attacks)
    return successes, picked, True


def single_out_synthetic(private: pd.DataFrame | None, population: pd.DataFrame,
                         epsilon: float, *, n_private: int | None = None, n_targets: int = 10,
                         n_shadows: int = 50, n_attacks: int = 100, seed: int = 0,
                         white_box: bool = False, deadline: float | None = None,
                         progress: ProgressCallback | None = None) -> SyntheticSinglingOut:
    """Run the attack on PrivBayes releases of ``private`` (or, when it is None, of fresh
    samples of n_private population rows) and measure how often it singles out a row: black
    box on the synthetic rows, or with ``white_box`` on the fitted models.

    ``deadline`` (``time.monotonic()`` seconds) stops shadow training at 80% of the time
    left and the attacks at the deadline (after one attack at least); the result then has
    status ``partial``. A deadline before one shadow pair is fitted is a ``BudgetError``.
    """
    start = time.monotonic()
    epsilon = check_epsilon(epsilon)
    check_tables(private, population)
    check_seed(seed)
    deadline = float("inf") if deadline is None else deadline
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
    if n_private is None or not 1 <= n_private < len(unique):
        raise TreeleaksError(f"the private table must have between 1 and {len(unique) - 1} "
                             f"rows (fewer than the population's {len(unique)}), not "
                             f"{n_private}")
    for name, value in (("targets", n_targets), ("shadows", n_shadows), ("attacks", n_attacks)):
        if value < 1:
            raise TreeleaksError(f"the number of {name} must be at least 1, not {value}")
    setup = Setup(unique, encoding.sizes, n_private, epsilon, white_box)
    train_seed, attack_seed = np.random.SeedSequence(seed).spawn(2)
    train_until = start + TRAINING_SHARE * (deadline - start)
    models, trained = train_targets(setup, n_targets, n_shadows, train_seed, train_until,
                                    progress)
    if not models:
        raise BudgetError("the time budget ran out before one shadow pair was fitted; give "
                          "a larger --budget or smaller tables")
    lap = time.monotonic()
    successes, picked, attacked = attack_releases(setup, models, private_codes, n_attacks,
                                                  attack_seed, deadline, progress)
    made = sum(picked)
    if not trained:
        notes.append(f"time ran out during shadow training: {min(m.pairs for m in models)} "
                     f"to {max(m.pairs for m in models)} pairs per target of {n_shadows}")
    if not attacked:
        notes.append(f"time ran out after {made} of {n_attacks} attacks")
    end = time.monotonic()
    return SyntheticSinglingOut(
        successes, made, singles / len(unique), epsilon, n_private, len(unique),
        Status.DONE if trained and attacked else Status.PARTIAL,
        [_describe(m, encoding, p, private_codes) for m, p in zip(models, picked)],
        {"training": lap - start, "attacks": end - lap}, white_box, notes, singles)


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


def _describe(model: TargetModel, encoding: Encoding, picked: int,
              private: np.ndarray | None) -> dict[str, Any]:
    """A target as the report shows it: its values, its shadow pairs, how often the attack
    picked it, and (the custodian knows) whether it is a private row."""
    inside = None if private is None else bool((private == model.record).all(axis=1).any())
    return {"record": encoding.decode(model.record), "shadow_pairs": model.pairs,
            "picked": picked, "in_private": inside}
