"""A prior over cells from rows the adversary already holds: the informed adversary's edge.

Noisy counts say little about any one row, so an adversary who knows most of the training
set should also use what those rows say about typical rows. The prior here treats columns
as independent, each distributed as among the known rows (add-one smoothing): a binary
column as a coin, a one-hot or at-most-one group as one categorical column, an ordinal or
numerical column by the share of known values in an interval, and the label by its
frequencies. A cell's prior is the probability that a row drawn from it lands in the cell:
the product, over columns, of the mass its values may take there (a column the cell leaves
open contributes 1). The SaTML 2026 study's informed adversary plays the same role with a
distance term (the unknown row close to the known ones); this one is a probability, so it
adds to the log-likelihood with no weight to tune.
"""

from __future__ import annotations

import numpy as np

from treeleaks.counts.cells import Cells
from treeleaks.counts.materialize import cell_values
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema


def marginal_log_prior(cells: Cells, schema: FeatureSchema, model: ReleasedModel,
                       X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``(cells, classes)``: the log-prior of one row in each (cell, class), from the known
    rows ``X`` (features) and ``y`` (labels)."""
    k = X.shape[0]
    values = cell_values(schema, cells.lower, cells.upper, np.ones(len(cells)))
    can0, can1 = values.low == 0, values.high == 1
    kinds = schema.kind_array()
    log_prior = np.zeros(len(cells))
    grouped = np.zeros(len(kinds), dtype=bool)
    for cols, exactly_one in schema.group_indices():
        grouped[cols] = True
        log_prior += _group_term(X[:, cols], can0[:, cols], can1[:, cols], exactly_one)
    for j in np.flatnonzero((kinds == "binary") & ~grouped):
        ones = (np.sum(X[:, j] == 1) + 1) / (k + 2)
        log_prior += np.log(np.where(can0[:, j], 1 - ones, 0) + np.where(can1[:, j], ones, 0))
    low, high = schema.range_arrays()
    for j in np.flatnonzero((kinds == "ordinal") | (kinds == "numerical")):
        if np.isfinite(low[j]) and np.isfinite(high[j]) and high[j] > low[j]:
            log_prior += _interval_term(X[:, j], values.low[:, j], values.high[:, j],
                                        kinds[j] == "ordinal", low[j], high[j])
    labels = model.class_index(y)
    label_term = np.log((np.bincount(labels, minlength=model.n_classes) + 1)
                        / (k + model.n_classes))
    return log_prior[:, None] + label_term[None, :]


def _group_configs(X: np.ndarray, can0: np.ndarray, can1: np.ndarray,
                   exactly_one: bool) -> tuple[np.ndarray, np.ndarray]:
    """A group's configurations (member j set; for an at-most-one group also none, last):
    their smoothed frequencies among the known rows ``X`` and, per cell, which it allows."""
    m = X.shape[1]
    member = np.where(X.sum(axis=1) > 0, X.argmax(axis=1), m)  # m: no member set
    n_configs = m if exactly_one else m + 1
    freq = (np.bincount(member, minlength=m + 1)[:n_configs] + 1) / (X.shape[0] + n_configs)
    others_zero = can0.sum(axis=1, keepdims=True) - can0  # members other than j may be 0
    allowed = np.zeros((can0.shape[0], n_configs), dtype=bool)
    allowed[:, :m] = can1 & (others_zero == m - 1)
    if not exactly_one:
        allowed[:, m] = can0.all(axis=1)
    return freq, allowed


def _group_term(X: np.ndarray, can0: np.ndarray, can1: np.ndarray,
                exactly_one: bool) -> np.ndarray:
    """Log of the group's mass in each cell: the frequencies of the configurations it
    allows."""
    freq, allowed = _group_configs(X, can0, can1, exactly_one)
    return np.log(np.maximum(allowed @ freq, 1e-300))


def _interval_term(values: np.ndarray, low: np.ndarray, high: np.ndarray, ordinal: bool,
                   range_low: float, range_high: float) -> np.ndarray:
    """Log of the smoothed share of known values in each cell's interval: the known rows
    in it plus one pseudo-row spread uniformly over the column's range."""
    if ordinal:  # closed integer bounds
        inside = (values[None, :] >= low[:, None]) & (values[None, :] <= high[:, None])
        width = (high - low + 1) / (range_high - range_low + 1)
    else:  # (low, high]
        inside = (values[None, :] > low[:, None]) & (values[None, :] <= high[:, None])
        width = (np.minimum(high, range_high) - np.maximum(low, range_low)) / (
            range_high - range_low)
    share = (inside.sum(axis=1) + np.clip(width, 0.0, 1.0)) / (values.size + 1)
    return np.log(np.maximum(share, 1e-300))


def posterior_row(cells: Cells, log_weight: np.ndarray, schema: FeatureSchema,
                  model: ReleasedModel, X: np.ndarray,
                  y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """One unknown row decided value by value: each column takes its most probable value
    under the posterior (``log_weight`` per (cell, class), cell-major, up to a constant),
    a column a cell leaves open following the known rows' frequencies there. Per-column
    modes minimise the expected number of wrong values, which the most probable row as a
    whole does not. Returns the row's values, the posterior probability of each (for an
    ordinal or numerical column, that the value lies in the cell it was taken from), and
    its class index."""
    n_cells, n_classes = len(cells), model.n_classes
    weight = np.exp(log_weight - log_weight.max()).reshape(n_cells, n_classes)
    weight /= weight.sum()
    per_cell = weight.sum(axis=1)
    values = cell_values(schema, cells.lower, cells.upper, per_cell)
    can0, can1 = values.low == 0, values.high == 1
    kinds = schema.kind_array()
    row = np.array(values.value[np.argmax(per_cell)], dtype=np.float64)
    sure = np.ones(len(kinds))
    grouped = np.zeros(len(kinds), dtype=bool)
    for cols, exactly_one in schema.group_indices():
        grouped[cols] = True
        row[cols], sure[cols] = _group_mode(X[:, cols], can0[:, cols], can1[:, cols],
                                            exactly_one, per_cell)
    k = X.shape[0]
    for j in np.flatnonzero((kinds == "binary") & ~grouped):
        ones = (np.sum(X[:, j] == 1) + 1) / (k + 2)
        p_one = float(per_cell @ np.where(can1[:, j], np.where(can0[:, j], ones, 1.0), 0.0))
        row[j], sure[j] = float(p_one > 0.5), max(p_one, 1.0 - p_one)
    for j in np.flatnonzero((kinds == "ordinal") | (kinds == "numerical")):
        order = np.argsort(values.value[:, j], kind="stable")
        chosen = order[min(np.searchsorted(np.cumsum(per_cell[order]), 0.5), n_cells - 1)]
        row[j] = values.value[chosen, j]
        inside = (values.low[:, j] <= row[j]) & (row[j] <= values.high[:, j])
        sure[j] = float(per_cell @ inside)
    return row, sure, int(np.argmax(weight.sum(axis=0)))


def _group_mode(X: np.ndarray, can0: np.ndarray, can1: np.ndarray, exactly_one: bool,
                per_cell: np.ndarray) -> tuple[np.ndarray, float]:
    """The group's most probable configuration and its probability: each cell's allowed
    configurations in proportion to their frequencies among the known rows, weighted by
    the cell's posterior."""
    freq, allowed = _group_configs(X, can0, can1, exactly_one)
    mass = allowed * freq[None, :]
    mass /= np.maximum(mass.sum(axis=1, keepdims=True), 1e-300)
    config = per_cell @ mass
    best = int(np.argmax(config))
    return (np.arange(X.shape[1]) == best).astype(np.float64), float(config[best])
