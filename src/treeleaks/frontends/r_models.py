"""R models saved with ``saveRDS`` (``.rds``): the R class told, its reader run, and what the
object stores about the training rows listed beside its trees.

``rpart``, ``randomForest`` and ``ranger`` objects are read (`treeleaks.frontends.rpart`,
`treeleaks.frontends.r_forest`, `treeleaks.frontends.ranger`); any other R class is refused
naming it. Each keeps more than prediction needs, row by row in training order: rpart every
row's label (``y``) and leaf (``where``), randomForest every row's label (``y``),
out-of-bag prediction, votes and count, ranger every row's out-of-bag prediction
(``predictions``), and with ``keep.inbag=TRUE`` both forests every tree's draws (``inbag``,
``inbag.counts``). `RModel.rows` holds
them as arrays; the description lists each with what it gives away, and marks those that
give a training row's label or leaf outright (`StoredField.per_row`), which the audit
counts as a leak without any attack.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from treeleaks.frontends.onnx_trees import rows_at_least
from treeleaks.frontends.r_files import RValue, element, numbers, read_rds
from treeleaks.frontends.r_forest import read_random_forest
from treeleaks.frontends.ranger import forest_kind, read_ranger
from treeleaks.frontends.rpart import read_rpart, rpart_leaves
from treeleaks.ir.description import ModelDescription, StoredField, describe
from treeleaks.ir.model import ModelFormatError, ReleasedModel
from treeleaks.runtime.errors import UnsupportedModelError

READ = ("rpart", "randomForest", "ranger")  # and caret's train objects holding one
LABELS = "every training row's label, in training order"
TARGETS = "every training row's target, in training order"


@dataclass(frozen=True)
class RModel:
    """An R model read: its IR, each tree's leaf outputs (a randomForest's; empty for rpart,
    whose leaves keep their counts and values in the IR) and the per-row arrays the object
    stores, by R name (``y`` as class indices or targets, ``where`` as IR leaves, ``inbag``
    rows by trees, ``votes``, ``oob.times``, ``predicted``)."""

    model: ReleasedModel
    outputs: list[np.ndarray] = field(default_factory=list)
    rows: dict[str, np.ndarray] = field(default_factory=dict)


def read_r_model(path: Path) -> RModel:
    """The R model in ``path`` (see the module doc)."""
    return read_r_object(read_rds(path), path.name)


def read_r_object(obj: RValue, name: str = "the file") -> RModel:
    """The R model ``obj`` (read from the file ``name``); a caret ``train`` object is read
    as its ``finalModel``, with what caret keeps beside it."""
    if "train" in obj.classes and obj.kind == "VEC":
        return _caret(obj, name)
    classes = obj.classes
    if obj.kind != "VEC" or not any(c in READ for c in classes):
        what = "/".join(classes) if classes else f"an R value of type {obj.kind}"
        raise UnsupportedModelError(f"{name} holds {what}, not a tree model treeleaks "
                                    f"reads from R ({', '.join(READ)})")
    read = _rpart(obj) if "rpart" in classes else _ranger(obj) if "ranger" in classes \
        else _forest(obj)
    read.model.label_name = _response(obj, read.model.feature_names) or read.model.label_name
    return read


def _caret(obj: RValue, name: str) -> RModel:
    """A caret ``train`` object: its ``finalModel`` read as the model, the training rows
    caret keeps (``trainingData``, by default) and its held-out predictions (``pred``)
    listed beside the model's own fields."""
    final = obj.get("finalModel")
    if final is None or final.kind != "VEC":
        raise ModelFormatError(f"{name}: caret train object without a finalModel")
    read = read_r_object(final, name)
    model = read.model
    fields = list(model.described().fields)
    data = obj.get("trainingData")
    if data is not None and data.kind == "VEC" and data.value:
        rows = int(np.asarray(data.value[0].value).size)
        fields.append(StoredField("trainingData", f"every training row's values and label "
                                  f"({rows} rows, the outcome as .outcome): the training data "
                                  "itself", per_row=True))
    if _present(obj, "pred"):
        fields.append(StoredField("pred", "the resampling's held-out prediction of every "
                                  "training row"))
    method = obj.get("method")
    label = "" if method is None or method.kind != "STR" else f", method {method.value[0]!r}"
    model.description = dataclasses.replace(
        model.described(), estimator=f"caret train ({model.described().estimator}{label})",
        fields=tuple(fields))
    return read


def _response(obj: RValue, features: list[str]) -> str | None:
    """The label's name, from a formula's terms (``dataClasses`` names the response
    first); None when the model was fitted without a formula."""
    terms = obj.get("terms")
    classes = None if terms is None else terms.attr("dataClasses")
    response = None if terms is None else terms.attr("response")
    if classes is None or response is None or not classes.names or \
            np.asarray(response.value).tolist() != [1]:
        return None
    name = classes.names[0]
    return name if name and name not in features else None


def _rpart(obj: RValue) -> RModel:
    model = read_rpart(obj)
    regression = model.is_regression
    if not model.counts_released:
        return _stripped_rpart(obj, model)
    rows = {"where": rpart_leaves(obj, model)}
    n = int(model.trees[0].counts.sum())
    fields = [StoredField("frame$n", "training rows through every node")]
    fields.append(StoredField("frame$yval, frame$dev", "every node's mean target and sum of "
                              "squared deviations") if regression else
                  StoredField("frame$yval2", "every node's class counts"))
    fields.append(StoredField("where", "each training row's leaf, in training order",
                              per_row=True))
    if obj.get("y") is not None and obj.get("y").kind != "NILVALUE":
        y = _per_row(obj, "y", n, whole=not regression)
        rows["y"] = y if regression else y - 1
        fields.append(StoredField("y", TARGETS if regression else LABELS, per_row=True))
    fields += [StoredField("splits", "every split's rows (count) with its competing and "
                           "surrogate splits and their gains"),
               StoredField("cptable", "the tree's training error at every pruning step")]
    fields += _data_fields(obj)
    if not regression and len(rows["where"]) != n:
        raise ModelFormatError(f"rpart field 'where' must have one entry per training row "
                               f"({n})")
    method = "classification" if not regression else "regression"
    model.description = describe(model, "R", f"rpart ({method})", fields)
    return RModel(model, [], rows)


def _stripped_rpart(obj: RValue, model: ReleasedModel) -> RModel:
    """An rpart whose counts were set to 0 (treeleaks strip): its splits and leaf outputs
    (a classifier's class fractions, a regressor's means), no counts, no per-row field
    unless one is left."""
    fields = [StoredField("frame$yval2" if not model.is_regression else "frame$yval",
                          "each leaf's class fractions, whose denominators say how many rows "
                          "it held at least" if not model.is_regression else
                          "each leaf's mean target"),
              StoredField("frame$n, frame$yval2 counts, splits' counts", "every node's rows "
                          "and class counts", removed=True)]
    rows = {}
    if obj.get("where") is not None:
        rows["where"] = rpart_leaves(obj, model)
        fields.append(StoredField("where", "each training row's leaf, in training order",
                                  per_row=True))
    fields += _data_fields(obj)
    method = "classification" if not model.is_regression else "regression"
    model.description = describe(model, "R", f"rpart ({method})", fields, stripped=True)
    return RModel(model, [], rows)


def _forest(obj: RValue) -> RModel:
    read = read_random_forest(obj)
    model = read.model
    regression = model.is_regression
    fields = [StoredField("forest", "the splits and each leaf's class (its drawn rows' "
                          "majority) or mean target; no row counts at any node, so no "
                          "attack that reads counts applies")]
    n = _rows_stored(obj)
    rows, per_row = _training_record(obj, n, model)
    fields += per_row
    errors = ("err.rate", "confusion") if not regression else ("mse", "rsq")
    if any(_present(obj, name) for name in errors):
        fields.append(StoredField(", ".join(errors), "the out-of-bag error after every tree" + (
            "; the confusion matrix counts the labels: the class balance"
            if not regression else "")))
    if _present(obj, "inbag"):
        rows["inbag"] = _inbag(obj, n, model.n_trees)
        _keep_draws(model, rows["inbag"])
        fields.append(StoredField("inbag", "how often every tree drew each training row (the "
                                  "draws), in training order"))
    fields += _data_fields(obj)
    model.description = _forest_description(model, fields, rows, n)
    return RModel(model, read.outputs, rows)


def _training_record(obj: RValue, n: int | None, model: ReleasedModel
                     ) -> tuple[dict[str, np.ndarray], list[StoredField]]:
    """What a randomForest keeps per training row (its label or target, out-of-bag
    prediction, votes and times left out), and the stored fields saying so."""
    regression = model.is_regression
    rows: dict[str, np.ndarray] = {}
    fields = []
    if _present(obj, "y"):
        y = _per_row(obj, "y", n, whole=not regression)
        rows["y"] = y if regression else y - 1
        fields.append(StoredField("y", TARGETS if regression else LABELS, per_row=True))
    if _present(obj, "predicted"):
        rows["predicted"] = _with_gaps(obj, "predicted", n) - (0 if regression else 1)
        fields.append(StoredField("predicted", "every training row's out-of-bag prediction, "
                                  "in training order"))
    if not regression and _present(obj, "votes"):
        rows["votes"] = _with_gaps(obj, "votes", n * model.n_classes)
        if rows["votes"].shape != (n, model.n_classes):
            raise ModelFormatError(f"randomForest field 'votes' must have shape "
                                   f"({n}, {model.n_classes}): training rows by classes")
        fields.append(StoredField("votes", "every training row's out-of-bag votes per class, "
                                  "in training order"))
    if _present(obj, "oob.times"):
        rows["oob.times"] = _per_row(obj, "oob.times", n)
        fields.append(StoredField("oob.times", "how many trees left each training row out, "
                                  "in training order"))
    return rows, fields


def _inbag(obj: RValue, n: int | None, n_trees: int) -> np.ndarray:
    """The draws (``keep.inbag``): training rows by trees."""
    inbag = element(obj, "inbag")
    draws = numbers(inbag, "inbag").reshape(np.shape(inbag.value))
    if draws.shape != (n if n is not None else draws.shape[0], n_trees):
        raise ModelFormatError(f"randomForest field 'inbag' must have shape "
                               f"({n}, {n_trees}): training rows by trees")
    return draws


def _forest_description(model: ReleasedModel, fields: list[StoredField],
                        rows: dict[str, np.ndarray], n: int | None) -> ModelDescription:
    """A randomForest's description: N and the class balance from y when it is kept."""
    regression = model.is_regression
    kind = "regression" if regression else "classification"
    about = describe(model, "R", f"randomForest ({kind})", fields, bootstrap=True)
    if "y" in rows:
        balance = None if regression else tuple(
            (str(c), int((rows["y"] == k).sum())) for k, c in enumerate(model.classes))
        about = dataclasses.replace(
            about, n_rows=n, n_rows_how="the length of y, every training row's label" if
            not regression else "the length of y, every training row's target",
            class_balance=balance)
    return dataclasses.replace(about, draws_exposed="inbag" in rows)


def _present(obj: RValue, name: str) -> bool:
    """Whether the object keeps the list element ``name`` (not NULL)."""
    value = obj.get(name)
    return value is not None and value.kind != "NILVALUE"


def _rows_stored(obj: RValue) -> int | None:
    """The training rows' number, from the first per-row field the forest keeps (None when
    it keeps none: a stripped file)."""
    for name in ("y", "oob.times", "predicted"):
        if _present(obj, name):
            return int(np.asarray(element(obj, name).value).size)
    return None


def _ranger(obj: RValue) -> RModel:
    read = read_ranger(obj)
    model = read.model
    kind = forest_kind(obj)
    n = int(numbers(element(obj, "num.samples"), "num.samples", 1)[0])
    leaves = {"classification": "each leaf's class (its drawn rows' majority)",
              "probability": "each leaf's class fractions of its drawn rows, whose "
                             "denominators say how many rows it held at least",
              "regression": "each leaf's mean target"}[kind]
    fields = [StoredField("forest", f"the splits and {leaves}; no row counts at any node, so "
                          "no attack that reads counts applies")]
    rows: dict[str, np.ndarray] = {}
    fields += _ranger_rows(obj, model, kind, n, rows)
    if kind == "probability":
        model.facts["rows a leaf held at least, by its class fractions"] = rows_at_least(
            read.outputs, 1)
    about = describe(model, "R", f"ranger ({kind})", fields, bootstrap=model.bootstrap)
    model.description = dataclasses.replace(
        about, n_rows=n, n_rows_how="num.samples, the training rows' number",
        draws_exposed="inbag" in rows)
    return RModel(model, read.outputs, rows)


def _ranger_rows(obj: RValue, model: ReleasedModel, kind: str, n: int,
                 rows: dict[str, np.ndarray]) -> list[StoredField]:
    """What a ranger forest keeps row by row (into ``rows``: the out-of-bag predictions, the
    draws, also put in the IR) and its confusion matrix, as the fields that say so."""
    fields = []
    if obj.get("predictions") is not None:
        width = model.n_classes if kind == "probability" else 1
        rows["predictions"] = _with_gaps(obj, "predictions", n * width)
        if kind == "classification":
            rows["predictions"] = rows["predictions"] - 1
        fields.append(StoredField("predictions", "every training row's out-of-bag prediction, "
                                  "in training order"))
    if obj.get("confusion.matrix") is not None:
        fields.append(StoredField("confusion.matrix", "the out-of-bag confusion matrix: the "
                                  "labels of the rows some tree left out, counted"))
    inbag = obj.get("inbag.counts")
    if inbag is not None and inbag.kind != "NILVALUE":
        if inbag.kind != "VEC" or len(inbag.value) != model.n_trees:
            raise ModelFormatError(f"ranger field 'inbag.counts' must hold one vector per tree "
                                   f"({model.n_trees})")
        rows["inbag"] = np.stack([numbers(v, "inbag.counts", n) for v in inbag.value], axis=1)
        _keep_draws(model, rows["inbag"])
        fields.append(StoredField("inbag.counts", "how often every tree drew each training "
                                  "row (the draws), in training order"))
    return fields


def _keep_draws(model: ReleasedModel, draws: np.ndarray) -> None:
    """Every tree's draws (``draws[row, tree]``, rows in training order) into the IR."""
    for t, tree in enumerate(model.trees):
        tree.draws = draws[:, t].astype(np.int64)


def _per_row(obj: RValue, name: str, n: int, whole: bool = True) -> np.ndarray:
    """A per-row vector of the object, one entry per training row."""
    return numbers(element(obj, name), name, n, whole=whole)


def _with_gaps(obj: RValue, name: str, size: int) -> np.ndarray:
    """A per-row numeric field (a vector, or a matrix of ``size`` values) whose NA (a row
    no tree left out) becomes NaN."""
    value = element(obj, name)
    array = np.asarray(value.value)
    if value.kind not in ("INT", "REAL") or array.size != size:
        raise ModelFormatError(f"R field {name!r} must be numeric with {size} values")
    gaps = array == np.iinfo(np.int32).min if value.kind == "INT" else np.isnan(array)
    return np.where(gaps, np.nan, array.astype(np.float64))  # a matrix keeps its shape


# what an R model keeps when fitted with its data kept (x = TRUE, model = TRUE, proximity)
_DATA = {"x": "every training row's values", "model": "the model frame: every training "
         "row's values and label", "proximity": "every pair of training rows' proximity",
         "localImportance": "every training row's importance per column"}


def _data_fields(obj: RValue) -> list[StoredField]:
    """The training data itself, when the object keeps it (as a field, or in an environment
    saved with it)."""
    out = []
    for name, words in _DATA.items():
        value: Any = obj.get(name)
        if value is not None and value.kind != "NILVALUE":
            out.append(StoredField(name, words, per_row=True))
    return out + _environment_fields(obj)


def _environment_fields(obj: RValue) -> list[StoredField]:
    """The data frames an environment saved with the object binds (a formula keeps the
    environment it was written in: fitted inside a function, that function's variables,
    the data it was given among them)."""
    found: dict[str, int] = {}
    for where, env in _environments(obj, "", set()):
        owner = where.removesuffix("@.Environment").lstrip("$") or "the object"
        for name, value in env.items():
            if "data.frame" in value.classes and value.kind == "VEC" and value.value:
                found[f"{name} (in the environment of {owner})"] = int(
                    np.asarray(value.value[0].value).size)
    return [StoredField(field, f"a data frame of {rows} rows in the environment the model was "
                        "fitted in, saved with it: the training data itself, likely",
                        per_row=True) for field, rows in found.items()]


def _environments(value: RValue, path: str, seen: set[int]) -> list[tuple[str, dict]]:
    """Every environment inside ``value`` with its bindings, by where it sits."""
    if id(value) in seen:
        return []
    seen.add(id(value))
    out = [(path or "the object", value.value)] if value.kind == "ENV" and value.value else []
    items: list[tuple[str, Any]] = list(value.attributes.items())
    if value.kind == "VEC":
        items += list(zip(value.names or [str(i) for i in range(len(value.value))],
                          value.value, strict=False))
    for name, item in items:
        out += _environments(item, f"{path}${name}" if not name.startswith(".")
                             else f"{path}@{name}", seen)
    return out
