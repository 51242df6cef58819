"""The black-box attack's view of a synthetic table: answers to counting queries about one
target record (the share of synthetic rows that agree with it on a set of attributes), as
in the shadow-modelling attacks the study follows."""

from __future__ import annotations

from itertools import combinations

import numpy as np


def query_sets(n_attributes: int, max_size: int = 2) -> list[tuple[int, ...]]:
    """Every set of 1..max_size attributes, and the whole record."""
    sets = [s for size in range(1, min(max_size, n_attributes) + 1)
            for s in combinations(range(n_attributes), size)]
    whole = tuple(range(n_attributes))
    return sets if whole in sets else [*sets, whole]


def answers(synthetic: np.ndarray, target: np.ndarray,
            sets: list[tuple[int, ...]]) -> np.ndarray:
    """For each attribute set, the share of synthetic rows equal to the target on it."""
    agree = synthetic == target
    return np.array([agree[:, list(s)].all(axis=1).mean() for s in sets])
