"""A fitted object read as the tree model it is or holds.

A scikit-learn estimator or pipeline, a LightGBM or XGBoost scikit-learn wrapper (its
booster, with the wrapper's labels), or a hyperparameter search around any of them (the
model it refitted), from a skops archive, a pickle or the caller's session. The wrappers'
own fields are added to what the file exposes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from treeleaks.frontends.wrappers import booster_wrapper_fields, unwrap
from treeleaks.ir.model import ReleasedModel
from treeleaks.wrapper_kinds import LIGHTGBM_WRAPPERS, XGBOOST_WRAPPERS


def from_fitted(estimator: Any) -> ReleasedModel:
    """Read any fitted object treeleaks reads as the model it is or holds.

    A scikit-learn tree model or pipeline, LightGBM's or XGBoost's scikit-learn wrapper (read
    as its booster, with the wrapper's labels), or a hyperparameter search around any of
    them (read as the model it refitted on every training row). The wrappers' own fields
    computed from the training rows are added to what the model exposes. Regressors and
    stripped models are read as they are.

    Parameters
    ----------
    estimator : object
        The fitted object, as the file held it.

    Returns
    -------
    ReleasedModel
        The model, in the custodian's columns where the object reads them through steps.

    Raises
    ------
    UnsupportedModelError
        The object holds no tree model treeleaks reads, or a search holds no fitted model.
    """
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
