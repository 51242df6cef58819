"""Reading through the wrappers a fitted model is pickled in (`treeleaks.wrapper_kinds`):
pickled as they were fitted, they are among the commonest files a researcher hands over;
each is read as the model it holds, and the wrapper's own fields computed from the training
rows are listed beside it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from treeleaks.ir.description import StoredField
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.wrapper_kinds import BOOSTER_FIELDS, SEARCH_FIELDS, is_search


@dataclass(frozen=True)
class Unwrapped:
    """The fitted model inside a file's object, the wrappers around it (outermost first)
    and the fields they keep of the training rows."""

    model: Any
    wrappers: tuple[str, ...] = ()
    fields: tuple[StoredField, ...] = ()


def unwrap(estimator: Any) -> Unwrapped:
    """The model a search holds (searches within searches too), with the searches' fields;
    any other object is its own model. Raises `UnsupportedModelError` for a search that
    holds no fitted model."""
    wrappers: list[str] = []
    fields: list[StoredField] = []
    while is_search(estimator):
        kind = type(estimator).__name__
        if not hasattr(estimator, "best_estimator_"):
            raise UnsupportedModelError(
                f"this {kind} holds no fitted model (refit=False, or it was never fitted): "
                "only its candidates' scores; audit the model it chose, fitted on the "
                "training rows, saved as a file of its own")
        wrappers.append(kind)
        fields += [StoredField(f"{kind}.{name}", words) for name, words in SEARCH_FIELDS.items()
                   if getattr(estimator, name, None) is not None]
        estimator = estimator.best_estimator_
    return Unwrapped(estimator, tuple(wrappers), tuple(fields))


def booster_wrapper_fields(estimator: Any) -> list[StoredField]:
    """The fields a LightGBM or XGBoost scikit-learn wrapper keeps beside its booster."""
    kind = type(estimator).__name__
    return [StoredField(f"{kind}.{name}", words) for name, words in BOOSTER_FIELDS.items()
            if _held(estimator, name)]


def _held(estimator: Any, name: str) -> bool:
    """Whether a wrapper's fitted attribute is present and not empty (the wrappers raise
    on some of them before fitting with an eval set)."""
    try:
        value = getattr(estimator, name)
    except Exception:  # LightGBM and XGBoost raise their own errors for an unset one
        return False
    if value is None:
        return False
    if isinstance(value, dict):
        return bool(value)
    return bool(np.size(value))
