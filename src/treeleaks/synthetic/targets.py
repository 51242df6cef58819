"""Which population records to attack: the most isolated ones (Meeus et al. 2023,
"Achilles' heels"), by the mean cosine distance to their k nearest neighbours over the
one-hot encoded attributes. Outliers shape a synthetic table most when they are in it."""

from __future__ import annotations

import numpy as np
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import OneHotEncoder

NEIGHBOURS = 5


def vulnerability(codes: np.ndarray, sizes: list[int], k: int = NEIGHBOURS) -> np.ndarray:
    """Each record's mean cosine distance to its k nearest other records."""
    onehot = OneHotEncoder(categories=[np.arange(s) for s in sizes]).fit_transform(codes)
    k = min(k, len(codes) - 1)
    if k < 1:
        return np.zeros(len(codes))
    distances, _ = NearestNeighbors(n_neighbors=k + 1, metric="cosine").fit(onehot) \
        .kneighbors(onehot)
    return distances[:, 1:].mean(axis=1)  # column 0 is the record itself


def most_vulnerable(codes: np.ndarray, sizes: list[int], n: int,
                    among: np.ndarray | None = None) -> np.ndarray:
    """Indices of the n most isolated records, most isolated first (ties: lower index);
    with ``among`` (indices), only those records compete, each scored against them all."""
    scores = vulnerability(codes, sizes)
    ranked = np.argsort(-scores, kind="stable")
    if among is not None:
        ranked = ranked[np.isin(ranked, among)]
    return ranked[:n]
