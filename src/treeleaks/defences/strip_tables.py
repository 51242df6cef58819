"""Inputs as a histogram booster fitted on a real table reads them, for strip's check.

A ``HistGradientBoosting`` model routes gaps (NaN) at every split, and one fitted with
``categorical_features`` reads its categorical columns through its own encoder, so it
predicts on a table of categories, not on numbers. The stripped copy must predict as the
original there too: the random inputs get gaps in every column, and the categorical
columns random categories (the ones seen in training, a gap, and one never seen), and the
custodian's rows are passed as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

GAP_SHARE = 0.1  # share of the random inputs' values that are gaps
UNSEEN = "(unseen category)"  # a category the encoder never met


@dataclass(frozen=True)
class TableInputs:
    """A histogram booster's input columns: names, and each categorical one's categories."""

    names: list[str] | None
    categories: dict[int, list[Any]]  # input column -> its categories (gaps included)
    column_of: np.ndarray  # the predictors' feature index -> input column

    def probes(self, matrix: np.ndarray, seed: int = 0) -> Any:
        """``matrix`` (random numeric inputs, one column per input column) with gaps, and
        as a frame of categories when the model reads some."""
        rng = np.random.default_rng(seed)
        values = matrix.astype(np.float64)
        values[rng.random(values.shape) < GAP_SHARE] = np.nan
        if not self.categories:
            return values
        import pandas as pd

        frame = pd.DataFrame(values, columns=self.names)
        for j, categories in self.categories.items():
            choices = np.empty(len(categories) + 1, dtype=object)
            choices[:] = [*categories, UNSEEN]
            frame.isetitem(j, choices[rng.integers(0, choices.size, len(frame))])
        return frame


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
