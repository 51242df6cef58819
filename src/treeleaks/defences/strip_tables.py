"""Inputs as a histogram booster fitted on a real table reads them, for strip's check.

A ``HistGradientBoosting`` model routes gaps (NaN) at every split, and one fitted with
``categorical_features`` reads its categorical columns through its own encoder, so it
predicts on a table of categories, not on numbers. The stripped copy must predict as the
original there too: its input columns are described for the random inputs
(`treeleaks.defences.strip_inputs`), with gaps in every column and, in a categorical one,
the categories seen in training and one never seen; the custodian's rows are passed as
they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from treeleaks.defences.strip_inputs import Categories, InputColumn, Numbers


@dataclass(frozen=True)
class TableInputs:
    """A histogram booster's input columns: names, and each categorical one's categories."""

    names: list[str] | None
    categories: dict[int, list[Any]]  # input column -> its categories (gaps included)
    column_of: np.ndarray  # the predictors' feature index -> input column

    def columns(self, thresholds: list[np.ndarray]) -> list[InputColumn]:
        """The input columns as the booster reads them, for the random inputs: each
        categorical one its categories (and one never seen), each numerical one around
        ``thresholds`` (per input column); every one may hold gaps."""
        return [Categories(self.names[j] if self.names else j, tuple(self.categories[j]))
                if j in self.categories else
                Numbers(None if self.names is None else self.names[j], cuts, gaps=True)
                for j, cuts in enumerate(thresholds)]


def table_inputs(estimator: Any) -> TableInputs | None:
    """The input columns of a fitted histogram booster, None for any other model."""
    if not hasattr(estimator, "_predictors"):
        return None
    n = int(estimator.n_features_in_)
    names = getattr(estimator, "feature_names_in_", None)
    names = None if names is None else [str(name) for name in names]
    preprocessor = getattr(estimator, "_preprocessor", None)
    mask = getattr(estimator, "is_categorical_", None)
    if preprocessor is None or mask is None:
        return TableInputs(names, {}, np.arange(n))
    mask = np.asarray(mask, dtype=bool)
    encoder = preprocessor.named_transformers_["encoder"]
    categorical = np.flatnonzero(mask)
    categories = {int(j): list(found) for j, found in zip(categorical, encoder.categories_)}
    return TableInputs(names, categories,
                       np.concatenate([categorical, np.flatnonzero(~mask)]))
