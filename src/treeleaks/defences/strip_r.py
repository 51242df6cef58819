"""strip for R models (``.rds``): the object written again without what prediction does not
read — the per-row fields (each training row's label, leaf, out-of-bag prediction, votes and
draws), the out-of-bag errors and confusion matrix, and an rpart tree's counts (every node's
``n``, weights, deviance, class counts and share, the splits' counts and gains, the
variables' importance) — checked to read back as the same trees.

The file is parsed with ``rdata`` (nothing in it runs), the fields are removed from the
parsed object (an rpart frame's count columns set to 0, keeping the object's shape), and it
is serialised again with ``rdata``'s writer; references are written out in full so that a
removed field cannot leave a dangling one. What that writer cannot write (an R environment
other than the global one, a closure) refuses the file with the R lines that do the same in
R. The result is read back by treeleaks' own reader and compared with the original: the same
splits and the same leaf outputs (classes, fractions, means); `strip_r_check` also predicts
both in R, when ``Rscript`` is installed.
"""

from __future__ import annotations

import gzip
import io
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from treeleaks.defences.strip import Stripped
from treeleaks.defences.strip_check import N_RANDOM, StripCheckError
from treeleaks.defences.strip_inputs import Categories, Numbers, random_inputs
from treeleaks.defences.strip_r_check import R_SECONDS, check_in_r
from treeleaks.runtime.errors import TreeleaksError

# an R model's reader (`treeleaks.frontends.r_models.read_r_model`, handed in: defences do not
# import the readers): its IR as ``.model`` and each tree's leaf outputs as ``.outputs``
RReader = Callable[[Path], Any]

# what each class keeps that prediction does not read, by its list element's name
REMOVED = {
    "randomForest": ("y", "predicted", "votes", "oob.times", "inbag", "err.rate", "confusion",
                     "mse", "rsq", "proximity", "localImportance", "x", "model"),
    "ranger": ("predictions", "inbag.counts", "confusion.matrix", "prediction.error"),
    "rpart": ("where", "y", "x", "model"),
}
# what a caret train object keeps beside its finalModel: the training rows, their held-out
# predictions
CARET_REMOVED = ("trainingData", "pred")
# an rpart frame's columns (and the splits' columns) that count rows; zeroed, not removed
RPART_FRAME_ZEROED = ("n", "wt", "dev", "complexity")
RPART_SPLITS_ZEROED = ("count", "improve")
_PAYLOAD_FREE = {"GLOBALENV", "EMPTYENV", "BASEENV", "BASENAMESPACE", "MISSINGARG",
                 "UNBOUNDVALUE"}


class RStripError(TreeleaksError):
    """The R object holds something rdata's writer cannot write back faithfully."""


@dataclass(frozen=True)
class RStripped:
    """The stripped ``.rds`` bytes, the R class, the fields removed and zeroed (each a line),
    and the original and stripped models as read."""

    content: bytes
    r_class: str
    removed: list[str]
    original: Any
    stripped: Any


def strip_rds(path: Path, read: RReader) -> RStripped:
    """The stripped copy of the R model in ``path`` (see the module doc), read with
    ``read``; `RStripError` with the R lines to run when rdata cannot write it,
    `StripCheckError` when the copy does not read back as the same trees."""
    import rdata

    original = read(path)  # the file's checks first: a model treeleaks reads
    parsed = rdata.parser.parse_file(path)  # compact vectors expanded: plain R vectors
    environments: list[str] = []
    top = _resolved(parsed.object, set(), environments)
    model, removed = top, []
    if "train" in _classes(top):  # caret: its own copies of the rows, then its finalModel
        removed = [f"{name} (caret field)" for name in CARET_REMOVED if _drop(top, name)]
        model = _element(top, "finalModel")
    r_class = next(c for c in ("rpart", "randomForest", "ranger") if c in _classes(model))
    removed += [f"{name} (R field)" for name in REMOVED[r_class] if _drop(model, name)]
    removed += [f"the environment the model was fitted in (binding "
                f"{', '.join(sorted(set(environments))) or 'nothing'}: the training data, "
                "likely), replaced by the global environment"] if environments else []
    if r_class == "rpart":
        removed += _zero_rpart(model)
    parsed.object = top
    content = _written(parsed, path, r_class, model is not top)
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name
        copy.write_bytes(content)
        stripped = read(copy)
    same_trees(original, stripped)
    return RStripped(content, r_class, removed, original, stripped)


def strip_r_release(path: Path, read: RReader, rows: Any = None,
                    n_random: int = N_RANDOM) -> Stripped:
    """`strip_rds` as `treeleaks strip` reports it: the bytes, what was removed, and how
    the copy was checked (read back as the same trees; predicted in R on ``n_random``
    random inputs around the thresholds and on ``rows``, a frame of the model's columns,
    when ``Rscript`` is installed)."""
    done = strip_rds(path, read)
    model = done.original.model
    compared = ["the same splits and leaf outputs, read back by treeleaks"]
    columns = _table_columns(model)
    probes = pd.DataFrame(random_inputs(columns, n_random), columns=[c.name for c in columns])
    checks = [(probes, "random inputs around the thresholds")]
    if rows is not None:
        checks.append((rows[[c.name for c in columns]], "rows of --data"))
    for frame, where in checks:
        said = check_in_r(path, done.content, done.r_class, frame)
        compared.append(f"{said} ({where})" if said else
                        f"not predicted in R on the {where} (Rscript not found, or R took "
                        f"more than {R_SECONDS} s)")
    kept = ["the splits and each leaf's class, fractions or mean: what predict reads"]
    in_r = any(line.startswith("identical in R") for line in compared)
    return Stripped(done.content, f"R {done.r_class}", done.removed,
                    0 if rows is None else len(rows), n_random, [], compared, None, kept,
                    ["predict (R)"] if in_r else ["the trees' leaf outputs (treeleaks)"],
                    "the file written was read back by treeleaks" + (" and by R" if in_r
                                                                     else ""))


def _table_columns(model: Any) -> list[Numbers | Categories]:
    """The model's input columns as the table holds them: numbers around their thresholds,
    a factor's levels (no gaps, no unseen level: R refuses both)."""
    if model.inputs is None:
        return [Numbers(name, _thresholds(model, f)) for f, name in
                enumerate(model.feature_names)]
    out: list[Numbers | Categories] = []
    for column in model.inputs.columns:
        if hasattr(column, "categories"):
            out.append(Categories(column.name, tuple(column.categories), unseen=False,
                                  gaps=False))
        else:
            out.append(Numbers(column.name, _thresholds(model, column.feature)))
    return out


def _thresholds(model: Any, feature: int) -> np.ndarray:
    """Every threshold the model's trees split ``feature`` at."""
    return np.unique(np.concatenate([t.threshold[t.feature == feature] for t in model.trees]))


def r_lines(path: Path, r_class: str, caret: bool = False) -> str:
    """The R lines that strip the model in ``path`` as `strip_rds` does (``caret``: a
    train object holding the model as its ``finalModel``)."""
    f = "m$finalModel" if caret else "m"
    drop = "; ".join([*(f"m${name} <- NULL" for name in CARET_REMOVED if caret),
                      *(f"{f}${name} <- NULL" for name in REMOVED[r_class])])
    zero = ""
    if r_class == "rpart":
        cols = ", ".join(f'"{c}"' for c in RPART_FRAME_ZEROED)
        zero = (f"; for (c in intersect(c({cols}), names({f}$frame))) {f}$frame[[c]] <- 0 * "
                f"{f}$frame[[c]]")
    env = f'; if (!is.null({f}$terms)) attr({f}$terms, ".Environment") <- globalenv()'
    return f'm <- readRDS("{path.name}"); {drop}{zero}{env}; saveRDS(m, "stripped.rds")'


def same_trees(original: Any, stripped: Any) -> None:
    """Raise `StripCheckError` unless both read as the same splits and leaf outputs."""
    for a, b in zip(original.model.trees, stripped.model.trees, strict=True):
        for name in ("feature", "threshold", "left", "right", "leaf_of_node"):
            if not np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True):
                raise StripCheckError(f"the stripped file's trees read differently ({name}); "
                                      "nothing was written")
        if a.values is not None and (b.values is None or
                                     not np.array_equal(a.values, b.values)):
            raise StripCheckError("the stripped file's leaf values read differently; nothing "
                                  "was written")
    for a, b in zip(original.outputs, stripped.outputs, strict=True):
        if not np.array_equal(a, b):
            raise StripCheckError("the stripped file's leaf outputs read differently; nothing "
                                  "was written")


def _classes(obj: Any) -> list[str]:
    cls = _attribute(obj, "class")
    return [] if cls is None else [c.value.decode() for c in cls.value if c.value is not None]


def _attribute(obj: Any, name: str) -> Any:
    """An attribute of a parsed object (walking its pairlist), or None."""
    node = obj.attributes
    while node is not None and node.info.type.name == "LIST":
        if node.tag is not None and node.tag.value.value.decode() == name:
            return node.value[0]
        node = node.value[1]
    return None


def _names(obj: Any) -> list[str]:
    names = _attribute(obj, "names")
    return [] if names is None else [(c.value or b"").decode() for c in names.value]


def _drop(obj: Any, name: str) -> bool:
    """Remove the list element ``name`` of ``obj`` (and its name); whether it held
    something (not NULL)."""
    names = _names(obj)
    if name not in names:
        return False
    at = names.index(name)
    held = obj.value[at].info.type.name != "NILVALUE"
    del obj.value[at]
    del _attribute(obj, "names").value[at]
    return held


def _element(obj: Any, name: str) -> Any:
    names = _names(obj)
    return obj.value[names.index(name)] if name in names else None


def _zero_rpart(top: Any) -> list[str]:
    """Set an rpart's counting columns to 0 (the frame's, yval2's counts and node shares,
    the splits' counts and gains, the variables' importance); the lines saying so."""
    frame = _element(top, "frame")
    said = []
    for column in RPART_FRAME_ZEROED:
        part = _element(frame, column)
        if part is not None:
            part.value = np.zeros_like(part.value)
            said.append(f"frame${column} (set to 0)")
    yval2 = _element(frame, "yval2")
    if yval2 is not None:  # columns: class, k counts, k fractions, the node's share
        k = (yval2.value.size // len(_element(frame, "n").value) - 2) // 2
        matrix = yval2.value.reshape(-1, 2 * k + 2, order="F")
        matrix[:, 1:1 + k] = 0
        matrix[:, -1] = 0
        yval2.value = matrix.reshape(-1, order="F")
        said.append("frame$yval2's class counts and node shares (set to 0)")
    splits = _element(top, "splits")
    if splits is not None and splits.value.size:
        columns = _dimnames(splits)
        matrix = splits.value.reshape(-1, len(columns), order="F")
        for column in RPART_SPLITS_ZEROED:
            if column in columns:
                matrix[:, columns.index(column)] = 0
        splits.value = matrix.reshape(-1, order="F")
        said.append("splits' counts and gains (set to 0)")
    importance = _element(top, "variable.importance")
    if importance is not None:
        importance.value = np.zeros_like(importance.value)
        said.append("variable.importance (set to 0)")
    return said


def _dimnames(matrix: Any) -> list[str]:
    dimnames = _attribute(matrix, "dimnames")
    if dimnames is None or len(dimnames.value) != 2 or dimnames.value[1].value is None:
        return []
    return [(c.value or b"").decode() for c in dimnames.value[1].value]


def _resolved(obj: Any, seen: set[int], environments: list[str]) -> Any:
    """``obj`` with every reference replaced by what it refers to, so that a removed field
    leaves no reference dangling (R reads symbols written in full as the same symbols), and
    every environment saved with it (a formula's, fitted inside a function: that function's
    variables, the training data among them) replaced by the global environment, the names
    it bound added to ``environments``."""
    from rdata.parser import RObject, RObjectInfo, RObjectType

    while obj is not None and obj.info.type.name == "REF":
        obj = obj.referenced_object
    if obj is not None and obj.info.type.name == "ENV":
        environments.extend(_bound(obj))
        return RObject(RObjectInfo(RObjectType.GLOBALENV, False, False, False, 0, 0), None,
                       None, None, None)
    if obj is None or id(obj) in seen:
        return obj
    seen.add(id(obj))
    _resolve_parts(obj, seen, environments)
    return obj


def _resolve_parts(obj: Any, seen: set[int], environments: list[str]) -> None:
    """`_resolved` applied in place to what ``obj`` holds: its value (or each of its
    items), its attributes and its tag."""
    if isinstance(obj.value, (list, tuple)):
        obj.value = [_resolved(item, seen, environments) if hasattr(item, "info") else item
                     for item in obj.value]
    elif hasattr(obj.value, "info"):
        obj.value = _resolved(obj.value, seen, environments)
    obj.attributes = _resolved(obj.attributes, seen, environments)
    obj.tag = _resolved(obj.tag, seen, environments)


def _bound(env: Any) -> list[str]:
    """The names an environment binds."""
    names, node = [], getattr(env.value, "frame", None)
    while node is not None and node.info.type.name == "LIST":
        tag = node.tag
        while tag is not None and tag.info.type.name == "REF":
            tag = tag.referenced_object
        names.append(tag.value.value.decode("utf-8", "replace") if tag is not None else "?")
        node = node.value[1]
    return names


def _written(parsed: Any, path: Path, r_class: str, caret: bool) -> bytes:
    """The parsed object serialised (XDR, gzip), or `RStripError` with the R lines."""
    from rdata.unparser._unparser import pack_r_object_info
    from rdata.unparser._xdr import UnparserXDR

    class Writer(UnparserXDR):
        """rdata's writer, with what it leaves out written as R writes it: the markers that
        carry no payload (a formula's global environment), a closure (attributes, its
        environment, formals and body, as a pairlist) and a namespace (its name and
        version)."""

        def unparse_r_object(self, obj: Any) -> None:
            kind = obj.info.type.name
            if kind not in _PAYLOAD_FREE | {"CLO", "NAMESPACE"}:
                super().unparse_r_object(obj)
                return
            self.unparse_int(pack_r_object_info(obj.info))
            if kind == "NAMESPACE":
                self.unparse_int(0)
                self.unparse_int(len(obj.value))
            if kind == "CLO":
                for part in (obj.attributes if obj.info.attributes else None,
                             obj.tag if obj.info.tag else None):
                    if part is not None:
                        self.unparse_r_object(part)
            for part in obj.value if kind in ("CLO", "NAMESPACE") else ():
                self.unparse_r_object(part)

    buffer = io.BytesIO()
    try:
        with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as stream:
            Writer(stream).unparse_r_data(parsed)
    except (NotImplementedError, AssertionError) as exc:
        raise RStripError(
            f"the {'caret train' if caret else r_class} object holds what rdata cannot write "
            f"back faithfully ({exc}); strip it in R instead: "
            f"{r_lines(path, r_class, caret)}") from None
    return buffer.getvalue()
