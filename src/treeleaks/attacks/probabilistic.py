"""Probabilistic reconstruction of a single decision tree or rule list.

After Gambs, Gmati & Hurfin 2012 and Ferry et al., SaTML 2024: for the training rows a leaf
(or rule) holds, the values every attribute can still take, given the path and the schema.

A decision tree's leaf is a box, so its rows' attributes are reduced one by one and the
vectors it admits are the product of the reduced domains. A rule list's rule j captures the
vectors of its box that no earlier rule captures; that set is cut into disjoint boxes
(`treeleaks.attacks.capture`), and an attribute's reduced domain is what the pieces admit
together. A tree read from a table with gaps or categories reaches a leaf by several paths
(`treeleaks.ir.model.Tree.aliased`): the leaf's rows lie in the union of its paths' boxes,
which are disjoint (two paths part at a split), so the leaf is read as a rule is, its paths
its pieces: it admits the sum of their vectors, an attribute the union of their values, and
with every admitted vector equally likely a row lies in a path in proportion to the
vectors the path admits. Attributes and their domains (numerical columns discretised at
the model's own cut points, a column with gaps one attribute with the gap among its values)
are defined in `treeleaks.attacks.attributes`.

The result holds each path's per-class supports when the model releases them; the entropy
metrics (`treeleaks.evaluation.entropy`) need them, the reduced domains do not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from treeleaks.attacks.attributes import (
    Attribute,
    attribute_counts,
    build_attributes,
    check_cuts,
)
from treeleaks.attacks.capture import Box, captured_pieces
from treeleaks.counts.paths import tree_paths
from treeleaks.evaluation.entropy import summarize
from treeleaks.frontends.rule_list import RuleList
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema, FeatureSpec
from treeleaks.runtime.errors import SchemaError, UnsupportedModelError
from treeleaks.runtime.vocabulary import Status


@dataclass
class ProbabilisticReconstruction:
    """Per path (a tree's leaf, or a rule): its training rows and what they may be.

    `tree_reconstruction` and `rule_list_reconstruction` build it.

    Parameters
    ----------
    kind : str
        ``leaf`` or ``rule``: what a path is.
    paths : list of str
        Each path's name (``leaf 3``, ``rule 2``, ``default``).
    attributes : list of Attribute
        The attributes and their domains (`treeleaks.attacks.attributes`).
    pieces : list of list of tuple
        ``pieces[p]``: disjoint boxes ``(lower, upper)`` whose union is what path p admits
        (a leaf's: one box per path reaching it that admits a vector, or its one box).
    reduced_sizes : numpy.ndarray
        ``reduced_sizes[p, a]``: the number of values attribute a can take on path p.
    admitted : list of int
        ``admitted[p]``: the exact number of attribute vectors path p admits. It is joint,
        so a rule list's "none of the earlier rules" counts even where no single attribute
        shrinks.
    counts : numpy.ndarray or None
        ``counts[p]``: the per-class training rows, columns in the order of ``classes``;
        None when the model does not release them.
    classes : list
        The class labels.
    """

    kind: str  # "leaf" or "rule"
    paths: list[str]
    attributes: list[Attribute]
    pieces: list[list[Box]]
    reduced_sizes: np.ndarray
    admitted: list[int]
    counts: np.ndarray | None
    classes: list

    @property
    def status(self) -> Status:
        """The reduced domains are exact: the attack always runs to the end."""
        return Status.DONE

    def summary(self) -> dict[str, Any]:
        """Summarize the result as plain JSON.

        Returns
        -------
        dict
            The status, dist and dist_g (`treeleaks.evaluation.entropy.summarize`), the
            attributes, and per path its support, admitted vectors, ratio and dist.

        Raises
        ------
        MissingCountsError
            The model releases no supports.
        """
        leak = summarize(self)
        return {
            "status": self.status,
            "dist": leak.dist,
            "dist_g": leak.dist_g,
            "n_rows": leak.n_rows,
            "kind": self.kind,
            "attributes": [{"name": a.name, "size": a.size} for a in self.attributes],
            "quantiles": {str(k): v for k, v in leak.quantiles.items()},
            "per_leaf": [
                {"path": self.paths[p], "support": int(leak.support[p]),
                 "admitted_vectors": self.admitted[p],
                 "ratio": None if math.isnan(leak.path_ratio[p]) else leak.path_ratio[p],
                 "dist": None if leak.support[p] == 0 else float(leak.path_dist[p])}
                for p in range(len(self.paths))
            ],
        }

    @property
    def domain_sizes(self) -> np.ndarray:
        """Each attribute's number of values before any path reduces it."""
        return np.array([a.size for a in self.attributes], dtype=np.int64)

    @property
    def log2_admitted(self) -> np.ndarray:
        """Log2 of each path's admitted vectors (-inf for none)."""
        return np.array([_big_log2(v) for v in self.admitted])

    def domain_table(self) -> pd.DataFrame:
        """Tabulate each path's reduced domains.

        Returns
        -------
        pandas.DataFrame
            One row per path: its name, its support (when known), its admitted vectors and
            each attribute's reduced domain.
        """
        rows = []
        for p, pieces in enumerate(self.pieces):
            lower = np.array([b[0] for b in pieces]).reshape(len(pieces), -1)
            upper = np.array([b[1] for b in pieces]).reshape(len(pieces), -1)
            row = {self.kind: self.paths[p]}
            if self.counts is not None:
                row["support"] = int(self.counts[p].sum())
            row["admitted"] = self.admitted[p]
            row.update({a.name: a.describe(lower, upper) if pieces else "{}"
                        for a in self.attributes})
            rows.append(row)
        return pd.DataFrame(rows)


def _big_log2(value: int) -> float:
    """log2 of an exact count of any size (-inf for 0)."""
    if value <= 0:
        return -np.inf
    shift = max(value.bit_length() - 60, 0)
    return float(np.log2(value >> shift)) + shift


def tree_reconstruction(model: ReleasedModel, schema: FeatureSchema | None = None, *,
                        tree: int = 0) -> ProbabilisticReconstruction:
    """Reduce every attribute's domain on each leaf of one tree.

    Numerical columns are discretised at the cut points of the whole model.

    Parameters
    ----------
    model : ReleasedModel
        A model with exact counts (not a DP model).
    schema : FeatureSchema or None, default None
        The columns' domains; None: the one the model records, else what its splits imply.
    tree : int, default 0
        The index of the tree to reduce.

    Returns
    -------
    ProbabilisticReconstruction
        Per leaf, its support and reduced domains.

    Raises
    ------
    UnsupportedModelError
        The model's counts are noisy.
    SchemaError
        The schema does not match the model, or admits no vector on a leaf that holds
        training rows.
    """
    if model.noise is not None:
        raise UnsupportedModelError("the model's leaf counts are noisy (a DP model); the "
                                    "probabilistic reconstruction needs the exact supports")
    given = schema if schema is not None else FeatureSchema.for_model(model)
    check_cuts(given, model.feature_names, model.thresholds())
    bound = given.bind(model)  # also refuses a split column the schema leaves binary
    attributes = build_attributes(bound, model.thresholds(),
                                  None if model.inputs is None else model.inputs.gaps())
    chosen = model.trees[tree]
    paths = tree_paths(chosen, model.n_features)
    per_path = attribute_counts(attributes, paths.lower, paths.upper)
    sizes = np.zeros((chosen.n_leaves, len(attributes)), dtype=np.int64)
    pieces: list[list[Box]] = []
    admitted = []
    for leaf, mine in enumerate(np.split(np.arange(len(paths)),
                                         np.flatnonzero(np.diff(paths.leaf)) + 1)):
        held = mine[(per_path[mine] > 0).all(axis=1)]  # the paths that admit a vector
        shown = held if held.size else mine
        pieces.append([(paths.lower[p], paths.upper[p]) for p in shown])
        if shown.size == 1:
            sizes[leaf] = per_path[shown[0]]
        else:
            sizes[leaf] = [a.union_size(paths.lower[shown], paths.upper[shown])
                           for a in attributes]
        admitted.append(_vectors(per_path[held]))
    counts = chosen.counts
    result = ProbabilisticReconstruction(
        "leaf", [f"leaf {i}" for i in range(len(admitted))], attributes, pieces, sizes,
        admitted, counts if counts.sum() > 0 else None, list(model.classes))
    _check_supports(result)
    return result


def _vectors(per_box: np.ndarray) -> int:
    """The exact number of attribute vectors disjoint boxes admit together.

    ``per_box`` is each box's ``(K, n_attributes)`` admitted values per attribute.
    """
    return sum(math.prod(row) for row in per_box.tolist())


def rule_list_reconstruction(rule_list: RuleList,
                             schema: FeatureSchema | None = None) -> ProbabilisticReconstruction:
    """Reduce every attribute's domain on the vectors each rule of a rule list captures.

    Rule j captures the vectors of its box that no earlier rule captures.

    Parameters
    ----------
    rule_list : RuleList
        The rule list (`treeleaks.frontends.rule_list`).
    schema : FeatureSchema or None, default None
        The columns' domains; None infers them from the rules' tests.

    Returns
    -------
    ProbabilisticReconstruction
        Per rule (and the default), its support when released and reduced domains.

    Raises
    ------
    SchemaError
        The schema does not match the rule list, or admits no vector on a rule that holds
        training rows.
    """
    bound, declared = bind_rule_list(rule_list, schema)
    check_cuts(bound, rule_list.feature_names, rule_list.thresholds(), declared)
    attributes = build_attributes(bound, rule_list.thresholds())
    boxes = rule_list.boxes()
    pieces = [list(captured_pieces(attributes, box, boxes[:j])) for j, box in enumerate(boxes)]
    sizes = np.zeros((len(boxes), len(attributes)), dtype=np.int64)
    admitted = []
    for j, rule_pieces in enumerate(pieces):
        if not rule_pieces:
            admitted.append(0)
            continue
        lower, upper = np.array([b[0] for b in rule_pieces]), np.array([b[1] for b in rule_pieces])
        sizes[j] = [a.union_size(lower, upper) for a in attributes]
        admitted.append(_vectors(attribute_counts(attributes, lower, upper)))
    counts = (np.array([r.counts for r in rule_list.all_rules], dtype=np.int64)
              if rule_list.has_counts else None)
    result = ProbabilisticReconstruction(
        "rule", [f"rule {j + 1}" for j in range(len(rule_list.rules))] + ["default"],
        attributes, pieces, sizes, admitted, counts, list(rule_list.classes))
    _check_supports(result)
    return result


def bind_rule_list(rule_list: RuleList,
                   schema: FeatureSchema | None) -> tuple[FeatureSchema, set[str] | None]:
    """Bind a schema to a rule list's columns.

    A complete schema over the rule list's columns (unlisted ones binary, as for trees) and
    the set of columns the given schema declared (None when inferred).

    Without a schema: a column tested only against 0/1 is binary, one cut elsewhere is
    numerical of unknown range, an unused one unknown.
    """
    if schema is None:
        return _inferred_rule_schema(rule_list), None
    names = rule_list.feature_names
    _refuse_extra_columns(schema, names)
    features = {n: schema.features.get(n, FeatureSpec("binary", 0.0, 1.0)) for n in names}
    _refuse_equality_on_ranges(rule_list.equality_columns(), features)
    declared = None if schema.complete else set(schema.features)
    return FeatureSchema(features, schema.one_hot_groups, schema.at_most_one_groups), declared


def _inferred_rule_schema(rule_list: RuleList) -> FeatureSchema:
    """A schema read off the rule list's own tests, for a run given none.

    A column compared with '==' only against 0/1 or cut only inside (0, 1) is binary, one
    cut elsewhere numerical of unknown range, one never tested unknown.
    """
    features = {}
    for name, cuts in zip(rule_list.feature_names, rule_list.thresholds()):
        values = [c.value for r in rule_list.rules for c in r.conditions
                  if c.feature == name and c.op == "=="]
        features[name] = _inferred_spec(name, cuts, values)
    return FeatureSchema(features)


def _inferred_spec(name: str, cuts: np.ndarray, values: list) -> FeatureSpec:
    """One column's spec from its cuts and the values it is compared with '=='."""
    if any(v not in (0, 1) for v in values):
        raise SchemaError(f"the rule list tests {name!r} against whole values other than "
                          "0 and 1; give its range under 'ordinal' (--schema)")
    if values or (cuts.size and ((cuts > 0) & (cuts < 1)).all()):
        return FeatureSpec("binary", 0.0, 1.0)
    return FeatureSpec("numerical" if cuts.size else "unknown")


def _refuse_extra_columns(schema: FeatureSchema, names: list[str]) -> None:
    """Refuse a schema naming columns (alone or in a group) the rule list does not have."""
    extra = [n for n in schema.features if n not in set(names)]
    extra += [n for g in schema.one_hot_groups + schema.at_most_one_groups for n in g
              if n not in set(names) and n not in extra]
    if extra:
        raise SchemaError(f"schema column(s) {', '.join(map(repr, extra[:5]))} are not columns "
                          "of the rule list; fix the schema's column names")


def _refuse_equality_on_ranges(equality: set[str], features: dict[str, FeatureSpec]) -> None:
    """Refuse a column the rule list tests with '==' that the schema makes a range."""
    for name in equality:
        if features[name].kind in ("numerical", "unknown"):
            raise SchemaError(f"the rule list tests {name!r} with '==' but the schema makes it "
                              f"{features[name].kind}; '==' needs a binary or ordinal column")


def _check_supports(result: ProbabilisticReconstruction) -> None:
    """A path that holds training rows must admit a vector.

    Else the schema contradicts the model (a forced 1 in two columns of a group, a value
    outside a range, ...).
    """
    if result.counts is None:
        return
    for p, support in enumerate(result.counts.sum(axis=1).tolist()):
        if support > 0 and result.admitted[p] == 0:
            raise SchemaError(f"{result.paths[p]} holds {support} training row(s) but the schema "
                              "admits no attribute vector there; the schema contradicts the "
                              "model, fix it")
