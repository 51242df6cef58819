"""Cells found on demand for noisy counts, when the trees cut the domain into too many to list.

The pool starts from the cells of points drawn from the schema's domain and grows by
pricing: given each (tree, leaf, class) count's gain from one more row and the price of a
row, CP-SAT searches the point (through any leaf of every tree, within the schema) whose
cell gains more than the price for some class (`treeleaks.counts.pricing`, the model the
exact engine's generation uses). Every class may lie in every cell (a noisy 0 hides rows),
so each new cell brings one variable per class, cell-major: variable ``j`` is cell
``j // C``, class ``j % C``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from treeleaks.counts.cells import Cells, cell_boxes
from treeleaks.counts.pricing import PricingTeam
from treeleaks.counts.system import count_incidence
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.runtime.errors import SchemaError

SAMPLED_POINTS = 20_000  # points drawn from the domain to seed the pool
PRICED_PER_CLASS = 50  # cells kept from one pricing call of a class


class CellPool:
    """Cells as leaf vectors (one leaf per tree), deduplicated, in the order found."""

    def __init__(self, model: ReleasedModel, schema: FeatureSchema, seed: int = 0,
                 workers: int = 1,
                 log_prior: Callable[[Cells], np.ndarray] | None = None) -> None:
        self.model, self.schema, self.seed = model, schema, seed
        self.n_classes = model.n_classes
        self.offsets = np.cumsum([0] + [t.counts.size for t in model.trees])
        self.leaves = np.zeros((0, model.n_trees), dtype=np.int64)
        self._seen: set[bytes] = set()
        self.team = PricingTeam(model, schema, workers, every_leaf=True)
        self.pricing_calls = 0
        self.log_prior = log_prior
        # A column without a finite range cannot be sampled: pricing seeds the pool then.
        with contextlib.suppress(SchemaError):
            self.add(model.apply(schema.sample(SAMPLED_POINTS, seed)))

    def __len__(self) -> int:
        return int(self.leaves.shape[0])

    def close(self) -> None:
        self.team.close()

    def add(self, leaves: np.ndarray) -> np.ndarray:
        """Add the cells of ``leaves`` (one row per point) not seen yet; their indices."""
        fresh = []
        for row in np.unique(np.asarray(leaves, dtype=np.int64), axis=0):
            key = row.tobytes()
            if key not in self._seen:
                self._seen.add(key)
                fresh.append(row)
        first = len(self)
        if fresh:
            self.leaves = np.vstack([self.leaves, np.array(fresh)])
        return np.arange(first, len(self))

    def incidence(self, cells: np.ndarray) -> sp.csr_matrix:
        """Counts by variables for ``cells`` (each with every class, cell-major)."""
        c = self.n_classes
        return count_incidence(self.model, self.leaves[np.repeat(cells, c)],
                               np.tile(np.arange(c), cells.size))

    def price(self, gains: np.ndarray, price: float,
              deadline: float) -> tuple[sp.csr_matrix, np.ndarray] | None:
        """New cells with a class whose row gains more than ``price`` (``gains`` per count),
        as the columns of their variables with their log-prior; None when pricing proved
        there are none. A price of -inf asks for the best cells whatever their gain (to
        seed the pool). With a prior, pricing weighs the likelihood alone and the LP
        judges the cells found."""
        c = self.n_classes

        def weights(cls: int) -> list[np.ndarray]:  # pricing minimises: the negated gains
            return [-gains[self.offsets[t] + np.arange(tree.n_leaves) * c + cls]
                    for t, tree in enumerate(self.model.trees)]

        cutoff = -price if np.isfinite(price) else None
        results = self.team.best_each(weights, deadline, lambda cls: [], cutoff=cutoff,
                                      keep=PRICED_PER_CLASS, seed=self.seed)
        self.pricing_calls += sum(r is not None for r in results)
        found = [cell.leaves for r in results if r is not None for cell in r[0]]
        proven = all(r is not None and r[2] and not r[0] for r in results)
        if proven:
            return None
        new = self.add(np.array(found)) if found else np.zeros(0, dtype=np.int64)
        prior = (np.zeros(new.size * self.n_classes) if self.log_prior is None
                 else self.log_prior(self.cells(new)))
        return self.incidence(new), prior

    def cells(self, which: np.ndarray | None = None) -> Cells:
        """The pool's cells (or those of ``which``) as boxes (the intersection of each
        cell's leaves), every class allowed."""
        leaves = self.leaves if which is None else self.leaves[which]
        allowed = np.ones((len(leaves), self.n_classes), dtype=bool)
        return Cells(*cell_boxes(self.model, leaves, self.schema), allowed, leaves.astype(np.int32))
