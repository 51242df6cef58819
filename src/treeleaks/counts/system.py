"""The integer count system over cells, and sound bound propagation on it.

Variables are ``n[cell, class]`` for the (cell, class) pairs the cells allow. Every
(tree, leaf, class) count gives one equation: the variables inside that leaf sum to it.
Propagation tightens each variable's bounds using every equation it appears in, to a
fixed point. Its bounds hold for every dataset consistent with the model, so a positive
lower bound is a proof that rows lie in that cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from treeleaks.counts.cells import Cells
from treeleaks.counts.gradient_rows import SideRows, gradient_rows
from treeleaks.ir.model import ReleasedModel


class InconsistentCountsError(Exception):
    """No dataset reproduces the released counts; the message says which count is impossible."""


@dataclass
class CountSystem:
    """``A @ n == b`` with ``lb <= n <= ub``; variable ``j`` is (``cell[j]``, ``cls[j]``).
    ``side`` rows, when a booster gives them, bind the solver but not propagation."""

    A: sp.csr_matrix
    b: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    cell: np.ndarray
    cls: np.ndarray
    side: SideRows | None = None  # a booster's gradient sums (`counts.gradient_rows`)

    @property
    def n_vars(self) -> int:
        return int(self.cell.size)

    def open_part(self) -> OpenPart:
        """The equations over the variables propagation left open, fixed ones moved right."""
        open_vars = np.flatnonzero(self.lb < self.ub)
        fixed = np.where(self.lb == self.ub, self.lb, 0)
        A = self.A.tocsc()[:, open_vars].tocsr()
        rest = (self.b - self.A @ fixed).astype(np.int64)
        live = np.diff(A.indptr) > 0
        if np.any(rest[~live] != 0):
            raise AssertionError("propagation left an equation with no open variable unmet")
        return OpenPart(open_vars, A[live], rest[live])


@dataclass
class OpenPart:
    """``A @ n[vars] == rest``: the system restricted to its open variables ``vars``."""

    vars: np.ndarray
    A: sp.csr_matrix
    rest: np.ndarray


def count_incidence(model: ReleasedModel, leaves: np.ndarray, cls: np.ndarray) -> sp.csr_matrix:
    """Counts by variables: variable j, a row of class ``cls[j]`` in leaves ``leaves[j]``
    (one per tree), adds one to that (tree, leaf, class) count of every tree that has
    counts, counts in the order of the trees' ``counts.ravel()``."""
    n_classes = model.n_classes
    offsets = np.cumsum([0] + [t.n_leaves * n_classes for t in model.trees])
    counted = [t for t, tree in enumerate(model.trees) if tree.counted]  # others add none
    count_cols = np.column_stack([model.trees[t].count_column(cls) for t in counted]
                                 + [np.zeros((cls.size, 0), dtype=np.int64)])
    rows = (offsets[counted][None, :] + count_cols
            + np.asarray(leaves, dtype=np.int64)[:, counted] * n_classes)
    columns = np.repeat(np.arange(cls.size), rows.shape[1])
    return sp.csr_matrix((np.ones(rows.size, dtype=np.int64), (rows.ravel(), columns)),
                         shape=(offsets[-1], cls.size))


def build_system(model: ReleasedModel, cells: Cells, gradients: bool = False) -> CountSystem:
    """One equation per (tree, leaf, class) with a positive count; identical ones merged.
    With ``gradients``, a booster's gradient sums become the system's side rows."""
    cell, cls = np.nonzero(cells.allowed)
    n_classes = model.n_classes
    offsets = np.cumsum([0] + [t.n_leaves * n_classes for t in model.trees])
    counts = np.concatenate([t.counts.ravel() for t in model.trees]).astype(np.int64)
    n_vars = cell.size
    A = count_incidence(model, cells.leaf[cell], cls)
    covered = np.diff(A.indptr) > 0
    orphan = np.flatnonzero(~covered & (counts > 0))
    if orphan.size:
        raise InconsistentCountsError(_describe_row(model, offsets, orphan[0], counts))
    counted = np.repeat([t.counted for t in model.trees], np.diff(offsets))
    used = np.flatnonzero(covered & counted)  # a tree without counts gives no equation
    A, b = A[used], counts[used]
    A, b = _merge_identical_rows(A, b, model, offsets, used)
    ub = np.full(n_vars, np.iinfo(np.int64).max, dtype=np.int64)
    entries = A.tocoo()
    np.minimum.at(ub, entries.col, b[entries.row])
    side = gradient_rows(model, cells.leaf[cell], cls) if gradients else None
    return CountSystem(A.tocsr(), b, np.zeros(n_vars, dtype=np.int64), ub, cell, cls, side)


def _merge_identical_rows(
    A: sp.csr_matrix, b: np.ndarray, model: ReleasedModel, offsets: np.ndarray, used: np.ndarray
) -> tuple[sp.csr_matrix, np.ndarray]:
    keys = [A.indices[A.indptr[i] : A.indptr[i + 1]].tobytes() for i in range(A.shape[0])]
    first: dict[bytes, int] = {}
    keep = []
    for i, key in enumerate(keys):
        j = first.setdefault(key, i)
        if j == i:
            keep.append(i)
        elif b[j] != b[i]:
            raise InconsistentCountsError(
                "two leaves hold exactly the same possible rows but release different counts: "
                f"{_describe_row(model, offsets, used[j], None)} has {b[j]}, "
                f"{_describe_row(model, offsets, used[i], None)} has {b[i]}"
            )
    return A[keep], b[keep]


def _describe_row(
    model: ReleasedModel, offsets: np.ndarray, row: int, counts: np.ndarray | None
) -> str:
    tree = int(np.searchsorted(offsets, row, side="right") - 1)
    leaf, cls = divmod(int(row - offsets[tree]), model.n_classes)
    text = f"tree {tree} leaf {leaf} class {model.classes[cls]!r}"
    if counts is not None:
        text += (
            f" releases {int(counts[row])} rows, but no point of that leaf is consistent "
            "with the other trees for that class"
        )
    return text


def propagate(system: CountSystem, max_rounds: int = 1000) -> CountSystem:
    """Tighten bounds from every equation until nothing changes (sound for all solutions)."""
    A, b = system.A, system.b
    coo = A.tocoo()
    row, col = coo.row, coo.col
    lb, ub = system.lb.copy(), system.ub.copy()
    for _ in range(max_rounds):
        sum_ub = np.bincount(row, weights=ub[col], minlength=A.shape[0]).astype(np.int64)
        sum_lb = np.bincount(row, weights=lb[col], minlength=A.shape[0]).astype(np.int64)
        if np.any(sum_ub < b) or np.any(sum_lb > b):
            raise InconsistentCountsError(
                "the released counts contradict each other: some leaf needs more rows of a class "
                "than the other trees allow there"
            )
        new_lb = lb.copy()
        new_ub = ub.copy()
        np.maximum.at(new_lb, col, b[row] - (sum_ub[row] - ub[col]))
        np.minimum.at(new_ub, col, b[row] - (sum_lb[row] - lb[col]))
        if np.any(new_lb > new_ub):
            raise InconsistentCountsError(
                "the released counts contradict each other: no count of rows fits every leaf"
            )
        if np.array_equal(new_lb, lb) and np.array_equal(new_ub, ub):
            break
        lb, ub = new_lb, new_ub
    return CountSystem(A, b, lb, ub, system.cell, system.cls, system.side)
