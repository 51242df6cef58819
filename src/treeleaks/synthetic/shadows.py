"""Shadow training: for each target, PrivBayes fitted on shadow pairs (|X| population rows
without the target, and the same rows with one swapped for it) and a random forest that
tells from a release's features whether the target was in.

Everything here stops at its deadline, the forests included: they cost about as much as
a pair each (0.1-0.2 s for 100 trees), so with many targets fitting them after the pairs
overran the budget (issue 41: 500 targets, pairs to 16 s, forests to 84 s). The first
forest's fit time is measured, and no pair is started unless the forests of every target
begun so far still fit before the deadline at FOREST_MARGIN times that time; a forest the
deadline still leaves no time for is dropped, with its target."""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np
from sklearn.ensemble import RandomForestClassifier

from treeleaks.runtime.progress import ProgressCallback, report
from treeleaks.synthetic.setup import Setup

TREES = 100  # the meta-classifier's
FOREST_MARGIN = 2.0  # the forests' time kept, in multiples of the first forest's fit time


@dataclass
class TargetModel:
    """One target's membership classifier."""

    index: int  # the target's row in the population
    record: np.ndarray
    classifier: RandomForestClassifier
    pairs: int

    def score(self, features: np.ndarray) -> float:
        """How sure the classifier is that the target was in the table behind a release."""
        return float(self.classifier.predict_proba(features[None, :])[0, 1])


@dataclass
class Training:
    """The classifiers trained, for how many targets asked, and whether every pair and
    every forest was fitted."""

    models: list[TargetModel]
    asked: int
    complete: bool

    def note(self, n_shadows: int) -> str | None:
        """What the deadline cut, in one line (None when nothing was cut)."""
        if self.complete or not self.models:
            return None
        pairs = [m.pairs for m in self.models]
        return (f"time ran out during shadow training: {len(self.models)} of {self.asked} "
                f"targets trained, {min(pairs)} to {max(pairs)} pairs each of {n_shadows}")


def train_targets(setup: Setup, targets: np.ndarray, n_shadows: int,
                  seed: np.random.SeedSequence, deadline: float,
                  progress: ProgressCallback | None = None) -> Training:
    """A membership classifier for each target (population indices) from up to n_shadows
    shadow pairs each, round robin, so a deadline leaves every target begun with as many
    pairs as the others, give or take one."""
    population, n = setup.population, setup.n_private
    rng = np.random.default_rng(seed)
    features: list[list[np.ndarray]] = [[] for _ in targets]
    begun, forest_seconds, complete = 0, 0.0, True
    total = len(targets) * n_shadows
    for done, j in enumerate(chain.from_iterable(repeat(range(len(targets)), n_shadows))):
        forests = begun + (not features[j])
        if time.monotonic() + FOREST_MARGIN * forest_seconds * forests >= deadline:
            complete = False
            break
        t = targets[j]
        others = np.delete(np.arange(len(population)), t)
        out_rows = population[rng.choice(others, n, replace=False)]
        in_rows = out_rows.copy()
        in_rows[rng.integers(n)] = population[t]
        for rows in (out_rows, in_rows):
            release = setup.release(rows, int(rng.integers(2**63)))
            features[j].append(setup.features(release, population[t]))
        begun = forests
        if not forest_seconds:
            forest_seconds = _forest_seconds(features[j])
        report(progress, "shadows", done + 1, total)
    models, fitted = _classifiers(population, targets, features, rng, deadline)
    return Training(models, len(targets), complete and fitted)


def _forest_seconds(rows: list[np.ndarray]) -> float:
    """Seconds to fit one target's forest, timed on its first pair."""
    start = time.monotonic()
    RandomForestClassifier(TREES, random_state=0).fit(np.array(rows), [0, 1])
    return time.monotonic() - start


def _classifiers(population: np.ndarray, targets: np.ndarray,
                 features: list[list[np.ndarray]], rng: np.random.Generator,
                 deadline: float) -> tuple[list[TargetModel], bool]:
    """A random forest per target with at least one shadow pair (out, in alternate), until
    the deadline; whether every such target got one (the first always does)."""
    models: list[TargetModel] = []
    for t, rows in zip(targets, features):
        if not rows:
            continue
        state = int(rng.integers(2**31))
        if models and time.monotonic() >= deadline:
            return models, False
        labels = np.tile([0, 1], len(rows) // 2)
        forest = RandomForestClassifier(TREES, random_state=state)
        models.append(TargetModel(int(t), population[t], forest.fit(np.array(rows), labels),
                                  len(rows) // 2))
    return models, True
