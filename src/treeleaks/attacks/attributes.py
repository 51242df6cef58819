"""A schema's attributes as finite domains, and how many values of each a box admits.

An *attribute* is what the entropy metrics count over: a column, or a whole one-hot /
at-most-one group, which is one categorical attribute of m (resp. m + 1) values. Domains:

- binary: {0, 1}; ordinal: the integers ``low..high`` (a finite range is needed once the
  model splits the column);
- numerical: the intervals the model's own cut points make of the declared range
  ``[low, high]`` (unbounded at an end the schema leaves open). Values inside one interval
  are indistinguishable to the model, so the interval, not the real value, is what a path
  can reveal; a continuous range has no meaningful uniform entropy;
- unknown, or numerical and never cut: a single value. Such a column carries no entropy the
  model could reduce; `treeleaks.evaluation.entropy` gives it ratio 1 in ``dist`` and
  leaves it out of both sides of ``dist_g``;
- a numeric column whose gaps a 0/1 feature marks (a model fitted on a table with gaps):
  one attribute, its values above plus the gap. A gap row's value feature holds nothing
  (the splits below a gap never read it), so counting its values would hide that the model
  shows the row held a gap.

A box is ``lower < x <= upper`` per column, as `treeleaks.ir.model.Tree.path_boxes` gives.
Every method takes ``(K, M)`` arrays of K boxes and answers for all of them at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from treeleaks.ir.schema import FeatureSchema, FeatureSpec
from treeleaks.runtime.errors import SchemaError


@dataclass(frozen=True)
class ScalarAttribute:
    """One column whose values are indexed ``0..size-1`` in increasing order: the integers
    ``low..high`` (binary, ordinal) or the intervals ending at ``points`` (numerical)."""

    name: str
    column: int
    kind: str
    low: float = 0.0
    high: float = 0.0
    points: np.ndarray | None = None

    @property
    def size(self) -> int:
        if self.points is not None:
            return int(self.points.size)
        return int(self.high - self.low) + 1

    def spans(self, lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first and last admitted value index of each box (empty when first > last)."""
        lo, up = lower[:, self.column], upper[:, self.column]
        if self.points is not None:
            first = np.searchsorted(self.points, lo, side="right")
            return first, np.searchsorted(self.points, up, side="right") - 1
        first = np.maximum(self.low, np.floor(lo) + 1) - self.low
        last = np.minimum(self.high, np.floor(up)) - self.low
        return first.astype(np.int64), last.astype(np.int64)

    def counts(self, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        first, last = self.spans(lower, upper)
        return np.maximum(last - first + 1, 0)

    def merged_spans(self, lower: np.ndarray, upper: np.ndarray) -> list[tuple[int, int]]:
        """The values at least one box admits, as disjoint ``(first, last)`` index runs."""
        first, last = self.spans(lower, upper)
        keep = last >= first
        runs: list[tuple[int, int]] = []
        for a, b in sorted(zip(first[keep].tolist(), last[keep].tolist())):
            if runs and a <= runs[-1][1] + 1:
                runs[-1] = (runs[-1][0], max(runs[-1][1], b))
            else:
                runs.append((a, b))
        return runs

    def union_size(self, lower: np.ndarray, upper: np.ndarray) -> int:
        """How many values at least one of the boxes admits."""
        return sum(b - a + 1 for a, b in self.merged_spans(lower, upper))

    def describe(self, lower: np.ndarray, upper: np.ndarray) -> str:
        """The values the boxes admit, in a few characters: ``{12..15}``, ``(0.5, 3]``."""
        return " | ".join(self._run(a, b) for a, b in self.merged_spans(lower, upper)) or "{}"

    def _run(self, first: int, last: int) -> str:
        if self.points is None:
            a, b = self.low + first, self.low + last
            return f"{{{a:g}}}" if a == b else f"{{{a:g}..{b:g}}}"
        left = self.low if first == 0 else self.points[first - 1]
        bracket = "[" if first == 0 and np.isfinite(self.low) else "("
        right = self.points[last] if last < self.size - 1 else self.high
        return f"{bracket}{left:g}, {right:g}]"


@dataclass(frozen=True)
class GroupAttribute:
    """A one-hot group (value k: member k is 1, the others 0) or an at-most-one group (the
    same, plus value m: every member 0)."""

    name: str
    columns: np.ndarray
    members: tuple[str, ...]
    exactly_one: bool

    @property
    def size(self) -> int:
        return len(self.members) + (0 if self.exactly_one else 1)

    def admitted(self, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """``(K, size)``: which configurations each box admits."""
        can0, can1 = FeatureSchema.binary_options(lower[:, self.columns], upper[:, self.columns])
        blocked0 = ~can0
        n_blocked0 = blocked0.sum(axis=1, keepdims=True)
        # member k alone is 1: k can be 1, every other member can be 0
        alone = can1 & (n_blocked0 - blocked0 == 0)
        if self.exactly_one:
            return alone
        return np.column_stack([alone, n_blocked0[:, 0] == 0])

    def counts(self, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        return self.admitted(lower, upper).sum(axis=1)

    def union_size(self, lower: np.ndarray, upper: np.ndarray) -> int:
        return int(self.admitted(lower, upper).any(axis=0).sum())

    def describe(self, lower: np.ndarray, upper: np.ndarray) -> str:
        admitted = self.admitted(lower, upper).any(axis=0)
        names = [*self.members, "none"]
        return "{" + ", ".join(n for n, ok in zip(names, admitted) if ok) + "}"


@dataclass(frozen=True)
class GapAttribute:
    """A numeric column's values (``value``), and last the gap, which the 0/1 feature in
    column ``gap`` marks."""

    name: str
    value: ScalarAttribute
    gap: int

    @property
    def size(self) -> int:
        return self.value.size + 1

    def admitted(self, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """``(K, size)``: which values (then the gap) each box admits."""
        can0, can1 = FeatureSchema.binary_options(lower[:, [self.gap]], upper[:, [self.gap]])
        first, last = self.value.spans(lower, upper)
        index = np.arange(self.value.size)
        values = (index >= first[:, None]) & (index <= last[:, None]) & can0
        return np.column_stack([values, can1[:, 0]])

    def counts(self, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        can0, can1 = FeatureSchema.binary_options(lower[:, [self.gap]], upper[:, [self.gap]])
        return np.where(can0[:, 0], self.value.counts(lower, upper), 0) + can1[:, 0]

    def union_size(self, lower: np.ndarray, upper: np.ndarray) -> int:
        return int(self.admitted(lower, upper).any(axis=0).sum())

    def describe(self, lower: np.ndarray, upper: np.ndarray) -> str:
        can0, can1 = FeatureSchema.binary_options(lower[:, [self.gap]], upper[:, [self.gap]])
        parts = [self.value.describe(lower[can0[:, 0]], upper[can0[:, 0]])
                 ] if can0.any() else []
        return " | ".join([p for p in parts if p != "{}"] + (["gap"] if can1.any() else [])
                          ) or "{}"


Attribute = ScalarAttribute | GroupAttribute | GapAttribute


def check_cuts(schema: FeatureSchema, names: list[str], cuts: list[np.ndarray],
               declared: set[str] | None = None) -> None:
    """Refuse a cut outside a column's declared range: ``low <= cut < high`` is needed for
    both sides of the split to hold a value. ``declared`` names the columns the user's
    schema described, so that a column it left out (bound as binary) is reported as
    missing rather than as mis-declared. Raises `SchemaError`."""
    for name, col_cuts in zip(names, cuts):
        spec = schema.features.get(name)
        if spec is None or not col_cuts.size:
            continue
        outside = col_cuts[(col_cuts < spec.low) | (col_cuts >= spec.high)]
        if not outside.size:
            continue
        if declared is not None and name not in declared and spec.kind == "binary":
            raise SchemaError(f"the schema declares no domain for column {name!r}, which the "
                              f"model splits at {outside[0]:g}; list it under 'numerical' or "
                              "'ordinal' with its range")
        raise SchemaError(f"the model splits column {name!r} at {outside[0]:g}, outside its "
                          f"declared {spec.kind} range [{spec.low:g}, {spec.high:g}]; fix the "
                          "schema's range")


def build_attributes(schema: FeatureSchema, cuts: list[np.ndarray],
                     gaps: dict[str, str] | None = None) -> list[Attribute]:
    """The attributes of a complete ``schema`` (groups first, then the other columns in
    order), with numerical columns discretised at ``cuts`` (each column's sorted distinct
    split points, checked by `check_cuts`). ``gaps`` maps a numeric column to the binary
    column that marks its gaps (`treeleaks.ir.inputs.InputMap.gaps`): the two make one
    `GapAttribute`. Raises `SchemaError` when an ordinal column the model cuts has no finite
    range."""
    attributes, grouped = _group_attributes(schema)
    marks = _gap_marks(schema, gaps or {}, grouped)
    for j, (name, spec) in enumerate(schema.features.items()):
        if j in grouped or j in marks.values():
            continue
        attributes.append(_column_attribute(name, j, spec, np.asarray(cuts[j], dtype=np.float64)))
        if j in marks:
            attributes[-1] = GapAttribute(name, attributes[-1], marks[j])
    return attributes


def _group_attributes(schema: FeatureSchema) -> tuple[list[Attribute], set[int]]:
    """One attribute per one-hot or at-most-one group, and the columns they take."""
    names = schema.names
    attributes: list[Attribute] = []
    grouped: set[int] = set()
    for cols, exactly_one in schema.group_indices():
        members = tuple(names[c] for c in cols)
        label = "one-hot" if exactly_one else "at-most-one"
        attributes.append(GroupAttribute(f"{label}({', '.join(members)})", cols, members,
                                         exactly_one))
        grouped.update(cols.tolist())
    return attributes, grouped


def _column_attribute(name: str, j: int, spec: FeatureSpec,
                      col_cuts: np.ndarray) -> ScalarAttribute:
    """Column ``j``'s attribute: its whole values when binary or ordinal with a finite
    range, else the model's intervals between its cuts ``col_cuts``."""
    if spec.kind in ("binary", "ordinal") and np.isfinite([spec.low, spec.high]).all():
        return ScalarAttribute(name, j, spec.kind, np.ceil(spec.low), np.floor(spec.high))
    if spec.kind == "ordinal" and col_cuts.size:
        raise SchemaError(f"ordinal column {name!r} is split by the model but the schema "
                          "gives it no finite range; give its [low, high] under 'ordinal'")
    # numerical (or an unsplit column of unknown range): the model's intervals
    end = spec.high if np.isfinite(spec.high) else (
        col_cuts[-1] + 1 if col_cuts.size else 0.0)
    return ScalarAttribute(name, j, spec.kind, spec.low, spec.high, np.append(col_cuts, end))


def _gap_marks(schema: FeatureSchema, gaps: dict[str, str], grouped: set[int]
               ) -> dict[int, int]:
    """``gaps`` as column indices: each value column to its binary gap column, both
    outside any group (a schema given by hand may have made them something else)."""
    index = {name: j for j, name in enumerate(schema.names)}
    return {index[value]: index[gap] for value, gap in gaps.items()
            if value in index and gap in index and schema.features[gap].kind == "binary"
            and not {index[value], index[gap]} & grouped}


def attribute_counts(attributes: list[Attribute], lower: np.ndarray,
                     upper: np.ndarray) -> np.ndarray:
    """``(K, n_attributes)``: how many values of each attribute each box admits."""
    out = np.empty((lower.shape[0], len(attributes)), dtype=np.int64)
    for a, attribute in enumerate(attributes):
        out[:, a] = attribute.counts(lower, upper)
    return out


def box_count(attributes: list[Attribute], lower: np.ndarray, upper: np.ndarray) -> int:
    """The exact number of attribute vectors one box (1-D bounds) admits, as a Python int
    (it can exceed 2^63 on wide schemas)."""
    return math.prod(attribute_counts(attributes, lower[None], upper[None])[0].tolist())
