"""The attack on releases: PrivBayes refitted on a table, every competing target's
classifier scores the release, and the predicate "every attribute equals the surest
target's record" succeeds when it matches exactly one row of that table. Several series
(the study's targets, the custodian's worst case) take turns, one release each per round,
so a deadline leaves them with as many releases as each other."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from treeleaks.runtime.progress import ProgressCallback, report
from treeleaks.synthetic.setup import Setup
from treeleaks.synthetic.shadows import TargetModel


@dataclass
class Series:
    """One figure's attacks: the classifiers that compete, where each attacked table comes
    from, and the tally (successes, and how often each target was picked)."""

    models: list[TargetModel]
    draw: Callable[[np.random.Generator], np.ndarray]
    rng: np.random.Generator
    successes: int = 0
    picked: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.picked = [0] * len(self.models)

    def attack(self, setup: Setup) -> None:
        """Release one table and attack it."""
        rows = self.draw(self.rng)
        release = setup.release(rows, int(self.rng.integers(2**63)))
        best = int(np.argmax([m.score(setup.features(release, m.record))
                              for m in self.models]))
        self.picked[best] += 1
        self.successes += int((rows == self.models[best].record).all(axis=1).sum() == 1)


def attack_rounds(setup: Setup, series: list[Series], n_attacks: int, deadline: float,
                  progress: ProgressCallback | None = None) -> int:
    """Up to n_attacks rounds, each attacking one release per series; after the first (so
    every series has a rate), no round is started that the last one's time says would end
    past the deadline. The rounds made."""
    last = 0.0
    for a in range(n_attacks):
        begun = time.monotonic()
        if a and begun + last >= deadline:
            return a
        for s in series:
            s.attack(setup)
        last = time.monotonic() - begun
        report(progress, "attacks", a + 1, n_attacks)
    return n_attacks
