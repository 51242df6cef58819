"""The likelihood of a released noisy count, as the solvers need it.

A DP forest releases ``r = int(z + Y)`` for a true count ``z``, with ``Y ~ Laplace(scale)``
and ``int`` truncating toward zero. The likelihood of a guessed count is the Laplace mass
of the noise values that give ``r``:

- ``r > 0``: ``z + Y`` in ``[r, r + 1)``;
- ``r < 0``: ``z + Y`` in ``(r - 1, r]``;
- ``r = 0``: ``z + Y`` in ``(-1, 1)``.

Each is the mass of an interval of fixed length sliding with ``z``; the Laplace density is
log-concave, so the log-likelihood is concave in ``z`` (Prékopa) and, on the integers, is
exactly the minimum of the chords between its breakpoints ``{0, 1, r, r + 1, z_max}``:
linear pieces an LP maximises with one epigraph row each, no binaries and no cut-off on
the noise. (The SaTML 2026 study writes ``int(z + Y) = z + int(Y)``, which holds only when
``z + Y`` and ``Y`` share a sign; the masses here are those of the mechanism itself.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Lines:
    """Concave piecewise-linear log-likelihoods: count ``owner[k]``'s log-likelihood at
    ``z`` is the minimum over its lines of ``slope[k] * z + intercept[k]`` (exact at integer
    ``z`` in ``[0, z_max]``)."""

    owner: np.ndarray
    slope: np.ndarray
    intercept: np.ndarray


def log_mass(released: np.ndarray, count: np.ndarray, scale: float) -> np.ndarray:
    """``log P(int(count + Y) = released)`` for ``Y ~ Laplace(scale)``, elementwise."""
    r = np.asarray(released, dtype=np.float64)
    z = np.asarray(count, dtype=np.float64)
    low = np.where(r > 0, r, np.where(r < 0, r - 1, -1.0)) - z
    high = np.where(r > 0, r + 1, np.where(r < 0, r, 1.0)) - z
    return _log_interval(low, high, float(scale))


def _log_interval(low: np.ndarray, high: np.ndarray, b: float) -> np.ndarray:
    """Log of the Laplace(0, b) mass of ``(low, high)``, accurate far in the tails."""
    width_term = np.log(-np.expm1(-(high - low) / b))
    above = np.log(0.5) - low / b + width_term  # interval within [0, inf)
    below = np.log(0.5) + high / b + width_term  # interval within (-inf, 0]
    across = np.log1p(-0.5 * (np.exp(np.minimum(low, 0) / b) + np.exp(-np.maximum(high, 0) / b)))
    return np.where(low >= 0, above, np.where(high <= 0, below, across))


def likelihood_lines(released: np.ndarray, scale: float, z_max: int,
                     offset: np.ndarray | None = None) -> Lines:
    """The chords whose minimum is each count's log-likelihood over guessed counts
    ``0..z_max`` (plus ``offset`` rows already known to lie there, if given)."""
    released = np.asarray(released, dtype=np.int64)
    shift = np.zeros_like(released) if offset is None else np.asarray(offset, dtype=np.int64)
    n = released.size
    # Breakpoints in the guessed count: where r - shift (the guess that matches) sits.
    top = np.full(n, z_max)
    points = np.column_stack([np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64),
                              released - shift, released - shift + 1, top])
    points = np.sort(np.clip(points, 0, z_max), axis=1)
    owners, slopes, intercepts = [], [], []
    for k in range(points.shape[1] - 1):
        a, c = points[:, k], points[:, k + 1]
        step = np.flatnonzero(c > a)
        if not step.size:
            continue
        ya = log_mass(released[step], a[step] + shift[step], scale)
        yc = log_mass(released[step], c[step] + shift[step], scale)
        slope = (yc - ya) / (c[step] - a[step])
        owners.append(step)
        slopes.append(slope)
        intercepts.append(ya - slope * a[step])
    flat = np.flatnonzero(points[:, -1] == points[:, 0])  # z_max == 0: one value
    owners.append(flat)
    slopes.append(np.zeros(flat.size))
    intercepts.append(log_mass(released[flat], shift[flat], scale))
    return Lines(np.concatenate(owners), np.concatenate(slopes), np.concatenate(intercepts))
