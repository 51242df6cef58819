"""A fitted object from a skops archive or a pickle, read as the tree model it is or holds:
a scikit-learn estimator or pipeline, a LightGBM or XGBoost scikit-learn wrapper (its
booster, with the wrapper's labels), or a hyperparameter search around any of them (the model
it refitted). The wrappers' own fields are added to what the file exposes."""

from __future__ import annotations

import dataclasses
from typing import Any

from treeleaks.frontends.wrappers import booster_wrapper_fields, unwrap
from treeleaks.ir.model import ReleasedModel
from treeleaks.wrapper_kinds import LIGHTGBM_WRAPPERS, XGBOOST_WRAPPERS


def from_fitted(estimator: Any) -> ReleasedModel:
    """The IR of what a fitted object holds, as it is (the door judges regressors and
    stripped files)."""
    found = unwrap(estimator)
    model, kind = found.model, type(found.model).__name__
    fields, wrappers = list(found.fields), list(found.wrappers)
    if kind in LIGHTGBM_WRAPPERS:
        from treeleaks.frontends.lightgbm import read_lightgbm

        released = read_lightgbm(model, counts_removed_ok=True)
        fields, wrappers = fields + booster_wrapper_fields(model), [*wrappers, kind]
    elif kind in XGBOOST_WRAPPERS:
        from treeleaks.frontends.xgboost import read_xgboost

        released = read_xgboost(model, counts_removed_ok=True)
        fields, wrappers = fields + booster_wrapper_fields(model), [*wrappers, kind]
    elif kind in ("Pipeline", "ColumnTransformer"):
        from treeleaks.frontends.sklearn_pipeline import from_pipeline

        released = from_pipeline(model)
    else:
        from treeleaks.frontends.sklearn import from_sklearn

        released = from_sklearn(model, allow_regression=True, counts_removed_ok=True)
    if fields or wrappers:
        about = released.described()
        estimator_words = " in ".join([about.estimator, *wrappers[::-1]])
        released.description = dataclasses.replace(
            about, estimator=estimator_words, fields=about.fields + tuple(fields))
    return released
