"""A scikit-learn bootstrap forest's draws, recomputed from the plain records of its skops
archive without importing scikit-learn (which takes seconds to import).

scikit-learn draws a tree's rows with ``RandomState(tree.random_state).randint(0, n_samples,
n_samples_bootstrap)`` when the forest was fitted without sample weights, and recomputes them
the same way in ``estimators_samples_``; this module repeats that draw. A record that does
not say enough to repeat it (no stored bootstrap size, sample weights, a tree whose random
state is not an integer seed) gets None, and the archive goes through scikit-learn itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_SEEDS = 2**32  # the seeds RandomState accepts: 0 <= seed < 2**32


def sample_indices(generator: np.random.RandomState, seed: int, n_samples: int,
                   n_drawn: int) -> np.ndarray:
    """The training rows (positions, with repeats) one tree drew, as scikit-learn draws them.
    ``generator`` is reseeded with ``seed``: the stream ``RandomState(seed)`` gives, for a
    tenth of the cost of building one (a forest's hundred new ones took 24 ms)."""
    generator.seed(seed)
    return generator.randint(0, n_samples, n_drawn).astype(np.int32)


def recorded_samples(forest: Any) -> list[np.ndarray] | None:
    """Each tree's drawn rows for a plain record of a fitted bootstrap forest, or None when
    the record cannot tell them without scikit-learn."""
    n_samples = getattr(forest, "_n_samples", None)
    n_drawn = getattr(forest, "_n_samples_bootstrap", None)
    if not (_whole(n_samples) and n_samples > 0 and _whole(n_drawn) and n_drawn >= 0):
        return None  # stripped, or saved by a scikit-learn that did not store the size
    if getattr(forest, "_sample_weight", None) is not None:
        return None  # weighted rows are drawn by RandomState.choice
    seeds = [getattr(tree, "random_state", None) for tree in getattr(forest, "estimators_", [])]
    if not all(_whole(seed) and 0 <= seed < _SEEDS for seed in seeds):
        return None
    generator = np.random.RandomState()
    return [sample_indices(generator, seed, n_samples, n_drawn) for seed in seeds]


def _whole(value: Any) -> bool:
    """Whether ``value`` is a whole number (a JSON boolean is not)."""
    return isinstance(value, int) and not isinstance(value, bool)
