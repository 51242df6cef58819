"""Tables as PrivBayes reads them: one integer code per attribute value.

The codes are fitted on the public population, never on the private rows, so encoding
spends no privacy budget. A numerical column with more than ``max_values`` distinct values
is cut into quantile bins of the population (PrivBayes models categorical attributes only):
the attack's predicates then say "in this bin", and the notes say which columns were binned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from treeleaks.runtime.errors import TreeleaksError

MAX_VALUES = 20  # a numerical column with more distinct values is binned
BINS = 10


class TableMismatchError(TreeleaksError):
    """The private table and the population do not describe the same attributes."""


def found_in(rows: np.ndarray, table: np.ndarray) -> np.ndarray:
    """For each row of ``rows`` (codes), whether ``table`` holds it."""
    known = {row.tobytes() for row in np.ascontiguousarray(table)}
    return np.array([row.tobytes() in known for row in np.ascontiguousarray(rows)], dtype=bool)


@dataclass
class Encoding:
    """Per column, the population's values (or bin edges) and the code of each."""

    columns: list[str]
    values: dict[str, np.ndarray] = field(default_factory=dict)
    edges: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def fit(cls, population: pd.DataFrame, max_values: int = MAX_VALUES,
            bins: int = BINS) -> Encoding:
        """Categories from the population; quantile bins for wide numerical columns."""
        enc = cls(list(population.columns))
        for col in enc.columns:
            series = population[col]
            if pd.api.types.is_numeric_dtype(series) and series.nunique() > max_values:
                quantiles = np.quantile(series.dropna(), np.linspace(0, 1, bins + 1)[1:-1])
                enc.edges[col] = np.unique(quantiles)
            else:
                enc.values[col] = np.sort(series.astype(str).unique())
        return enc

    @property
    def sizes(self) -> list[int]:
        return [len(self.edges[c]) + 1 if c in self.edges else len(self.values[c])
                for c in self.columns]

    @property
    def notes(self) -> list[str]:
        return [f"column {c!r} has too many distinct values for PrivBayes: binned into "
                f"{len(self.edges[c]) + 1} quantile bins of the population"
                for c in self.columns if c in self.edges]

    def codes(self, frame: pd.DataFrame, what: str) -> np.ndarray:
        """The frame's rows as codes; a value the population lacks is one clear error."""
        self._check_columns(frame, what)
        out = np.empty((len(frame), len(self.columns)), dtype=np.int64)
        for j, col in enumerate(self.columns):
            if col in self.edges:
                out[:, j] = np.searchsorted(self.edges[col], frame[col].to_numpy(float),
                                            side="right")
            else:
                out[:, j] = self._category_codes(frame[col], col, what)
        return out

    def _check_columns(self, frame: pd.DataFrame, what: str) -> None:
        """One line when the frame's columns are not the population's."""
        missing = [c for c in self.columns if c not in frame.columns]
        extra = [c for c in frame.columns if c not in self.columns]
        if missing or extra:
            raise TableMismatchError(
                f"the {what} and the population must have the same columns: "
                + _differences(missing, extra) + "; give both files the same header")

    def _category_codes(self, series: pd.Series, col: str, what: str) -> np.ndarray:
        """A categorical column's codes; one line for a value the population lacks."""
        values = series.astype(str).to_numpy()
        pos = np.searchsorted(self.values[col], values)
        pos = np.minimum(pos, len(self.values[col]) - 1)
        unknown = self.values[col][pos] != values
        if unknown.any():
            raise TableMismatchError(
                f"the {what} has value {values[unknown][0]!r} in column {col!r}, which "
                "no population row has; the population must contain every private row")
        return pos


    def decode(self, codes: np.ndarray) -> dict[str, str]:
        """One row's codes as readable values; a bin reads as its population interval."""
        out = {}
        for col, code in zip(self.columns, codes):
            if col not in self.edges:
                out[col] = str(self.values[col][code])
                continue
            edges = self.edges[col]
            low = f"[{edges[code - 1]:g}" if code > 0 else "(-inf"
            out[col] = f"{low}, {edges[code]:g})" if code < len(edges) else f"{low}, inf)"
        return out


def _differences(missing: list[str], extra: list[str]) -> str:
    """The columns a table lacks and those it has beyond the population's, in words."""
    return "; ".join(part for part in (
        f"missing {missing}" if missing else "",
        f"not in the population {extra}" if extra else "") if part)
