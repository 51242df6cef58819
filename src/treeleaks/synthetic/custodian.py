"""The custodian's worst case: the attack aimed at the private table's own most isolated
rows instead of only the population's.

The study's targets are the population's most isolated records, chosen without looking at
X; when none of them is in X no release of X can be singled out, whatever ε (issue 41). The
custodian holds X, so the worst case for this release is the same attack aimed at X's rows:
the rows of X that occur once there, ranked by the study's isolation score over the
population, with the shadow training the study's (the attacker knows D, not X).

Aimed at X's rows alone, every pick would be a row of X and succeed, whatever the release
shows. So they compete with decoys, the most isolated population records outside X, in the
proportion |X|/|D| of the study's baseline: of n targets, k = max(1, round(n·|X|/|D|)) are
X's rows and n - k (one at least) decoys. The releases attacked are of X itself, as for the
study's targets; a pick succeeds when it is one of X's rows, and a random pick does so with
probability k/n, this figure's baseline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from treeleaks.synthetic.encoding import found_in
from treeleaks.synthetic.targets import most_vulnerable


@dataclass(frozen=True)
class WorstCase:
    """The targets (population indices: X's rows first, then the decoys) and the share of
    them that are X's rows, the figure's baseline."""

    targets: np.ndarray
    own: int

    @property
    def baseline(self) -> float:
        return self.own / len(self.targets)


def worst_case(population: np.ndarray, sizes: list[int], private: np.ndarray,
               n_targets: int, share: float) -> WorstCase | None:
    """X's most isolated single rows and the most isolated records outside X, ``share``
    of n_targets the former; None when no row of X occurs once (none can be singled out)."""
    rows, counts = np.unique(private, axis=0, return_counts=True)
    singles = np.flatnonzero(found_in(population, rows[counts == 1]))
    outside = np.flatnonzero(~found_in(population, private))
    if not len(singles):
        return None
    own = min(max(1, round(n_targets * share)), len(singles))
    decoys = min(max(1, n_targets - own), len(outside))
    return WorstCase(np.concatenate([most_vulnerable(population, sizes, own, among=singles),
                                     most_vulnerable(population, sizes, decoys,
                                                     among=outside)]), own)
