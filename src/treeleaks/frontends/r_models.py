"""R models saved with ``saveRDS`` (``.rds``): the R class told, its reader run, and what the
object stores about the training rows listed beside its trees.

``rpart`` and ``randomForest`` objects are read (`treeleaks.frontends.rpart`,
`treeleaks.frontends.r_forest`); any other R class is refused naming it. Both keep more
than prediction needs, row by row in training order: rpart every row's label (``y``) and
leaf (``where``), randomForest every row's label (``y``), out-of-bag prediction, votes and
count, and with ``keep.inbag=TRUE`` every tree's draws (``inbag``). `RModel.rows` holds
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

from treeleaks.frontends.r_files import RValue, element, numbers, read_rds
from treeleaks.frontends.r_forest import read_random_forest
from treeleaks.frontends.rpart import read_rpart, rpart_leaves
from treeleaks.ir.description import StoredField, describe
from treeleaks.ir.model import ModelFormatError, ReleasedModel
from treeleaks.runtime.errors import UnsupportedModelError

READ = ("rpart", "randomForest")
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
    obj = read_rds(path)
    classes = obj.classes
    if obj.kind != "VEC" or not any(c in READ for c in classes):
        what = "/".join(classes) if classes else f"an R value of type {obj.kind}"
        raise UnsupportedModelError(f"{path.name} holds {what}, not a tree model treeleaks "
                                    f"reads from R ({', '.join(READ)})")
    read = _rpart(obj) if "rpart" in classes else _forest(obj)
    read.model.label_name = _response(obj, read.model.feature_names) or read.model.label_name
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


def _forest(obj: RValue) -> RModel:
    read = read_random_forest(obj)
    model = read.model
    regression = model.is_regression
    y_value = element(obj, "y")
    n = int(np.asarray(y_value.value).size)
    y = _per_row(obj, "y", n, whole=not regression)
    rows = {"y": y if regression else y - 1}
    fields = [StoredField("forest", "the splits and each leaf's class (its drawn rows' "
                          "majority) or mean target; no row counts at any node, so no "
                          "attack that reads counts applies"),
              StoredField("y", TARGETS if regression else LABELS, per_row=True),
              StoredField("predicted", "every training row's out-of-bag prediction, in "
                          "training order")]
    rows["predicted"] = _with_gaps(obj, "predicted", n) - (0 if regression else 1)
    if not regression:
        rows["votes"] = _with_gaps(obj, "votes", n * model.n_classes)
        if rows["votes"].shape != (n, model.n_classes):
            raise ModelFormatError(f"randomForest field 'votes' must have shape "
                                   f"({n}, {model.n_classes}): training rows by classes")
        fields.append(StoredField("votes", "every training row's out-of-bag votes per class, "
                                  "in training order"))
    rows["oob.times"] = _per_row(obj, "oob.times", n)
    fields.append(StoredField("oob.times", "how many trees left each training row out, in "
                              "training order"))
    fields.append(StoredField("err.rate, confusion" if not regression else "mse, rsq",
                              "the out-of-bag error after every tree" + (
                                  "; the confusion matrix counts the labels: the class "
                                  "balance" if not regression else "")))
    inbag = obj.get("inbag")
    if inbag is not None and inbag.kind != "NILVALUE":
        draws = numbers(inbag, "inbag").reshape(np.shape(inbag.value))
        if draws.shape != (n, model.n_trees):
            raise ModelFormatError(f"randomForest field 'inbag' must have shape "
                                   f"({n}, {model.n_trees}): training rows by trees")
        rows["inbag"] = draws
        fields.append(StoredField("inbag", "how often every tree drew each training row (the "
                                  "draws), in training order"))
    fields += _data_fields(obj)
    kind = "regression" if regression else "classification"
    about = describe(model, "R", f"randomForest ({kind})", fields, bootstrap=True)
    balance = None if regression else tuple(
        (str(c), int((rows["y"] == k).sum())) for k, c in enumerate(model.classes))
    model.description = dataclasses.replace(
        about, n_rows=n, n_rows_how="the length of y, every training row's label" if
        not regression else "the length of y, every training row's target",
        class_balance=balance, draws_exposed="inbag" in rows)
    return RModel(model, read.outputs, rows)


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
    """The training data itself, when the object keeps it."""
    out = []
    for name, words in _DATA.items():
        value: Any = obj.get(name)
        if value is not None and value.kind != "NILVALUE":
            out.append(StoredField(name, words, per_row=True))
    return out
