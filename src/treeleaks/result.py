"""What attacks return.

The `AttackResult` shape every attack's result has, and the reconstruction's own result
type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from treeleaks.counts.verify import Certificate
from treeleaks.runtime.vocabulary import Formulation, Status, Strategy

if TYPE_CHECKING:
    from treeleaks.ir.model import ReleasedModel


PINNED_SHARES = (0.01, 0.05, 0.10)  # of a column's range: how tightly values are pinned


@runtime_checkable
class AttackResult(Protocol):
    """The one shape every attack's result has.

    The report, the sweep and the command line read it: how the run ended (a
    `treeleaks.runtime.vocabulary.Status`) and a JSON-ready summary that includes it.
    """

    @property
    def status(self) -> Status:
        """How the run ended (a `treeleaks.runtime.vocabulary.Status`)."""
        ...

    def summary(self) -> dict[str, Any]:
        """Summarize the result as plain JSON.

        Returns
        -------
        dict
            JSON-ready figures, including ``status``.
        """
        ...


@dataclass(frozen=True)
class DPDetails:
    """What the noisy-count formulation (``dp``) adds to a reconstruction.

    Parameters
    ----------
    log_likelihood : float
        The rows' log-likelihood under the released noisy counts.
    likelihood_checked : bool
        Whether the log-likelihood recomputed from the rows matches the solver's.
    first_solution_s : float
        When the first complete dataset was found, in seconds from the start.
    log_likelihood_bound : float or None, default None
        The LP's upper bound on any dataset's log-likelihood; None when it did not
        converge, or with known rows.
    n_rows_interval : tuple of int or None, default None
        When N was not released, the interval of row counts the noisy totals allow.
    """

    log_likelihood: float
    likelihood_checked: bool
    first_solution_s: float
    log_likelihood_bound: float | None = None
    n_rows_interval: tuple[int, int] | None = None


@dataclass(frozen=True)
class BootstrapDetails:
    """What a bootstrap forest's reconstruction adds about its rows' draws.

    Parameters
    ----------
    draws : list of numpy.ndarray or None, default None
        Formulation ``bootstrap-unknown``'s: per tree, the draws inferred for each row, with
        which the rows reproduce every count.
    positions : numpy.ndarray or None, default None
        The draw search's partial dataset: each row's training position, when rows are told
        apart by their draws and some are missing; None: the rows are in training order.
    """

    draws: list[np.ndarray] | None = None
    positions: np.ndarray | None = None


@dataclass(frozen=True)
class RegressionDetails:
    """What a regressor's reconstruction adds (the label column holds each row's target).

    Parameters
    ----------
    targets_exact : int
        How many rows' targets are proven exact.
    target_bounds : tuple of numpy.ndarray or None, default None
        When not every target is exact, each row's target interval ``(lower, upper)``, the
        label column holding its midpoint; None: no interval (exact targets, or a group's
        mean).
    """

    targets_exact: int
    target_bounds: tuple[np.ndarray, np.ndarray] | None = None


@dataclass(frozen=True)
class PackingDetails:
    """What a partial dataset of generated cells (strategy ``generate``) adds.

    Parameters
    ----------
    lp_rows : float
        The most rows the packing LP placed, fractionally, over the cells found (more cells
        may place more: it bounds nothing but what those cells hold).
    """

    lp_rows: float


@dataclass
class Reconstruction:
    """Reconstructed training rows with the solver's verdict, proofs and certificate.

    Attacks build it; users read its fields and `summary`. Proofs and the result hold given
    the side knowledge named in ``knowledge`` (empty: none). The fields every formulation
    fills are the result's own; what one formulation adds is in its detail object, None
    where it does not apply.

    Parameters
    ----------
    rows : pandas.DataFrame
        The reconstructed rows: the model's feature columns and its label column (a
        regressor's label column holds each row's target).
    free : pandas.DataFrame
        True where the model leaves a value open; such values are filled from a prior.
    lower : pandas.DataFrame
        A lower bound on each value, as the model implies.
    upper : pandas.DataFrame
        An upper bound on each value, as the model implies.
    proven : numpy.ndarray
        ``proven[i]``: row i is provably a training row on the columns the model
        constrains. Every binary value is pinned, ordinal and numerical values lie within
        ``lower`` and ``upper``, and every dataset consistent with the model contains it.
    proven_pattern : numpy.ndarray
        ``proven_pattern[i]``: some training row provably matches row i on its non-free
        features.
    status : Status
        The attack's outcome (a `treeleaks.runtime.vocabulary.Status`).
    certificate : Certificate or None
        Whether the rows reproduce every released count; None when there are no rows.
    time_s : float
        Wall-clock time of the run, in seconds.
    message : str, default ""
        The solver's or the attack's remark, for people.
    objective : float or None, default None
        The solver's objective (log of the number of orderings), when it has one.
    solver : str, default ""
        The solver that found the rows.
    n_cells : int, default 0
        Cells of the trees' common refinement the search used.
    certainty_complete : bool, default False
        Whether every proof finished (else ``proven`` is a lower bound).
    timings : dict of str to float
        Seconds spent in each stage.
    strategy : str, default "enumerate"
        How the cells were found (a `treeleaks.runtime.vocabulary.Strategy`): ``enumerate``
        lists every cell, ``generate`` prices cells on demand when there are too many.
    proof : str, default ""
        How the proofs were obtained.
    width : pandas.DataFrame or None, default None
        Each value's interval as a share of its column's range: 0 when pinned, NaN for
        binary columns.
    formulation : str, default "exact"
        The model of the training that was solved (a `treeleaks.runtime.vocabulary.Formulation`).
    knowledge : str, default ""
        The side knowledge the reconstruction used, described; empty: none.
    partial : bool, default False
        The rows are fewer than N (no complete dataset found, or the model gives no more)
        and the certificate checks them within every count.
    interrupted : bool, default False
        Ctrl-C stopped the search; these are the rows it had in hand.
    dp : DPDetails or None, default None
        Formulation ``dp``'s: the rows' log-likelihood and what bounds it.
    bootstrap : BootstrapDetails or None, default None
        A bootstrap forest's: the draws inferred, or the rows' training positions.
    regression : RegressionDetails or None, default None
        A regressor's: how many targets are exact, and their intervals.
    packing : PackingDetails or None, default None
        A partial dataset of generated cells: the most rows the packing LP placed.
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
        """Build a result with no rows (no dataset, or none found), with the model's columns.

        Parameters
        ----------
        model : ReleasedModel
            The model whose feature and label columns the empty frames get.
        **fields
            The other fields of the result (``status`` and ``time_s`` at least).

        Returns
        -------
        Reconstruction
            The empty result.
        """
        names = list(model.feature_names)
        nothing = np.zeros(0, dtype=bool)
        frame = pd.DataFrame(np.zeros((0, len(names))), columns=names)
        rows = frame.copy()
        rows[model.label_name] = pd.Series(dtype=object)
        return cls(rows=rows, free=frame.astype(bool), lower=frame, upper=frame.copy(),
                   proven=nothing, proven_pattern=nothing, certificate=None, **fields)

    @property
    def verified(self) -> bool:
        """Whether the certificate holds: the rows reproduce every released count.

        Never for no rows, which check nothing.
        """
        return self.certificate is not None and self.certificate.verified and self.n_rows > 0

    @property
    def n_rows(self) -> int:
        """The number of reconstructed rows."""
        return len(self.rows)

    @property
    def proven_rows(self) -> int:
        """The number of rows proven to be training rows."""
        return int(self.proven.sum())

    @property
    def checked(self) -> bool:
        """Whether the result passed its own check.

        The certificate, or for noisy counts (no certificate: no count is exact) the rows'
        recomputed log-likelihood.
        """
        return self.dp.likelihood_checked if self.dp is not None else self.verified

    def training_positions(self) -> np.ndarray:
        """Each row's position in the training data.

        Returns
        -------
        numpy.ndarray
            The draw search's positions when it found them (`BootstrapDetails.positions`),
            else the rows' own order.
        """
        if self.bootstrap is not None and self.bootstrap.positions is not None:
            return self.bootstrap.positions
        return np.arange(self.n_rows)

    def pinned_within(self) -> dict[str, float] | None:
        """Share numerical and ordinal values by how tightly the model pins them.

        On raw measurements the box is the leak.

        Returns
        -------
        dict of str to float or None
            For 1%, 5% and 10%: the share of values whose interval is within that share of
            the column's range. None when the result has no such values.
        """
        if self.width is None:
            return None
        widths = self.width.to_numpy(dtype=float)
        widths = widths[np.isfinite(widths)]
        if not widths.size:
            return None
        return {f"{share:.0%}": float((widths <= share).mean()) for share in PINNED_SHARES}

    def summary(self) -> dict[str, Any]:
        """Summarize the result as plain JSON, for reports and the CLI's ``--json``.

        Returns
        -------
        dict
            The status, counts of rows and proofs, the certificate's figures, timings, and
            the fields of the formulation solved.
        """
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
            "certificate": self._certificate_summary(),
        }
        if self.regression is not None:
            summary["targets_exact"] = self.regression.targets_exact
        if self.partial:
            summary.update({"partial": True, "lp_rows": None if self.packing is None
                            else self.packing.lp_rows})
        if self.interrupted:
            summary["interrupted"] = True
        if self.dp is not None:
            summary.update(self._dp_summary(self.dp))
        return summary

    def _certificate_summary(self) -> dict[str, Any] | None:
        """The certificate's figures for `summary` (None without one)."""
        if self.certificate is None:
            return None
        return {
            "verified": self.certificate.verified,
            "counts_checked": self.certificate.n_counts_checked,
            "counts_wrong": self.certificate.n_counts_wrong,
            "first_mismatch": self.certificate.first_mismatch,
            "leaf_values_match": self.certificate.leaf_values_match,
            "leaf_values": self.certificate.leaf_values,
        }

    def _dp_summary(self, dp: DPDetails) -> dict[str, Any]:
        """A DP forest's likelihood figures for `summary`."""
        return {
            "log_likelihood": dp.log_likelihood,
            "log_likelihood_bound": dp.log_likelihood_bound,
            "likelihood_checked": dp.likelihood_checked,
            "first_solution_s": round(dp.first_solution_s, 4),
            "n_rows_used": self.n_rows,
            "n_rows_interval": None if dp.n_rows_interval is None
            else list(dp.n_rows_interval),
        }
