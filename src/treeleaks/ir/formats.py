"""The JSON shapes treeleaks reads, model files and schema files, checked field by field.

Files come from elsewhere: every field is checked here once, for type and range (no string
read as a boolean, no fractional index truncated, no NaN threshold), with a one-line message
naming the field. Past this edge the package trusts the model IR; what needs the whole model
(the nodes form one tree, splits name existing features) is checked by `ReleasedModel.validate`.
The readers of the shapes import this module when they parse a file, not before: pydantic
takes a tenth of a second to load (`treeleaks.ir.json_files` reads the files themselves).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from treeleaks.ir.json_files import FORMAT_VERSION, MAX_COUNT, MAX_NODES
from treeleaks.runtime.errors import TreeleaksError

Shape = TypeVar("Shape", bound=BaseModel)


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def _whole(value: float) -> float:
    if not (math.isfinite(value) and value == round(value) and abs(value) <= MAX_COUNT):
        raise ValueError("must be a whole number of training rows, at most 2^53")
    return value


def _rectangular(rows: list[list[float]]) -> list[list[float]]:
    if len({len(row) for row in rows}) > 1:
        raise ValueError("every leaf needs one count per class")
    return rows


def _unique(values: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    for value in values:
        key = (type(value).__name__, value) if isinstance(value, bool) else value
        if key in seen:
            raise ValueError(f"lists {value!r} twice; each entry must be distinct")
        seen.add(key)
    return values


def _supported_version(value: int) -> int:
    if value != FORMAT_VERSION:
        raise ValueError(f"format version {value} is not supported (this treeleaks reads "
                         f"version {FORMAT_VERSION}); export the model with this version")
    return value


def _label(value: Any) -> Any:
    if isinstance(value, str | bool | int) or (isinstance(value, float) and math.isfinite(value)):
        return value
    raise ValueError("a class label must be a string, a whole or finite number, or a boolean")


def _fact(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int) or (
        isinstance(value, float) and math.isfinite(value)
    ):
        return value
    raise ValueError("a fact must be a string, a finite number, a boolean or null")


def _threshold(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise ValueError("a threshold must be a finite number, or null at a leaf")


Number = StrictFloat  # strict floats take JSON integers too
Finite = Annotated[Number, AfterValidator(_finite)]
Count = Annotated[Number, AfterValidator(_whole)]
NodeIndex = Annotated[StrictInt, Field(ge=-2, lt=MAX_NODES)]
Natural = Annotated[StrictInt, Field(ge=0, le=MAX_COUNT)]
Name = Annotated[StrictStr, Field(min_length=1)]
Label = Annotated[Any, AfterValidator(_label)]
Fact = Annotated[Any, AfterValidator(_fact)]
Threshold = Annotated[Any, AfterValidator(_threshold)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class TreeRecord(_Strict):
    """One tree's nodes (``feature < 0`` marks a leaf) and its per-leaf class counts (for a
    regression tree: one column of row counts, each leaf's predicted ``values`` and, when
    the file keeps it, each leaf's ``impurity``: the weighted variance of its targets)."""

    feature: list[NodeIndex]
    threshold: list[Threshold]
    left: list[NodeIndex]
    right: list[NodeIndex]
    leaf_of_node: list[NodeIndex]
    counts: Annotated[list[list[Count]], AfterValidator(_rectangular)]
    n_samples: list[Natural] | None = None
    # ``Tree.draws``: how often each training row was drawn for this tree. The field keeps
    # its first name so saved files load and older versions read new ones.
    multiplicities: list[Natural] | None = None
    values: list[Finite] | None = None
    impurity: list[Finite] | None = None  # scikit-learn's own may be -1e-16 for 0


class NoiseRecord(_Strict):
    """Noise added to the released counts (differentially private forests)."""

    kind: Name
    epsilon: Annotated[Finite, Field(gt=0)]
    scale: Annotated[Finite, Field(gt=0)]


class StoredFieldRecord(_Strict):
    """One field the framework's file stored, with what it gives away."""

    name: StrictStr
    exposes: StrictStr
    removed: StrictBool = False
    per_row: StrictBool = False


class DescriptionRecord(BaseModel):
    """Where a model file came from, as its first reader described it: the framework, the
    estimator, the kind and the stored fields. What it gives away (N, the class balance,
    the draws) is read off the counts again, so the file's own figures are ignored."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    framework: StrictStr
    estimator: StrictStr
    kind: Literal["single tree", "forest (no bootstrap)", "bootstrap forest",
                  "gradient-boosted model", "DP forest", "rule list"]
    fields: list[StoredFieldRecord] = Field(default_factory=list)


class ModelRecord(_Strict):
    """A treeleaks model file: what a released tree model exposes."""

    format: Literal["treeleaks.ReleasedModel"]
    version: Annotated[StrictInt, AfterValidator(_supported_version)]
    source: StrictStr = ""
    task: Literal["classification", "regression"] = "classification"
    classes: Annotated[list[Label], AfterValidator(_unique)]
    feature_names: Annotated[list[Name], Field(min_length=1), AfterValidator(_unique)]
    label_name: Name = "label"
    bootstrap: StrictBool = False
    noise: NoiseRecord | None = None
    facts: dict[StrictStr, Fact] = Field(default_factory=dict)
    description: DescriptionRecord | None = None  # `ModelDescription.to_dict`
    trees: Annotated[list[TreeRecord], Field(min_length=1)]


def _range(bounds: list[float]) -> list[float]:
    low, high = bounds
    if math.isnan(low) or math.isnan(high):
        raise ValueError("a range cannot hold NaN")
    if low > high:
        raise ValueError(f"low {low} is above high {high}")
    return bounds


Range = Annotated[list[Number], Field(min_length=2, max_length=2), AfterValidator(_range)]
Group = Annotated[list[Name], Field(min_length=2), AfterValidator(_unique)]


class SchemaRecord(_Strict):
    """A ``--schema`` file: ranges of numerical and ordinal columns, groups of binary ones."""

    one_hot_groups: list[Group] = Field(default_factory=list)
    at_most_one_groups: list[Group] = Field(default_factory=list)
    numerical: dict[Name, Range] = Field(default_factory=dict)
    ordinal: dict[Name, Range] = Field(default_factory=dict)


def parse_model(data: Any, error: type[TreeleaksError]) -> ModelRecord:
    """The model file's fields, checked; ``error`` carries the first problem found."""
    return _parse(ModelRecord, data, "model", error)


def parse_schema(data: Any, error: type[TreeleaksError]) -> SchemaRecord:
    """The schema file's fields, checked; ``error`` carries the first problem found."""
    return _parse(SchemaRecord, data, "schema", error)


def _parse(shape: type[Shape], data: Any, what: str, error: type[TreeleaksError]) -> Shape:
    if not isinstance(data, dict):
        raise error(f"a {what} file holds a JSON object, not {type(data).__name__}")
    try:
        return shape.model_validate(data)
    except ValidationError as exc:
        raise error(f"{what} file: {_first_problem(exc, shape, what)}") from None
    except RecursionError:
        raise error(f"the {what} file nests its JSON too deeply") from None


def _first_problem(exc: ValidationError, shape: type[BaseModel], what: str) -> str:
    """The first error as ``field 'a.b[2]': what is wrong (got ...)``."""
    problem = exc.errors(include_url=False)[0]
    if problem["type"] == "extra_forbidden" and len(problem["loc"]) == 1:
        return (f"unknown {what} key {problem['loc'][0]!r}; the {what} takes "
                f"{', '.join(shape.model_fields)}")
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem["loc"])
    where = where.lstrip(".") or "(top level)"
    kind, message = problem["type"], problem["msg"]
    if kind == "missing":
        return f"field {where!r} is missing"
    if kind == "extra_forbidden":
        return f"unknown field {where!r}; check its spelling"
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    shown = repr(problem.get("input"))
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return f"field {where!r}: {message[0].lower()}{message[1:]} (got {shown})"
