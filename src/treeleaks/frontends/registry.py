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

HEAD_BYTES = 16  # what a file's first bytes must show for its format to be told by them


class ModelFile:
    """A model file on its way through the door: its path, its first bytes (which tell the
    format of a file whose extension does not), and its JSON parsed once for the readers
    and sniffs that share it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.suffix = path.suffix.lower()

    @functools.cached_property
    def head(self) -> bytes:
        """The file's first bytes."""
        with self.path.open("rb") as stream:
            return stream.read(HEAD_BYTES)

    @property
    def is_ubjson(self) -> bool:
        """Whether the file is binary JSON (XGBoost's UBJ: an object whose first key is
        typed, where JSON text has a quote)."""
        return is_ubjson(self.head)

    @functools.cached_property
    def json(self) -> Any:
        """The file's JSON content (malformed JSON is a `ModelFormatError` naming it)."""
        return read_json(self.path, "model", ModelFormatError)


def is_ubjson(head: bytes) -> bool:
    """Whether ``head`` opens a UBJSON object (``{`` then a type marker, not a quote)."""
    return head[:1] == b"{" and head[1:2] in (b"L", b"l", b"i", b"U", b"I", b"$", b"#")


def _is_json_text(head: bytes) -> bool:
    return head.lstrip()[:1] == b"{" and not is_ubjson(head)


# The first bytes of a pickle (protocol 2 and later) and of joblib's compressed files
# (zlib, gzip, bz2, xz, lzma).
_PICKLE_HEADS = (b"\x80", b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"]\x00\x00")


def _is_pickle(head: bytes) -> bool:
    zlib = len(head) > 1 and head[0] == 0x78 and (head[0] * 256 + head[1]) % 31 == 0
    return head.startswith(_PICKLE_HEADS) or zlib


@dataclass(frozen=True)
class Reader:
    """One file format.

    ``read`` turns the file into what it gives, ``sniff`` says whether a file with one of
    ``suffixes`` is this format (None: any the readers before it leave), ``magic`` whether
    a file of another extension is, by its first bytes (None: never), ``estimator``
    gives the framework's own object behind the file (for the tools that edit it),
    ``runs_code`` marks a format whose loading runs code from the file (an opt-in), and
    ``gives`` says which IR it returns.
    """

    name: str
    what: str
    suffixes: tuple[str, ...]
    read: Callable[[ModelFile], Any]
    sniff: Callable[[ModelFile], bool] | None = None
    magic: Callable[[bytes], bool] | None = None
    estimator: Callable[[Path], Any] | None = None
    runs_code: bool = False
    gives: str = "model"


# The readers, their modules imported only when a file of theirs is read.

def _read_ir(file: ModelFile) -> Any:
    from treeleaks.ir.model import ReleasedModel

    return ReleasedModel.from_dict(file.json)


def _is_xgboost(file: ModelFile) -> bool:
    from treeleaks.frontends.xgboost import is_xgboost_json

    return file.is_ubjson or is_xgboost_json(file.json)


def _read_xgboost(file: ModelFile) -> Any:
    from treeleaks.frontends.xgboost import is_xgboost_json, read_xgboost

    if file.is_ubjson:
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


def _read_onnx(file: ModelFile) -> Any:
    from treeleaks.frontends.onnx_trees import read_onnx

    return read_onnx(file.path)


def _is_r(file: ModelFile) -> bool:
    from treeleaks.frontends.r_files import is_r_serialization

    return is_r_serialization(file.path)


def _is_r_head(head: bytes) -> bool:
    """R's serialization's first bytes, or a compression's that may hold it (the sniff
    tells it from a compressed pickle)."""
    return head.startswith((b"X\n", b"A\n", b"B\n", b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00"))


def _read_r(file: ModelFile) -> Any:
    from treeleaks.frontends.r_models import read_r_model

    return read_r_model(file.path).model


def _from_estimator(estimator: Any) -> Any:
    """A fitted object (an estimator, a pipeline, a booster's wrapper, a search around one,
    or a tree's plain records) in the IR, as it is."""
    from treeleaks.frontends.fitted import from_fitted

    return from_fitted(estimator)


READERS: tuple[Reader, ...] = (
    Reader("XGBoost", "an XGBoost model file", (".json", ".ubj"), _read_xgboost,
           sniff=_is_xgboost, magic=lambda head: is_ubjson(head) or _is_json_text(head)),
    Reader("rule list", "a treeleaks rule-list file", (".json",), _read_rule_list,
           sniff=_is_rule_list, magic=_is_json_text, gives="rule list"),
    Reader("treeleaks", "a treeleaks JSON model", (".json",), _read_ir, magic=_is_json_text),
    Reader("LightGBM", "a LightGBM model text file", (".txt",), _read_lightgbm,
           magic=lambda head: head.startswith((b"tree\n", b"tree\r\n"))),
    Reader("skops", "a skops archive of a scikit-learn model", (".skops",), _read_skops,
           magic=lambda head: head.startswith(b"PK\x03\x04"), estimator=_skops_estimator),
    Reader("ONNX", "an ONNX tree ensemble", (".onnx",), _read_onnx),
    Reader("R", "an R model saved with saveRDS (rpart, randomForest, ranger)", (".rds",), _read_r,
           sniff=_is_r, magic=_is_r_head),
    Reader("pickle", "a pickle of a scikit-learn model", (".pkl", ".pickle", ".joblib"),
           _read_pickle, magic=_is_pickle, estimator=_pickle_estimator, runs_code=True),
)
SUFFIXES: tuple[str, ...] = tuple(dict.fromkeys(s for r in READERS for s in r.suffixes))
CODE_SUFFIXES = frozenset(s for r in READERS if r.runs_code for s in r.suffixes)


def reader_named(name: str) -> Reader:
    """The reader called ``name`` in `READERS`."""
    return next(r for r in READERS if r.name == name)


def _candidates(file: ModelFile) -> list[Reader]:
    """The formats ``file`` may be: those of its suffix, else those whose first bytes it
    has; refused when none."""
    candidates = [r for r in READERS if file.suffix in r.suffixes]
    if not candidates:  # another extension (.sav, .model, .bin, none): the content tells
        candidates = [r for r in READERS if r.magic is not None and r.magic(file.head)]
    if not candidates:
        raise TreeleaksError(
            f"cannot read {file.path.name!r}: unknown model file type "
            f"{file.suffix or '(no extension)'!r}, and its first bytes are none of the formats "
            f"treeleaks reads ({', '.join(SUFFIXES)})")
    return candidates


def reader_for(file: ModelFile) -> Reader:
    """The format of ``file``: by its suffix (another suffix: by its first bytes), then by
    the sniffs of the formats sharing it."""
    candidates = _candidates(file)
    for reader in candidates:
        if reader.sniff is None or len(candidates) == 1 or reader.sniff(file):
            return reader
    raise ModelFormatError(f"{file.path.name} is none of the formats treeleaks reads as "
                           f"{file.suffix}: {', '.join(r.what for r in candidates)}")
