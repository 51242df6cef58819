"""The wrappers a fitted model is pickled in, in one low module: the readers unwrap them and
`strip` strips them, so defences need not import a frontend. A scikit-learn hyperparameter
search holds its best model refitted on every training row; the scikit-learn faces of
LightGBM and XGBoost hold their booster. Each keeps fields of its own computed from the
training rows, named here with what each gives away."""

from __future__ import annotations

from typing import Any

SEARCHES = ("GridSearchCV", "RandomizedSearchCV", "HalvingGridSearchCV",
            "HalvingRandomSearchCV")
LIGHTGBM_WRAPPERS = ("LGBMClassifier", "LGBMRegressor")
XGBOOST_WRAPPERS = ("XGBClassifier", "XGBRegressor")
SEARCH_FIELDS = {
    "cv_results_": "every candidate's score on each cross-validation fold of the training "
                   "rows (with return_train_score, on the rows it was fitted on too) and "
                   "its fit times",
    "best_score_": "the best candidate's mean cross-validated score on the training rows",
    "best_index_": "which candidate of cv_results_ scored best",
}
BOOSTER_FIELDS = {
    "evals_result_": "the loss after every round on each eval_set (on the training rows "
                     "when they were one of them)",
    "best_score_": "the best score early stopping saw on its eval_set",
}


def is_search(estimator: Any) -> bool:
    """Whether ``estimator`` is a scikit-learn hyperparameter search."""
    return type(estimator).__name__ in SEARCHES
