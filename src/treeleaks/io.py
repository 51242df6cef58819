"""Load a released model from disk into the IR, refusing files that would run code.

Supported files: the treeleaks JSON IR (``.json``), skops archives (``.skops``), and, only on
explicit opt-in, pickles (``.pkl``, ``.pickle``, ``.joblib``). Auditing a model someone
hands you must not let that model execute code on the auditor's machine, so skops files are
loaded with only the scikit-learn tree types trusted and pickles are refused by default.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from treeleaks.errors import TreeleaksError, UntrustedPickleError
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.model import ModelFormatError, ReleasedModel

PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")
SUFFIXES = (".json", ".skops", *PICKLE_SUFFIXES)

# Types a skops file of a scikit-learn tree classifier may hold beyond skops' defaults.
# The regressors are listed so that loading succeeds and `from_sklearn` explains the refusal.
TRUSTED_SKOPS_TYPES = frozenset(
    {
        "sklearn.tree._tree.Tree",
        "sklearn.tree._classes.DecisionTreeClassifier",
        "sklearn.tree._classes.ExtraTreeClassifier",
        "sklearn.tree._classes.DecisionTreeRegressor",
        "sklearn.tree._classes.ExtraTreeRegressor",
        "sklearn.ensemble._forest.RandomForestClassifier",
        "sklearn.ensemble._forest.ExtraTreesClassifier",
        "sklearn.ensemble._forest.RandomForestRegressor",
        "sklearn.ensemble._forest.ExtraTreesRegressor",
        "numpy.dtype",
        "numpy.ndarray",
        "numpy.random.mtrand.RandomState",
    }
)


def load_model(
    path: str | Path,
    trust_pickle: bool = False,
    feature_names: list[str] | None = None,
) -> ReleasedModel:
    """Read a model file (chosen by its extension) and return what it exposes as a `ReleasedModel`.

    ``feature_names`` names the columns when the file does not (or overrides its names).
    Raises `TreeleaksError` subclasses with a one-line explanation for every bad input.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise TreeleaksError(
            f"cannot read {path.name!r}: unknown model file type {suffix or '(no extension)'!r}; "
            f"treeleaks reads {', '.join(SUFFIXES)}"
        )
    if suffix in PICKLE_SUFFIXES and not trust_pickle:
        raise UntrustedPickleError(
            f"refusing to load {path.name}: loading a pickle runs code from the file; pass "
            "--trust-pickle (trust_pickle=True) if you trust its source, or export the model "
            "with skops"
        )
    if not path.is_file():
        raise TreeleaksError(f"model file {str(path)!r} does not exist")
    if suffix == ".json":
        model = ReleasedModel.from_json(path)
        return model if feature_names is None else _renamed(model, feature_names)
    estimator = _load_skops(path) if suffix == ".skops" else _load_pickle(path)
    return from_sklearn(estimator, feature_names=feature_names)


def save_model(estimator: Any, path: str | Path) -> Path:
    """Write a fitted scikit-learn estimator as a skops archive (safe to load with `load_model`)."""
    import skops.io

    path = Path(path)
    skops.io.dump(estimator, path)
    return path


def _load_skops(path: Path) -> Any:
    """Load a skops archive trusting only the tree types it needs; name any other type."""
    import skops.io

    try:
        untrusted = skops.io.get_untrusted_types(file=path)
    except Exception as exc:
        raise ModelFormatError(f"{path.name} is not a readable skops file: {exc}") from exc
    unknown = sorted(set(untrusted) - TRUSTED_SKOPS_TYPES)
    if unknown:
        raise UntrustedPickleError(
            f"refusing to load {path.name}: it holds types treeleaks does not trust "
            f"({', '.join(unknown)}); a scikit-learn tree classifier needs none of them"
        )
    try:
        return skops.io.load(path, trusted=list(untrusted))
    except Exception as exc:
        raise ModelFormatError(f"could not load the skops file {path.name}: {exc}") from exc


def _load_pickle(path: Path) -> Any:
    """Unpickle with joblib (handles plain pickles too); the caller has opted in."""
    import joblib

    try:
        return joblib.load(path)
    except Exception as exc:
        raise ModelFormatError(f"could not unpickle {path.name}: {exc}") from exc


def _renamed(model: ReleasedModel, feature_names: list[str]) -> ReleasedModel:
    if len(feature_names) != model.n_features:
        raise TreeleaksError(
            f"{len(feature_names)} feature names given but the model has {model.n_features} "
            "features"
        )
    return dataclasses.replace(model, feature_names=list(feature_names))
