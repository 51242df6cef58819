"""What PrivBayes releases keep of the private table, the other side of the trade-off the
study plots: the Jensen-Shannon distance between each attribute's private and synthetic
marginals, and the AUC of a random forest trained on the synthetic rows and tested on real
rows outside the private table (beside the same forest trained on the private rows)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.spatial.distance import jensenshannon
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import OneHotEncoder

from treeleaks.runtime.errors import TreeleaksError
from treeleaks.synthetic.encoding import Encoding, found_in
from treeleaks.synthetic.privbayes import PrivBayes
from treeleaks.synthetic.tables import check_seed, check_tables

TREES = 100


def js_distances(real: np.ndarray, synthetic: np.ndarray, sizes: list[int]) -> list[float]:
    """Per attribute, the Jensen-Shannon distance (base 2: 0 same, 1 disjoint) between the
    two tables' marginals."""
    return [float(jensenshannon(np.bincount(real[:, j], minlength=s),
                                np.bincount(synthetic[:, j], minlength=s), base=2))
            for j, s in enumerate(sizes)]


def auc(train: np.ndarray, test: np.ndarray, label: int, sizes: list[int],
        seed: int) -> float | None:
    """AUC on ``test`` of a random forest fitted on ``train`` to predict code 1 of the
    two-valued ``label`` attribute from the others (one-hot); None when either table holds
    one class only."""
    if len(np.unique(train[:, label])) < 2 or len(np.unique(test[:, label])) < 2:
        return None
    features = [j for j in range(len(sizes)) if j != label]
    onehot = OneHotEncoder(categories=[np.arange(sizes[j]) for j in features])
    forest = RandomForestClassifier(TREES, random_state=seed)
    forest.fit(onehot.fit_transform(train[:, features]), train[:, label])
    scores = forest.predict_proba(onehot.transform(test[:, features]))[:, 1]
    return float(roc_auc_score(test[:, label], scores))


def release_utility(private: pd.DataFrame, population: pd.DataFrame, epsilon: float,
                    label: str | None = None, seed: int = 0,
                    releases: int = 1) -> dict[str, Any]:
    """``releases`` PrivBayes releases of ``private`` at ε, release r scored as one
    release with seed ``seed`` + r: against ``private`` and, with a two-valued ``label``
    column, by train-on-synthetic test-on-real AUC on the population rows that are not
    private. The figures are means over the releases, with their standard deviation
    (``_sd``; 0 for one release): a release's utility varies with PrivBayes's noise."""
    if releases < 1:
        raise TreeleaksError(f"the number of releases must be at least 1, not {releases}")
    check_tables(private, population)
    check_seed(seed)
    encoding = Encoding.fit(population)
    real = encoding.codes(private, "private table")
    if label is not None and (label not in encoding.columns
                              or encoding.sizes[encoding.columns.index(label)] != 2):
        raise TreeleaksError(f"the label {label!r} must be a column with two values in the "
                             "population, to score the synthetic rows by AUC")
    samples = [PrivBayes(epsilon, random_state=seed + r).fit(real, encoding.sizes)
               .sample(len(real)) for r in range(releases)]
    out: dict[str, Any] = {"releases": releases, **_marginal_figures(real, samples, encoding)}
    if label is None:
        return out
    everyone = encoding.codes(population, "population")
    return {**out, **_auc_figures(real, samples, everyone, encoding, label, seed)}


def _marginal_figures(real: np.ndarray, samples: list[np.ndarray], encoding: Encoding
                      ) -> dict[str, Any]:
    """The Jensen-Shannon distances of the releases' marginals to the private table's: per
    column (mean over the releases), and their mean per release (mean and sd)."""
    distances = np.array([js_distances(real, s, encoding.sizes) for s in samples])
    means = distances.mean(axis=1)
    return {"js_distance": dict(zip(encoding.columns, distances.mean(axis=0).tolist())),
            "js_distance_mean": float(means.mean()),
            "js_distance_mean_sd": float(means.std())}


def _auc_figures(real: np.ndarray, samples: list[np.ndarray], everyone: np.ndarray,
                 encoding: Encoding, label: str, seed: int) -> dict[str, Any]:
    """Train-on-synthetic test-on-real AUC (mean and sd over the releases, release r's
    forest seeded ``seed`` + r) on the population rows that are not private, beside the
    forest trained on the private rows."""
    j = encoding.columns.index(label)
    test = everyone[~found_in(everyone, real)]
    aucs = [a for a in (auc(sample, test, j, encoding.sizes, seed + r)
                        for r, sample in enumerate(samples)) if a is not None]
    return {"auc_synthetic": float(np.mean(aucs)) if aucs else None,
            "auc_synthetic_sd": float(np.std(aucs)) if aucs else None,
            "auc_private": auc(real, test, j, encoding.sizes, seed),
            "auc_test_rows": len(test)}
