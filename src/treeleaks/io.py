"""Load a released model from disk into the IR, refusing files that would run code.

Supported files: the treeleaks JSON IR (``.json``), skops archives (``.skops``), LightGBM
model text files (``.txt``, read as text), XGBoost binary model files (``.ubj``, binary JSON
decoded with py-ubjson), XGBoost JSON model files (``.json`` whose top
level holds ``learner``), and, only on explicit opt-in, pickles (``.pkl``,
``.pickle``, ``.joblib``). Auditing a model someone
hands you must not let that model execute code on the auditor's machine, so skops files are
loaded with only the scikit-learn tree types trusted and pickles are refused by default.

A skops archive holding a scikit-learn tree model and nothing else is read straight from
its JSON and numpy arrays, constructing no object at all: importing skops and scikit-learn
takes seconds, longer than the rest of ``treeleaks inspect`` or of a small reconstruction. A
bootstrap forest's draws are recomputed as scikit-learn draws them
(`treeleaks.frontends.sklearn_draws`). Anything else in an archive (other types, a forest
whose draws only scikit-learn can repeat, another skops protocol) goes through skops.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.frontends.sklearn_draws import recorded_samples
from treeleaks.frontends.xgboost import is_xgboost_json
from treeleaks.ir.json_files import read_json
from treeleaks.ir.model import ModelFormatError, ReleasedModel
from treeleaks.runtime.errors import TreeleaksError, UnsupportedModelError, UntrustedPickleError
from treeleaks.runtime.paths import unreadable

PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")
LIGHTGBM_SUFFIX = ".txt"  # booster.save_model's text format
UBJSON_SUFFIX = ".ubj"  # XGBoost's binary JSON, its default format in recent versions
SUFFIXES = (".json", ".skops", LIGHTGBM_SUFFIX, UBJSON_SUFFIX, *PICKLE_SUFFIXES)

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
# refusal. Read through skops itself, never by `_read_plain_skops`.
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
SKOPS_PROTOCOL = 2  # the archive layout `_read_plain_skops` understands


def load_model(
    path: str | Path,
    trust_pickle: bool = False,
    feature_names: list[str] | None = None,
    allow_regression: bool = False,
    counts_removed_ok: bool = False,
) -> ReleasedModel:
    """Read a model file, chosen by its extension, as the `ReleasedModel` it exposes.

    Every bad input raises a `TreeleaksError` subclass with a one-line explanation.

    Parameters
    ----------
    path : str or pathlib.Path
        The model file: treeleaks JSON, skops, LightGBM text, XGBoost JSON or UBJ, or a
        pickle.
    trust_pickle : bool, default False
        Load a pickle (``.pkl``, ``.pickle``, ``.joblib``), which runs code from the file.
    feature_names : list of str or None, default None
        The columns' names, when the file has none or its own are not wanted.
    allow_regression : bool, default False
        Read a regressor too; the reconstruction attacks read classifiers only.
    counts_removed_ok : bool, default False
        Return a framework's file whose counts were removed (``treeleaks strip``) as its
        structure alone (every count 0), instead of raising.

    Returns
    -------
    ReleasedModel
        The model, validated.

    Raises
    ------
    UntrustedPickleError
        The file is a pickle without ``trust_pickle``, or a skops archive holding types
        treeleaks does not read.
    UnsupportedModelError
        The model is unsupported, or a regressor without ``allow_regression``.
    CountsRemovedError
        Its counts were removed and ``counts_removed_ok`` is False.
    ModelFormatError
        The file is malformed.
    TreeleaksError
        The file type is unknown or the file cannot be read.
    """
    path = _checked_path(path, trust_pickle)
    if path.suffix.lower() == ".json":
        data = read_json(path, "model", ModelFormatError)
        if is_xgboost_json(data):  # booster.save_model("m.json")
            from treeleaks.frontends.xgboost import read_xgboost

            return read_xgboost(data, feature_names, counts_removed_ok=counts_removed_ok)
        model = ReleasedModel.from_dict(data)
        if model.is_regression and not allow_regression:
            raise UnsupportedModelError(
                f"{path.name} holds a regression model; the reconstruction attacks audit "
                "classifiers (treeleaks single-out reads regressors)")
        return model if feature_names is None else _renamed(model, feature_names)
    if path.suffix.lower() == UBJSON_SUFFIX:
        return _read_ubjson(path, feature_names, counts_removed_ok)
    if path.suffix.lower() == LIGHTGBM_SUFFIX:
        from treeleaks.frontends.lightgbm import read_lightgbm

        model = read_lightgbm(path, feature_names, counts_removed_ok=counts_removed_ok)
        if model.is_regression and not allow_regression:
            raise UnsupportedModelError(
                f"{path.name} holds a LightGBM regressor; the reconstruction attacks audit "
                "classifiers (treeleaks single-out reads regressors)")
        return model
    estimator = _load_skops(path) if path.suffix.lower() == ".skops" else _load_pickle(path)
    return _translated(estimator, path, feature_names, allow_regression, counts_removed_ok)


def load_lightgbm(path: str | Path, feature_names: list[str] | None = None
                  ) -> ReleasedModel:
    """Read a LightGBM model text file, classifier or regressor.

    The file is what ``booster.save_model("m.txt")`` writes.

    Parameters
    ----------
    path : str or pathlib.Path
        The ``.txt`` file; a fitted object is read by `treeleaks.from_lightgbm`.
    feature_names : list of str, optional
        The columns' names, when the file's own are not wanted.

    Returns
    -------
    ReleasedModel
        The model, validated.

    Raises
    ------
    ModelFormatError
        The path is not a ``.txt`` file, or the file is malformed.
    UnsupportedModelError
        The booster is one treeleaks does not read.
    CountsRemovedError
        Its counts were removed (``treeleaks strip``).
    TreeleaksError
        The file cannot be read.
    """
    _require_suffix(path, (LIGHTGBM_SUFFIX,), "a LightGBM model text file", "load_lightgbm")
    return load_model(path, feature_names=feature_names, allow_regression=True)


def load_xgboost(path: str | Path, feature_names: list[str] | None = None
                 ) -> ReleasedModel:
    """Read an XGBoost model file, classifier or regressor.

    The file is what ``booster.save_model("m.json")`` or ``("m.ubj")`` writes.

    Parameters
    ----------
    path : str or pathlib.Path
        The ``.json`` or ``.ubj`` file; a fitted object is read by `treeleaks.from_xgboost`.
    feature_names : list of str, optional
        The columns' names, when the file's own are not wanted.

    Returns
    -------
    ReleasedModel
        The model, validated.

    Raises
    ------
    ModelFormatError
        The path is not a ``.json`` or ``.ubj`` file, the JSON is not an XGBoost model,
        or the file is malformed.
    UnsupportedModelError
        The booster is one treeleaks does not read.
    CountsRemovedError
        Its counts were removed (``treeleaks strip``).
    TreeleaksError
        The file cannot be read.
    """
    _require_suffix(path, (".json", UBJSON_SUFFIX), "an XGBoost model file", "load_xgboost")
    checked = _checked_path(path, False)
    if checked.suffix.lower() == ".json" and not is_xgboost_json(
            read_json(checked, "model", ModelFormatError)):
        raise ModelFormatError(f"{checked.name} is JSON but not an XGBoost model file (no "
                               "'learner' at its top level); treeleaks.load_model reads "
                               "treeleaks JSON")
    return load_model(path, feature_names=feature_names, allow_regression=True)


def _require_suffix(path: str | Path, suffixes: tuple[str, ...], what: str,
                    reader: str) -> None:
    """Refuse a path whose extension is not one of ``suffixes``, naming the reader."""
    if Path(path).suffix.lower() not in suffixes:
        raise ModelFormatError(f"{reader} reads {what} ({', '.join(suffixes)}), not "
                               f"{Path(path).name}; treeleaks.load_model reads any model file")


def _read_ubjson(path: Path, feature_names: list[str] | None,
                 counts_removed_ok: bool) -> ReleasedModel:
    """An XGBoost ``.ubj`` file (binary JSON), decoded in Python and read as its JSON.

    XGBoost's own reader is not used: it crashes the process on a truncated file.
    """
    import ubjson

    try:
        data = ubjson.loadb(path.read_bytes())
    except Exception as exc:  # DecoderException, or a recursion or memory limit
        raise ModelFormatError(f"{path.name} is not a binary JSON (.ubj) file ({exc}): "
                               "truncated or damaged?") from None
    data = _json_values(data)
    if not is_xgboost_json(data):
        raise ModelFormatError(f"{path.name} is binary JSON but not an XGBoost model file "
                               "(no 'learner' at its top level)")
    from treeleaks.frontends.xgboost import read_xgboost

    try:
        return read_xgboost(data, feature_names, counts_removed_ok=counts_removed_ok)
    except TreeleaksError as exc:
        raise type(exc)(f"{path.name}: {exc}") from None


def _json_values(value: Any) -> Any:
    """Binary JSON as its text form parses.

    Arrays of bytes (py-ubjson's reading of a typed uint8 array, such as XGBoost's
    ``split_type``) become lists of numbers.
    """
    if isinstance(value, bytes | bytearray):
        return list(value)
    if isinstance(value, dict):
        return {key: _json_values(item) for key, item in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], dict | list | bytes):
        return [_json_values(item) for item in value]
    return value


def load_estimator(path: str | Path, trust_pickle: bool = False) -> Any:
    """The scikit-learn object a ``.skops`` file (or, with ``trust_pickle``, a pickle) holds.

    For tools that change the model itself (`treeleaks.defences.prune`).
    """
    path = _checked_path(path, trust_pickle)
    if path.suffix.lower() in (".json", LIGHTGBM_SUFFIX, UBJSON_SUFFIX):
        raise TreeleaksError(
            f"{path.name} holds no scikit-learn object; give the .skops (or pickle) file of "
            "a scikit-learn model")
    return _load_skops(path, plain=False) if path.suffix.lower() == ".skops" else (
        _load_pickle(path))


def _checked_path(path: str | Path, trust_pickle: bool) -> Path:
    """The model file's path.

    Refused when it has an unknown type, is a pickle without the opt-in, or is missing.
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
    problem = unreadable(path, "model file")
    if problem:
        raise TreeleaksError(problem)
    return path


def save_model(estimator: Any, path: str | Path) -> Path:
    """Write a fitted scikit-learn estimator as a skops archive, safe to load with `load_model`.

    Parameters
    ----------
    estimator : sklearn.base.BaseEstimator
        The fitted estimator.
    path : str or pathlib.Path
        The archive to write, conventionally ``.skops``.

    Returns
    -------
    pathlib.Path
        The path written.
    """
    import skops.io

    path = Path(path)
    skops.io.dump(estimator, path)
    return path


def _load_skops(path: Path, plain: bool = True) -> Any:
    """Load a skops archive trusting only the tree types it needs; name any other type.

    With ``plain``, a simple tree classifier comes back as plain records (see
    `_read_plain_skops`) rather than a scikit-learn object.
    """
    records = _read_plain_skops(path) if plain else None
    if records is not None:
        return records
    import skops.io

    try:
        held = _archive_types(path)
    except Exception as exc:
        raise ModelFormatError(f"{path.name} is not a readable skops file: {exc}") from exc
    unknown = sorted(held - TRUSTED_SKOPS_TYPES - _PLAIN_SKOPS_TYPES)
    if unknown:
        raise UntrustedPickleError(
            f"refusing to load {path.name}: it holds types treeleaks does not read "
            f"({', '.join(unknown[:5])}); save the tree classifier itself (for a pipeline, "
            "its last step) with skops"
        )
    try:  # skops refuses any type the archive holds beyond these (its own check)
        return skops.io.load(path, trusted=sorted(held & TRUSTED_SKOPS_TYPES))
    except Exception as exc:
        raise ModelFormatError(f"could not load the skops file {path.name}: {exc}") from exc


# Plain data a skops archive may hold beside the trusted types: no code runs to build it.
_PLAIN_SKOPS_TYPES = frozenset(
    f"builtins.{name}" for name in ("dict", "list", "tuple", "str", "int", "float", "bool",
                                    "NoneType")
)


def _archive_types(path: Path) -> set[str]:
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


class _NotPlain(Exception):
    """The archive holds something only skops itself can load, or judge."""


def _read_plain_skops(path: Path) -> Any | None:
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


def _translated(estimator: Any, path: Path, feature_names: list[str] | None,
                allow_regression: bool, counts_removed_ok: bool) -> ReleasedModel:
    """The estimator in the IR; a refusal names the file."""
    try:
        return from_sklearn(estimator, feature_names=feature_names,
                            allow_regression=allow_regression,
                            counts_removed_ok=counts_removed_ok)
    except TreeleaksError as exc:
        raise type(exc)(f"{path.name}: {exc}") from None


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
    renamed = dataclasses.replace(model, feature_names=list(feature_names))
    renamed.validate()
    return renamed
