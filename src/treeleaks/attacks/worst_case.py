"""The custodian's worst case.

How far from the true training set can a dataset that reproduces the model be?

A bootstrap forest whose draws are known gives its rows back in training order, so row k of
any reconstruction can be set against training row k. Given the true rows, `worst_case`
finds, for every row, a sound upper bound on its error in *any* dataset that reproduces the
model, so that "every consistent reconstruction recovers at least X% of every row" is a
proven statement; and the consistent dataset farthest from the truth on average, with an
LP bound on how far any can be.

A row placed in a cell is charged, per feature, the farthest value the cell allows from the
true one (scaled as in `treeleaks.evaluation.metrics`): a value the model leaves open counts
as wrong, since some consistent dataset gets it wrong. A row's bound is the largest charge among its
placements that the LP relaxation does not rule out; it is *settled* when a consistent
dataset reaches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from treeleaks.attacks.reconstruction.bootstrap import (
    PlacementError,
    Placements,
    has_draws,
    placements,
    relaxation,
)
from treeleaks.counts.materialize import cell_values
from treeleaks.counts.verify import verify
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.ir.schema_columns import feature_scales
from treeleaks.runtime.clock import RunClock, seconds_until
from treeleaks.runtime.errors import TreeleaksError, UnsupportedModelError
from treeleaks.runtime.vocabulary import Status

FARTHEST_SHARE = 0.4  # of the time: the farthest dataset (MIP); the row bounds get the rest


@dataclass
class WorstCase:
    """The custodian's worst case: how far a consistent dataset can be from the truth.

    Errors are scaled as in `treeleaks.evaluation.metrics` (0 perfect, 1 worst).

    Parameters
    ----------
    row_bound : numpy.ndarray
        ``row_bound[k]``: no dataset reproducing the model puts row k farther from
        training row k.
    row_settled : numpy.ndarray
        ``row_settled[k]``: a consistent dataset reaches ``row_bound[k]``.
    mean_found : float
        Mean error of the farthest consistent dataset found (NaN: none found).
    mean_bound : float
        No consistent dataset is farther from the truth on average.
    status : Status
        OPTIMAL: the dataset found is proven farthest and every row's bound was tightened
        to the end; FEASIBLE: the time limit cut the search, the bounds stay sound.
    time_s : float
        Wall-clock time of the run, in seconds.
    message : str, default ""
        What stopped the run short, for people.
    """

    row_bound: np.ndarray
    row_settled: np.ndarray
    mean_found: float
    mean_bound: float
    status: Status
    time_s: float
    message: str = ""

    @property
    def guaranteed_recovery(self) -> float:
        """The share of every row's values that every consistent reconstruction recovers."""
        return float(1.0 - self.row_bound.max()) if self.row_bound.size else float("nan")

    def summary(self) -> dict[str, Any]:
        """Summarize the result as plain JSON, for reports and the CLI's ``--json``.

        Returns
        -------
        dict
            The status, the guaranteed recovery, the worst row bound, the rows settled and
            the mean errors found and bounded.
        """
        return {
            "status": self.status,
            "time_s": round(self.time_s, 4),
            "guaranteed_recovery": self.guaranteed_recovery,
            "worst_row_bound": float(self.row_bound.max()) if self.row_bound.size else None,
            "rows_settled": int(self.row_settled.sum()),
            "n_rows": int(self.row_bound.size),
            "mean_error_found": self.mean_found,
            "mean_error_bound": self.mean_bound,
            "message": self.message,
        }


def worst_case(
    model: ReleasedModel,
    schema: FeatureSchema | None = None,
    *,
    truth: pd.DataFrame,
    time_limit: float = 60.0,
) -> WorstCase:
    """Bound how far any dataset reproducing a bootstrap forest is from its training rows.

    The forest must expose its draws, so that row k of any reconstruction sets against
    training row k. See the module doc for how rows are charged.

    Parameters
    ----------
    model : ReleasedModel
        A bootstrap forest classifier whose draws are known.
    schema : FeatureSchema or None, default None
        The features' kinds and ranges; None infers it from the model.
    truth : pandas.DataFrame
        The true training rows, features and label, in the order the forest was fitted on.
    time_limit : float, default 60.0
        Seconds for the whole analysis. Cut by it, the bounds stay sound but looser
        (status FEASIBLE).

    Returns
    -------
    WorstCase
        Each row's error bound, the farthest dataset's mean error and the bound on it.

    Raises
    ------
    UnsupportedModelError
        The model is a regressor, or a forest that does not expose its draws.
    TreeleaksError
        ``truth`` lacks a column, has another number of rows than the forest drew from, or
        does not reproduce the model in this order.
    SchemaError
        ``schema`` does not match the model.
    """
    model.require_classifier("the worst-case analysis")
    clock = RunClock(time_limit)
    deadline = clock.deadline
    if not has_draws(model):
        raise UnsupportedModelError(
            "the worst case sets each reconstructed row against the training row at the same "
            "position, which only a bootstrap forest that exposes its draws gives; for a forest "
            "that saw every row once, the proven rows (treeleaks reconstruct) are the rows "
            "every consistent dataset holds")
    bound = (schema if schema is not None else FeatureSchema.infer(model)).bind(model)
    _check_truth(model, truth)
    try:
        problem = placements(model, bound, clock.start + (1 - FARTHEST_SHARE) / 2 * time_limit)
    except PlacementError as stop:
        empty = np.zeros(0)
        return WorstCase(empty, empty.astype(bool), float("nan"), float("nan"), stop.status,
                         clock.elapsed(), str(stop))
    n_rows = len(truth)
    charge = _charges(problem, bound, truth, model)
    chosen, farthest = _farthest(problem, charge,
                                 clock.start + (1 + FARTHEST_SHARE) / 2 * time_limit)
    total_bound = _lp_bound(problem, charge, deadline)
    found = np.zeros(n_rows)
    if chosen is not None:
        found[problem.row[chosen]] = charge[chosen]
    row_bound, settled, complete = _row_bounds(problem, charge, found, chosen is not None,
                                               total_bound, deadline)
    status = Status.OPTIMAL if complete and farthest else Status.FEASIBLE
    message = "" if complete else "the row bounds stopped at the time limit (still sound)"
    if chosen is None:
        message = "no farthest dataset found within the time limit; the bounds are sound"
    mean_found = float(found.mean()) if chosen is not None else float("nan")
    # the LP bound and the found dataset's mean meet at the optimum; rounding must not put
    # the bound below a dataset that was found
    mean_bound = max(total_bound / n_rows, 0.0, 0.0 if chosen is None else mean_found) + 0.0
    return WorstCase(row_bound, settled, mean_found, mean_bound, status,
                     clock.elapsed(), message)


def _check_truth(model: ReleasedModel, truth: pd.DataFrame) -> None:
    names = [*model.feature_names, model.label_name]
    missing = [n for n in names if n not in truth]
    if missing:
        raise TreeleaksError(f"the training rows lack column {missing[0]!r}; give every "
                             "feature and the label")
    n_rows = len(model.trees[0].draws)
    if len(truth) != n_rows:
        raise TreeleaksError(f"{len(truth)} training rows given, but the forest drew from "
                             f"{n_rows}: give the whole training set in its fitting order")
    certificate = verify(model, truth[names].reset_index(drop=True))
    if not certificate.verified:
        raise TreeleaksError("the rows given do not reproduce the model in this order "
                             f"({certificate.first_mismatch}): give the training rows in the "
                             "order the forest was fitted on")


def _charges(problem: Placements, schema: FeatureSchema, truth: pd.DataFrame,
             model: ReleasedModel) -> np.ndarray:
    """Per placement: the mean over features of the farthest value its cell allows.

    Each is the distance from the row's true value, scaled and capped at 1 as
    `treeleaks.evaluation.metrics` scores.
    """
    names, scale = feature_scales(truth, schema, model.label_name)
    cells = problem.cells
    values = cell_values(schema, cells.lower, cells.upper, np.ones(len(cells)),
                         thresholds=model.thresholds())
    order = [model.feature_names.index(n) for n in names]
    low, high = values.low[:, order], values.high[:, order]
    X = truth[names].to_numpy(dtype=np.float64)
    charge = np.empty(problem.cell.size)
    for first in range(0, charge.size, 50_000):  # bounded memory: placements x features
        part = slice(first, first + 50_000)
        c, k = problem.cell[part], problem.row[part]
        far = np.maximum(np.abs(low[c] - X[k]), np.abs(high[c] - X[k])) / scale
        charge[part] = np.nan_to_num(np.minimum(far, 1.0), nan=1.0).mean(axis=1)
    return charge


def _farthest(problem: Placements, charge: np.ndarray, deadline: float,
              ) -> tuple[np.ndarray | None, bool]:
    """The placements of the consistent dataset farthest from the truth (MIP), or None.

    Beside them, whether that dataset is proven farthest.
    """
    from scipy.optimize import Bounds, LinearConstraint

    from treeleaks.counts.bounded_milp import bounded_milp

    seconds = seconds_until(deadline)
    if seconds <= 0:
        return None, False
    result = bounded_milp(-charge,
                          constraints=LinearConstraint(problem.A, problem.lo, problem.hi),
                          integrality=np.ones(charge.size), bounds=Bounds(0, 1),
                          options={"time_limit": seconds})
    if result.x is None:
        return None, False
    return np.flatnonzero(result.x > 0.5), result.status == 0


def _lp(problem: Placements, cost: np.ndarray, lower: np.ndarray, deadline: float):
    """``min cost @ y`` over the LP relaxation with ``lower <= y <= 1``, or None on timeout."""
    return relaxation(problem.A, problem.lo, problem.hi, cost, lower, np.ones_like(lower),
                      deadline)


def _lp_bound(problem: Placements, charge: np.ndarray, deadline: float) -> float:
    """The LP relaxation's largest total charge (every row's largest charge if cut off)."""
    result = _lp(problem, -charge, np.zeros(charge.size), deadline)
    if result is not None and result.status == 0:
        return float(-result.fun)
    largest = np.zeros(problem.row.max() + 1)
    np.maximum.at(largest, problem.row, charge)
    return float(largest.sum())


def _row_bounds(problem: Placements, charge: np.ndarray, found: np.ndarray, have_found: bool,
                total_bound: float, deadline: float) -> tuple[np.ndarray, np.ndarray, bool]:
    """Per row: the largest charge among its placements the LP does not rule out.

    Beside it, whether a consistent dataset reaches it, and whether every row was settled
    in time.

    A placement is ruled out at once when it and the other rows' least charges add up to
    more than ``total_bound`` (the LP's largest total), else by an LP with it forced in.
    """
    n_rows = found.size
    least = np.full(n_rows, np.inf)
    np.minimum.at(least, problem.row, charge)
    beyond = charge + (least.sum() - least[problem.row]) > total_bound + 1e-7
    order = np.lexsort((-charge, problem.row))  # by row, farthest first
    starts = np.searchsorted(problem.row[order], np.arange(n_rows + 1))
    row_bound = np.zeros(n_rows)
    settled = np.zeros(n_rows, dtype=bool)
    complete = True
    lower = np.zeros(charge.size)
    for k in range(n_rows):
        mine = order[starts[k]:starts[k + 1]]
        row_bound[k], settled[k], in_time = _row_bound(
            problem, charge, mine, found[k] if have_found else None, beyond, lower, deadline)
        complete = complete and in_time
    return row_bound, settled, complete


def _row_bound(problem: Placements, charge: np.ndarray, mine: np.ndarray,
               found: float | None, beyond: np.ndarray, lower: np.ndarray,
               deadline: float) -> tuple[float, bool, bool]:
    """One row's bound: the farthest of its placements the LP does not rule out.

    Its placements ``mine``, farthest first, are each ruled out at once (``beyond``) or
    by an LP with it forced in (``lower``, restored), until one is not. With the charge
    ``found`` a consistent dataset gives the row (None when there is none), reaching it
    settles the row. The bound, whether a dataset reaches it, and whether every LP
    finished in time.
    """
    bound = charge[mine[0]]
    if mine.size == 1 or (found is not None and found >= charge[mine[0]] - 1e-12):
        return bound, True, True
    for j in mine:
        if found is not None and charge[j] <= found + 1e-12:
            return found, True, True
        if beyond[j]:
            bound = charge[j]
            continue
        lower[j] = 1.0
        result = _lp(problem, np.zeros(charge.size), lower, deadline)
        lower[j] = 0.0
        if result is None or result.status not in (0, 2):
            return bound, False, False
        bound = charge[j]
        if result.status == 0:  # not ruled out: the bound stops here
            return bound, False, True
    return (found if found is not None else bound), False, True

