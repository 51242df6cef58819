"""Probabilistic reconstruction of single trees and rule lists: the paper's toy examples,
brute-force counts of admitted vectors, and bad schemas."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeClassifier

from treeleaks import from_sklearn
from treeleaks.attacks.capture import capt_recursion
from treeleaks.attacks.probabilistic import rule_list_reconstruction, tree_reconstruction
from treeleaks.evaluation.entropy import MissingCountsError, cell_ratios, dist, dist_g, summarize
from treeleaks.frontends.rule_list import Condition, Rule, RuleList
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema, FeatureSpec
from treeleaks.runtime.errors import SchemaError

PAPER_SCHEMA = {"ordinal": {"a1": [10, 15], "a3": [1, 3]}}  # a2 binary by default


def paper_tree() -> ReleasedModel:
    """Figure 1 of Ferry et al.: a3 <= 1.5 → x4; else a1 <= 11.5 → x3; else x1, x2."""
    return ReleasedModel.from_dict({
        "format": "treeleaks.ReleasedModel", "version": 1, "classes": [0, 1],
        "feature_names": ["a1", "a2", "a3"],
        "trees": [{"feature": [2, -1, 0, -1, -1], "threshold": [1.5, None, 11.5, None, None],
                   "left": [1, -1, 3, -1, -1], "right": [2, -1, 4, -1, -1],
                   "leaf_of_node": [-1, 0, -1, 1, 2], "counts": [[0, 1], [0, 1], [2, 0]]}],
    })


def rule_list(rules: list[tuple[list[tuple[str, str, float]], int]], counts: list[list[int]],
              names: list[str]) -> RuleList:
    built = [Rule(tuple(Condition(*c) for c in conds), then, tuple(n))
             for (conds, then), n in zip(rules, counts)]
    return RuleList(built, Rule((), 1, tuple(counts[-1])), names, [0, 1])


RULE_LIST_1 = rule_list(  # Rule List 1 of the paper, with its supports [class 0; class 1]
    [([("a1", "==", 1), ("a2", "==", 1)], 1), ([("a3", "==", 1)], 0)],
    [[0, 2], [2, 0], [0, 1]], ["a1", "a2", "a3"])


def test_paper_decision_tree_example() -> None:
    """Table II and Dist ≈ 0.736; attribute 1 of row 3: log2(2)/log2(6) ≈ 0.387."""
    rec = tree_reconstruction(paper_tree(), FeatureSchema.from_dict(PAPER_SCHEMA))
    table = rec.domain_table().set_index("leaf")
    assert table.loc["leaf 0", ["a1", "a2", "a3"]].tolist() == ["{10..15}", "{0..1}", "{1}"]
    assert table.loc["leaf 1", ["a1", "a2", "a3"]].tolist() == ["{10..11}", "{0..1}", "{2..3}"]
    assert table.loc["leaf 2", ["a1", "a2", "a3"]].tolist() == ["{12..15}", "{0..1}", "{2..3}"]
    assert round(summarize(rec).dist, 3) == 0.736
    row3_leaf = paper_tree().apply(np.array([[11, 1, 2]]))[0, 0]
    ratios = cell_ratios(rec.reduced_sizes, rec.domain_sizes)
    assert round(ratios[row3_leaf, 0], 3) == 0.387
    assert ratios[row3_leaf, 0] == pytest.approx(math.log2(2) / math.log2(6))


@pytest.mark.parametrize(("condition", "expected_g"), [(("a1", "==", 1), 0.613),
                                                       (("a2", "==", 1), 0.387)])
def test_paper_one_record_example(condition: tuple[str, str, float], expected_g: float) -> None:
    """One record, domains {0,1} and {1,2,3}: knowing a1 leaves 3 of 6 worlds, knowing a2
    leaves 2 of 6; dist is 0.5 for both, dist_g tells them apart."""
    known = rule_list([([condition], 1)], [[0, 1], [0, 0]], ["a1", "a2"])
    schema = FeatureSchema.from_dict({"ordinal": {"a2": [1, 3]}})
    summary = summarize(rule_list_reconstruction(known, schema))
    assert summary.dist == pytest.approx(0.5)
    assert round(summary.dist_g, 3) == expected_g
    reduced = [1, 3] if condition[0] == "a1" else [2, 1]
    assert dist([1], [reduced], [2, 3]) == pytest.approx(0.5)
    assert round(dist_g([1], [math.log2(math.prod(reduced))], [2, 3]), 3) == expected_g


def test_paper_rule_list_example() -> None:
    """Rule List 1 and Table IV: rules 2 and the default leave (a1, a2) in
    {(0,0), (0,1), (1,0)}; rule 1 leaves a3 free."""
    rec = rule_list_reconstruction(RULE_LIST_1)
    captured = [sorted(v for box in pieces for v in binary_vectors_in(box, 3))
                for pieces in rec.pieces]
    assert captured == [[(1, 1, 0), (1, 1, 1)],
                        [(0, 0, 1), (0, 1, 1), (1, 0, 1)],
                        [(0, 0, 0), (0, 1, 0), (1, 0, 0)]]
    assert rec.admitted == [2, 3, 3]
    table = rec.domain_table().set_index("rule")
    assert table.loc["rule 2", ["a1", "a2", "a3"]].tolist() == ["{0..1}", "{0..1}", "{1}"]
    summary = summarize(rec)
    assert summary.dist_g == pytest.approx((2 * 1 + 3 * math.log2(3)) / (5 * 3))
    # dist sees only the per-attribute domains: rules 2 and default reduce a3 alone
    assert summary.dist == pytest.approx((2 * (1 / 3) + 3 * (2 / 3)) / 5)


def binary_vectors_in(box: tuple[np.ndarray, np.ndarray], width: int) -> list[tuple]:
    lower, upper = box
    return [v for v in itertools.product((0, 1), repeat=width)
            if all(lower[j] < v[j] <= upper[j] for j in range(width))]


# --- brute force over small schemas --------------------------------------------------------


@st.composite
def small_schemas(draw: st.DrawFn) -> dict:
    """A schema with a one-hot group, maybe an at-most-one group, binary, ordinal and
    numerical columns (few values each, so every vector can be listed)."""
    one_hot = [f"h{i}" for i in range(draw(st.integers(2, 4)))]
    at_most = [f"m{i}" for i in range(draw(st.integers(0, 3)))]
    binary = [f"b{i}" for i in range(draw(st.integers(0, 2)))]
    low = draw(st.integers(-2, 3))
    ordinal = {"o": [low, low + draw(st.integers(1, 4))]}
    numerical = {"r": [0.0, 10.0]} if draw(st.booleans()) else {}
    return {"one_hot_groups": [one_hot], "at_most_one_groups": [at_most] if len(at_most) > 1
            else [], "ordinal": ordinal, "numerical": numerical,
            "columns": one_hot + (at_most if len(at_most) > 1 else []) + binary + ["o"]
            + list(numerical)}


def schema_of(spec: dict) -> FeatureSchema:
    return FeatureSchema.from_dict({k: v for k, v in spec.items() if k != "columns"})


def complete(schema: FeatureSchema, columns: list[str]) -> FeatureSchema:
    """The schema over every column, in order (unlisted columns binary), to sample from."""
    features = {c: schema.features.get(c, FeatureSpec("binary", 0.0, 1.0)) for c in columns}
    return FeatureSchema(features, schema.one_hot_groups, schema.at_most_one_groups)


def all_vectors(schema: FeatureSchema, columns: list[str], cuts: list[np.ndarray]) -> np.ndarray:
    """Every attribute vector, listed independently of the code under test: group
    configurations, the integers of ordinal ranges, one midpoint per interval of the cuts."""
    choices: list[list[dict[str, float]]] = []
    grouped = {c for g in schema.one_hot_groups + schema.at_most_one_groups for c in g}
    for group, none_too in [(g, False) for g in schema.one_hot_groups] + [
            (g, True) for g in schema.at_most_one_groups]:
        configs = [{c: float(c == on) for c in group} for on in group]
        choices.append(configs + ([{c: 0.0 for c in group}] if none_too else []))
    for j, name in enumerate(columns):
        if name in grouped:
            continue
        spec = schema.features.get(name)
        if spec is None or spec.kind == "binary":
            choices.append([{name: 0.0}, {name: 1.0}])
        elif spec.kind == "ordinal":
            choices.append([{name: float(v)} for v in range(int(spec.low), int(spec.high) + 1)])
        else:
            edges = [spec.low, *cuts[j].tolist(), spec.high]
            choices.append([{name: (a + b) / 2 if k else a} for k, (a, b) in
                            enumerate(itertools.pairwise(edges))])
    rows = [{k: v for part in combo for k, v in part.items()}
            for combo in itertools.product(*choices)]
    return pd.DataFrame(rows)[columns].to_numpy()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=small_schemas(), depth=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_tree_counts_match_brute_force(spec: dict, depth: int, seed: int) -> None:
    """Each leaf's admitted vectors, and dist_g, equal a count over every vector."""
    schema = schema_of(spec)
    columns = spec["columns"]
    X = pd.DataFrame(complete(schema, columns).sample(60, seed), columns=columns)
    y = np.random.default_rng(seed).integers(0, 2, len(X))
    model = from_sklearn(DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(X, y))
    rec = tree_reconstruction(model, schema)
    vectors = all_vectors(schema, columns, model.thresholds())
    per_leaf = np.bincount(model.apply(vectors)[:, 0], minlength=model.trees[0].n_leaves)
    assert rec.admitted == per_leaf.tolist()
    support = model.trees[0].counts.sum(axis=1)
    expected = (support @ np.log2(np.maximum(per_leaf, 1))) / (
        support.sum() * math.log2(len(vectors)))
    assert summarize(rec).dist_g == pytest.approx(expected)
    assert 0 <= summarize(rec).dist <= 1


@st.composite
def rule_lists_over(draw: st.DrawFn, spec: dict) -> RuleList:
    """Up to 6 rules of width up to 3 over the schema's columns."""
    columns = spec["columns"]
    schema = schema_of(spec)
    rules = []
    for _ in range(draw(st.integers(1, 6))):
        conditions = []
        for name in draw(st.lists(st.sampled_from(columns), min_size=1, max_size=3,
                                  unique=True)):
            s = schema.features.get(name)
            if s is None or s.kind == "binary":
                conditions.append(Condition(name, "==", float(draw(st.integers(0, 1)))))
            elif s.kind == "ordinal":
                value = float(draw(st.integers(int(s.low), int(s.high) - 1)))
                conditions.append(Condition(name, draw(st.sampled_from(["<=", ">", "=="])),
                                            value))
            else:
                conditions.append(Condition(name, draw(st.sampled_from(["<=", ">"])),
                                            float(draw(st.integers(1, 9)))))
        rules.append(Rule(tuple(conditions), 1, None))
    return RuleList(rules, Rule((), 0, None), columns, [0, 1])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), spec=small_schemas())
def test_rule_list_counts_agree(data: st.DataObject, spec: dict) -> None:
    """The paper's Capt recursion, complement splitting (the reconstruction's counts) and
    brute force agree."""
    rules = data.draw(rule_lists_over(spec))
    schema = schema_of(spec)
    rec = rule_list_reconstruction(rules, schema)
    vectors = all_vectors(schema, spec["columns"], rules.thresholds())
    first = np.full(len(vectors), len(rules.rules))
    for j, (lower, upper) in reversed(list(enumerate(rules.boxes()[:-1]))):
        first[np.all((lower < vectors) & (upper >= vectors), axis=1)] = j
    brute = np.bincount(first, minlength=len(rules.all_rules)).tolist()
    assert capt_recursion(rec.attributes, rules.boxes()) == brute
    assert rec.admitted == brute
    for j in range(len(brute)):  # each attribute's reduced domain: the projection
        captured = vectors[first == j]
        for a, attribute in enumerate(rec.attributes):
            cols = attribute.columns if hasattr(attribute, "columns") else [attribute.column]
            projected = len({tuple(v) for v in captured[:, cols]})
            assert rec.reduced_sizes[j, a] == projected


# --- groups and bad input ------------------------------------------------------------------


def test_group_restrictions_count_configurations() -> None:
    """A one-hot group of 4 cut at a=0, b=0 keeps 2 values; at-most-one keeps 3; a path
    forcing two members to 1 admits none."""
    names = ["a", "b", "c", "d"]
    both_zero = rule_list([([("a", "==", 0), ("b", "==", 0)], 1)], [[0, 1], [0, 0]], names)
    both_one = rule_list([([("a", "==", 1), ("b", "==", 1)], 1)], [[0, 0], [0, 1]], names)
    for key, kept in (("one_hot_groups", 2), ("at_most_one_groups", 3)):
        schema = FeatureSchema.from_dict({key: [names]})
        assert rule_list_reconstruction(both_zero, schema).admitted[0] == kept
        assert rule_list_reconstruction(both_one, schema).admitted[0] == 0
    held = rule_list([([("a", "==", 1), ("b", "==", 1)], 1)], [[0, 3], [0, 1]], names)
    with pytest.raises(SchemaError, match="rule 1 holds 3 training row"):
        rule_list_reconstruction(held, FeatureSchema.from_dict({"one_hot_groups": [names]}))


def test_unknown_columns_count_ratio_one() -> None:
    """A column never split and of unknown domain keeps ratio 1 in dist and adds nothing
    to dist_g: adding it cannot make the model look more revealing."""
    model = paper_tree()
    base = summarize(tree_reconstruction(model, FeatureSchema.from_dict(PAPER_SCHEMA)))
    wide = model.to_dict()
    wide["feature_names"].append("free")
    wider = ReleasedModel.from_dict(wide)
    schema = FeatureSchema.from_dict({"ordinal": PAPER_SCHEMA["ordinal"],
                                      "numerical": {"free": [0, 100]}})
    summary = summarize(tree_reconstruction(wider, schema))
    assert summary.dist == pytest.approx((base.dist * 3 + 1) / 4)
    assert summary.dist_g == pytest.approx(base.dist_g)


def test_numerical_columns_discretised_at_the_cuts() -> None:
    """A numerical column cut at 2 and 5 within [0, 10] has 3 values: the intervals."""
    X = pd.DataFrame({"x": [1.0, 3.0, 3.5, 7.0, 8.0, 9.0]})
    model = from_sklearn(DecisionTreeClassifier().fit(X, [0, 1, 1, 0, 0, 0]))
    rec = tree_reconstruction(model, FeatureSchema.from_dict({"numerical": {"x": [0, 10]}}))
    assert rec.domain_sizes.tolist() == [3]
    assert rec.domain_table()["x"].tolist() == ["[0, 2]", "(2, 5.25]", "(5.25, 10]"]


def test_threshold_outside_declared_range() -> None:
    with pytest.raises(SchemaError, match=r"splits column 'a1' at 11.5, outside its declared "
                                          r"ordinal range \[12, 15\]"):
        tree_reconstruction(paper_tree(), FeatureSchema.from_dict(
            {"ordinal": {"a1": [12, 15], "a3": [1, 3]}}))


def test_schema_missing_a_split_column() -> None:
    with pytest.raises(SchemaError, match=r"'a1' is split at 11\.5, so it is not binary"):
        tree_reconstruction(paper_tree(), FeatureSchema.from_dict({"ordinal": {"a3": [1, 3]}}))
    cut = rule_list([([("a1", ">", 11.5)], 1)], [[0, 1], [1, 0]], ["a1"])
    with pytest.raises(SchemaError, match="declares no domain for column 'a1'"):
        rule_list_reconstruction(cut, FeatureSchema.from_dict({"numerical": {}}))


def test_ordinal_split_without_range() -> None:
    cut = rule_list([([("a1", "==", 3)], 1)], [[0, 1], [1, 0]], ["a1"])
    with pytest.raises(SchemaError, match="give its range under 'ordinal'"):
        rule_list_reconstruction(cut)


def test_metrics_need_counts() -> None:
    bare = RuleList([Rule((Condition("a", "==", 1),), 1)], Rule((), 0), ["a"], [0, 1])
    rec = rule_list_reconstruction(bare)
    assert rec.admitted == [1, 1]  # the reduced domains need no counts
    with pytest.raises(MissingCountsError, match="dist and dist_g weigh each rule"):
        summarize(rec)
