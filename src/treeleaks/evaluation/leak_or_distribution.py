"""Whether a reconstruction is a privacy leak or only reflects the data distribution.

A model may legitimately reveal its training data's distribution; a privacy leak is
information about the particular rows it was trained on. The test (after the SaTML 2026
study's Appendix D) compares the reconstruction's error against the true training set
with its errors against many datasets of the same size drawn from the population, fits a
normal law to the latter, and reports its CDF at the former: the probability that a
dataset drawn from the distribution, rather than the training set, is matched as well or
better. A small p-value says the reconstruction is closer to the training set than to
typical datasets of the same distribution, so it reflects the training rows themselves.

Assumptions: the population's rows are disjoint from the training rows and drawn from the
same distribution, and the reference errors are roughly normal.

Per-example figures follow the study's outlier analysis: true rows are split into inliers
and outliers by an isolation forest (scikit-learn defaults) fitted on their features.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy.stats import norm
from sklearn.ensemble import IsolationForest

from treeleaks.evaluation.metrics import evaluate, row_errors
from treeleaks.ir.schema import FeatureSchema
from treeleaks.ir.schema_columns import feature_scales
from treeleaks.runtime.vocabulary import Status


@dataclass
class LeakTest:
    """A reconstruction's error against the training set and against population datasets.

    Errors are `evaluate`'s (0 perfect, 1 worst). Row errors are NaN for unmatched rows.

    Parameters
    ----------
    error : float
        The error against the true training set.
    reference_errors : numpy.ndarray
        The errors against each dataset sampled from the population.
    mean : float
        The mean of the normal law fitted to ``reference_errors``.
    std : float
        The standard deviation of that law.
    p_value : float
        P(reference error <= error) under the fitted law.
    n_samples : int
        The number of population datasets sampled.
    alpha : float
        The significance level: a leak when ``p_value < alpha``.
    perfect_share : float
        The share of true rows reconstructed exactly.
    worst_row_error : float
        The largest row error.
    inlier_error : float
        The mean row error over matched inliers (NaN: none).
    outlier_error : float
        The mean row error over matched outliers (NaN: none).
    inlier_perfect_share : float
        The share of inliers reconstructed exactly (NaN: none).
    outlier_perfect_share : float
        The share of outliers reconstructed exactly (NaN: none).
    n_outliers : int
        The number of true rows the isolation forest calls outliers.
    status : Status, default Status.DONE
        Always ``done``: the test runs to the end.
    """

    error: float  # against the true training set
    reference_errors: np.ndarray  # against each sampled population dataset
    mean: float  # normal law fitted to reference_errors
    std: float
    p_value: float  # P(reference error <= error) under the fitted law
    n_samples: int
    alpha: float  # significance level: a leak when p_value < alpha
    perfect_share: float  # share of true rows reconstructed exactly
    worst_row_error: float
    inlier_error: float  # mean row error over matched inliers (NaN: none)
    outlier_error: float
    inlier_perfect_share: float
    outlier_perfect_share: float
    n_outliers: int
    status: Status = Status.DONE  # the test always runs to the end

    @property
    def leak(self) -> bool:
        """Whether the training set is matched significantly better than the population."""
        return self.p_value < self.alpha

    def summary(self) -> dict[str, object]:
        """Summarize the test as plain JSON; NaN becomes None.

        Returns
        -------
        dict
            The status, every figure, the reference errors and ``leak``.
        """
        record: dict[str, object] = {
            key: value if key.startswith("n_") or key == "status" else _plain(value)
            for key, value in asdict(self).items() if key != "reference_errors"
        }
        record["reference_errors"] = [_plain(value) for value in self.reference_errors]
        record["leak"] = self.leak
        return record


def leak_test(
    reconstruction: pd.DataFrame,
    *,
    truth: pd.DataFrame,
    population: pd.DataFrame,
    schema: FeatureSchema,
    label: str | None = None,
    n_samples: int = 100,
    seed: int = 0,
    alpha: float = 0.05,
) -> LeakTest:
    """Test whether a reconstruction is closer to the training set than to the population.

    The reconstruction's error against ``truth`` is set against its errors against
    ``n_samples`` datasets of ``len(truth)`` rows drawn without replacement from
    ``population``.

    Parameters
    ----------
    reconstruction : pandas.DataFrame
        The reconstructed rows.
    truth : pandas.DataFrame
        The true training rows.
    population : pandas.DataFrame
        Rows of the same distribution, none of them training rows, with every column of
        ``truth``; at least as many rows as ``truth``.
    schema : FeatureSchema
        The columns' domains, which scale the errors.
    label : str or None, default None
        The label column, when the rows carry one.
    n_samples : int, default 100
        How many population datasets to draw; at least 2.
    seed : int, default 0
        Seed of the draws and of the isolation forest.
    alpha : float, default 0.05
        The significance level, strictly between 0 and 1.

    Returns
    -------
    LeakTest
        The errors, the p-value and the per-example figures.

    Raises
    ------
    ValueError
        ``n_samples`` or ``alpha`` is out of range, the reconstruction is empty, or the
        population lacks a column or has fewer rows than ``truth``.
    """
    _check_request(reconstruction, truth, population, n_samples, alpha)
    errors = row_errors(truth, reconstruction, schema, label)
    rng = np.random.default_rng(seed)
    pool = population[list(truth.columns)]
    reference = np.array([
        evaluate(pool.iloc[rng.choice(len(pool), len(truth), replace=False)], reconstruction,
                 schema, label, n_baseline_draws=0).error
        for _ in range(n_samples)
    ])
    error = _mean(errors)
    mean, std = (float(value) for value in norm.fit(reference))
    # A degenerate law (all reference errors equal) is a step at its mean.
    p_value = float(norm.cdf(error, mean, std)) if std > 0 else float(error >= mean)

    features = truth[feature_scales(truth, schema, label)[0]].to_numpy(dtype=np.float64)
    outlier = IsolationForest(random_state=seed).fit(features).predict(features) == -1
    return LeakTest(
        error=error,
        reference_errors=reference,
        mean=mean,
        std=std,
        p_value=p_value,
        n_samples=n_samples,
        alpha=alpha,
        perfect_share=float(np.mean(errors == 0)),
        worst_row_error=float(np.nanmax(errors)),
        inlier_error=_mean(errors[~outlier]),
        outlier_error=_mean(errors[outlier]),
        inlier_perfect_share=_share_zero(errors[~outlier]),
        outlier_perfect_share=_share_zero(errors[outlier]),
        n_outliers=int(outlier.sum()),
    )


def _check_request(reconstruction: pd.DataFrame, truth: pd.DataFrame,
                   population: pd.DataFrame, n_samples: int, alpha: float) -> None:
    """Refuse, in one line, a bad count or level, or tables that cannot be tested.

    A count or level out of range, an empty reconstruction, or a population that lacks a
    column or rows.
    """
    if n_samples < 2:
        raise ValueError(f"n_samples must be at least 2 to fit a normal law, got {n_samples}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if reconstruction.empty:
        raise ValueError("the reconstruction has no rows; there is nothing to test")
    missing = [name for name in truth.columns if name not in population.columns]
    if missing:
        raise ValueError(f"the population lacks column(s) {missing} of the true frame; give "
                         "it every column of the training rows")
    if len(population) < len(truth):
        raise ValueError(
            f"the population has {len(population)} rows, fewer than the {len(truth)} of the "
            "training set, so a reference dataset of that size cannot be drawn; give a "
            "larger population or test on a subset of the training rows"
        )


def _mean(errors: np.ndarray) -> float:
    """Mean over matched rows (NaN marks unmatched ones); NaN when none is matched."""
    matched = errors[~np.isnan(errors)]
    return float(matched.mean()) if matched.size else math.nan


def _share_zero(errors: np.ndarray) -> float:
    """Share of rows reconstructed exactly (unmatched rows count as not); NaN for no rows."""
    return float(np.mean(errors == 0)) if errors.size else math.nan


def _plain(value: float) -> float | None:
    return None if math.isnan(value) else float(value)
