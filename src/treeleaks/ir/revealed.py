"""Training values a model file gives away beside its trees, per column.

A file can hold a column's whole set of distinct training values in another field than the
splits (a histogram booster's bin edges are the midpoints of neighbouring training values).
Its reader puts them on the IR as `RevealedValues`, and the engine places each reconstructed
value on one of them rather than at its box's middle, whatever the format.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RevealedValues:
    """One column's distinct training values as the file gives them away.

    ``values`` are sorted; ``pinned``: every value is settled exactly (else the file gives
    them up to one shift of the whole set, and ``values`` is the likeliest reading);
    ``field`` names the file's field they come from.
    """

    values: np.ndarray
    pinned: bool
    field: str

    def check(self) -> None:
        """Raise ValueError unless the values are finite, distinct and sorted."""
        values = np.asarray(self.values, dtype=np.float64)
        if values.ndim != 1 or not values.size or not np.isfinite(values).all() or (
                np.diff(values) <= 0).any():
            raise ValueError(f"the training values read from {self.field} are not a sorted "
                             "set of distinct finite numbers")
