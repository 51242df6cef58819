"""The registry of model file formats: one `Reader` per format, the one table the door
(`treeleaks.io`) dispatches on.

A reader reads the whole file into what it gives (a `ReleasedModel`, or a `RuleList` for a
rule-list file) and nothing else: the door checks what it gives once, for every format
(a regressor unasked, counts removed, feature names given, the file named in every refusal).
Each reader reads regressors and stripped files as they are, for the door to judge.

A new format is one frontend module and one line in `READERS`. Formats that share a suffix
(``.json``: an XGBoost model, a rule list, the treeleaks IR) are told apart by ``sniff``,
asked in table order; a format without one takes what the others leave.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeleaks.ir.json_files import read_json
from treeleaks.ir.model import ModelFormatError
from treeleaks.runtime.errors import TreeleaksError


class ModelFile:
    """A model file on its way through the door: its path, and its JSON parsed once for the
    readers and sniffs that share it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.suffix = path.suffix.lower()

    @functools.cached_property
    def json(self) -> Any:
        """The file's JSON content (malformed JSON is a `ModelFormatError` naming it)."""
        return read_json(self.path, "model", ModelFormatError)


@dataclass(frozen=True)
class Reader:
    """One file format.

    ``read`` turns the file into what it gives, ``sniff`` says whether a file with one of
    ``suffixes`` is this format (None: any the readers before it leave), ``estimator``
    gives the framework's own object behind the file (for the tools that edit it),
    ``runs_code`` marks a format whose loading runs code from the file (an opt-in), and
    ``gives`` says which IR it returns.
    """

    name: str
    what: str
    suffixes: tuple[str, ...]
    read: Callable[[ModelFile], Any]
    sniff: Callable[[ModelFile], bool] | None = None
    estimator: Callable[[Path], Any] | None = None
    runs_code: bool = False
    gives: str = "model"


# The readers, their modules imported only when a file of theirs is read.

def _read_ir(file: ModelFile) -> Any:
    from treeleaks.ir.model import ReleasedModel

    return ReleasedModel.from_dict(file.json)


def _is_xgboost(file: ModelFile) -> bool:
    from treeleaks.frontends.xgboost import is_xgboost_json

    return is_xgboost_json(file.json)


def _read_xgboost(file: ModelFile) -> Any:
    from treeleaks.frontends.xgboost import is_xgboost_json, read_xgboost

    if file.suffix == ".ubj":
        from treeleaks.frontends.ubjson import read_ubjson

        data = read_ubjson(file.path)
        if not is_xgboost_json(data):
            raise ModelFormatError(f"{file.path.name} is binary JSON but not an XGBoost model "
                                   "file (no 'learner' at its top level)")
    else:
        data = file.json
    return read_xgboost(data, counts_removed_ok=True)


def _read_lightgbm(file: ModelFile) -> Any:
    from treeleaks.frontends.lightgbm import read_lightgbm

    return read_lightgbm(file.path, counts_removed_ok=True)


def _is_rule_list(file: ModelFile) -> bool:
    from treeleaks.frontends.rule_list import is_rule_list_json

    return is_rule_list_json(file.json)


def _read_rule_list(file: ModelFile) -> Any:
    from treeleaks.frontends.rule_list import RuleList

    return RuleList.from_dict(file.json)


def _skops_estimator(path: Path) -> Any:
    from treeleaks.frontends.skops import load_skops

    return load_skops(path, plain=False)


def _read_skops(file: ModelFile) -> Any:
    from treeleaks.frontends.skops import load_skops

    return _from_estimator(load_skops(file.path))


def _pickle_estimator(path: Path) -> Any:
    from treeleaks.frontends.pickles import load_pickle

    return load_pickle(path)


def _read_pickle(file: ModelFile) -> Any:
    return _from_estimator(_pickle_estimator(file.path))


def _from_estimator(estimator: Any) -> Any:
    """A fitted object (an estimator, a pipeline, a booster's wrapper, a search around one,
    or a tree's plain records) in the IR, as it is."""
    from treeleaks.frontends.fitted import from_fitted

    return from_fitted(estimator)


READERS: tuple[Reader, ...] = (
    Reader("XGBoost", "an XGBoost model file", (".json", ".ubj"), _read_xgboost,
           sniff=_is_xgboost),
    Reader("rule list", "a treeleaks rule-list file", (".json",), _read_rule_list,
           sniff=_is_rule_list, gives="rule list"),
    Reader("treeleaks", "a treeleaks JSON model", (".json",), _read_ir),
    Reader("LightGBM", "a LightGBM model text file", (".txt",), _read_lightgbm),
    Reader("skops", "a skops archive of a scikit-learn model", (".skops",), _read_skops,
           estimator=_skops_estimator),
    Reader("pickle", "a pickle of a scikit-learn model", (".pkl", ".pickle", ".joblib"),
           _read_pickle, estimator=_pickle_estimator, runs_code=True),
)
SUFFIXES: tuple[str, ...] = tuple(dict.fromkeys(s for r in READERS for s in r.suffixes))
CODE_SUFFIXES = frozenset(s for r in READERS if r.runs_code for s in r.suffixes)


def reader_named(name: str) -> Reader:
    """The reader called ``name`` in `READERS`."""
    return next(r for r in READERS if r.name == name)


def reader_for(file: ModelFile) -> Reader:
    """The format of ``file``: by its suffix, then by the sniffs of the formats sharing it."""
    candidates = [r for r in READERS if file.suffix in r.suffixes]
    if not candidates:
        raise TreeleaksError(
            f"cannot read {file.path.name!r}: unknown model file type "
            f"{file.suffix or '(no extension)'!r}; treeleaks reads {', '.join(SUFFIXES)}")
    for reader in candidates:
        if reader.sniff is None or len(candidates) == 1 or reader.sniff(file):
            return reader
    raise ModelFormatError(f"{file.path.name} is none of the formats treeleaks reads as "
                           f"{file.suffix}: {', '.join(r.what for r in candidates)}")
