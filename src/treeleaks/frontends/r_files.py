"""R's ``saveRDS`` files read without R: the serialized object as plain Python values.

The ``rdata`` package parses the serialization (gzip, bzip2, xz or uncompressed); its own
conversion builds pandas frames, which rpart's ``frame`` (a matrix column, ``yval2``)
breaks, so this module walks the parsed objects itself into `RValue`: a vector as a NumPy
array (a matrix in its ``dim``), a character vector as a list of strings (None for NA), a
list as a list of `RValue`, each with its attributes. Code (calls, formulas, functions) is
kept as its type name and never evaluated: reading a file runs nothing from it. An
environment saved with the object (a formula's, when the model was fitted inside a
function) is read as the values it binds, by name: it may hold the training data.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from treeleaks.ir.model import ModelFormatError
from treeleaks.runtime.errors import UnsupportedModelError

# the first bytes of the compressions rdata reads, and of an uncompressed serialization
_HEADS = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"X\n": "none",
          b"A\n": "none", b"B\n": "none"}
_OTHER_HEADS = {b"\x28\xb5\x2f\xfd": "zstd", b"\x04\x22\x4d\x18": "lz4"}
_VECTORS = {"LGL", "INT", "REAL", "CPLX", "RAW"}
MAX_RDS_BYTES = 4 * 2**30  # the most a file may inflate to: a bigger R model is refused
_PIECE = 2**24
_OPENERS: dict[str, Any] = {"gzip": gzip.open, "bzip2": bz2.open, "xz": lzma.open,
                            "none": open}


@dataclass(frozen=True)
class RValue:
    """One R object: its ``value`` (an array, a list of strings, a list of `RValue`, or
    None) and its ``attributes``; ``kind`` is R's type (``"VEC"`` a list, ``"STR"``
    strings, ``"REAL"``, ``"INT"``, ``"LGL"``, or a code object's type)."""

    kind: str
    value: Any
    attributes: dict[str, RValue] = field(default_factory=dict)

    def attr(self, name: str) -> RValue | None:
        """The attribute ``name``, or None."""
        return self.attributes.get(name)

    @property
    def classes(self) -> list[str]:
        """The object's ``class`` attribute (empty when it has none)."""
        cls = self.attr("class")
        return [] if cls is None or cls.kind != "STR" else [c or "" for c in cls.value]

    @property
    def names(self) -> list[str]:
        """The ``names`` attribute (empty when it has none)."""
        names = self.attr("names")
        return [] if names is None or names.kind != "STR" else [n or "" for n in names.value]

    def get(self, name: str) -> RValue | None:
        """A named list's element ``name``, or None."""
        if self.kind != "VEC" or name not in self.names:
            return None
        return self.value[self.names.index(name)]


def read_rds(path: Path) -> RValue:
    """The object ``saveRDS`` wrote to ``path``; a compression rdata does not read, or a
    file that is no R serialization, is refused naming it."""
    import rdata

    with path.open("rb") as stream:
        head = stream.read(8)
    if not any(head.startswith(magic) for magic in _HEADS):
        other = next((name for magic, name in _OTHER_HEADS.items() if head.startswith(magic)),
                     None)
        if other:
            raise UnsupportedModelError(
                f"{path.name} is compressed with {other}, which the rdata package does not "
                "read; save it again in R with saveRDS(model, file, compress = \"xz\") "
                "(or gzip, the default)")
        raise ModelFormatError(f"{path.name} is not an R serialization (saveRDS): its first "
                               "bytes are none of gzip, bzip2, xz or R's own")
    data = _decompressed(path, head)
    try:
        parsed = rdata.parser.parse_data(data, extension=".rds")
    except Exception as exc:  # rdata raises plain errors on damaged data
        raise ModelFormatError(
            f"{path.name}: the rdata package cannot parse this R serialization "
            f"({type(exc).__name__}: {exc}); damaged, or it keeps code rdata does not read "
            "(a caret object's functions): save the model alone in R, such as "
            "saveRDS(fit$finalModel, file) for caret") from None
    return _converted(parsed.object)


def is_r_serialization(path: Path) -> bool:
    """Whether ``path`` holds R's serialization (``saveRDS``), compressed or not: its first
    bytes, inflated, are R's format mark (a gzip that inflates to a pickle is not)."""
    with path.open("rb") as stream:
        head = stream.read(8)
    method = next((name for magic, name in _HEADS.items() if head.startswith(magic)), None)
    if method is None:
        return False
    try:
        with _OPENERS[method](path, "rb") as stream:
            return stream.read(2) in (b"X\n", b"A\n", b"B\n")
    except (OSError, EOFError, lzma.LZMAError):
        return False


def _decompressed(path: Path, head: bytes) -> bytes:
    """The file's serialization, decompressed in pieces up to `MAX_RDS_BYTES` (a file that
    inflates past it is refused before it fills the memory)."""
    method = next(name for magic, name in _HEADS.items() if head.startswith(magic))
    opener = _OPENERS[method]
    pieces, size = [], 0
    try:
        with opener(path, "rb") as stream:
            while piece := stream.read(_PIECE):
                size += len(piece)
                if size > MAX_RDS_BYTES:
                    raise ModelFormatError(
                        f"{path.name} inflates to more than {MAX_RDS_BYTES / 2**30:g} GiB "
                        f"(from {path.stat().st_size:,} bytes): a damaged or hostile file, "
                        "or a model too large to audit here")
                pieces.append(piece)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise ModelFormatError(f"{path.name} is not a readable {method} stream "
                               f"({type(exc).__name__}: {exc}): a truncated or damaged "
                               "file?") from None
    return b"".join(pieces)


def _converted(obj: Any, inside: frozenset[int] = frozenset()) -> RValue:
    """A parsed rdata object as an `RValue` (references followed; ``inside``: the
    environments being read, so that one holding itself is read once)."""
    while obj.info.type.name == "REF":
        obj = obj.referenced_object
    kind = obj.info.type.name
    if kind == "ENV":
        return RValue(kind, None if id(obj) in inside else _bindings(obj, inside | {id(obj)}))
    attributes = _pairlist(obj.attributes, inside) if obj.attributes is not None else {}
    return RValue(kind, _value(obj, kind, attributes, inside), attributes)


def _value(obj: Any, kind: str, attributes: dict[str, RValue], inside: frozenset[int]
           ) -> Any:
    """An object's value: a vector as an array (a matrix in its ``dim``), text as strings
    (None for NA), a list's items converted; None for NULL and for code (a call, a formula,
    a function: kept by its type only)."""
    if kind in _VECTORS:
        return _shaped(np.asarray(obj.value), attributes.get("dim"))
    if kind == "STR":
        return [None if c.value is None else c.value.decode("utf-8", "replace")
                for c in obj.value]
    if kind in ("VEC", "EXPR"):
        return [_converted(item, inside) for item in obj.value]
    return None


def _shaped(value: np.ndarray, dim: RValue | None) -> np.ndarray:
    """A vector as the array its ``dim`` attribute says (R's column-major order), when
    that fits its length."""
    if dim is not None and dim.kind in ("INT", "REAL") and int(np.prod(dim.value)) == \
            value.size:
        return value.reshape(tuple(int(d) for d in dim.value), order="F")
    return value


def _pairlist(obj: Any, inside: frozenset[int] = frozenset()) -> dict[str, RValue]:
    """A pairlist (R's attributes, an environment's bindings) as a dict by tag; a promise
    (a function's argument) as the value it was given."""
    out: dict[str, RValue] = {}
    while obj is not None and obj.info.type.name == "LIST":
        tag = obj.tag
        while tag is not None and tag.info.type.name == "REF":
            tag = tag.referenced_object
        name = tag.value.value.decode("utf-8", "replace") if tag is not None else ""
        item = obj.value[0]
        while item.info.type.name == "REF":
            item = item.referenced_object
        if item.info.type.name == "PROM":
            item = item.value[0]
        out[name] = _converted(item, inside)
        obj = obj.value[1]
    return out


def _bindings(env: Any, inside: frozenset[int]) -> dict[str, RValue]:
    """What an environment saved with the object binds, by name (a fitting function's
    local variables: the data it was given)."""
    frame = getattr(env.value, "frame", None)
    return {} if frame is None else _pairlist(frame, inside)


def element(obj: RValue, name: str, kind: str | None = None, within: str = "",
            owner: str = "") -> RValue:
    """A model's list element ``name`` (of R type ``kind``), refused naming it if missing
    (``within``: the list it sits in, such as ``"forest$"``, and ``owner`` the model's
    class, for the message; by default the object's own class)."""
    value = obj.get(name)
    if value is None or (kind is not None and value.kind != kind
                         and not (kind == "REAL" and value.kind == "INT")):
        what = "missing" if value is None else f"of type {value.kind}, not {kind}"
        owner = owner or "/".join(obj.classes) or "R object"
        raise ModelFormatError(f"{owner} field {within + name!r} is {what}")
    return value


def strings(value: RValue, name: str) -> list[str]:
    """A character vector's strings (NA refused)."""
    if value.kind != "STR" or not value.value or any(v is None for v in value.value):
        raise ModelFormatError(f"R field {name!r} must be text without NA")
    return list(value.value)


def _numeric(value: RValue, name: str, length: int | None) -> np.ndarray:
    """A numeric vector's values as floats, refused unless numeric, of ``length`` when
    given, and free of R's integer NA."""
    array = np.asarray(value.value).reshape(-1) if value.kind in ("INT", "REAL", "LGL") \
        else None
    if array is None or (length is not None and array.size != length):
        size = "" if length is None else f" of {length} values"
        raise ModelFormatError(f"R field {name!r} must be a numeric vector{size}")
    if value.kind == "INT" and (array == np.iinfo(np.int32).min).any():
        raise ModelFormatError(f"R field {name!r} holds NA")
    return array.astype(np.float64)


def numbers(value: RValue, name: str, length: int | None = None, whole: bool = True) -> Any:
    """A numeric vector, of ``length`` when given, whole numbers when ``whole``."""
    array = _numeric(value, name, length)
    if not np.isfinite(array).all():
        raise ModelFormatError(f"R field {name!r} holds NA or infinite values")
    if whole:
        if (array != np.round(array)).any():
            raise ModelFormatError(f"R field {name!r} must hold whole numbers")
        return array.astype(np.int64)
    return array
