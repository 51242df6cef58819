"""How much uncertainty a probabilistic reconstruction leaves: ``dist`` and ``dist_g``.

With uniform distributions (every value, or vector, a path admits equally likely):

- ``dist`` (Definition 2 of Ferry et al., after Gambs et al. 2012): the average over rows
  and attributes of H(reduced domain) / H(original domain) = log2|reduced| / log2|domain|.
  An attribute of a single value (unknown column, numerical column never cut) counts as
  ratio 1: nothing about it is revealed, and it cannot make ``dist`` look smaller.
- ``dist_g`` (their generalisation, Eqs. 10-11 and 16): Σ over paths of support *
  log2(vectors the path admits) / (N * Σ over attributes log2|domain|), counting vectors
  jointly, so group constraints and a rule list's "none of the earlier rules" count too.
  Single-value attributes add 0 to both sides.

Both lie in [0, 1]; lower means more leaked. Per row, the *remaining-entropy ratio* is
its path's log2(admitted) / Σ log2|domain|; ``dist_g`` is its mean over the N rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from treeleaks.runtime.errors import TreeleaksError

QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)


class MissingCountsError(TreeleaksError):
    """A metric weighs paths by their training rows but the model does not release them."""


class PathDomains(Protocol):
    """What the metrics read off a probabilistic reconstruction
    (`treeleaks.attacks.probabilistic.ProbabilisticReconstruction`): per path, its per-class
    training rows and the sizes of what it admits. A protocol, so scoring need not import
    the attack that produces it."""

    @property
    def kind(self) -> str: ...

    @property
    def counts(self) -> np.ndarray | None: ...

    @property
    def reduced_sizes(self) -> np.ndarray: ...

    @property
    def domain_sizes(self) -> np.ndarray: ...

    @property
    def log2_admitted(self) -> np.ndarray: ...


def cell_ratios(reduced_sizes: np.ndarray, domain_sizes: np.ndarray) -> np.ndarray:
    """``(n_paths, n_attributes)``: log2|reduced| / log2|domain| (1 where the domain has one
    value)."""
    informative = domain_sizes > 1
    out = np.ones(reduced_sizes.shape, dtype=np.float64)
    with np.errstate(divide="ignore"):
        out[:, informative] = (np.log2(reduced_sizes[:, informative])
                               / np.log2(domain_sizes[informative]))
    return out


def dist(support: np.ndarray, reduced_sizes: np.ndarray, domain_sizes: np.ndarray) -> float:
    """Definition 2: the per-row, per-attribute average of the entropy ratios, rows in a
    path sharing its reduced domains."""
    support = np.asarray(support, dtype=np.float64)
    held = support > 0  # a path without rows adds nothing (and may admit no value)
    per_path = cell_ratios(np.asarray(reduced_sizes)[held], np.asarray(domain_sizes))
    return float(support[held] @ per_path.mean(axis=1) / support.sum())


def path_ratios(log2_admitted: np.ndarray, domain_sizes: np.ndarray) -> np.ndarray:
    """Each path's remaining-entropy ratio log2(admitted) / Σ log2|domain| (1 when the
    schema leaves nothing to learn)."""
    total = float(np.log2(np.asarray(domain_sizes, dtype=np.float64)).sum())
    if total == 0:
        return np.ones(len(log2_admitted))
    return np.asarray(log2_admitted, dtype=np.float64) / total


def dist_g(support: np.ndarray, log2_admitted: np.ndarray, domain_sizes: np.ndarray) -> float:
    """The generalised joint-entropy ratio Σ support * log2(admitted) / (N * Σ log2|domain|)."""
    support = np.asarray(support, dtype=np.float64)
    ratios = path_ratios(log2_admitted, domain_sizes)
    held = support > 0  # a path without rows adds nothing (and may admit no vector)
    return float(support[held] @ ratios[held] / support.sum())


@dataclass
class LeakSummary:
    """The figures `treeleaks leak` reports for one tree or rule list."""

    dist: float
    dist_g: float
    n_rows: int
    support: np.ndarray
    path_ratio: np.ndarray
    path_dist: np.ndarray
    quantiles: dict[float, float]

    def row_ratios(self) -> np.ndarray:
        """The remaining-entropy ratio of every training row, grouped by path."""
        return np.repeat(self.path_ratio, self.support)

    def most_exposed(self, k: int = 5) -> np.ndarray:
        """Indices of the (at most ``k``) paths holding rows whose ratio is lowest."""
        held = np.flatnonzero(self.support > 0)
        return held[np.argsort(self.path_ratio[held], kind="stable")[:k]]

    def histogram(self, bins: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Rows per ratio bin over [0, 1]: ``(row counts, bin edges)``."""
        held = self.support > 0
        return np.histogram(self.path_ratio[held], bins=bins, range=(0.0, 1.0),
                            weights=self.support[held])


def summarize(reconstruction: PathDomains) -> LeakSummary:
    """dist, dist_g and the per-row distribution of a reconstruction with supports."""
    if reconstruction.counts is None:
        raise MissingCountsError(
            f"dist and dist_g weigh each {reconstruction.kind} by the training rows it holds, "
            f"but the model releases no per-{reconstruction.kind} counts; give a model with "
            "its supports")
    support = reconstruction.counts.sum(axis=1).astype(np.int64)
    if support.sum() <= 0:
        raise MissingCountsError("dist and dist_g need training rows, but every count is 0")
    domains = reconstruction.domain_sizes
    ratios = path_ratios(reconstruction.log2_admitted, domains)
    ratios[support == 0] = np.nan  # no row there; never reported as exposed
    per_path_dist = cell_ratios(reconstruction.reduced_sizes, domains).mean(axis=1)
    rows = np.repeat(ratios, support)
    return LeakSummary(
        dist=dist(support, reconstruction.reduced_sizes, domains),
        dist_g=dist_g(support, reconstruction.log2_admitted, domains),
        n_rows=int(support.sum()),
        support=support,
        path_ratio=ratios,
        path_dist=per_path_dist,
        quantiles={q: float(np.quantile(rows, q)) for q in QUANTILES},
    )
