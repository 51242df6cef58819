"""The certificate of a boosted regressor's rows: every tree's leaf counts and every
leaf's sum of residuals (`treeleaks.ir.model.LeafGradients`, squared error) reproduced.

A booster keeps no leaf mean beyond its first tree: what its later leaves say of the
targets is a sum of residuals, targets minus the earlier trees' prediction, which the
rows' own targets and routes give back. Partial rows are checked within the counts only
(a sum over a leaf's missing rows says nothing of the ones found).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from treeleaks.counts.gradient_rows import largest_gradient_miss
from treeleaks.counts.verify import Certificate
from treeleaks.ir.model import ReleasedModel


def verify_boosted_regression(model: ReleasedModel, rows: pd.DataFrame) -> Certificate:
    """Whether ``rows`` (features and target), routed through every tree, reproduce every
    leaf's row count and every leaf's sum of residuals within the file's precision."""
    leaves, y = _routed(model, rows)
    wrong, checked, first = _count_misses(model, leaves, exact=True)
    miss, where = largest_gradient_miss(model, leaves, y)
    sums_hold = miss <= 1.0
    if not sums_hold:
        wrong += 1
        first = first or f"{where} (the sum of residuals of its rows)"
    return Certificate(wrong == 0, checked, wrong, first, leaf_values_match=sums_hold,
                       leaf_values=f"worst sum of residuals at {miss:.2g} of its tolerance")


def verify_rows_within(model: ReleasedModel, rows: pd.DataFrame,
                       distinct: bool = False) -> Certificate:
    """Whether ``rows``, some of a regressor's training rows, put no more rows in any leaf
    than it released (``distinct``: than its distinct rows, a bootstrap tree's
    ``n_samples``)."""
    leaves, _ = _routed(model, rows)
    wrong, checked, first = _count_misses(model, leaves, exact=False, distinct=distinct)
    return Certificate(wrong == 0, checked, wrong, first)


def _routed(model: ReleasedModel, rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's leaf in every tree, and its target."""
    X = rows[list(model.feature_names)].to_numpy(dtype=np.float64)
    y = rows[model.label_name].to_numpy(dtype=np.float64)
    return model.apply(X), y


def _count_misses(model: ReleasedModel, leaves: np.ndarray, exact: bool,
                  distinct: bool = False) -> tuple[int, int, str]:
    """Leaves whose routed rows differ from their count (``exact``) or exceed it; the count
    is of distinct rows with ``distinct``."""
    wrong, checked, first = 0, 0, ""
    for t, tree in enumerate(model.trees):
        held = np.bincount(leaves[:, t], minlength=tree.n_leaves)
        released = tree.n_samples if distinct and tree.n_samples is not None else (
            tree.counts[:, 0])
        off = held != released if exact else held > released
        checked += tree.n_leaves
        wrong += int(off.sum())
        if off.any() and not first:
            leaf = int(np.argmax(off))
            first = (f"tree {t} leaf {leaf}: released {released[leaf]} rows, the "
                     f"reconstructed rows put {held[leaf]} there")
    return wrong, checked, first
