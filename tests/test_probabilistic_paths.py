"""The probabilistic reconstruction and its entropy on trees whose leaves are reached by
several paths (read from tables with gaps or categories): counted against every attribute
vector, compared with the tree whose paths are leaves of their own, and run end to end on
a decision tree fitted on gaps (`treeleaks leak`, `treeleaks audit`)."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeClassifier
from test_probabilistic import all_vectors, complete, schema_of, small_schemas
from typer.testing import CliRunner

from treeleaks import from_sklearn
from treeleaks.attacks.probabilistic import tree_reconstruction
from treeleaks.cli import app
from treeleaks.evaluation.entropy import summarize
from treeleaks.ir.model import ReleasedModel


def merged(model: ReleasedModel, into: np.ndarray) -> ReleasedModel:
    """``model`` with tree 0's leaf i renamed ``into[i]`` (onto 0..k-1), counts summed: a
    leaf of the result is the union of the boxes of the leaves merged into it."""
    tree = model.trees[0]
    counts = np.zeros((int(into.max()) + 1, tree.counts.shape[1]), dtype=np.int64)
    np.add.at(counts, into, tree.counts)
    leaf_of_node = np.where(tree.feature < 0, into[np.maximum(tree.leaf_of_node, 0)], -1)
    out = dataclasses.replace(tree, leaf_of_node=leaf_of_node, counts=counts, n_samples=None)
    return dataclasses.replace(model, trees=[out])


def with_split_above(model: ReleasedModel, leaf: int, feature: int) -> ReleasedModel:
    """``model`` with tree 0's ``leaf`` replaced by a split on ``feature`` at 0.5 whose two
    children are that same leaf: an aliased tree of the same partition."""
    tree = model.trees[0]
    node = int(np.flatnonzero((tree.feature < 0) & (tree.leaf_of_node == leaf))[0])
    n = len(tree.feature)

    def grown(values: np.ndarray, at_node: float, new: list[float]) -> np.ndarray:
        out = np.append(values.astype(np.float64), new)
        out[node] = at_node
        return out

    out = dataclasses.replace(
        tree,
        feature=grown(tree.feature, feature, [-1, -1]).astype(np.int64),
        threshold=grown(tree.threshold, 0.5, [np.nan, np.nan]),
        left=grown(tree.left, n, [-1, -1]).astype(np.int64),
        right=grown(tree.right, n + 1, [-1, -1]).astype(np.int64),
        leaf_of_node=grown(tree.leaf_of_node, -1, [leaf, leaf]).astype(np.int64))
    return dataclasses.replace(model, trees=[out])


def fitted(spec: dict, depth: int, seed: int) -> ReleasedModel:
    schema = schema_of(spec)
    columns = spec["columns"]
    X = pd.DataFrame(complete(schema, columns).sample(60, seed), columns=columns)
    y = np.random.default_rng(seed).integers(0, 2, len(X))
    return from_sklearn(DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(X, y))


def projected(vectors: np.ndarray, attribute) -> int:
    cols = attribute.columns if hasattr(attribute, "columns") else [attribute.column]
    return len({tuple(v) for v in vectors[:, cols]})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=small_schemas(), depth=st.integers(2, 6), seed=st.integers(0, 10_000),
       data=st.data())
def test_leaves_of_several_paths_count_every_vector_they_hold(spec, depth, seed, data) -> None:
    """Leaves merged at random: each admits the vectors the tree routes to it (the sum of
    its paths'), reduces each attribute to the values of those vectors (the union of its
    paths'), and leaks no more than the tree that tells its paths apart."""
    schema = schema_of(spec)
    model = fitted(spec, depth, seed)
    n_leaves = model.trees[0].n_leaves
    k = data.draw(st.integers(1, n_leaves))
    into = np.array(data.draw(st.permutations(list(range(k)) + data.draw(
        st.lists(st.integers(0, k - 1), min_size=n_leaves - k, max_size=n_leaves - k)))))
    aliased = merged(model, into)
    assert aliased.aliased == (k < n_leaves)
    rec, apart = tree_reconstruction(aliased, schema), tree_reconstruction(model, schema)
    vectors = all_vectors(schema, spec["columns"], model.thresholds())
    routed = aliased.apply(vectors)[:, 0]
    assert rec.admitted == np.bincount(routed, minlength=k).tolist()
    assert rec.admitted == [sum(apart.admitted[i] for i in np.flatnonzero(into == leaf))
                            for leaf in range(k)]
    for leaf in range(k):
        mine = vectors[routed == leaf]
        assert len(rec.pieces[leaf]) == max(1, int(np.count_nonzero(
            [apart.admitted[i] for i in np.flatnonzero(into == leaf)])))
        for a, attribute in enumerate(rec.attributes):
            assert rec.reduced_sizes[leaf, a] == (projected(mine, attribute) if len(mine)
                                                  else rec.reduced_sizes[leaf, a])
    support = aliased.trees[0].counts.sum(axis=1)
    expected = (support @ np.log2(np.maximum(rec.admitted, 1))) / (
        support.sum() * math.log2(len(vectors)))
    assert summarize(rec).dist_g == pytest.approx(expected)
    assert summarize(rec).dist_g >= summarize(apart).dist_g - 1e-12
    assert summarize(rec).dist >= summarize(apart).dist - 1e-12


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=small_schemas(), depth=st.integers(1, 5), seed=st.integers(0, 10_000),
       data=st.data())
def test_a_partition_spelled_with_more_paths_reads_the_same(spec, depth, seed, data) -> None:
    """A leaf split on a 0/1 column into two paths to itself is the same leaf: every count,
    reduced domain and figure is unchanged."""
    schema = schema_of(spec)
    model = fitted(spec, depth, seed)
    leaf = data.draw(st.integers(0, model.trees[0].n_leaves - 1))
    column = spec["columns"].index(data.draw(st.sampled_from(spec["one_hot_groups"][0])))
    aliased = with_split_above(model, leaf, column)
    assert aliased.aliased
    rec, plain = tree_reconstruction(aliased, schema), tree_reconstruction(model, schema)
    assert rec.admitted == plain.admitted
    assert (rec.reduced_sizes == plain.reduced_sizes).all()
    assert summarize(rec).dist == pytest.approx(summarize(plain).dist)
    assert summarize(rec).dist_g == pytest.approx(summarize(plain).dist_g)
    assert rec.domain_table().equals(plain.domain_table())


def gap_table(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Two whole-number columns, one with gaps, and a label that reads the gaps: gaps go
    with the small values, the side with fewer rows, so the tree routes them apart."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.integers(0, 10, n).astype(float),
                          "b": rng.integers(0, 5, n).astype(float)})
    gap = rng.random(n) < 0.3
    label = (((frame["a"] <= 2) | gap) ^ (frame["b"] > 3)).astype(int).to_numpy()
    frame.loc[gap, "a"] = np.nan
    return frame, label


@pytest.fixture(scope="module")
def gap_tree() -> tuple[DecisionTreeClassifier, ReleasedModel, pd.DataFrame, np.ndarray]:
    frame, label = gap_table(150, seed=0)
    clf = DecisionTreeClassifier(max_depth=4, random_state=0).fit(frame, label)
    model = from_sklearn(clf)
    assert model.aliased and "a=(missing)" in model.feature_names
    return clf, model, frame, label


def test_a_gap_is_one_value_of_its_column(gap_tree) -> None:
    """A tree fitted on gaps: each leaf admits the distinct rows of the column values and
    the gap (a gap row's value holds nothing), counted over every vector the tree routes."""
    _, model, _, _ = gap_tree
    rec = tree_reconstruction(model)
    names = model.feature_names
    gap = names.index("a=(missing)")
    value = names.index("a")
    cuts = model.thresholds()
    grids = [np.append(c, c[-1] + 1) if c.size else np.zeros(1) for c in cuts]
    grids[gap] = np.array([0.0, 1.0])
    vectors = np.array(np.meshgrid(*grids, indexing="ij")).reshape(len(names), -1).T
    routed = model.apply(vectors)[:, 0]
    shown = vectors.copy()
    shown[shown[:, gap] == 1, value] = np.nan  # a gap: its value is no value
    for leaf in range(model.trees[0].n_leaves):
        held = {tuple(np.nan_to_num(v, nan=-1)) for v in shown[routed == leaf]}
        assert rec.admitted[leaf] == len(held)
        column = next(i for i, a in enumerate(rec.attributes) if a.name == "a")
        assert rec.reduced_sizes[leaf, column] == len(
            {v[value] for v in held})
    assert rec.attributes[column].size == cuts[value].size + 2
    table = rec.domain_table()
    assert table["a"].str.contains("gap").any() and not table["a"].str.fullmatch("gap").all()


def test_leak_prints_a_tree_fitted_on_gaps(gap_tree, tmp_path) -> None:
    clf, model, _, _ = gap_tree
    path = tmp_path / "tree.pkl"
    path.write_bytes(pickle.dumps(clf))
    out = tmp_path / "leak.json"
    result = CliRunner().invoke(app, ["leak", str(path), "--trust-pickle", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "dist_g" in result.output and "does not apply" not in result.output
    report = json.loads(out.read_text())
    expected = summarize(tree_reconstruction(model))
    assert report["dist_g"] == pytest.approx(expected.dist_g)
    assert [p["support"] for p in report["per_leaf"]] == model.trees[0].counts.sum(
        axis=1).tolist()
    assert [p["admitted_vectors"] for p in report["per_leaf"]] == tree_reconstruction(
        model).admitted


def test_audit_measures_the_entropy_of_a_tree_fitted_on_gaps(gap_tree, tmp_path) -> None:
    clf, model, frame, label = gap_tree
    path = tmp_path / "tree.pkl"
    path.write_bytes(pickle.dumps(clf))
    frame.assign(y=label).to_csv(tmp_path / "train.csv", index=False)
    result = CliRunner().invoke(app, ["audit", str(path), "--trust-pickle", "--out",
                                      str(tmp_path / "a"), "--budget", "20", "--data",
                                      str(tmp_path / "train.csv"), "--label", "y"])
    assert result.exit_code == 0, result.output
    assert "dist_g" in result.output
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    entropy = {run["name"]: run for run in report["attacks"]}["leak"]
    assert entropy["status"] == "complete", entropy
    summary = summarize(tree_reconstruction(model))
    assert entropy["figures"]["dist_g"] == pytest.approx(summary.dist_g)
    leaves = clf.apply(frame)  # scikit-learn's own leaves, in its node numbering
    ratios = [row["entropy_ratio"] for row in report["rows"]]
    assert len(ratios) == len(frame)
    for node in np.unique(leaves):  # rows of one leaf share its ratio, and it is the model's
        assert len({ratios[i] for i in np.flatnonzero(leaves == node)}) == 1
    assert sorted(set(ratios)) == pytest.approx(sorted(set(
        summary.path_ratio[summary.support > 0].tolist())))


def test_a_tree_without_gaps_keeps_its_attributes() -> None:
    """Without an input map every column stays its own attribute: nothing is paired."""
    frame, label = gap_table(80, seed=3)
    model = from_sklearn(DecisionTreeClassifier(max_depth=3, random_state=0).fit(
        frame.fillna(-1), label))
    assert not model.aliased and model.inputs is None
    assert [a.name for a in tree_reconstruction(model).attributes] == ["a", "b"]

