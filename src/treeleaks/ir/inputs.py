"""The custodian's columns and the model features they become.

A model fitted on a real table seldom sees that table's columns as they are: a pipeline's
encoder spreads a text column over one 0/1 feature per category, an imputer fills gaps, and
the readers of boosters turn a gap or a native categorical split into features the IR can
split on (`treeleaks.frontends.gaps`). An `InputMap` records, column by column, how the
custodian's values become the model's features, so their rows can be encoded to be scored
and every result decoded back into the custodian's own columns: categories as their values,
gaps as gaps. Columns it does not name are the model's features as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

GAP = "gap"  # how a gap is shown where a value is expected (a CSV writes NaN as empty)


@dataclass(frozen=True)
class NumberColumn:
    """A numeric column read by the model as one feature, a gap marked by a 0/1 feature.

    ``gap`` is the index of the feature that is 1 exactly when the value is missing (a
    pipeline's missing indicator, or the one a reader adds for a booster's gap routing);
    the value feature then holds ``fill`` (an imputer's fill value) or any value. ``fill``
    without ``gap``: gaps were filled and nothing tells a filled cell from a real one.
    """

    name: str
    feature: int
    gap: int | None = None
    fill: float | None = None

    @property
    def features(self) -> tuple[int, ...]:
        """The model's features this column feeds."""
        return (self.feature,) if self.gap is None else (self.feature, self.gap)

    def encode(self, values: np.ndarray) -> np.ndarray:
        """``(n, len(features))``: the features of each value (NaN a gap)."""
        values = np.asarray(values, dtype=np.float64)
        missing = np.isnan(values)
        if self.gap is None:  # a gap nothing marks: the fill, else left a gap (NaN)
            return (values if self.fill is None else np.where(missing, self.fill, values)
                    )[:, None]
        filled = np.where(missing, 0.0 if self.fill is None else self.fill, values)
        return np.column_stack([filled, missing.astype(np.float64)])

    def decode(self, block: np.ndarray) -> np.ndarray:
        """Each row's value from its features' values; NaN where the gap feature is 1.

        A value the model leaves open (NaN: no split reads it) in a row that is no gap
        takes the imputer's fill when there is one, else 0 (any value routes alike): NaN
        would read as a gap, which the row is not.
        """
        values = np.asarray(block[:, 0], dtype=np.float64)
        if self.gap is None:
            return values
        values = np.where(np.isnan(values), 0.0 if self.fill is None else self.fill, values)
        return np.where(block[:, 1] > 0.5, np.nan, values)


@dataclass(frozen=True)
class OneHotColumn:
    """A categorical column read as one 0/1 feature per category.

    ``features[i]`` is 1 exactly when the value is ``categories[i]``. When every one is 0
    the value is ``other``: a category the encoder dropped, or one it never saw (an
    unknown value, `UNSEEN`); with ``exactly_one`` no row can be all 0. A gap is a category
    like any other, written NaN. ``fallback`` lists the categories a row may hold that the
    table need not have held (a gap, where the file cannot tell whether the column had
    any): a rebuilt row takes one only where the model leaves it no other.
    """

    name: str
    features: tuple[int, ...]
    categories: tuple[Any, ...]
    exactly_one: bool = True
    other: Any = None
    fallback: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if len(self.features) != len(self.categories):
            raise ValueError(f"column {self.name!r}: {len(self.features)} features but "
                             f"{len(self.categories)} categories")

    def encode(self, values: np.ndarray) -> np.ndarray:
        """``(n, K)`` 0/1: which category each value is (all 0 for any other)."""
        out = np.zeros((len(values), len(self.categories)), dtype=np.float64)
        for j, category in enumerate(self.categories):
            out[:, j] = [_same(value, category) for value in values]
        return out

    def decode(self, block: np.ndarray) -> np.ndarray:
        """Each row's category: the one whose feature is 1 (``other`` when none is; NaN when
        none is and some feature is unknown, NaN)."""
        out = np.empty(block.shape[0], dtype=object)
        unknown = np.isnan(block).any(axis=1)
        out[:] = [np.nan if open_ else self.other for open_ in unknown]
        if block.shape[1]:
            filled = np.nan_to_num(block, nan=0.0)
            best = filled.argmax(axis=1)
            hot = filled[np.arange(block.shape[0]), best] > 0.5
            categories = np.empty(len(self.categories), dtype=object)
            categories[:] = list(self.categories)
            out[hot] = categories[best[hot]]
        return out


@dataclass(frozen=True)
class CodedColumn:
    """A categorical column read as one feature holding each category's code.

    ``categories[c]`` is the category coded ``c`` (an ordinal encoder's order, or a
    booster's own numbering); a value of no category is coded ``unknown`` when the encoder
    gives it one. A gap is coded ``missing`` (an encoder's ``encoded_missing_value``; NaN:
    passed on as a gap), and ``gap`` is the feature that is 1 exactly on a gap when the
    model routes gaps itself (`treeleaks.frontends.gaps`); the code feature then holds 0.
    """

    name: str
    feature: int
    categories: tuple[Any, ...]
    unknown: float | None = None
    missing: float | None = None
    gap: int | None = None

    @property
    def features(self) -> tuple[int, ...]:
        """The model's features this column feeds."""
        return (self.feature,) if self.gap is None else (self.feature, self.gap)

    @property
    def codes(self) -> tuple[float, float]:
        """The lowest and highest code a training row holds (a gap's code among them)."""
        extra = [] if self.missing is None or math.isnan(self.missing) else [self.missing]
        return min([0.0, *extra]), max([len(self.categories) - 1.0, *extra])

    def encode(self, values: np.ndarray) -> np.ndarray:
        """``(n, len(features))``: each value's code (``unknown``, or NaN, for any other;
        ``missing`` for a gap, or ``unknown`` when training held none), then whether it is
        a gap."""
        unknown = np.nan if self.unknown is None else self.unknown
        gap = unknown if self.missing is None else self.missing
        codes = np.asarray([next(
            (c for c, category in enumerate(self.categories) if _same(value, category)),
            gap if _is_gap(value) else unknown) for value in values], dtype=np.float64)
        if self.gap is None:
            return codes[:, None]
        missing = np.isnan(codes)
        return np.column_stack([np.where(missing, 0.0, codes), missing.astype(np.float64)])

    def decode(self, block: np.ndarray) -> np.ndarray:
        """Each row's category, from its code rounded to the nearest code's (NaN where the
        gap feature is 1 or the code is the gaps'; a code the model leaves open, NaN, in a
        row that is no gap takes the first category)."""
        codes = [float(c) for c in range(len(self.categories))]
        labels: list[Any] = list(self.categories)
        if self.missing is not None and not math.isnan(self.missing):
            codes.append(self.missing)
            labels.append(np.nan)
        values = np.nan_to_num(np.asarray(block[:, 0], dtype=np.float64), nan=0.0)
        nearest = np.abs(values[:, None] - np.asarray(codes)[None, :]).argmin(axis=1)
        out = np.empty(block.shape[0], dtype=object)
        out[:] = [labels[c] for c in nearest]
        if self.gap is not None:
            out[block[:, 1] > 0.5] = np.nan
        return out


InputColumn = NumberColumn | OneHotColumn | CodedColumn


@dataclass(frozen=True)
class InputMap:
    """How each of the custodian's columns becomes the model's features.

    ``columns`` name the custodian's columns in their order; ``feature_names`` are the
    model's. A model feature no column feeds is passed through under its own name.
    """

    columns: tuple[InputColumn, ...]
    feature_names: tuple[str, ...]
    steps: tuple[str, ...] = field(default=())  # the steps read, for messages ("OneHotEncoder")

    def __post_init__(self) -> None:
        used = [f for column in self.columns for f in column.features]
        if len(used) != len(set(used)) or any(
                not 0 <= f < len(self.feature_names) for f in used):
            raise ValueError("each model feature is fed by at most one column")

    @property
    def passed(self) -> list[int]:
        """The model features no column feeds, each its own column."""
        used = {f for column in self.columns for f in column.features}
        return [f for f in range(len(self.feature_names)) if f not in used]

    @property
    def names(self) -> list[str]:
        """The custodian's columns, those the map names then those passed through."""
        return [c.name for c in self.columns] + [self.feature_names[f] for f in self.passed]

    def encode(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The custodian's rows as the model's features (other columns, such as the label,
        kept after them)."""
        import pandas as pd

        out = np.zeros((len(frame), len(self.feature_names)), dtype=np.float64)
        for column in self.columns:
            values = frame[column.name].to_numpy()
            if isinstance(column, NumberColumn):
                values = pd.to_numeric(frame[column.name], errors="raise").to_numpy(
                    dtype=np.float64, na_value=np.nan)
            out[:, list(column.features)] = column.encode(values)
        for f in self.passed:
            out[:, f] = pd.to_numeric(frame[self.feature_names[f]]).to_numpy(np.float64)
        encoded = pd.DataFrame(out, columns=list(self.feature_names), index=frame.index)
        fed = set(self.names)
        rest = [c for c in frame.columns if c not in fed and c not in encoded.columns]
        return pd.concat([encoded, frame[rest]], axis=1)

    def decode(self, rows: pd.DataFrame) -> pd.DataFrame:
        """Rows over the model's features as the custodian's columns (other columns, such
        as the label, kept after them)."""
        import pandas as pd

        features = rows[list(self.feature_names)].to_numpy(dtype=np.float64)
        out: dict[str, Any] = {}
        for column in self.columns:
            out[column.name] = column.decode(features[:, list(column.features)])
        for f in self.passed:
            out[self.feature_names[f]] = features[:, f]
        decoded = pd.DataFrame(out, index=rows.index)
        rest = [c for c in rows.columns if c not in self.feature_names and c not in out]
        return pd.concat([decoded, rows[rest]], axis=1)

    def summary(self) -> str:
        """The custodian's columns in a line: each with what it holds beyond a number."""
        def about(column: InputColumn) -> str:
            if isinstance(column, NumberColumn):
                return column.name + (" (gaps)" if column.gap is not None else "")
            known = [c for c in column.categories if not _is_gap(c)]
            gaps = len(known) < len(column.categories) or (
                isinstance(column, CodedColumn) and column.missing is not None)
            possible = isinstance(column, OneHotColumn) and any(
                _is_gap(c) for c in column.fallback)
            said = ", gaps possible" if possible else ", gaps" if gaps else ""
            return f"{column.name} ({len(known)} categories{said})"
        shown = [about(c) for c in self.columns] + [self.feature_names[f] for f in self.passed]
        return f"{len(shown)}: {', '.join(shown)}"

    def maybe_filled(self, lower: pd.DataFrame, upper: pd.DataFrame) -> pd.DataFrame:
        """Per column an imputer filled with no indicator: which rows' bounds on its feature
        (``lower < x <= upper``, over the model's features) hold the fill, so the row's
        value there may have been a gap."""
        import pandas as pd

        out = {}
        for column in self.columns:
            if isinstance(column, NumberColumn) and column.gap is None \
                    and column.fill is not None:
                name = self.feature_names[column.feature]
                low, high = lower[name].to_numpy(), upper[name].to_numpy()
                out[column.name] = (low < column.fill) & (column.fill <= high)
        return pd.DataFrame(out, index=lower.index)

    def condition_text(self, feature: str, op: str, threshold: float) -> str | None:
        """A split ``feature op threshold`` in the custodian's words (``island = Biscoe``,
        ``age is missing``, ``size in {S, M}``), or None where the feature is the column's
        own value (its numbers are already in the column's units)."""
        if feature not in self.feature_names:
            return None
        f = self.feature_names.index(feature)
        above = op == ">"
        for column in self.columns:
            if isinstance(column, OneHotColumn) and f in column.features:
                return _category_text(column, f, threshold, above)
            if isinstance(column, NumberColumn | CodedColumn) and f == column.gap:
                return f"{column.name} is {'' if above else 'not '}missing"
            if isinstance(column, CodedColumn) and f == column.feature:
                return _codes_text(column, threshold, above)
        return None

    def groups(self) -> list[tuple[list[str], bool]]:
        """The one-hot groups of the model's features: per categorical column of two or
        more features, their names and whether exactly one is 1."""
        return [([self.feature_names[f] for f in c.features], c.exactly_one)
                for c in self.columns if isinstance(c, OneHotColumn) and len(c.features) > 1]

    def fallbacks(self) -> list[str]:
        """The model features of the categories a rebuilt row takes only where the model
        leaves it no other (`OneHotColumn.fallback`)."""
        return [self.feature_names[f] for c in self.columns if isinstance(c, OneHotColumn)
                for f, category in zip(c.features, c.categories, strict=True)
                if any(_same(category, other) for other in c.fallback)]

    def coded(self) -> dict[str, tuple[float, float]]:
        """The model features that hold a category's code, each with its lowest and highest
        code."""
        return {self.feature_names[c.feature]: c.codes for c in self.columns
                if isinstance(c, CodedColumn)}

    def gaps(self) -> dict[str, str]:
        """Each numeric feature whose gaps a 0/1 feature marks, with that feature's name."""
        return {self.feature_names[c.feature]: self.feature_names[c.gap] for c in self.columns
                if isinstance(c, NumberColumn) and c.gap is not None}

    def binary(self) -> list[str]:
        """The model features that hold only 0 or 1 (categories' and gaps' indicators)."""
        names = [self.feature_names[f] for c in self.columns if isinstance(c, OneHotColumn)
                 for f in c.features]
        return names + [self.feature_names[c.gap] for c in self.columns
                        if isinstance(c, NumberColumn | CodedColumn) and c.gap is not None]


def _same(value: Any, category: Any) -> bool:
    """Whether a table's value is a category (a gap matches a NaN category; a number
    matches a category written as that number, as a CSV reads R's factor levels "0", "1")."""
    if _is_gap(value) or _is_gap(category):
        return _is_gap(value) and _is_gap(category)
    if isinstance(category, str) and isinstance(value, int | float | np.number) and \
            not isinstance(value, bool):
        return as_number(category) == float(value)
    return bool(value == category)


def as_number(text: str) -> float | None:
    """The number a text reads as, or None (a category or class written as a number, as R
    writes a factor's levels, matches that number)."""
    try:
        return float(text)
    except ValueError:
        return None


def _is_gap(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or (
        type(value).__name__ in ("NAType", "NaTType"))


def _category_text(column: OneHotColumn, f: int, threshold: float, above: bool
                   ) -> str | None:
    """A split on category feature ``f`` as ``column = category`` (``≠`` on the side
    below), or None for a threshold outside [0, 1)."""
    if not 0.0 <= threshold < 1.0:
        return None
    category = column.categories[column.features.index(f)]
    return f"{column.name} {'=' if above else '≠'} {_shown(category)}"


def _codes_text(column: CodedColumn, threshold: float, above: bool) -> str:
    """A split on a column's codes as the set of its categories on the split's side
    (``above``: over the threshold), a gap's code among them when it is one."""
    low, high = column.codes
    shown = [_shown(column.categories[int(c)] if 0 <= c < len(column.categories)
                    else np.nan) for c in np.arange(low, high + 1)
             if (c > threshold) == above and (
                 0 <= c < len(column.categories) or c == column.missing)]
    return f"{column.name} in {{" + ", ".join(shown) + "}"


def _shown(category: Any) -> str:
    """A category as a condition writes it (a gap as `GAP`)."""
    return GAP if _is_gap(category) else str(category)
