"""The skops frontend: a ``.skops`` archive → the scikit-learn estimator it holds, trusting
only the types treeleaks reads, so loading an archive someone hands over runs no code of its.

An archive holding a scikit-learn tree model and nothing else is read straight from its JSON
and numpy arrays, constructing no object at all: importing skops and scikit-learn takes
seconds, longer than the rest of ``treeleaks inspect`` or of a small reconstruction. A
bootstrap forest's draws are recomputed as scikit-learn draws them
(`treeleaks.frontends.sklearn_draws`). Anything else in an archive (other types, a forest
whose draws only scikit-learn can repeat, another skops protocol) goes through skops.
"""

from __future__ import annotations

import functools
import io
import json
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from treeleaks.frontends.sklearn_draws import recorded_samples
from treeleaks.ir.model import ModelFormatError
from treeleaks.runtime.errors import UntrustedPickleError

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
_SKOPS_TREE = "sklearn.tree._tree.Tree"
_SKOPS_ESTIMATORS = frozenset(
    t for t in TRUSTED_SKOPS_TYPES if t.startswith("sklearn.") and t != _SKOPS_TREE
)
# scikit-learn's gradient boosting, its parts (losses, links, the initial estimator, the
# binner) and its regressors and other losses, listed so that `from_sklearn` explains the
# refusal. Read through skops itself, never by `read_plain_skops`.
_BOOSTING = "sklearn.ensemble._hist_gradient_boosting"
TRUSTED_SKOPS_TYPES |= {
    "sklearn.ensemble._gb.GradientBoostingClassifier",
    "sklearn.ensemble._gb.GradientBoostingRegressor",
    f"{_BOOSTING}.gradient_boosting.HistGradientBoostingClassifier",
    f"{_BOOSTING}.gradient_boosting.HistGradientBoostingRegressor",
    f"{_BOOSTING}.predictor.TreePredictor",
    f"{_BOOSTING}.binning._BinMapper",
    "sklearn.dummy.DummyClassifier",
    "sklearn.dummy.DummyRegressor",
    "sklearn.preprocessing._label.LabelEncoder",
    "numpy.random._generator.Generator",
    "sklearn._loss.link.Interval",
    *(f"sklearn._loss.link.{link}" for link in (
        "LogitLink", "HalfLogitLink", "IdentityLink", "LogLink", "MultinomialLogit")),
    *(f"sklearn._loss.{module}{loss}" for module in ("loss.", "_loss.Cy") for loss in (
        "HalfBinomialLoss", "HalfMultinomialLoss", "ExponentialLoss", "HalfSquaredError",
        "AbsoluteError", "PinballLoss", "HuberLoss", "HalfPoissonLoss")),
}
# A pipeline's steps treeleaks reads (`treeleaks.frontends.sklearn_steps`); a
# ColumnTransformer keeps 'passthrough' as an identity FunctionTransformer, refused by the
# reader when it holds a function.
TRUSTED_SKOPS_TYPES |= {
    "sklearn.pipeline.Pipeline",
    "sklearn.compose._column_transformer.ColumnTransformer",
    "sklearn.preprocessing._function_transformer.FunctionTransformer",
    "sklearn.preprocessing._encoders.OneHotEncoder",
    "sklearn.preprocessing._encoders.OrdinalEncoder",
    "sklearn.preprocessing._data.StandardScaler",
    "sklearn.preprocessing._data.MinMaxScaler",
    "sklearn.preprocessing._data.RobustScaler",
    "sklearn.preprocessing._data.MaxAbsScaler",
    "sklearn.impute._base.SimpleImputer",
    "sklearn.impute._base.MissingIndicator",
    "builtins.slice",
    # a HistGradientBoosting model fitted with categorical_features keeps its own encoder,
    # a ColumnTransformer whose numeric branch is FunctionTransformer(partial(check_array)):
    # scikit-learn's input validation, the one function trusted
    "functools.partial",
    "sklearn.utils.validation.check_array",
}
# A hyperparameter search around a model (`treeleaks.frontends.wrappers`): the searches,
# the splitters and scorers they keep, and the masked arrays of their cv_results_.
_METRICS = ("accuracy_score", "balanced_accuracy_score", "roc_auc_score", "f1_score",
            "precision_score", "recall_score", "log_loss", "r2_score", "mean_squared_error",
            "mean_absolute_error", "root_mean_squared_error")
TRUSTED_SKOPS_TYPES |= {
    "sklearn.model_selection._search.GridSearchCV",
    "sklearn.model_selection._search.RandomizedSearchCV",
    "sklearn.model_selection._search_successive_halving.HalvingGridSearchCV",
    "sklearn.model_selection._search_successive_halving.HalvingRandomSearchCV",
    *(f"sklearn.model_selection._split.{splitter}" for splitter in (
        "KFold", "StratifiedKFold", "RepeatedKFold", "RepeatedStratifiedKFold",
        "ShuffleSplit", "StratifiedShuffleSplit", "GroupKFold", "StratifiedGroupKFold",
        "TimeSeriesSplit", "PredefinedSplit", "LeaveOneOut")),
    "sklearn.metrics._scorer._PassthroughScorer",
    "sklearn.metrics._scorer._Scorer",
    *(f"sklearn.metrics._{module}.{metric}" for module in ("classification", "ranking",
                                                            "regression")
      for metric in _METRICS),
    "numpy.ma.MaskedArray",
    "numpy.ma.core.MaskedArray",
}
SKOPS_PROTOCOL = 2  # the archive layout `read_plain_skops` understands

# Plain data a skops archive may hold beside the trusted types: no code runs to build it.
_PLAIN_SKOPS_TYPES = frozenset(
    f"builtins.{name}" for name in ("dict", "list", "tuple", "str", "int", "float", "bool",
                                    "NoneType")
)


def load_skops(path: Path, plain: bool = True) -> Any:
    """The estimator a skops archive holds, trusting only the types treeleaks reads.

    With ``plain``, a simple tree model comes back as plain records (see `read_plain_skops`)
    rather than a scikit-learn object. Any other type the archive holds is refused by name.
    """
    records = read_plain_skops(path) if plain else None
    if records is not None:
        return records
    import skops.io

    try:
        held = archive_types(path)
    except Exception as exc:
        raise ModelFormatError(f"{path.name} is not a readable skops file: {exc}") from exc
    unknown = sorted(held - TRUSTED_SKOPS_TYPES - _PLAIN_SKOPS_TYPES)
    if unknown:
        steps = _steps_holding(path, set(unknown))
        where = "" if not steps else f" in the pipeline's step(s) {', '.join(steps)}"
        raise UntrustedPickleError(
            f"refusing to load {path.name}: it holds types treeleaks does not read "
            f"({', '.join(unknown[:5])}){where}; treeleaks reads a tree model, or a Pipeline "
            "of OneHotEncoder, OrdinalEncoder, StandardScaler, MinMaxScaler, RobustScaler, "
            "MaxAbsScaler, SimpleImputer, 'passthrough' and 'drop' before one, or a search "
            "(GridSearchCV, RandomizedSearchCV) around either"
        )
    trusted = held | {"numpy.dtype", "numpy.ndarray"}  # numpy's data, named as skops names it
    try:  # skops refuses any type the archive holds beyond these (its own check)
        return skops.io.load(path, trusted=sorted(trusted & TRUSTED_SKOPS_TYPES))
    except Exception as exc:
        raise ModelFormatError(f"could not load the skops file {path.name}: {exc}") from exc


def archive_types(path: Path) -> set[str]:
    """Every type an archive's schema names (numpy's data types count as plain data)."""
    with zipfile.ZipFile(path) as archive:
        pending = [json.loads(archive.read("schema.json"))]
    held: set[str] = set()
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            module, name = node.get("__module__"), node.get("__class__")
            if isinstance(module, str) and isinstance(name, str) and module != "numpy":
                held.add(f"{module}.{name}")
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return held


def _steps_holding(path: Path, types: set[str]) -> list[str]:
    """The names of a pipeline's steps (name and class) whose objects hold any of ``types``.

    A step is a (name, object) pair in a Pipeline's ``steps`` or a (name, object, columns)
    triple in a ColumnTransformer's ``transformers``.
    """
    with zipfile.ZipFile(path) as archive:
        schema = json.loads(archive.read("schema.json"))
    found: list[str] = []
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        content = node.get("content")
        if node.get("__loader__") == "TupleNode" and isinstance(content, list) \
                and len(content) in (2, 3) and content[0].get("__loader__") == "JsonNode":
            held = _types_in(content[1])
            if held & types and not _is_container(content[1]):
                kind = f"{content[1].get('__module__')}.{content[1].get('__class__')}"
                found.append(f"{json.loads(content[0]['content'])!r} ({kind})")
                continue
        pending.extend(node.values())
    return found


def _types_in(node: Any) -> set[str]:
    held, pending = set(), [node]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if isinstance(item.get("__module__"), str) and isinstance(item.get("__class__"), str):
                held.add(f"{item['__module__']}.{item['__class__']}")
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return held


def _is_container(node: Any) -> bool:
    """A Pipeline or ColumnTransformer: its own steps are named instead."""
    return isinstance(node, dict) and node.get("__class__") in ("Pipeline", "ColumnTransformer")


class _NotPlain(Exception):
    """The archive holds something only skops itself can load, or judge."""


def read_plain_skops(path: Path) -> Any | None:
    """A tree model as plain records named after its classes, or None.

    The records are what `from_sklearn` reads; a bootstrap forest has its trees' draws as
    ``estimators_samples_``. None when the archive needs skops.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            schema = json.loads(archive.read("schema.json"))
            if schema.get("protocol") != SKOPS_PROTOCOL:
                return None
            estimator = _PlainArchive(archive).read(schema)
    except (_NotPlain, zipfile.BadZipFile, OSError, KeyError, ValueError, TypeError,
            AttributeError):
        return None  # skops reads it, or explains what is wrong with it
    if not isinstance(estimator, SimpleNamespace):
        return None
    if getattr(estimator, "bootstrap", False):
        samples = recorded_samples(estimator)
        if samples is None:
            return None  # the draws are recomputed by scikit-learn itself
        estimator.estimators_samples_ = samples
    return estimator


class _PlainArchive:
    """Reads the nodes of a skops archive that are plain data.

    JSON values, lists, tuples, string-keyed dicts, numpy arrays (never pickled ones) and
    the trusted tree types.
    """

    def __init__(self, archive: zipfile.ZipFile) -> None:
        self.archive = archive

    def read(self, node: dict[str, Any]) -> Any:
        loader, kind = node["__loader__"], f"{node['__module__']}.{node['__class__']}"
        if loader == "JsonNode":
            return json.loads(node["content"])
        if loader in ("ListNode", "TupleNode") and kind in ("builtins.list", "builtins.tuple"):
            items = [self.read(item) for item in node["content"]]
            return items if loader == "ListNode" else tuple(items)
        if loader == "DictNode" and kind == "builtins.dict":
            return self._dict(node)
        if loader == "NdArrayNode" and node["__module__"] == "numpy":
            return self._array(node)
        if loader == "ObjectNode" and kind in _SKOPS_ESTIMATORS:
            return _record_type(node["__class__"])(**self.read(node["content"]))
        if loader == "TreeNode" and kind == _SKOPS_TREE:
            return _tree_record(self.read(node["content"]))
        raise _NotPlain(kind)

    def _dict(self, node: dict[str, Any]) -> dict[str, Any]:
        key_types = node["key_types"]["content"]
        if any(f"{k['__module__']}.{k['__class__']}" != "builtins.str" for k in key_types):
            raise _NotPlain("a dict with keys other than strings")
        return {key: self.read(value) for key, value in node["content"].items()}

    def _array(self, node: dict[str, Any]) -> Any:
        if node["type"] == "json":  # object arrays, such as column names
            shape = self.read(node["shape"])
            if len(shape) != 1:
                raise _NotPlain("a multi-dimensional object array")
            values = np.empty(shape[0], dtype=object)
            values[:] = [self.read(item) for item in node["content"]]
            return values
        with self.archive.open(node["file"]) as stored:
            array = np.load(io.BytesIO(stored.read()), allow_pickle=False)
        return array if node["__class__"] == "ndarray" else array[()]


@functools.cache
def _record_type(class_name: str) -> type:
    """A plain record class named like the scikit-learn class it stands for."""
    return type(class_name, (SimpleNamespace,), {})


def _tree_record(state: dict[str, Any]) -> SimpleNamespace:
    """The attributes of a fitted ``sklearn.tree._tree.Tree`` that `from_sklearn` reads."""
    n_nodes = int(state["node_count"])
    nodes = state["nodes"][:n_nodes]
    return SimpleNamespace(
        children_left=nodes["left_child"], children_right=nodes["right_child"],
        feature=nodes["feature"], threshold=nodes["threshold"],
        n_node_samples=nodes["n_node_samples"],
        weighted_n_node_samples=nodes["weighted_n_node_samples"],
        impurity=nodes["impurity"], value=state["values"][:n_nodes],
        **({"missing_go_to_left": nodes["missing_go_to_left"]}
           if "missing_go_to_left" in nodes.dtype.names else {}),
    )
