"""The one door for model files: each file's format reader, then the checks every format gets.

A file is read by its format's reader (`treeleaks.frontends.registry`), then what it gives is
checked once, for every format.

Readable files: the treeleaks JSON IR, rule lists and XGBoost models (``.json``), skops
archives (``.skops``), LightGBM model text files (``.txt``), XGBoost binary JSON (``.ubj``),
R's rpart and randomForest models saved with ``saveRDS`` (``.rds``, read without R) and,
only on explicit opt-in, pickles (``.pkl``, ``.pickle``, ``.joblib``). Auditing a model
someone hands you must not let that model execute code on the auditor's machine, so skops
files are loaded with only the types treeleaks reads trusted, and pickles are refused by
default.

The checks every format gets, after its reader: a regressor unasked is refused, a file
whose counts were removed (``treeleaks strip``) is refused unless asked for, the caller's
feature names replace the file's, and every refusal names the file. Entry names follow
treelite's: ``load_*`` reads a file, ``from_*`` (`treeleaks.frontends`) a fitted object.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeleaks.frontends.registry import (
    CODE_SUFFIXES,
    ModelFile,
    Reader,
    reader_for,
    reader_named,
)
from treeleaks.frontends.stripped import counts_removed
from treeleaks.ir.description import FORMATS_WITHOUT_COUNTS
from treeleaks.ir.model import ModelFormatError, ReleasedModel
from treeleaks.runtime.errors import TreeleaksError, UnsupportedModelError, UntrustedPickleError
from treeleaks.runtime.paths import unreadable


def load_model(
    path: str | Path,
    trust_pickle: bool = False,
    feature_names: list[str] | None = None,
    allow_regression: bool = False,
    counts_removed_ok: bool = False,
) -> ReleasedModel:
    """Read a model file, chosen by its extension and content, as the `ReleasedModel` it exposes.

    Every bad input raises a `TreeleaksError` subclass with a one-line explanation.

    Parameters
    ----------
    path : str or pathlib.Path
        The model file: treeleaks JSON, skops, LightGBM text, XGBoost JSON or UBJ, an R
        model (``.rds``), or a pickle.
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
        The model is unsupported, a rule list, or a regressor without ``allow_regression``.
    CountsRemovedError
        Its counts were removed and ``counts_removed_ok`` is False.
    ModelFormatError
        The file is malformed.
    TreeleaksError
        The file type is unknown or the file cannot be read.
    """
    read = load_any(path, trust_pickle, feature_names, allow_regression, counts_removed_ok)
    if not isinstance(read, ReleasedModel):
        raise UnsupportedModelError(
            f"{Path(path).name} is a rule list, not a tree model: treeleaks leak, inspect and "
            "audit read it (in Python: treeleaks.io.load_any, then the rule-list attacks)")
    return read


def load_any(
    path: str | Path,
    trust_pickle: bool = False,
    feature_names: list[str] | None = None,
    allow_regression: bool = False,
    counts_removed_ok: bool = False,
    reader: str | None = None,
) -> Any:
    """Read any model file treeleaks reads: a `ReleasedModel`, or a ``RuleList``.

    The options are `load_model`'s; ``reader`` names the one format accepted (a name in
    `treeleaks.frontends.registry.READERS`; None: any).

    Parameters
    ----------
    path : str or pathlib.Path
        The model file.
    trust_pickle : bool, default False
        Load a pickle, which runs code from the file.
    feature_names : list of str or None, default None
        The columns' names, when the file has none or its own are not wanted.
    allow_regression : bool, default False
        Read a regressor too.
    counts_removed_ok : bool, default False
        Return a stripped file as its structure alone, instead of raising.
    reader : str or None, default None
        The only format accepted, for the one-framework entries (`load_lightgbm`).

    Returns
    -------
    ReleasedModel or treeleaks.frontends.rule_list.RuleList
        What the file holds, checked.
    """
    wanted = None if reader is None else reader_named(reader)
    if wanted is not None:
        _require_suffix(wanted, Path(path))
    file = ModelFile(_checked_path(path, trust_pickle))
    try:
        chosen = _chosen(file, trust_pickle)
        if wanted is not None and chosen is not wanted:
            raise ModelFormatError(f"{file.path.name} is {chosen.what}, not {wanted.what}; "
                                   "treeleaks.load_model reads it")
        read = chosen.read(file)
        if chosen.gives == "rule list":
            if feature_names is not None:
                raise TreeleaksError("a rule list's columns are its conditions' names; "
                                     "feature names cannot be given to it")
            return read
        return _checked(read, file.path.name, feature_names, allow_regression,
                        counts_removed_ok)
    except TreeleaksError as exc:
        raise _named(exc, file.path) from None


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
    return load_any(path, feature_names=feature_names, allow_regression=True,
                    reader="LightGBM")


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
    return load_any(path, feature_names=feature_names, allow_regression=True,
                    reader="XGBoost")


def load_estimator(path: str | Path, trust_pickle: bool = False) -> Any:
    """The scikit-learn object a ``.skops`` file (or, with ``trust_pickle``, a pickle) holds.

    For tools that change the model itself (`treeleaks.defences.prune`).
    """
    file = ModelFile(_checked_path(path, trust_pickle))
    chosen = _chosen(file, trust_pickle)
    if chosen.estimator is None:
        raise TreeleaksError(
            f"{file.path.name} holds no scikit-learn object; give the .skops (or pickle) file "
            "of a scikit-learn model")
    return chosen.estimator(file.path)


@dataclass(frozen=True)
class FrameworkFile:
    """A framework's model file, read by its reader and checked before any framework loads it.

    ``format`` is the one `treeleaks strip` writes it in (skops, pickle, joblib, lightgbm,
    xgboost, xgboost-ubj); ``held`` what the framework reads (a scikit-learn object, a
    LightGBM model text, a parsed XGBoost model); ``model`` the IR, None where the reader
    declines the model's counts (``unread`` says why: an objective or training option the
    attacks do not read; its structure was checked as far as the reader got).
    """

    format: str
    held: Any
    model: ReleasedModel | None
    unread: str = ""


def load_framework_file(path: str | Path, trust_pickle: bool = False) -> FrameworkFile:
    """Read a framework's model file for a tool that hands it to its framework (strip).

    The file goes through the same reader and checks as `load_model` first, so a malformed
    file (a tree without nodes, a value that is not a number, a file cut short, a LightGBM
    file whose tree sizes were edited) is refused in one line before scikit-learn, LightGBM
    or XGBoost, which would crash on it, see it.

    Parameters
    ----------
    path : str or pathlib.Path
        The model file: skops, LightGBM text, XGBoost JSON or UBJ, or a pickle.
    trust_pickle : bool, default False
        Load a pickle, which runs code from the file.

    Returns
    -------
    FrameworkFile
        What the framework reads, with the file's IR when its reader reads the counts.

    Raises
    ------
    ModelFormatError
        The file is malformed.
    UnsupportedModelError
        It is treeleaks' own JSON (a model or a rule list), not a framework's file.
    UntrustedPickleError
        The file is a pickle without ``trust_pickle``.
    """
    file = ModelFile(_checked_path(path, trust_pickle))
    try:
        reader = _chosen(file, trust_pickle)
        _refuse_not_framework(reader)
        try:
            model, unread = load_model(file.path, trust_pickle, allow_regression=True,
                                       counts_removed_ok=True), ""
        except UnsupportedModelError as exc:  # well formed, counts not read: still held
            model, unread = None, str(exc)
        return _framework_file(file, reader, model, unread)
    except TreeleaksError as exc:
        raise _named(exc, file.path) from None


def _refuse_not_framework(reader: Reader) -> None:
    """One line for treeleaks' own JSON (a model or a rule list): no framework reads it."""
    if reader.estimator is None and reader.name not in ("LightGBM", "XGBoost"):
        kind = "a treeleaks rule list" if reader.gives == "rule list" else reader.what
        raise UnsupportedModelError(
            f"it holds {kind}, not a framework's model file; strip reads "
            "scikit-learn (.skops or a pickle), LightGBM (.txt) and XGBoost (.json, "
            ".ubj) models")


def _framework_file(file: ModelFile, reader: Reader, model: ReleasedModel | None,
                    unread: str) -> FrameworkFile:
    """What the framework reads of ``file``.

    A LightGBM model's text (its tree sizes checked), an XGBoost model's parsed JSON, or
    the fitted object.
    """
    if reader.name == "LightGBM":
        from treeleaks.frontends.lightgbm import check_tree_sizes

        text = file.path.read_text(encoding="utf-8", errors="replace")
        check_tree_sizes(text)
        return FrameworkFile("lightgbm", text, model, unread)
    if reader.name == "XGBoost":
        if file.is_ubjson:
            from treeleaks.frontends.ubjson import read_ubjson

            return FrameworkFile("xgboost-ubj", read_ubjson(file.path), model, unread)
        return FrameworkFile("xgboost", file.json, model, unread)
    held = reader.estimator(file.path) if reader.estimator is not None else None
    return FrameworkFile("joblib" if file.suffix == ".joblib" else reader.name, held,
                         model, unread)


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


def _checked_path(path: str | Path, trust_pickle: bool) -> Path:
    """The model file's path.

    Refused when it is a pickle (by its extension) without the opt-in, or is missing; a
    file of another extension is told by its content (`_chosen`).
    """
    path = Path(path)
    if path.suffix.lower() in CODE_SUFFIXES and not trust_pickle:
        raise _untrusted(path)
    problem = unreadable(path, "model file")
    if problem:
        raise TreeleaksError(problem)
    return path


def _chosen(file: ModelFile, trust_pickle: bool) -> Reader:
    """The reader of ``file``; a pickle told by its content needs the opt-in too."""
    chosen = reader_for(file)
    if chosen.runs_code and not trust_pickle:
        raise _untrusted(file.path)
    return chosen


def _untrusted(path: Path) -> UntrustedPickleError:
    return UntrustedPickleError(
        f"refusing to load {path.name}: loading a pickle runs code from the file; pass "
        "--trust-pickle (trust_pickle=True) if you trust its source, or export the model "
        "with skops")


def _require_suffix(wanted: Reader, path: Path) -> None:
    """Refuse a path whose extension is not the one-framework entry's, naming the entry."""
    if path.suffix.lower() not in wanted.suffixes:
        raise ModelFormatError(
            f"load_{wanted.name.lower()} reads {wanted.what} ({', '.join(wanted.suffixes)}), "
            f"not {path.name}; treeleaks.load_model reads any model file")


def _checked(model: ReleasedModel, name: str, feature_names: list[str] | None,
             allow_regression: bool, counts_removed_ok: bool) -> ReleasedModel:
    """The checks every format gets.

    A regressor unasked and removed counts are refused, the caller's feature names replace
    the file's.
    """
    about = model.described()
    if model.is_regression and not allow_regression:
        raise UnsupportedModelError(
            f"{name} holds a {about.framework} regressor ({about.estimator}), and this "
            "measure is a classifier's: treeleaks reconstruct, single-out and audit read "
            "regressors (in Python: load_model(..., allow_regression=True))")
    if about.stripped and not counts_removed_ok:  # as its reader recognised it
        gone = [f.name for f in about.fields if f.removed]
        raise counts_removed(
            f"{about.framework} {about.estimator}".strip(),
            f"{', '.join(gone)}: zeroed or missing" if gone else "every count is 0",
            random_states=about.bootstrap, never_kept=about.framework in FORMATS_WITHOUT_COUNTS)
    return model if feature_names is None else _renamed(model, feature_names)


def _renamed(model: ReleasedModel, feature_names: list[str]) -> ReleasedModel:
    """The model with the caller's feature names (the label renamed if one takes its name)."""
    if len(feature_names) != model.n_features:
        raise TreeleaksError(
            f"{len(feature_names)} feature names given but the model has {model.n_features} "
            "features"
        )
    label, suffix = model.label_name, 0
    while label in feature_names:
        suffix += 1
        label = f"{model.label_name}_{suffix}"
    renamed = dataclasses.replace(model, feature_names=list(feature_names), label_name=label)
    renamed.validate()
    return renamed


def _named(exc: TreeleaksError, path: Path) -> TreeleaksError:
    """``exc`` with the file's name in front, unless its message names it already."""
    message = str(exc)
    return exc if path.name in message else type(exc)(f"{path.name}: {message}")
