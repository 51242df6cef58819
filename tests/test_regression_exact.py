"""Issue 39, step 2: regression models whose trees each saw every row once
(`ExtraTreesRegressor`'s defaults, `bootstrap=False`, a single tree) give back every row
with its exact target, target by target, checked against the model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor
from test_regression_reconstruct import regression_data
from typer.testing import CliRunner

from treeleaks import FeatureSchema, from_sklearn, reconstruct
from treeleaks.cli import app
from treeleaks.runtime.vocabulary import Formulation, Status


def reproduces(estimator, rows: pd.DataFrame, names: list[str]) -> bool:
    """Independently of treeleaks: every tree's leaves get back their rows and value from
    ``rows``, each counted once."""
    X = rows[names].to_numpy(dtype=np.float32)
    y = rows["label"].to_numpy(dtype=float)
    members = getattr(estimator, "estimators_", [estimator])
    for member in members:
        tree, leaf = member.tree_, member.tree_.apply(X)
        held = np.bincount(leaf, minlength=tree.node_count)
        total = np.bincount(leaf, weights=y, minlength=tree.node_count)
        leaves = tree.children_left < 0
        if not np.array_equal(held[leaves], tree.n_node_samples[leaves]):
            return False
        value = total[leaves] / np.maximum(held[leaves], 1)
        if not np.allclose(value, tree.value[leaves, 0, 0], rtol=1e-9, atol=1e-9):
            return False
    return True


def proven_boxes_hold_the_truth(rec, X: pd.DataFrame, y: np.ndarray) -> bool:
    """Target by target, every proven row can be paired with a true row of its target lying
    inside its box, no true row used twice (greedy pairing suffices: the cells of one
    target are disjoint, and rows of one cell share its box)."""
    names = list(X.columns)
    low, high = rec.lower[names].to_numpy(), rec.upper[names].to_numpy()
    got = rec.rows["label"].to_numpy(dtype=float)
    proven = rec.proven.astype(bool)
    for target in np.unique(got[proven]):
        free = list(X.to_numpy()[y == target])
        for i in np.flatnonzero(proven & (got == target)):
            inside = [j for j, row in enumerate(free)
                      if ((low[i] <= row) & (row <= high[i])).all()]
            if not inside:
                return False
            free.pop(inside[0])
    return True


ESTIMATORS = {
    "extra-trees": lambda seed: ExtraTreesRegressor(n_estimators=12, random_state=seed),
    "no-bootstrap": lambda seed: RandomForestRegressor(n_estimators=12, bootstrap=False,
                                                       random_state=seed),
    "one-tree": lambda seed: DecisionTreeRegressor(random_state=seed),
}


@pytest.mark.parametrize("kind", sorted(ESTIMATORS))
def test_every_target_comes_back_exactly(kind: str) -> None:
    X, y = regression_data(80, 3, seed=5, integer=True)
    estimator = ESTIMATORS[kind](0).fit(X, y)
    rec = reconstruct(from_sklearn(estimator, allow_regression=True), time_limit=30)
    assert rec.status == Status.OPTIMAL and rec.verified, rec.message
    assert rec.formulation == Formulation.REGRESSION_EXACT
    assert rec.regression.targets_exact == len(y) == rec.n_rows
    assert sorted(rec.rows["label"].to_numpy(dtype=float)) == sorted(y)
    assert reproduces(estimator, rec.rows, list(X.columns))
    assert proven_boxes_hold_the_truth(rec, X, y) and rec.proven_rows > 0


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(n_rows=st.integers(10, 60), n_features=st.integers(1, 4),
       seed=st.integers(0, 10_000), integer=st.booleans(),
       kind=st.sampled_from(sorted(ESTIMATORS)))
def test_property_every_verified_result_reproduces_the_model(n_rows, n_features, seed,
                                                             integer, kind) -> None:
    """Complete results reproduce every leaf; partial ones (a leaf of several targets, which
    extremely randomized trees sometimes leave) hold only true targets, within the counts;
    proven rows' boxes hold true rows of their targets."""
    X, y = regression_data(n_rows, n_features, seed, integer)
    estimator = ESTIMATORS[kind](seed).fit(X, y)
    # the columns' kinds as the data has them: inferred from few thresholds, a column split
    # once reads as binary, and its values would be put at 0 or 1
    rec = reconstruct(from_sklearn(estimator, allow_regression=True),
                      FeatureSchema.from_frame(X), time_limit=30)
    assert rec.verified, rec.message
    got = rec.rows["label"].to_numpy(dtype=float)
    if rec.status == Status.OPTIMAL:
        assert sorted(got) == sorted(y)
        assert reproduces(estimator, rec.rows, list(X.columns))
    else:
        assert rec.status == Status.FEASIBLE and rec.partial and "left out" in rec.message
        values, counts = np.unique(got, return_counts=True)
        assert all(counts[i] <= np.sum(y == v) for i, v in enumerate(values))
    assert proven_boxes_hold_the_truth(rec, X, y)


def test_rows_sharing_every_feature_come_back_with_their_own_targets() -> None:
    """Two rows alike in every feature with different targets share a leaf whose value is
    their mean and impurity their variance: the leaf is split into their two targets, so
    every row comes back, and nothing claims the mean as a target (issue 50; before, the
    two were left out)."""
    X, y = regression_data(50, 3, seed=6, integer=False)
    X.iloc[21] = X.iloc[20]
    y[21] = y[20] + 7.0
    estimator = ExtraTreesRegressor(n_estimators=8, random_state=0).fit(X, y)
    rec = reconstruct(from_sklearn(estimator, allow_regression=True), time_limit=30)
    assert rec.status == Status.OPTIMAL and rec.verified, rec.message
    got = rec.rows["label"].to_numpy(dtype=float)
    assert (y[20] + y[21]) / 2 not in got
    assert np.allclose(sorted(got), sorted(y), rtol=0, atol=1e-9)


def test_an_edited_leaf_value_is_infeasible_naming_the_tree_and_leaf() -> None:
    X, y = regression_data(60, 3, seed=7, integer=False)
    model = from_sklearn(ExtraTreesRegressor(n_estimators=6, random_state=0).fit(X, y),
                         allow_regression=True)
    tree = model.trees[2]
    values = tree.values.copy()
    values[0] += 0.5
    edited = replace(model, trees=[*model.trees[:2], replace(tree, values=values),
                                   *model.trees[3:]])
    rec = reconstruct(edited, time_limit=20)
    assert rec.status == Status.INFEASIBLE and not rec.verified and rec.n_rows == 0
    assert "tree 2 leaf 0" in rec.message and "edited or truncated" in rec.message
    # without the impurity that proves the leaves pure, the rest come back, within every
    # count, and the rows of the values the trees disagree on are left out
    bare = replace(edited, trees=[replace(t, impurity=None) for t in edited.trees])
    rec = reconstruct(bare, time_limit=20)
    assert rec.status == Status.FEASIBLE and rec.verified and rec.n_rows < len(y)


def test_leaves_that_do_not_meet_are_infeasible() -> None:
    """A leaf of one row moved away from the others of its target in one tree: the
    target's leaves share no point, and the file is named as contradicting itself."""
    X, y = regression_data(40, 2, seed=8, integer=False)
    model = from_sklearn(ExtraTreesRegressor(n_estimators=4, random_state=0).fit(X, y),
                         allow_regression=True)
    values = [tree.values for tree in model.trees]
    first, second = model.trees[0], model.trees[1]
    # swap the values of two single-row leaves in tree 0: each target now sits where the
    # other trees do not put it
    one = np.flatnonzero(first.counts[:, 0] == 1)
    lows, highs = first.leaf_boxes(model.n_features)
    a = one[0]
    b = next(v for v in one[1:] if (lows[v] >= highs[a]).any() or (highs[v] <= lows[a]).any())
    swapped = values[0].copy()
    swapped[[a, b]] = swapped[[b, a]]
    edited = replace(model, trees=[replace(first, values=swapped), second, *model.trees[2:]])
    rec = reconstruct(edited, time_limit=20)
    assert rec.status == Status.INFEASIBLE and not rec.verified
    assert "contradict" in rec.message and rec.n_rows == 0


def test_cli_writes_every_target(tmp_path) -> None:
    X, y = regression_data(50, 3, seed=9, integer=True)
    path = tmp_path / "extra.skops"
    sio.dump(ExtraTreesRegressor(n_estimators=10, random_state=0).fit(X, y), path)
    out = tmp_path / "rows.csv"
    result = CliRunner().invoke(app, ["reconstruct", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "regression-exact" in result.output
    assert sorted(pd.read_csv(out)["label"].to_numpy(dtype=float)) == sorted(y)


def test_the_json_model_keeps_each_leafs_impurity(tmp_path) -> None:
    """The IR file keeps the impurity that tells a leaf of one target from a mean, and
    refuses one that does not give one per leaf."""
    from treeleaks.ir.model import ReleasedModel
    from treeleaks.runtime.errors import TreeleaksError

    X, y = regression_data(40, 2, seed=10, integer=False)
    model = from_sklearn(ExtraTreesRegressor(n_estimators=3, random_state=0).fit(X, y),
                         allow_regression=True)
    again = ReleasedModel.from_json(model.to_json())
    assert all(np.array_equal(a.impurity, b.impurity)
               for a, b in zip(model.trees, again.trees))
    data = model.to_dict()
    data["trees"][0]["impurity"].pop()
    with pytest.raises(TreeleaksError, match="impurity"):
        ReleasedModel.from_dict(data)


def test_the_audit_reconstructs_a_regressor(tmp_path) -> None:
    """The audit of a regression forest runs the reconstruction: every target given away,
    in the report's verdict (checked against its schema) and on the terminal."""
    import json

    X, y = regression_data(60, 3, seed=12, integer=False)
    path = tmp_path / "extra.skops"
    sio.dump(ExtraTreesRegressor(n_estimators=10, random_state=0).fit(X, y), path)
    result = CliRunner().invoke(app, ["audit", str(path), "--budget", "30", "--out",
                                      str(tmp_path / "audit")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "audit" / "report.json").read_text())
    reconstruction = next(a for a in report["attacks"] if a["name"] == "reconstruct")
    assert reconstruction["status"] == "complete"
    assert report["verdict"]["targets_given_away"] == len(y)
    assert report["risk"]["level"] == "HIGH"
    assert "Targets given away exactly" in result.output


def test_the_audit_says_why_a_regressor_is_not_reconstructed(tmp_path) -> None:
    import json

    X, y = regression_data(60, 3, seed=13, integer=False)
    path = tmp_path / "medians.skops"
    sio.dump(ExtraTreesRegressor(n_estimators=5, criterion="absolute_error",
                                 random_state=0).fit(X, y), path)
    result = CliRunner().invoke(app, ["audit", str(path), "--budget", "20", "--out",
                                      str(tmp_path / "audit")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "audit" / "report.json").read_text())
    reconstruction = next(a for a in report["attacks"] if a["name"] == "reconstruct")
    assert reconstruction["status"] == "does not apply"
    assert "absolute_error" in reconstruction["why"]


def test_the_audit_bounds_the_targets_of_a_limited_regressor(tmp_path) -> None:
    import json

    X, y = regression_data(60, 3, seed=13, integer=False)
    path = tmp_path / "shallow.skops"
    sio.dump(ExtraTreesRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y),
             path)
    result = CliRunner().invoke(app, ["audit", str(path), "--budget", "20", "--out",
                                      str(tmp_path / "audit")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "audit" / "report.json").read_text())
    reconstruction = next(a for a in report["attacks"] if a["name"] == "reconstruct")
    assert reconstruction["figures"]["formulation"] == "regression-leaves"
    assert reconstruction["status"] == "partial"


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_leaf_value_that_is_not_a_number_is_refused(tmp_path, bad: float) -> None:
    """An edited regressor file whose leaf value is NaN or infinite: one line naming the
    leaf, exit 2, nothing written."""
    X, y = regression_data(30, 2, seed=14, integer=False)
    forest = ExtraTreesRegressor(n_estimators=3, random_state=0).fit(X, y)
    tree = forest.estimators_[1].tree_
    state = tree.__getstate__()
    values = state["values"].copy()
    leaf = int(np.flatnonzero(tree.children_left < 0)[0])
    values[leaf, 0, 0] = bad
    tree.__setstate__({**state, "values": values})
    path = tmp_path / "edited.skops"
    sio.dump(forest, path)
    out = tmp_path / "rows.csv"
    result = CliRunner().invoke(app, ["reconstruct", str(path), "--out", str(out)])
    assert result.exit_code == 2
    assert "leaf 0's value is" in result.output and "edited or damaged" in result.output
    assert not out.exists()


@pytest.mark.parametrize("kind", sorted(ESTIMATORS))
def test_weighted_and_multi_output_regressors_are_refused_naming_the_cause(kind) -> None:
    """Rows of weight 2 count twice in the leaves, so weighted training is refused rather
    than rebuilt as duplicated rows; a regressor of several outputs is refused too."""
    from treeleaks.runtime.errors import UnsupportedModelError

    X, y = regression_data(40, 2, seed=15, integer=False)
    weights = np.where(np.arange(len(y)) % 2, 1.0, 2.5)
    weighted = ESTIMATORS[kind](0).fit(X, y, sample_weight=weights)
    with pytest.raises(UnsupportedModelError, match="sample_weight") as caught:
        reconstruct(from_sklearn(weighted, allow_regression=True))
    assert "\n" not in str(caught.value)
    both = ESTIMATORS[kind](0).fit(X, np.column_stack([y, -y]))
    with pytest.raises(UnsupportedModelError, match="several outputs"):
        from_sklearn(both, allow_regression=True)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n_rows=st.integers(40, 160))
def test_property_cells_hold_only_values_the_columns_allow(seed: int, n_rows: int) -> None:
    """Extremely randomized trees split a 0/1 column anywhere in (0, 1): a split at 0.3 and
    another at 0.7 meet in no value the column allows, and such a cell would put a row
    where no leaf holds it. Through a pipeline's one-hot encoder (whose columns the input
    map says are 0/1, one per row), every result reproduces the model within its counts."""
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from treeleaks.frontends.sklearn_pipeline import from_pipeline

    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"colour": rng.choice(list("abcdef"), n_rows),
                      "count": rng.integers(0, 8, n_rows).astype(float),
                      "score": rng.normal(size=n_rows).round(2)})
    y = rng.integers(20, 60, n_rows).astype(float)
    pipeline = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["colour"]), remainder="passthrough"),
        ExtraTreesRegressor(n_estimators=8, random_state=seed)).fit(X, y)
    rec = reconstruct(from_pipeline(pipeline), time_limit=30)
    assert rec.verified, rec.message
    values, counts = np.unique(rec.rows["label"].to_numpy(dtype=float), return_counts=True)
    assert all(counts[i] <= np.sum(y == v) for i, v in enumerate(values))
