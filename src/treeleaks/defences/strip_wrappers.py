"""Stripping the wrappers a pickled model comes in: a hyperparameter search keeps its model
with the candidates' scores on the training rows' folds beside it, and the scikit-learn faces
of LightGBM and XGBoost keep their booster with the losses they saw. The model inside is
stripped as any other (`treeleaks.defences.strip`); this module empties the wrapper's own
fields and puts the stripped model back."""

from __future__ import annotations

import copy
from typing import Any

from treeleaks.wrapper_kinds import BOOSTER_FIELDS, SEARCH_FIELDS

# where the wrappers keep the fields they show (LightGBM behind private names)
_BOOSTER_STORES = {"evals_result_": ("_evals_result", "evals_result_"),
                   "best_score_": ("_best_score", "best_score_")}


def strip_search(search: Any, model: Any) -> tuple[Any, list[str]]:
    """A copy of ``search`` holding ``model`` (its stripped best model) without the scores
    on the training rows' folds; the input is left untouched."""
    out = copy.copy(search)
    removed = []
    for name, words in SEARCH_FIELDS.items():
        if name in vars(out):
            delattr(out, name)
            removed.append(f"{type(search).__name__}.{name}, {words} (removed)")
    out.best_estimator_ = model
    return out, removed


def strip_booster_wrapper(wrapper: Any, booster: Any) -> tuple[Any, list[str]]:
    """A copy of a LightGBM or XGBoost scikit-learn wrapper holding ``booster`` (stripped)
    without the losses and scores it saw; the input is left untouched."""
    out = copy.copy(wrapper)
    removed = []
    for name, stores in _BOOSTER_STORES.items():
        held = [store for store in stores if vars(out).get(store)]
        for store in held:
            setattr(out, store, type(vars(out)[store])())
        if held:
            removed.append(f"{type(wrapper).__name__}.{name}, {BOOSTER_FIELDS[name]} "
                           "(emptied)")
    out._Booster = booster
    return out, removed
