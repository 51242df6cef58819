"""The release search's candidates: the model's own learner, read from its file with its
hyperparameters, refitted on the custodian's rows with settings that expose less (larger
leaves, shallower trees, fewer trees, cost-complexity pruning), and the project's DP forest
at several ε for classifiers.

The grid is data: `KNOBS` lists each kind of setting with its values, and each learner maps
a knob to its own parameter name (None: the learner has no such knob). Nothing here audits;
`treeleaks.report.release` audits each candidate and picks one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score

from treeleaks.defences.dp_forest import DPRandomForestClassifier
from treeleaks.defences.strip_sklearn import STRIPPABLE
from treeleaks.runtime.errors import TreeleaksError

DP_FOREST = "dp_forest"  # the learner word in a table (report.release_table reads it)
OWN = "own"
FOLDS = 5
SEED = 0
# knob → the values tried; "leaf" and "depth" are absolute, "trees" a share of the
# original's trees, "pruning" a share of the root's impurity (Gini, or the targets' variance)
KNOBS: dict[str, tuple[float, ...]] = {
    "leaf": (5, 10, 20, 50, 100),
    "depth": (3, 5, 8),
    "trees": (0.1, 0.25),
    "pruning": (0.01, 0.03),
}
# knobs turned together: large leaves in few trees leave fewest leaves holding one row of a
# class. Figures: docs/lab/2026-11-28-constants.md#defences-release_grid
COMBINATIONS: tuple[dict[str, float], ...] = (
    {"leaf": 50, "trees": 0.1}, {"leaf": 100, "trees": 0.1}, {"leaf": 100, "trees": 0.25})
DP_EPSILONS = (1.0, 4.0, 16.0)
DP_SETTINGS = {"n_estimators": 10, "max_depth": 5}
_FOREST_PARAMS = {"leaf": "min_samples_leaf", "depth": "max_depth", "trees": "n_estimators",
                  "pruning": "ccp_alpha"}
# each scikit-learn learner's parameter for a knob (a knob missing: the learner has none)
_SKLEARN_PARAMS = {
    **{kind: _FOREST_PARAMS for kind in (
        "RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier",
        "ExtraTreesRegressor")},
    **{kind: {k: v for k, v in _FOREST_PARAMS.items() if k != "trees"} for kind in (
        "DecisionTreeClassifier", "DecisionTreeRegressor", "ExtraTreeClassifier",
        "ExtraTreeRegressor")},
    **{kind: {k: v for k, v in _FOREST_PARAMS.items() if k != "pruning"} for kind in (
        "GradientBoostingClassifier", "GradientBoostingRegressor")},
    **{kind: {"leaf": "min_samples_leaf", "depth": "max_depth", "trees": "max_iter"}
       for kind in ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor")},
}
_LIGHTGBM_PARAMS = {"leaf": "min_child_samples", "depth": "max_depth", "trees": "n_estimators"}
# the LightGBM training parameters read back from a model file's parameters section
_LIGHTGBM_KEPT = {"boosting": "boosting_type", "num_iterations": "n_estimators",
                  "learning_rate": "learning_rate", "num_leaves": "num_leaves",
                  "max_depth": "max_depth", "min_data_in_leaf": "min_child_samples",
                  "min_sum_hessian_in_leaf": "min_child_weight",
                  "bagging_fraction": "subsample", "bagging_freq": "subsample_freq",
                  "feature_fraction": "colsample_bytree", "lambda_l1": "reg_alpha",
                  "lambda_l2": "reg_lambda", "min_gain_to_split": "min_split_gain",
                  "max_bin": "max_bin", "seed": "random_state"}


class RefitError(TreeleaksError):
    """The file does not say how to refit its model (no learner, or no parameters)."""


@dataclass(frozen=True)
class Learner:
    """The model's own learner: an unfitted estimator holding the file's hyperparameters,
    its framework, the format `treeleaks.defences.strip.strip` writes it in, and its
    parameter for each knob of the grid."""

    framework: str
    file_format: str
    base: Any
    params: dict[str, str]
    classifier: bool
    size: dict[str, float] = field(default_factory=dict)  # the original's trees, depth, leaf

    def content(self, fitted: Any) -> Any:
        """What `strip` takes for a fitted estimator of this learner."""
        if self.file_format == "lightgbm":
            return fitted.booster_.model_to_string()
        return fitted


@dataclass(frozen=True)
class Candidate:
    """One refit: ``learner`` is `OWN` (the model's learner with ``settings`` set) or
    `DP_FOREST`; ``settings`` the hyperparameters as the learner names them."""

    learner: str
    settings: dict[str, Any]

    def estimator(self, learner: Learner) -> Any:
        """The unfitted estimator of this candidate."""
        if self.learner == DP_FOREST:
            return DPRandomForestClassifier(random_state=SEED, **self.settings)
        return clone(learner.base).set_params(**self.settings)


def sklearn_learner(estimator: Any) -> Learner:
    """The learner of a fitted scikit-learn tree model."""
    kind = type(estimator).__name__
    if kind not in _SKLEARN_PARAMS or kind not in STRIPPABLE:
        raise RefitError(f"release refits {', '.join(_SKLEARN_PARAMS)} and LightGBM "
                         f"models, not a {kind}")
    members = np.asarray(getattr(estimator, "estimators_", [estimator])).ravel()
    depths = [m.get_depth() for m in members if hasattr(m, "get_depth")]
    size = {"trees": float(getattr(estimator, "n_estimators", getattr(estimator, "max_iter", 1))),
            "depth": float(max(depths)) if depths else float("inf"),
            "leaf": _leaf_size(estimator.get_params().get("min_samples_leaf", 1), estimator)}
    base = clone(estimator)
    if "random_state" in base.get_params() and base.random_state is None:
        base.set_params(random_state=SEED)  # every refit repeatable
    return Learner("scikit-learn", "skops", base, _SKLEARN_PARAMS[kind], "Classifier" in kind,
                   size)


def _leaf_size(value: Any, estimator: Any) -> float:
    """``min_samples_leaf`` in rows (a fraction of the training rows when a float)."""
    if isinstance(value, float):
        return float(np.ceil(value * getattr(estimator, "_n_samples", 1)))
    return float(value)


def lightgbm_learner(text: str) -> Learner:
    """The learner of a LightGBM model text, from its parameters section (what
    ``save_model`` keeps beside the trees); refused when the section is missing."""
    import lightgbm

    params = _lightgbm_parameters(text)
    if not params:
        raise RefitError("the LightGBM file keeps no parameters section (the [name: value] "
                         "lines save_model writes): release needs the learning rate, leaves "
                         "and rounds it was trained with; save it with booster.save_model")
    objective = params.get("objective", "")
    classifier = objective.startswith(("binary", "multiclass"))
    kept = {name: _number(params[key]) for key, name in _LIGHTGBM_KEPT.items() if key in params}
    base = (lightgbm.LGBMClassifier if classifier else lightgbm.LGBMRegressor)(
        objective=objective.split()[0] if objective else None, verbose=-1, **kept)
    size = {"trees": float(kept.get("n_estimators", 100)),
            "depth": float(kept["max_depth"]) if kept.get("max_depth", -1) > 0
            else float("inf"), "leaf": float(kept.get("min_child_samples", 20))}
    return Learner("LightGBM", "lightgbm", base, _LIGHTGBM_PARAMS, classifier, size)


def _lightgbm_parameters(text: str) -> dict[str, str]:
    start, end = text.find("\nparameters:\n"), text.find("\nend of parameters")
    if start < 0 or end < 0:
        return {}
    params = {}
    for line in text[start:end].splitlines():
        if line.startswith("[") and line.endswith("]") and ": " in line:
            key, value = line[1:-1].split(": ", 1)
            params[key] = value
    return params


def _number(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def grid(learner: Learner, y: np.ndarray) -> list[Candidate]:
    """Every candidate for this learner and these targets: the original's settings, then
    each knob's values that expose less than the original, then the DP forest (classifiers)."""
    turned = [{knob: value} for knob, values in KNOBS.items() for value in values]
    candidates = [Candidate(OWN, {})]
    for knobs in [*turned, *COMBINATIONS]:
        settings = _settings(knobs, learner, y)
        if settings and Candidate(OWN, settings) not in candidates:
            candidates.append(Candidate(OWN, settings))
    if learner.classifier:
        candidates += [Candidate(DP_FOREST, {**DP_SETTINGS, "epsilon": eps})
                       for eps in DP_EPSILONS]
    return candidates


def _settings(knobs: dict[str, float], learner: Learner, y: np.ndarray
              ) -> dict[str, Any] | None:
    """The learner's parameters for these knobs' values, or None where one of them does
    not apply or would not expose less (leaves are at most a quarter of the rows)."""
    settings = {}
    for knob, value in knobs.items():
        name = learner.params.get(knob)
        setting = None if name is None else _setting(knob, value, learner, y)
        if setting is None or (knob == "leaf" and setting > len(y) // 4):
            return None
        settings[name] = setting
    return settings


def _setting(knob: str, value: float, learner: Learner, y: np.ndarray) -> Any:
    """The parameter's value for a knob's value, or None where it would not expose less."""
    if knob == "trees":
        trees = int(learner.size["trees"] * value)
        return trees if 1 <= trees < learner.size["trees"] else None
    if knob == "depth":
        return int(value) if value < learner.size["depth"] else None
    if knob == "pruning":
        return float(f"{value * _root_impurity(y, learner.classifier):.3g}")
    return int(value) if value > learner.size["leaf"] else None


def _root_impurity(y: np.ndarray, classifier: bool) -> float:
    """The Gini impurity of the labels (a classifier) or the targets' variance."""
    if not classifier:
        return float(np.var(np.asarray(y, dtype=np.float64)))
    _, counts = np.unique(y, return_counts=True)
    shares = counts / counts.sum()
    return float(1.0 - np.sum(shares**2))


def cross_validated(estimator: Any, X: Any, y: np.ndarray, classifier: bool) -> float:
    """The mean accuracy (a classifier, stratified folds) or R² over `FOLDS` folds."""
    folds = (StratifiedKFold if classifier else KFold)(FOLDS, shuffle=True, random_state=SEED)
    scores = cross_val_score(estimator, X, y, cv=folds,
                             scoring="accuracy" if classifier else "r2")
    return float(np.mean(scores))
