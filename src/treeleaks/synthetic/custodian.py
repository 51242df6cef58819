"""The custodian's worst case: the attack aimed at the private table's own most isolated
rows instead of the population's.

The study's targets are the population's most isolated records, chosen without looking at
X; when none of them is in X no release of X can be singled out, whatever ε (issue 41). The
custodian holds X, so the worst case for this release is the same attack on X's rows: its
targets are the rows of X that occur once there, ranked by the study's isolation score over
the population, and the shadow training is the study's (the attacker knows D, not X).

Attacking releases of X itself would make every pick a success (every target is a row of
X). So each attacked table is X with every target kept with the study's probability
|X|/|D| and otherwise swapped for a distinct population row outside X: a target is in the
released table as often as one of the study's is, the rest of X is unchanged, and the
baseline is the same |X|/|D| (a random target's predicate singles out a row that often).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from treeleaks.synthetic.encoding import found_in
from treeleaks.synthetic.targets import most_vulnerable


@dataclass
class WorstCaseTables:
    """X, its targets (population indices) and their rows, the population rows outside X,
    and how likely each target is to be kept in a table."""

    private: np.ndarray
    targets: np.ndarray
    records: np.ndarray
    outside: np.ndarray
    prior: float

    @classmethod
    def build(cls, population: np.ndarray, sizes: list[int], private: np.ndarray,
              n_targets: int, prior: float) -> WorstCaseTables:
        """X's n most isolated single rows (as many as there are rows outside X to swap
        them for)."""
        rows, counts = np.unique(private, axis=0, return_counts=True)
        singles = np.flatnonzero(found_in(population, rows[counts == 1]))
        outside = population[~found_in(population, private)]
        n = min(n_targets, len(outside))
        targets = most_vulnerable(population, sizes, n, among=singles)
        return cls(private, targets, population[targets], outside, prior)

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """X with each target kept with probability ``prior``, otherwise replaced by a
        population row outside X (distinct ones)."""
        table = self.private.copy()
        dropped = self.records[rng.random(len(self.records)) >= self.prior]
        if len(dropped):
            where = np.flatnonzero(found_in(table, dropped))
            table[where] = self.outside[rng.choice(len(self.outside), len(where),
                                                   replace=False)]
        return table
