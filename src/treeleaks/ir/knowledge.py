"""Side knowledge: what the adversary knows of the training data besides the model.

- **Known columns**: some columns' values for every training row. ``linked`` (the default)
  means each row of the table is one training row's values (in training order, which
  matters for a bootstrap forest); otherwise each column is only a multiset of values.
  The label may be one of the columns.
- **Known rows**: some training rows in full (every feature and the label).

The engines take knowledge through the model itself, so every strategy (enumerated or
generated cells, proofs, certificate) respects it without a special case: known rows leave
the counts (`Knowledge.without_rows`), and known columns become extra trees whose leaves
pin those columns to each known value and hold the rows with it (`Knowledge.column_trees`),
pooled over classes unless the label is known with them. For a bootstrap forest, linked
columns say where each row may lie (`Knowledge.row_boxes`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from treeleaks.ir.model import ReleasedModel, Tree
from treeleaks.ir.schema import FeatureSchema, FeatureSpec
from treeleaks.runtime.errors import TreeleaksError
from treeleaks.runtime.paths import unreadable

FIT_CHECK_BUDGET = 200_000_000  # leaf x known row x column comparisons checked up front


class KnowledgeError(TreeleaksError, ValueError):
    """Side knowledge that does not fit the model, or contradicts it."""


@dataclass(frozen=True)
class Knowledge:
    """What the adversary knows of the training data besides the model.

    Pass it to `reconstruct` as ``knowledge``; proofs then hold given it.

    Parameters
    ----------
    columns : pandas.DataFrame or None, default None
        Known columns: some columns' values for every training row, one row per training
        row. The label may be one of them.
    linked : bool, default True
        Whether each row of ``columns`` is one training row's values, in training order
        (which matters for a bootstrap forest). False: each column is only a multiset of
        values.
    rows : pandas.DataFrame or None, default None
        Known rows: some training rows in full, every feature and the label.
    """

    columns: pd.DataFrame | None = None
    linked: bool = True
    rows: pd.DataFrame | None = None

    @classmethod
    def from_csv(
        cls, columns: str | Path | None = None, rows: str | Path | None = None,
        linked: bool = True,
    ) -> Knowledge:
        """Read known columns and known rows from CSV files; a header row names the columns.

        Parameters
        ----------
        columns : str or pathlib.Path or None, default None
            The known columns' CSV file, one row per training row; None: none known.
        rows : str or pathlib.Path or None, default None
            The known rows' CSV file, every feature and the label; None: none known.
        linked : bool, default True
            Whether each row of ``columns`` is one training row's values, in training order.

        Returns
        -------
        Knowledge
            The side knowledge read.

        Raises
        ------
        KnowledgeError
            A file is missing or is not a readable CSV file.
        """
        return cls(_read_csv(columns, "known columns"), linked, _read_csv(rows, "known rows"))

    @property
    def empty(self) -> bool:
        """Whether nothing is known."""
        return self.columns is None and self.rows is None

    def describe(self) -> str:
        """Describe in one line what was known, for the result.

        Returns
        -------
        str
            The description; empty when nothing is known.
        """
        parts = []
        if self.columns is not None:
            how = "linked row by row" if self.linked else "each as a multiset"
            parts.append(f"columns {', '.join(map(str, self.columns.columns))} ({how})")
        if self.rows is not None:
            parts.append(f"{len(self.rows)} rows in full")
        return "known " + " and ".join(parts) if parts else ""

    # --- checks ---------------------------------------------------------------------------

    def check(self, model: ReleasedModel, schema: FeatureSchema, n_rows: int) -> None:
        """Check the knowledge against the model, and raise on the first problem.

        Parameters
        ----------
        model : ReleasedModel
            The model the knowledge is about.
        schema : FeatureSchema
            The schema bound to the model; known values must lie in it.
        n_rows : int
            The number of training rows.

        Raises
        ------
        KnowledgeError
            Unknown or missing columns, a count of rows other than the training set's,
            values outside the schema, labels that are not classes or contradict the class
            totals, or known values or rows the counts cannot hold.
        """
        if self.columns is not None:
            self._check_columns(model, schema, n_rows)
        if self.rows is not None:
            _check_names(self.rows, model, "known rows", need_all=True)
            if len(self.rows) > n_rows:
                raise KnowledgeError(f"{len(self.rows)} known rows, but the model was trained "
                                     f"on {n_rows}: give at most {n_rows}")
            _check_values(self.rows, model, schema, "known rows")
            if self.columns is not None:
                self._check_rows_in_columns()

    def _check_columns(self, model: ReleasedModel, schema: FeatureSchema, n_rows: int) -> None:
        """Check the known columns against the model.

        They must be the model's, one value per training row, within the schema, their
        labels (if given) the model's class totals, and every row must fit the trees.
        """
        frame = self.columns
        _check_names(frame, model, "known columns", need_all=False)
        if frame.shape[1] == 0:
            raise KnowledgeError("the known-columns table has no columns; give a CSV "
                                 "whose header names at least one feature")
        if len(frame) != n_rows:
            raise KnowledgeError(
                f"the known columns have {len(frame)} rows but the model was trained on "
                f"{n_rows}: give one value per training row")
        _check_values(frame, model, schema, "known columns")
        if model.label_name in frame and model.n_rows is not None:
            totals = dict(zip(model.classes, model.class_totals().tolist()))
            given = Counter(frame[model.label_name].tolist())
            if any(given[c] != n for c, n in totals.items()):
                raise KnowledgeError(
                    f"the known labels contradict the model: it holds {totals} rows per "
                    f"class, the known label column {dict(given)}; check the label column")
        self._check_columns_fit(model)

    def _check_columns_fit(self, model: ReleasedModel) -> None:
        """Each known row of values must fit a leaf of every tree; else name the first.

        A row (with its label, when known) must fit a leaf of every tree that holds
        training rows (of its class), or of every tree that drew it when the draws are
        known.
        """
        features = [n for n in self.columns.columns if n != model.label_name]
        if not features or (model.bootstrap and not self.linked):
            return
        rows = self._rows_to_fit(model, features)
        leaves = sum(tree.n_leaves for tree in model.trees)
        if leaves * len(rows.values) * len(features) > FIT_CHECK_BUDGET:
            return  # too costly to check up front; the engine still finds a contradiction
        groups = [[j] for j in range(len(features))] if not self.linked else [
            list(range(len(features)))]
        for t, tree in enumerate(model.trees):
            boxes = rows.boxes(tree, model.n_features)
            for group in groups:
                rows.check_fit(tree, t, boxes, group, model)

    def _rows_to_fit(self, model: ReleasedModel, features: list[str]) -> _RowsToFit:
        """The known columns' rows to check against the trees.

        With their classes when the label is known with them; each distinct row once when
        training rows are interchangeable.
        """
        index = [model.feature_names.index(n) for n in features]
        values = self.columns[features].to_numpy(dtype=np.float64)
        with_label = self.linked and model.label_name in self.columns
        cls = model.class_index(self.columns[model.label_name].to_numpy()) if with_label \
            else None
        first = np.arange(len(values))  # the known row each checked one stands for
        if not model.bootstrap:  # rows are interchangeable: each distinct one once
            key = values if cls is None else np.column_stack([values, cls])
            first = np.sort(np.unique(key, axis=0, return_index=True)[1])
            values, cls = values[first], None if cls is None else cls[first]
        return _RowsToFit(features, index, values, cls, first)

    def _check_rows_in_columns(self) -> None:
        names = [n for n in self.columns.columns]
        if self.linked:
            have = Counter(map(tuple, self.columns[names].to_numpy().tolist()))
            for i, row in enumerate(map(tuple, self.rows[names].to_numpy().tolist())):
                if have[row] <= 0:
                    raise KnowledgeError(f"known row {i} has values {dict(zip(names, row))} "
                                         "that no row of the known columns has; the two "
                                         "files disagree, fix one of them")
                have[row] -= 1
            return
        for name in names:
            left = Counter(self.columns[name].tolist()) - Counter(self.rows[name].tolist())
            if sum(left.values()) != len(self.columns) - len(self.rows):
                raise KnowledgeError(f"the known rows' values of {name!r} are not among the "
                                     "known column's values; the two files disagree, fix one "
                                     "of them")

    # --- what the engines use -------------------------------------------------------------

    def schema_for(self, schema: FeatureSchema, model: ReleasedModel) -> FeatureSchema:
        """Extend a schema over the known columns the model never splits on.

        Each such column (kind ``unknown``) becomes numerical over its known values, so that
        the rows can carry them.

        Parameters
        ----------
        schema : FeatureSchema
            The schema bound to the model.
        model : ReleasedModel
            The model; unused, kept for the engines' common call.

        Returns
        -------
        FeatureSchema
            The schema with those columns made numerical.
        """
        frames = [f for f in (self.columns, self.rows) if f is not None]
        features = dict(schema.features)
        for name, spec in schema.features.items():
            given = [f[name].to_numpy(dtype=np.float64) for f in frames if name in f]
            if spec.kind == "unknown" and given:
                values = np.concatenate(given)
                features[name] = FeatureSpec("numerical", float(values.min()),
                                             float(values.max()))
        return replace(schema, features=features)

    def without_rows(self, model: ReleasedModel) -> ReleasedModel:
        """Take the known rows out of the model's counts; every tree saw each once.

        Parameters
        ----------
        model : ReleasedModel
            The model whose counts hold the known rows.

        Returns
        -------
        ReleasedModel
            A copy with smaller counts; ``model`` itself when no rows are known.

        Raises
        ------
        KnowledgeError
            The known rows overfill a leaf; the message names the first.
        """
        if self.rows is None or not len(self.rows):
            return model
        X = self.rows[list(model.feature_names)].to_numpy(dtype=np.float64)
        cls = model.class_index(self.rows[model.label_name].to_numpy())
        leaves = model.apply(X)
        trees = []
        for t, (tree, per_class) in enumerate(zip(model.trees,
                                                  model.leaf_counts_at(leaves, cls))):
            taken = tree.in_columns(per_class)
            over = np.argwhere(taken > tree.counts)
            if over.size:
                leaf, c = over[0]
                who = np.flatnonzero((leaves[:, t] == leaf) & (tree.count_column(cls) == c))
                of = tree.column_name(c, model.classes) if tree.pooled else "that class"
                raise KnowledgeError(
                    f"known row{'s' if who.size > 1 else ''} {_listing(who)} (label "
                    f"{model.classes[cls[who[0]]]!r}) land in tree {t}, leaf {leaf}, which "
                    f"holds {int(tree.counts[leaf, c])} training rows of {of}: the known "
                    "rows contradict the model")
            trees.append(replace(tree, counts=tree.counts - taken))
        return replace(model, trees=trees)

    def column_trees(self, model: ReleasedModel, schema: FeatureSchema,
                     drop_rows: bool = True) -> list[Tree]:
        """Build trees over the known columns that pin each known value.

        Each leaf holds the rows with one known value (or tuple of values, when linked).

        Parameters
        ----------
        model : ReleasedModel
            The model the trees are added to.
        schema : FeatureSchema
            The schema bound to the model; binary columns split at 0.5.
        drop_rows : bool, default True
            Whether the known rows leave these trees' counts, as they leave the model's.

        Returns
        -------
        list of Tree
            One tree when linked, else one per known feature column; empty when no feature
            column is known.
        """
        if self.columns is None:
            return []
        features = [n for n in self.columns.columns if n != model.label_name]
        if not features:
            return []
        groups = [features] if self.linked else [[name] for name in features]
        with_label = self.linked and model.label_name in self.columns
        trees = []
        for names in groups:
            tree = self._column_tree(names, model, schema, with_label)
            if drop_rows and self.rows is not None and len(self.rows):
                self._take_known_rows(tree, model, with_label)
            trees.append(tree)
        return trees

    def _column_tree(self, names: list[str], model: ReleasedModel, schema: FeatureSchema,
                     with_label: bool) -> Tree:
        """The tree pinning the known columns ``names`` to each known value (tuple).

        Each leaf holds the rows with its value, by class when the label is known with them.
        """
        index = [model.feature_names.index(n) for n in names]
        values = self.columns[names].to_numpy(dtype=np.float64)
        cls = (model.class_index(self.columns[model.label_name].to_numpy()) if with_label
               else np.zeros(len(values), dtype=np.int64))
        binary = [schema.features[n].kind == "binary" for n in names]
        return _value_tree(index, binary, values, cls, model.n_classes, pooled=not with_label)

    def _take_known_rows(self, tree: Tree, model: ReleasedModel, with_label: bool) -> None:
        """Take the known rows out of a column tree's counts (in place)."""
        known = self.rows[list(model.feature_names)].to_numpy(dtype=np.float64)
        known_cls = (model.class_index(self.rows[model.label_name].to_numpy())
                     if with_label else np.zeros(len(known), dtype=np.int64))
        np.add.at(tree.counts, (tree.apply(known), known_cls), -1)

    def row_boxes(self, model: ReleasedModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pin each training row to the box its known values allow (linked columns).

        Parameters
        ----------
        model : ReleasedModel
            The model; its feature order sets the boxes' columns.

        Returns
        -------
        lower : numpy.ndarray
            Lower bounds ``lower < x`` per training row, shape ``(N, M)``, in training
            order.
        upper : numpy.ndarray
            Upper bounds ``x <= upper``, of the same shape.
        cls : numpy.ndarray
            Each row's class index, -1 when the label is not known.
        """
        n = len(self.columns)
        lower = np.full((n, model.n_features), -np.inf)
        upper = np.full((n, model.n_features), np.inf)
        for name in self.columns.columns:
            if name == model.label_name:
                continue
            f = model.feature_names.index(name)
            upper[:, f] = self.columns[name].to_numpy(dtype=np.float64)
            lower[:, f] = np.nextafter(upper[:, f], -np.inf)
        cls = np.full(n, -1, dtype=np.int64)
        if model.label_name in self.columns:
            cls = model.class_index(self.columns[model.label_name].to_numpy())
        return lower, upper, cls

    def snap(self, rows: pd.DataFrame, model: ReleasedModel) -> pd.DataFrame:
        """Set each known column's values to the nearest known value.

        A leaf ``(v-, v]`` pins v, but a value picked inside it may be v- in floating point.

        Parameters
        ----------
        rows : pandas.DataFrame
            Reconstructed rows.
        model : ReleasedModel
            The model; its label column is left alone.

        Returns
        -------
        pandas.DataFrame
            A copy of ``rows`` with the known columns snapped.
        """
        if self.columns is None or not len(rows):
            return rows
        rows = rows.copy()
        for name in self.columns.columns:
            if name == model.label_name:
                continue
            known = np.unique(self.columns[name].to_numpy(dtype=np.float64))
            value = rows[name].to_numpy(dtype=np.float64)
            above = np.clip(np.searchsorted(known, value), 0, known.size - 1)
            below = np.clip(above - 1, 0, known.size - 1)
            nearer = np.abs(known[below] - value) < np.abs(known[above] - value)
            rows[name] = np.where(nearer, known[below], known[above])
        return rows

    def violation(self, rows: pd.DataFrame, model: ReleasedModel, ordered: bool) -> str:
        """Find the first way a reconstruction disagrees with the knowledge.

        Parameters
        ----------
        rows : pandas.DataFrame
            Reconstructed rows.
        model : ReleasedModel
            The model; its features and label name the known rows' columns.
        ordered : bool
            Whether ``rows`` are in training order, so linked columns compare row by row.

        Returns
        -------
        str
            The disagreement, for people; empty when there is none.
        """
        return self._columns_violation(rows, ordered) or self._rows_violation(rows, model)

    def _columns_violation(self, rows: pd.DataFrame, ordered: bool) -> str:
        """The first way ``rows`` disagree with the known columns; empty when none."""
        if self.columns is None:
            return ""
        names = list(self.columns.columns)
        if ordered and self.linked:
            differ = np.flatnonzero(~_equal_rows(rows[names], self.columns))
            if differ.size:
                return f"row {differ[0]} does not carry its known values"
        groups = [names] if self.linked else [[n] for n in names]
        for group in groups:
            if Counter(map(tuple, rows[group].to_numpy().tolist())) != Counter(
                    map(tuple, self.columns[group].to_numpy().tolist())):
                return f"the values of {', '.join(group)} differ from the known ones"
        return ""

    def _rows_violation(self, rows: pd.DataFrame, model: ReleasedModel) -> str:
        """The first known row ``rows`` lack; empty when they hold every one."""
        if self.rows is None:
            return ""
        names = [*model.feature_names, model.label_name]
        have = Counter(map(tuple, rows[names].to_numpy().tolist()))
        for i, row in enumerate(map(tuple, self.rows[names].to_numpy().tolist())):
            if have[row] <= 0:
                return f"known row {i} is missing"
            have[row] -= 1
        return ""


@dataclass(frozen=True)
class _RowsToFit:
    """Known rows checked against every tree up front.

    Their ``features`` (at ``index`` among the model's), ``values``, classes (``cls``;
    None when the label is not known with them) and the known row each stands for
    (``first``).
    """

    features: list[str]
    index: list[int]
    values: np.ndarray
    cls: np.ndarray | None
    first: np.ndarray

    def boxes(self, tree: Tree, n_features: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The tree's root-to-leaf boxes over the known features, and each path's leaf."""
        lower, upper, leaf_of_path = tree.path_boxes(n_features)
        return lower[:, self.index], upper[:, self.index], leaf_of_path

    def check_fit(self, tree: Tree, t: int, boxes: tuple[np.ndarray, np.ndarray, np.ndarray],
                  group: list[int], model: ReleasedModel) -> None:
        """Refuse a row whose values in ``group`` fit no leaf of tree ``t``; name the first.

        ``group`` holds positions among the known features; a leaf fits when it holds
        training rows (of the row's class) and, when the draws are known, drew the row.
        """
        lower, upper, leaf_of_path = boxes
        values, cls = self.values, self.cls
        on_path = np.ones((len(leaf_of_path), len(values)), dtype=bool)
        for j in group:
            on_path &= (lower[:, j, None] < values[None, :, j]) & (
                values[None, :, j] <= upper[:, j, None])
        inside = np.zeros((tree.n_leaves, len(values)), dtype=bool)
        np.logical_or.at(inside, leaf_of_path, on_path)  # a leaf: any of its paths
        occupied = tree.counts > 0
        holds = occupied[:, cls] if cls is not None else occupied.any(axis=1)[:, None]
        fits = (inside & holds).any(axis=0)
        if model.bootstrap:  # linked, in training order: only trees that drew it
            drawn = tree.draws
            fits |= (drawn == 0) if drawn is not None else True
        if fits.all():
            return
        k = int(np.flatnonzero(~fits)[0])
        shown = {self.features[j]: values[k, j] for j in group}
        if cls is not None:
            shown[model.label_name] = model.classes[cls[k]]
        raise KnowledgeError(
            f"known columns, row {self.first[k]} ({_values(shown)}): no leaf of tree {t} "
            f"{'that drew it ' if model.bootstrap else ''}holds a training row "
            "with these values; the known columns contradict the model")


def _value_tree(features: list[int], binary: list[bool], values: np.ndarray, cls: np.ndarray,
                n_classes: int, pooled: bool) -> Tree:
    """A tree over ``features`` that pins each known tuple of values.

    A leaf ``(v-, v]`` (v- the float just below v; split at 0.5 for a binary column) for
    each distinct value of the first feature, below it the same for the next, and so on;
    its counts are the rows with each tuple of values (per class, or pooled in column 0).
    Balanced on each feature, so its depth grows with the log of the number of values.
    """
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    leaf_rows: dict[int, np.ndarray] = {}

    def new_node() -> int:
        feature.append(-1)
        threshold.append(np.nan)
        left.append(-1)
        right.append(-1)
        return len(feature) - 1

    def split(rows: np.ndarray, depth: int) -> int:
        if depth == len(features) or not rows.size:
            node = new_node()
            leaf_rows[node] = rows
            return node
        column = values[rows, depth]
        if binary[depth]:
            bounds, held = np.array([0.5]), np.array([0.0, 1.0])
        else:
            distinct = np.unique(column)
            bounds = np.column_stack([np.nextafter(distinct, -np.inf), distinct]).ravel()
            held = np.full(bounds.size + 1, np.nan)  # between two known values: none
            held[1::2] = distinct

        def interval(first: int, last: int) -> int:  # intervals between bounds[first..last-1]
            if first == last:
                return split(rows[column == held[first]], depth + 1)
            node = new_node()
            mid = (first + last) // 2
            feature[node], threshold[node] = features[depth], float(bounds[mid])
            left[node] = interval(first, mid)
            right[node] = interval(mid + 1, last)
            return node

        return interval(0, bounds.size)

    split(np.arange(len(values)), 0)
    feature_arr = np.asarray(feature, dtype=np.int64)
    leaf_nodes = np.flatnonzero(feature_arr < 0)
    leaf_of_node = np.full(len(feature), -1, dtype=np.int64)
    leaf_of_node[leaf_nodes] = np.arange(leaf_nodes.size)
    counts = np.zeros((leaf_nodes.size, n_classes), dtype=np.int64)
    for node, rows in leaf_rows.items():
        np.add.at(counts, (leaf_of_node[node], cls[rows]), 1)
    return Tree(feature_arr, np.asarray(threshold), np.asarray(left, dtype=np.int64),
                np.asarray(right, dtype=np.int64), leaf_of_node, counts, pooled=pooled)


def _read_csv(path: str | Path | None, what: str) -> pd.DataFrame | None:
    if path is None:
        return None
    if problem := unreadable(path, f"{what} file"):
        raise KnowledgeError(problem)
    try:
        return pd.read_csv(path)
    except FileNotFoundError:
        raise KnowledgeError(f"{what}: no file {str(path)!r}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise KnowledgeError(f"{what}: {str(path)!r} is not a readable CSV file ({exc})") \
            from None


def _check_names(frame: pd.DataFrame, model: ReleasedModel, what: str, need_all: bool) -> None:
    known = set(model.feature_names) | {model.label_name}
    strange = [str(n) for n in frame.columns if n not in known]
    if strange:
        raise KnowledgeError(f"{what}: column {strange[0]!r} is neither a feature of the model "
                             f"nor its label {model.label_name!r}")
    if frame.columns.duplicated().any():
        raise KnowledgeError(f"{what}: column {frame.columns[frame.columns.duplicated()][0]!r} "
                             "appears twice; keep one")
    missing = [n for n in [*model.feature_names, model.label_name] if n not in frame]
    if need_all and missing:
        raise KnowledgeError(f"{what}: column {missing[0]!r} is missing; known rows give every "
                             "feature and the label")


def _check_values(frame: pd.DataFrame, model: ReleasedModel, schema: FeatureSchema,
                  what: str) -> None:
    if model.label_name in frame:
        try:
            model.class_index(frame[model.label_name].to_numpy())
        except ValueError as exc:
            raise KnowledgeError(f"{what}: {exc}") from None
    for name in frame.columns:
        if name == model.label_name:
            continue
        column = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(column))
        if bad.size:
            raise KnowledgeError(f"{what}: row {bad[0]} of column {name!r} is "
                                 f"{frame[name].iloc[bad[0]]!r}, not a finite number")
        f = model.feature_names.index(name)
        single = FeatureSchema({name: schema.features[name]})
        lower = np.full((column.size, 1), -np.inf)
        upper = np.full((column.size, 1), np.inf)
        upper[:, 0] = column
        lower[:, 0] = np.nextafter(column, -np.inf)
        ok = single.feasible(lower, upper)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            spec = schema.features[model.feature_names[f]]
            raise KnowledgeError(f"{what}: row {i} of column {name!r} is {column[i]:g}, "
                                 f"outside the schema ({spec.kind} {spec.low:g}..{spec.high:g})")


def _equal_rows(a: pd.DataFrame, b: pd.DataFrame) -> np.ndarray:
    return (a.reset_index(drop=True).to_numpy() == b.reset_index(drop=True).to_numpy()).all(
        axis=1)


def _values(shown: dict) -> str:
    return ", ".join(f"{name}={value:g}" if isinstance(value, float) else f"{name}={value!r}"
                     for name, value in shown.items())


def _listing(rows: np.ndarray) -> str:
    shown = ", ".join(str(int(r)) for r in rows[:3])
    return shown + (f" and {rows.size - 3} more" if rows.size > 3 else "")
