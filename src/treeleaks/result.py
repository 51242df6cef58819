"""What attacks return: the `AttackResult` shape every attack's result has, and the
reconstruction's own result type."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from treeleaks.counts.verify import Certificate
from treeleaks.vocabulary import Formulation, Status, Strategy

if TYPE_CHECKING:
    from treeleaks.model import ReleasedModel


PINNED_SHARES = (0.01, 0.05, 0.10)  # of a column's range: how tightly values are pinned


@runtime_checkable
class AttackResult(Protocol):
    """The one shape every attack's result has, which the report, the sweep and the command
    line read: how the run ended (a `treeleaks.vocabulary.Status`) and a JSON-ready summary
    that includes it."""

    @property
    def status(self) -> Status: ...

    def summary(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class DPDetails:
    """What the noisy-count formulation (``dp``) adds: the rows' log-likelihood under the
    released noisy counts, recomputed from the rows (``likelihood_checked``: it matches the
    solver's), the LP's upper bound on any dataset's (None when it did not converge, or
    with known rows), when the first complete dataset was found (seconds from the start),
    and, when N was not released, the interval of row counts the noisy totals allow."""

    log_likelihood: float
    likelihood_checked: bool
    first_solution_s: float
    log_likelihood_bound: float | None = None
    n_rows_interval: tuple[int, int] | None = None


@dataclass(frozen=True)
class BootstrapDetails:
    """What a bootstrap forest's reconstruction adds about its rows' draws. ``draws``
    (``bootstrap-unknown``): per tree, the draws inferred for each row, with which the rows
    reproduce every count. ``positions`` (the draw search's partial dataset): the training
    position of each row, when rows are told apart by their draws and some are missing;
    None: the rows are in training order."""

    draws: list[np.ndarray] | None = None
    positions: np.ndarray | None = None


@dataclass(frozen=True)
class RegressionDetails:
    """What a regressor's reconstruction adds (the label column holds each row's target):
    how many rows' targets are proven exact and, when not every target is exact, each
    row's target interval (lower, upper), the label column holding its midpoint."""

    targets_exact: int
    target_bounds: tuple[np.ndarray, np.ndarray] | None = None


@dataclass(frozen=True)
class PackingDetails:
    """What a partial dataset of generated cells (strategy ``generate``) adds: ``lp_rows``,
    the most rows the packing LP placed, fractionally, over the cells found (more cells
    may place more: it bounds nothing but what those cells hold)."""

    lp_rows: float


@dataclass
class Reconstruction:
    """Reconstructed training rows with the solver's verdict, proofs and certificate.

    The fields every formulation fills are the result's own; what one formulation adds is
    in its detail object (`DPDetails`, `BootstrapDetails`, `RegressionDetails`,
    `PackingDetails`), None where it does not apply.

    ``rows`` has the model's feature names and its label column. ``free`` flags values the
    model leaves open (filled from a prior); ``lower``/``upper`` bound each value as the model
    implies. ``proven[i]`` says row i is *provably* a training row on the columns the model
    constrains: every binary value pinned, ordinal and numerical values within
    ``lower``/``upper``, and every dataset consistent with the model contains it;
    ``proven_pattern[i]`` says some training row provably matches row i on its non-free
    features.
    ``status`` is the attack's outcome (`treeleaks.vocabulary.Status`).
    ``width`` is each value's interval as a share of its column's range (0 when pinned,
    NaN for binary columns): how tightly the model pins numerical values.
    ``strategy`` says how the cells were found: ``enumerate`` (every cell of the trees'
    common refinement listed) or ``generate`` (cells generated on demand by pricing when
    the refinement is too large to list); ``proof`` says how the proofs were obtained.
    ``formulation`` names the model solved: ``exact`` (every tree saw every row once) or
    ``bootstrap-known`` (rows drawn with replacement, draws read from the model)
    or ``bootstrap-unknown`` (draws inferred) or ``dp`` (noisy counts) or
    ``regression-bootstrap-known`` (a regression forest's, the label column holding each
    row's target) or ``regression-exact`` (a regression model whose trees each saw every
    row once; every target it returns is exact), among others (`Formulation`).
    ``partial``: the rows are fewer than N (no complete dataset found in time) and stay
    within every count, which the certificate checks (no leaf holds more of them than it
    released). ``interrupted``: Ctrl-C stopped the search, and these are the rows it had in
    hand. ``knowledge`` says what side knowledge the reconstruction used (empty: none);
    proofs and the result then hold given it.
    """

    rows: pd.DataFrame
    free: pd.DataFrame
    lower: pd.DataFrame
    upper: pd.DataFrame
    proven: np.ndarray
    proven_pattern: np.ndarray
    status: Status
    certificate: Certificate | None
    time_s: float
    message: str = ""
    objective: float | None = None
    solver: str = ""
    n_cells: int = 0
    certainty_complete: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    strategy: str = Strategy.ENUMERATE
    proof: str = ""
    width: pd.DataFrame | None = None
    formulation: str = Formulation.EXACT
    knowledge: str = ""
    partial: bool = False
    interrupted: bool = False
    dp: DPDetails | None = None  # formulation ``dp``
    bootstrap: BootstrapDetails | None = None  # the draws inferred, or the rows' positions
    regression: RegressionDetails | None = None  # a regressor's targets
    packing: PackingDetails | None = None  # a partial dataset of generated cells

    @classmethod
    def empty(cls, model: ReleasedModel, **fields: Any) -> Reconstruction:
        """A result with no rows (no dataset, or none found), with the model's columns."""
        names = list(model.feature_names)
        nothing = np.zeros(0, dtype=bool)
        frame = pd.DataFrame(np.zeros((0, len(names))), columns=names)
        rows = frame.copy()
        rows[model.label_name] = pd.Series(dtype=object)
        return cls(rows=rows, free=frame.astype(bool), lower=frame, upper=frame.copy(),
                   proven=nothing, proven_pattern=nothing, certificate=None, **fields)

    @property
    def verified(self) -> bool:
        return self.certificate is not None and self.certificate.verified

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    @property
    def proven_rows(self) -> int:
        return int(self.proven.sum())

    @property
    def checked(self) -> bool:
        """Whether the result passed its own check: the certificate, or for noisy counts
        (no certificate: no count is exact) the rows' recomputed log-likelihood."""
        return self.dp.likelihood_checked if self.dp is not None else self.verified

    def training_positions(self) -> np.ndarray:
        """Each row's position in the training data: the draw search's when it found
        them (`BootstrapDetails.positions`), else the rows' own order."""
        if self.bootstrap is not None and self.bootstrap.positions is not None:
            return self.bootstrap.positions
        return np.arange(self.n_rows)

    def pinned_within(self) -> dict[str, float] | None:
        """For numerical and ordinal values, the share whose interval is within 1%, 5% and
        10% of the column's range: on raw measurements the box is the leak. None when the
        result has no such values."""
        if self.width is None:
            return None
        widths = self.width.to_numpy(dtype=float)
        widths = widths[np.isfinite(widths)]
        if not widths.size:
            return None
        return {f"{share:.0%}": float((widths <= share).mean()) for share in PINNED_SHARES}

    def summary(self) -> dict[str, Any]:
        """Plain-JSON summary for reports and the CLI's ``--json``."""
        summary = {
            "status": self.status,
            "verified": self.verified,
            "n_rows": self.n_rows,
            "time_s": round(self.time_s, 4),
            "proven_rows": self.proven_rows,
            "proven_pattern_rows": int(self.proven_pattern.sum()),
            "free_values": int(self.free.to_numpy().sum()),
            "certainty_complete": self.certainty_complete,
            "n_cells": self.n_cells,
            "numerical_width_mean": None if self.width is None or self.width.isna().all().all()
            else float(np.nanmean(self.width.to_numpy(dtype=float))),
            "numerical_pinned_within": self.pinned_within(),
            "formulation": self.formulation,
            "knowledge": self.knowledge,
            "strategy": self.strategy,
            "proof": self.proof,
            "solver": self.solver,
            "log_orderings": self.objective,
            "message": self.message,
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "certificate": None if self.certificate is None else {
                "verified": self.certificate.verified,
                "counts_checked": self.certificate.n_counts_checked,
                "counts_wrong": self.certificate.n_counts_wrong,
                "first_mismatch": self.certificate.first_mismatch,
                "leaf_values_match": self.certificate.leaf_values_match,
                "leaf_values": self.certificate.leaf_values,
            },
        }
        if self.regression is not None:
            summary["targets_exact"] = self.regression.targets_exact
        if self.partial:
            summary.update({"partial": True, "lp_rows": None if self.packing is None
                            else self.packing.lp_rows})
        if self.interrupted:
            summary["interrupted"] = True
        if self.dp is not None:
            dp = self.dp
            summary.update({
                "log_likelihood": dp.log_likelihood,
                "log_likelihood_bound": dp.log_likelihood_bound,
                "likelihood_checked": dp.likelihood_checked,
                "first_solution_s": round(dp.first_solution_s, 4),
                "n_rows_used": self.n_rows,
                "n_rows_interval": None if dp.n_rows_interval is None
                else list(dp.n_rows_interval),
            })
        return summary
