"""FeatureSchema: what the adversary knows about the columns' domains.

Kinds: ``binary`` (0/1), ``ordinal`` (integers in [low, high]), ``numerical`` (reals in
[low, high]), ``unknown`` (never split on and not described: the model says nothing about
it). Groups of binary columns: one-hot (exactly one is 1) and at-most-one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from treeleaks.ir.json_files import read_json
from treeleaks.ir.model import ModelFormatError, ReleasedModel
from treeleaks.runtime.errors import SchemaError

if TYPE_CHECKING:  # pandas is needed only to read a frame
    import pandas as pd

KINDS = ("binary", "ordinal", "numerical", "unknown")
JSON_KEYS = ("one_hot_groups", "at_most_one_groups", "numerical", "ordinal")

# how far (float32 rounding) a cut may sit from where a framework cuts a 0/1 column
ZERO_ONE_SLACK = 1e-6


def cuts_zero_one(threshold: float) -> bool:
    """Whether a lone threshold is where a framework cuts a 0/1 column.

    The midpoint 0.5 (scikit-learn), just above 0 (LightGBM stores 1e-35) or just below 1
    (XGBoost's float32 ``x < 1`` read as ``x <= 0.99999994``).
    """
    return (abs(threshold - 0.5) <= ZERO_ONE_SLACK or 0 < threshold <= ZERO_ONE_SLACK
            or 1 - ZERO_ONE_SLACK <= threshold < 1)


@dataclass(frozen=True)
class FeatureSpec:
    """One column's domain: its kind (one of `KINDS`) and, when ordered, its range."""

    kind: str
    low: float = -np.inf
    high: float = np.inf


@dataclass
class FeatureSchema:
    """Per-column domains and groups.

    Build one with `from_frame`, `from_dict`, `from_json`, `infer` or `for_model` rather
    than by hand.

    Parameters
    ----------
    features : dict of str to FeatureSpec
        Each column's kind and range, in column order.
    one_hot_groups : list of list of str, optional
        Groups of binary columns of which exactly one is 1.
    at_most_one_groups : list of list of str, optional
        Groups of binary columns of which at most one is 1.
    complete : bool, default True
        Whether the schema lists every column (from a DataFrame or bound to a model). A
        partial schema (from JSON) describes only some columns, and `bind` decides the rest.
    """

    features: dict[str, FeatureSpec]
    one_hot_groups: list[list[str]] = field(default_factory=list)
    at_most_one_groups: list[list[str]] = field(default_factory=list)
    complete: bool = True

    # --- construction --------------------------------------------------------------------

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        one_hot_groups: list[list[str]] | None = None,
        at_most_one_groups: list[list[str]] | None = None,
    ) -> FeatureSchema:
        """Infer each column's kind and range from data.

        A column of 0s and 1s is binary, one of integers ordinal, any other numerical; the
        range is the data's minimum and maximum.

        Parameters
        ----------
        frame : pandas.DataFrame
            The data, every column numeric.
        one_hot_groups : list of list of str, optional
            Groups of binary columns of which exactly one is 1.
        at_most_one_groups : list of list of str, optional
            Groups of binary columns of which at most one is 1.

        Returns
        -------
        FeatureSchema
            A complete schema over the frame's columns.

        Raises
        ------
        SchemaError
            A group has fewer than two columns, shares a column with another group, or
            holds a column that is not binary.
        """
        import pandas as pd

        features = {}
        for name in frame.columns:
            values = pd.to_numeric(frame[name], errors="raise").to_numpy(dtype=np.float64)
            if np.isin(values, (0.0, 1.0)).all():
                features[str(name)] = FeatureSpec("binary", 0.0, 1.0)
            elif np.array_equal(values, np.round(values)):
                features[str(name)] = FeatureSpec("ordinal", values.min(), values.max())
            else:
                features[str(name)] = FeatureSpec("numerical", values.min(), values.max())
        schema = cls(features, list(one_hot_groups or []), list(at_most_one_groups or []))
        schema._check_groups()
        return schema

    @classmethod
    def from_dict(cls, data: Any) -> FeatureSchema:
        """Read a partial schema in the ``--schema`` JSON form, every field checked.

        Columns not named are binary until `bind` decides them against a model.

        Parameters
        ----------
        data : dict
            The parsed JSON: ``numerical`` and ``ordinal`` map names to ``[low, high]``;
            ``one_hot_groups`` and ``at_most_one_groups`` list groups of names.

        Returns
        -------
        FeatureSchema
            A partial schema (``complete`` is False).

        Raises
        ------
        SchemaError
            A field is malformed, a column is both numerical and ordinal, or a group is
            invalid.
        """
        from treeleaks.ir.formats import parse_schema  # pydantic: loaded for a schema file only

        record = parse_schema(data, SchemaError)
        features: dict[str, FeatureSpec] = {}
        for kind in ("numerical", "ordinal"):
            for name, (low, high) in getattr(record, kind).items():
                if name in features:
                    raise SchemaError(f"column {name!r} is listed as both numerical and ordinal")
                features[name] = FeatureSpec(kind, float(low), float(high))
        groups = {key: [list(g) for g in getattr(record, key)] for key in JSON_KEYS[:2]}
        for group in groups["one_hot_groups"] + groups["at_most_one_groups"]:
            for name in group:
                kind = features.get(name, FeatureSpec("binary")).kind
                if kind != "binary":
                    raise SchemaError(f"group column {name!r} must be binary, not {kind}")
                features[name] = FeatureSpec("binary", 0.0, 1.0)
        schema = cls(features, groups["one_hot_groups"], groups["at_most_one_groups"], False)
        schema._check_groups()
        return schema

    @classmethod
    def from_json(cls, path: str | Path) -> FeatureSchema:
        """Read a partial schema from a JSON file in the ``--schema`` form (see `from_dict`).

        Parameters
        ----------
        path : str or pathlib.Path
            The JSON file.

        Returns
        -------
        FeatureSchema
            A partial schema (``complete`` is False).

        Raises
        ------
        SchemaError
            The file cannot be read, is not JSON, or does not describe a valid schema.
        """
        return cls.from_dict(read_json(Path(path), "schema", SchemaError))

    @classmethod
    def infer(cls, model: ReleasedModel) -> FeatureSchema:
        """Infer the schema the model alone implies, from its splits.

        A column split at one threshold where the frameworks cut a 0/1 column
        (`cuts_zero_one`) is binary; an unsplit column is unknown; any other is numerical.
        A column split at several points inside (0, 1), such as a ratio, is numerical, and
        so is a two-valued column split elsewhere (a scaled flag, -0.04 and 0.05 cut at
        0.003): calling either binary would fill values the data never held. A model
        with an input map (`treeleaks.ir.inputs`) adds what it says: its categories' and
        gaps' indicators are binary, each categorical column's features a group.

        Parameters
        ----------
        model : ReleasedModel
            The model whose splits are read.

        Returns
        -------
        FeatureSchema
            A complete schema over the model's features, with unbounded ranges.
        """
        features = {name: _spec_from_splits(thresholds)
                    for name, thresholds in zip(model.feature_names, model.thresholds())}
        if model.inputs is None:
            return cls(features)
        # the model's own input map: its categories' and gaps' indicators are 0/1, and each
        # categorical column's features a group
        for name in model.inputs.binary():
            features[name] = FeatureSpec("binary", 0.0, 1.0)
        for name, (low, high) in model.inputs.coded().items():  # an ordinal encoder's codes
            features[name] = FeatureSpec("ordinal", low, high)
        groups = model.inputs.groups()
        return cls(features, [g for g, exactly in groups if exactly],
                   [g for g, exactly in groups if not exactly])

    def completed(self, frame: pd.DataFrame) -> FeatureSchema:
        """Extend this schema over every column of ``frame``.

        Described columns keep their spec and groups; the others are inferred from the data
        as `from_frame` does.

        Parameters
        ----------
        frame : pandas.DataFrame
            The data, every column numeric.

        Returns
        -------
        FeatureSchema
            A complete schema over the frame's columns.
        """
        inferred = FeatureSchema.from_frame(frame, self.one_hot_groups,
                                            self.at_most_one_groups)
        features = {name: self.features.get(name, spec)
                    for name, spec in inferred.features.items()}
        return FeatureSchema(features, inferred.one_hot_groups, inferred.at_most_one_groups)

    @classmethod
    def for_model(cls, model: ReleasedModel) -> FeatureSchema:
        """Read the domains a model's file records, else infer them from its splits.

        A DP forest's trainer drew its splits from public domains and its file records them;
        other models fall back to `infer`.

        Parameters
        ----------
        model : ReleasedModel
            The model whose facts and splits are read.

        Returns
        -------
        FeatureSchema
            The recorded schema (partial), or the inferred one.

        Raises
        ------
        SchemaError
            The recorded schema does not parse.
        """
        import json

        recorded = model.facts.get("schema")
        if not recorded:
            return cls.infer(model)
        try:
            return cls.from_dict(json.loads(recorded))
        except (TypeError, ValueError) as exc:
            raise SchemaError(f"the model's recorded schema does not parse ({exc}); give "
                              "the schema (--schema)") from None

    def to_dict(self) -> dict[str, Any]:
        """Write the schema in the ``--schema`` JSON form that `from_dict` reads.

        Returns
        -------
        dict
            ``one_hot_groups``, ``at_most_one_groups``, and ``numerical`` and ``ordinal``
            mapping names to ``[low, high]``.
        """
        def bounds(kind: str) -> dict[str, list[float]]:
            return {n: [s.low, s.high] for n, s in self.features.items() if s.kind == kind}

        return {
            "one_hot_groups": self.one_hot_groups,
            "at_most_one_groups": self.at_most_one_groups,
            "numerical": bounds("numerical"),
            "ordinal": bounds("ordinal"),
        }

    # --- binding to a model --------------------------------------------------------------

    def bind(self, model: ReleasedModel) -> FeatureSchema:
        """Bind the schema to a model: a complete schema over exactly its features.

        Columns a partial schema leaves out are binary. The splits are checked against the
        domains, and for exact counts every leaf holding rows must admit a row.

        Parameters
        ----------
        model : ReleasedModel
            The model the schema describes.

        Returns
        -------
        FeatureSchema
            A complete schema in the model's column order.

        Raises
        ------
        SchemaError
            The schema names columns the model lacks, a complete schema misses one of its
            features, a binary column is split outside (0, 1), or a leaf holding training
            rows admits no row under the schema.
        ModelFormatError
            A leaf holding rows has contradictory splits: the model file is corrupt.
        """
        model_names = list(model.feature_names)
        self._check_names(model)
        features = {}
        for name, thresholds in zip(model_names, model.thresholds()):
            spec = self.features.get(name, FeatureSpec("binary", 0.0, 1.0))
            if spec.kind == "binary" and not ((thresholds > 0) & (thresholds < 1)).all():
                outside = thresholds[(thresholds <= 0) | (thresholds >= 1)]
                raise SchemaError(
                    f"column {name!r} is split at {outside[0]:g}, so it is not binary; "
                    "list it under 'numerical' or 'ordinal' with its range"
                )
            features[name] = spec
        bound = FeatureSchema(features, self.one_hot_groups, self.at_most_one_groups, True)
        if model.noise is None:
            bound._check_leaves(model)
        return bound

    def _check_names(self, model: ReleasedModel) -> None:
        """The schema's columns and groups must be the model's features.

        A complete schema must also name every one of them.
        """
        model_names = list(model.feature_names)
        extra = self._foreign_names(model_names)
        if extra:
            raise SchemaError(
                f"schema column(s) {', '.join(map(repr, extra[:5]))} are not features of the "
                f"model (it has {model.n_features}: {', '.join(model_names[:5])}"
                f"{', ...' if model.n_features > 5 else ''}); fix the schema's column names"
            )
        if self.complete:
            missing = [n for n in model_names if n not in self.features]
            if missing:
                raise SchemaError(
                    f"the schema does not describe model feature(s) "
                    f"{', '.join(map(repr, missing[:5]))}; give a schema with the model's columns"
                )

    def _foreign_names(self, model_names: list[str]) -> list[str]:
        """The columns the schema or its groups name that are not the model's, in order."""
        extra = [n for n in self.features if n not in set(model_names)]
        extra += [n for g in self.one_hot_groups + self.at_most_one_groups for n in g
                  if n not in set(model_names) and n not in extra]
        return extra

    def _check_leaves(self, model: ReleasedModel) -> None:
        """Every leaf that holds training rows must admit a row.

        Else the counts are not to blame for the INFEASIBLE that follows, and the message
        says what is.
        """
        for t, tree in enumerate(model.trees):
            lower, upper, leaf_of_path = tree.path_boxes(model.n_features)
            admits = np.zeros(tree.n_leaves, dtype=bool)
            admits[leaf_of_path[self.feasible(lower, upper)]] = True
            bad = np.flatnonzero((tree.counts.sum(axis=1) > 0) & ~admits)
            if not bad.size:
                continue
            leaf, rows = bad[0], int(tree.counts[bad[0]].sum())
            path = int(np.flatnonzero(leaf_of_path == leaf)[0])
            where = f"tree {t}, leaf {leaf} holds {rows} training row(s)"
            if not (lower[path] < upper[path]).all():
                raise ModelFormatError(f"{where} but its splits contradict each other, so no "
                                       "row can reach it; the model file is corrupt")
            raise SchemaError(f"{where} but the schema allows no row there: "
                              f"{self._exclusion(lower[path], upper[path])}; fix the schema")

    def _exclusion(self, lower: np.ndarray, upper: np.ndarray) -> str:
        """Which column's domain (or which group) rules out the box ``lower < x <= upper``."""
        for j, (name, spec) in enumerate(self.features.items()):
            alone_lower = np.full((1, len(lower)), -np.inf)
            alone_upper = np.full((1, len(lower)), np.inf)
            alone_lower[0, j], alone_upper[0, j] = lower[j], upper[j]
            if not FeatureSchema({**{n: FeatureSpec("unknown") for n in self.features},
                                  name: spec}).feasible(alone_lower, alone_upper)[0]:
                domain = ("0 or 1" if spec.kind == "binary"
                          else f"{spec.kind} in [{spec.low:g}, {spec.high:g}]")
                return (f"column {name!r} is {domain} but the leaf needs "
                        f"{lower[j]:g} < {name} <= {upper[j]:g}")
        return "the leaf needs a 1 in several columns of a group, or none in a one-hot group"

    def _check_groups(self) -> None:
        seen: set[str] = set()
        for group in self.one_hot_groups + self.at_most_one_groups:
            if len(group) < 2:
                raise SchemaError(f"group {group} needs at least two columns")
            for name in group:
                if name in seen:
                    raise SchemaError(f"column {name!r} appears in more than one group")
                seen.add(name)
                spec = self.features.get(name)
                if spec is not None and spec.kind != "binary":
                    raise SchemaError(f"group column {name!r} must be binary, not {spec.kind}")

    # --- arrays for the solvers ----------------------------------------------------------

    @property
    def names(self) -> list[str]:
        """The column names, in order."""
        return list(self.features)

    def kind_array(self) -> np.ndarray:
        """List each column's kind as an array.

        Returns
        -------
        numpy.ndarray
            The kinds, in column order.
        """
        return np.array([s.kind for s in self.features.values()])

    def range_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """List each column's range as two arrays.

        Returns
        -------
        low : numpy.ndarray
            Each column's lower end, in column order (-inf when unbounded).
        high : numpy.ndarray
            Each column's upper end (inf when unbounded).
        """
        specs = list(self.features.values())
        return np.array([s.low for s in specs]), np.array([s.high for s in specs])

    def group_indices(self) -> list[tuple[np.ndarray, bool]]:
        """List each group by its columns' indices.

        Returns
        -------
        list of tuple of (numpy.ndarray, bool)
            Per group, its column indices and whether exactly one is 1 (one-hot groups
            first, then at-most-one groups).
        """
        index = {n: i for i, n in enumerate(self.features)}
        return [(np.array([index[n] for n in g]), True) for g in self.one_hot_groups] + [
            (np.array([index[n] for n in g]), False) for g in self.at_most_one_groups
        ]

    def feasible(self, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """Tell which boxes hold a value the schema allows.

        Parameters
        ----------
        lower, upper : numpy.ndarray
            The boxes ``lower < x <= upper``, shape ``(K, M)``.

        Returns
        -------
        numpy.ndarray
            Per box, whether it holds an allowed point.
        """
        return self.feasibility()(lower, upper)

    def feasibility(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """Build `feasible` with the schema's arrays computed once.

        For callers that ask thousands of times (`treeleaks.counts.peel`); valid while the
        schema is not changed. Temporaries stay one column of floats at a time: enumeration
        checks millions of boxes.

        Returns
        -------
        callable
            ``feasible(lower, upper)``, as `feasible`.
        """
        kinds = self.kind_array()
        low, high = self.range_arrays()
        binary = kinds == "binary"
        ordinal = np.flatnonzero(kinds == "ordinal")
        numerical = np.flatnonzero(kinds == "numerical")
        groups = self.group_indices()

        def feasible(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
            ok = np.all(lower < upper, axis=1)
            can0, can1 = self.binary_options(lower, upper)
            ok &= np.all(can0[:, binary] | can1[:, binary], axis=1)
            for j in ordinal:
                first = np.maximum(low[j], np.floor(lower[:, j]) + 1)
                ok &= first <= np.minimum(high[j], np.floor(upper[:, j]))
            for j in numerical:
                top = np.minimum(high[j], upper[:, j])
                ok &= np.where(low[j] > lower[:, j], low[j] <= top, lower[:, j] < top)
            for cols, exactly_one in groups:
                ok &= (can1[:, cols] & ~can0[:, cols]).sum(axis=1) <= 1
                if exactly_one:
                    ok &= can1[:, cols].any(axis=1)
            return ok

        return feasible

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """Draw points uniformly from the schema's domain.

        Binary columns are fair coins, a one-hot group one member, an at-most-one group one
        member or none, ordinal and numerical columns uniform over their finite ranges.

        Parameters
        ----------
        n : int
            How many points.
        seed : int, default 0
            Seed of the random generator.

        Returns
        -------
        numpy.ndarray
            The points, shape ``(n, M)``.

        Raises
        ------
        SchemaError
            An ordinal, numerical or unknown column has no finite range.
        """
        rng = np.random.default_rng(seed)
        low, high = self.range_arrays()
        kinds = self.kind_array()
        if not np.isfinite(low[kinds != "binary"]).all() or not np.isfinite(
                high[kinds != "binary"]).all():
            raise SchemaError("sampling the domain needs a finite range for every ordinal, "
                              "numerical or unknown column")
        points = rng.uniform(low, high, size=(n, len(kinds)))
        ordinal = kinds == "ordinal"
        points[:, ordinal] = rng.integers(low[ordinal].astype(np.int64),
                                          high[ordinal].astype(np.int64) + 1,
                                          size=(n, int(ordinal.sum())))
        binary = kinds == "binary"
        points[:, binary] = rng.integers(0, 2, size=(n, int(binary.sum())))
        for cols, exactly_one in self.group_indices():
            pick = rng.integers(0, cols.size + (0 if exactly_one else 1), size=n)
            points[:, cols] = pick[:, None] == np.arange(cols.size)[None, :]
        return points

    @staticmethod
    def binary_options(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tell whether 0 and whether 1 lie in each box's interval, per feature.

        Parameters
        ----------
        lower, upper : numpy.ndarray
            The boxes ``lower < x <= upper``, shape ``(K, M)``.

        Returns
        -------
        can0 : numpy.ndarray
            Whether 0 lies in each box's interval, of the boxes' shape.
        can1 : numpy.ndarray
            Whether 1 lies in each box's interval, of the boxes' shape.
        """
        return (lower < 0) & (upper >= 0), (lower < 1) & (upper >= 1)


def _spec_from_splits(thresholds: np.ndarray) -> FeatureSpec:
    """What a column's thresholds alone say of it.

    Unknown when unsplit, binary when cut once where the frameworks cut a 0/1 column, else
    numerical.
    """
    if thresholds.size == 0:
        return FeatureSpec("unknown")
    if thresholds.size == 1 and cuts_zero_one(float(thresholds[0])):
        return FeatureSpec("binary", 0.0, 1.0)
    return FeatureSpec("numerical")
