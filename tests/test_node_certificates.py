"""Issue 51, items 1 and 4: certificates that check every node, numbers that cannot overflow.

A file edited in one field of one node (a count, a weighted count, an impurity, a value) is
never verified: its nodes contradict each other, so it is INFEASIBLE naming the tree and the
node, or refused in one line. A threshold edit that leaves every node's numbers agreeing
may be verified, and then the rows truly reproduce the edited model. The certificates also
route the rows through every internal node; a leaf value past what float64 sums hold is
refused naming the leaf.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_diabetes
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from typer.testing import CliRunner

from treeleaks import from_sklearn, reconstruct
from treeleaks.cli import app
from treeleaks.counts.verify import verify, verify_regression, verify_regression_within
from treeleaks.ir.model import ReleasedModel
from treeleaks.runtime.errors import TreeleaksError
from treeleaks.runtime.vocabulary import Status

from conftest import one_line_error

FIELDS = ("n_node_samples", "weighted_n_node_samples", "impurity", "value", "threshold")
CLASSES = np.array(["maybe", "no", "yes"])


def small_data(n_rows: int, seed: int, regression: bool) -> tuple[pd.DataFrame, np.ndarray]:
    """Two small whole-number columns (rows that share them share a leaf: leaves of several
    rows, mixed targets or classes) and a target of a few values or three classes."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.integers(0, 5, size=(n_rows, 2)).astype(float), columns=["a", "b"])
    y = (rng.integers(0, 6, n_rows).astype(float) if regression
         else rng.choice(CLASSES, n_rows))
    return X, y


def fitted(kind: str, X: pd.DataFrame, y: np.ndarray, seed: int):
    """A decision tree or a two-tree forest without draws, of either task."""
    regression = y.dtype.kind == "f"
    if kind == "tree":
        model = DecisionTreeRegressor if regression else DecisionTreeClassifier
        return model(random_state=seed).fit(X, y)
    model = ExtraTreesRegressor if regression else ExtraTreesClassifier
    return model(n_estimators=2, bootstrap=False, random_state=seed).fit(X, y)


def edit(tree, field: str, node: int) -> bool:
    """Edit one field of one node of a fitted scikit-learn tree in place; False when the
    edit would change nothing."""
    if field == "threshold":
        if tree.children_left[node] < 0:
            return False
        tree.threshold[node] += 1.0  # the next midpoint between whole numbers
    elif field == "value" and tree.value.shape[2] > 1:  # a classifier's class fractions
        before = tree.value[node, 0].copy()
        tree.value[node, 0] = np.roll(before, 1)
        return not np.allclose(before, tree.value[node, 0])
    elif field == "value":
        tree.value[node, 0, 0] += 1.0
    elif field == "impurity":
        tree.impurity[node] += 0.5
    else:
        getattr(tree, field)[node] += 1
    return True


def node_numbers(estimator, X: pd.DataFrame, rows: pd.DataFrame, regression: bool) -> bool:
    """Independently of treeleaks: the rows, routed through the (edited) estimator's every
    tree, give every node its stored rows and a regressor's every node its mean."""
    path_rows = rows[list(X.columns)].to_numpy(dtype=np.float32)
    label = rows["label"].to_numpy()
    for member in getattr(estimator, "estimators_", [estimator]):
        tree = member.tree_
        through = member.decision_path(path_rows).toarray().astype(float)  # rows by nodes
        if not np.array_equal(through.sum(axis=0), tree.n_node_samples):
            return False
        if regression:
            mean = through.T @ label.astype(float) / np.maximum(through.sum(axis=0), 1)
            if not np.allclose(mean, tree.value[:, 0, 0], rtol=1e-9, atol=1e-9):
                return False
        else:
            onehot = (label[:, None] == estimator.classes_[None, :]).astype(float)
            counts = tree.value[:, 0, :] * tree.weighted_n_node_samples[:, None]
            if not np.allclose(through.T @ onehot, counts):
                return False
    return True


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(regression=st.booleans(), kind=st.sampled_from(["tree", "forest"]),
       n_rows=st.integers(12, 40), seed=st.integers(0, 10_000),
       field=st.sampled_from(FIELDS), where=st.floats(0.0, 0.999))
def test_one_edited_node_is_never_verified(regression: bool, kind: str, n_rows: int,
                                           seed: int, field: str, where: float) -> None:
    X, y = small_data(n_rows, seed, regression)
    estimator = fitted(kind, X, y, seed)
    members = getattr(estimator, "estimators_", [estimator])
    tree = members[seed % len(members)].tree_
    assume(tree.node_count >= 3)
    assume(edit(tree, field, int(where * tree.node_count)))
    try:
        model = from_sklearn(estimator, allow_regression=True)
    except TreeleaksError as refused:  # in one line, naming the tree and the node or leaf
        message = str(refused)
        assert "\n" not in message and "tree" in message, message
        assert "node" in message or "leaf" in message, message
        return
    if field != "threshold":
        assert model.contradictions, "an edited node read as consistent"
        assert " node " in model.contradictions[0]
    try:
        rec = reconstruct(model, time_limit=10)
    except TreeleaksError as refused:  # a threshold edit that leaves a leaf unreachable
        assert field == "threshold" and "tree" in str(refused), str(refused)
        return
    if field != "threshold":
        assert not rec.verified and rec.status == Status.INFEASIBLE, rec.message
        assert "node" in rec.message
    elif rec.verified:  # the thresholds moved, the numbers agree: the rows are the edited model's
        assert node_numbers(estimator, X, rec.rows, regression)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), n_rows=st.integers(10, 60),
       choice=st.sampled_from([
           (RandomForestRegressor, "squared_error"), (RandomForestRegressor, "friedman_mse"),
           (RandomForestRegressor, "poisson"), (ExtraTreesRegressor, "absolute_error"),
           (DecisionTreeRegressor, "squared_error"), (RandomForestClassifier, "gini"),
           (RandomForestClassifier, "entropy"), (ExtraTreesClassifier, "log_loss"),
           (DecisionTreeClassifier, "gini")]))
def test_an_unedited_file_contradicts_nothing(seed: int, n_rows: int, choice) -> None:
    """No false alarm: trees and forests, with and without draws, of every criterion, on
    targets of many values (the means and variances as scikit-learn rounds them)."""
    model_type, criterion = choice
    regression = model_type.__name__.endswith("Regressor")
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n_rows, 3)), columns=["a", "b", "c"])
    y = (rng.gamma(2.0, 1e3, n_rows) if regression else rng.choice(CLASSES, n_rows))
    params = {} if model_type.__name__.startswith("Decision") else {"n_estimators": 4}
    estimator = model_type(criterion=criterion, random_state=seed, **params).fit(X, y)
    model = from_sklearn(estimator, allow_regression=True)
    assert model.contradictions == ()
    assert all(tree.nodes is not None for tree in model.trees)


def regression_truth(seed: int = 3) -> tuple[ReleasedModel, pd.DataFrame]:
    X, y = small_data(40, seed, regression=True)
    model = from_sklearn(DecisionTreeRegressor(random_state=0).fit(X, y),
                         allow_regression=True)
    return model, X.assign(label=y)


def test_the_certificate_checks_internal_nodes_against_the_rows() -> None:
    """The true rows verify; the same rows against a node number changed behind the
    reader's back (no contradiction recorded) do not, naming the tree and the node."""
    model, truth = regression_truth()
    certificate = verify_regression(model, truth)
    leaves = sum(tree.n_leaves for tree in model.trees)
    assert certificate.verified and certificate.n_counts_checked > 4 * leaves
    nodes = model.trees[0].nodes
    for field, name, change in (("values", "value", 1.0), ("impurity", "impurity", 0.5)):
        getattr(nodes, field)[0] += change
        certificate = verify_regression(model, truth)
        assert not certificate.verified
        assert certificate.first_mismatch.startswith(f"tree 0 node 0 {name}")
        getattr(nodes, field)[0] -= change
    nodes.distinct[0] += 1
    assert verify_regression(model, truth).first_mismatch.startswith(
        "tree 0 node 0 distinct rows")
    partial = truth.iloc[:30]
    nodes.weighted[0, 0] = nodes.distinct[0] = 29  # fewer rows at the root than given
    within = verify_regression_within(model, partial)
    assert not within.verified and "node 0" in within.first_mismatch


def test_a_classifiers_certificate_checks_internal_nodes() -> None:
    X, y = small_data(40, 5, regression=False)
    model = from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y))
    truth = X.assign(label=y)
    assert verify(model, truth).verified
    model.trees[0].nodes.weighted[0, 1] += 1
    certificate = verify(model, truth)
    assert not certificate.verified
    assert certificate.first_mismatch.startswith("tree 0 node 0 weighted rows")


def test_a_contradicted_file_is_never_verified_even_with_its_true_rows() -> None:
    X, y = small_data(40, 6, regression=True)
    estimator = DecisionTreeRegressor(random_state=0).fit(X, y)
    estimator.tree_.impurity[0] += 1.0
    model = from_sklearn(estimator, allow_regression=True)
    assert model.contradictions and model.contradictions[0].startswith("tree 0 node 0's")
    certificate = verify_regression(model, X.assign(label=y))
    assert not certificate.verified and "contradicts itself" in certificate.first_mismatch


# --- the cases: diabetes, through the command line --------------------------------

DIABETES = load_diabetes(return_X_y=True, as_frame=True)


def _leaves(tree) -> np.ndarray:
    return np.flatnonzero(tree.children_left < 0)


def _raise_value(tree) -> None:
    tree.value[_leaves(tree)[0], 0, 0] += 1


def _copy_target(tree) -> None:
    leaves = _leaves(tree)
    tree.value[leaves[0], 0, 0] = tree.value[leaves[5], 0, 0]


def _two_row_leaf(tree) -> None:
    leaf = next(v for v in _leaves(tree) if tree.n_node_samples[v] == 2)
    tree.value[leaf, 0, 0] += 1


def _leaf_rows(tree) -> None:
    leaf = _leaves(tree)[0]
    tree.n_node_samples[leaf] += 1
    tree.weighted_n_node_samples[leaf] += 1


def _root_rows(tree) -> None:
    tree.n_node_samples[0] += 1


def _root_impurity(tree) -> None:
    tree.impurity[0] += 100


def _root_value(tree) -> None:
    tree.value[0, 0, 0] += 10


CASES = [(DecisionTreeRegressor, e) for e in (_raise_value, _copy_target, _two_row_leaf,
                                              _leaf_rows)] + [
    (model, e) for model in (DecisionTreeRegressor, ExtraTreesRegressor, RandomForestRegressor)
    for e in (_root_rows, _root_impurity, _root_value)]


@pytest.mark.parametrize(("model_type", "change"), CASES,
                         ids=[f"{m.__name__}-{e.__name__[1:]}" for m, e in CASES])
def test_an_edited_diabetes_regressor_is_infeasible(tmp_path: Path, model_type,
                                                    change) -> None:
    X, y = DIABETES
    params = {} if model_type is DecisionTreeRegressor else {"n_estimators": 3}
    estimator = model_type(random_state=0, **params).fit(X, y)
    change(getattr(estimator, "estimators_", [estimator])[0].tree_)
    path = tmp_path / "edited.skops"
    sio.dump(estimator, path)
    out = tmp_path / "rows.csv"
    result = CliRunner().invoke(app, ["reconstruct", str(path), "--out", str(out)])
    assert result.exit_code == 3, result.output
    assert "contradicts itself" in result.stderr and "tree 0 node " in result.stderr
    assert "verified" not in result.output
    assert "rows proven" not in result.output and "442 of 442" not in result.output
    assert "443 of 443" not in result.output


def test_a_leaf_value_beyond_float64_sums_is_refused_naming_the_leaf(tmp_path: Path) -> None:
    X, y = DIABETES
    estimator = DecisionTreeRegressor(random_state=0).fit(X, y)
    leaf = _leaves(estimator.tree_)[3]
    estimator.tree_.value[leaf, 0, 0] = 1e300
    path = tmp_path / "huge.skops"
    sio.dump(estimator, path)
    result = CliRunner().invoke(app, ["reconstruct", str(path), "--out",
                                      str(tmp_path / "rows.csv")])
    line = one_line_error(result, 2)
    assert "tree 0" in line and "leaf 3's value is 1e+300" in line and "float64" in line


# --- boosters: each node's rows (or hessian sum) are its children's ------------------------

def _booster_data() -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.integers(0, 4, size=(60, 3)).astype(float), columns=["a", "b", "c"])
    return X, ((X.a + rng.integers(0, 2, 60)) > 2).astype(int).to_numpy()


@pytest.mark.parametrize("field", ["n_node_samples", "weighted_n_node_samples"])
def test_a_gradient_boosting_node_count_edit_is_refused(field: str) -> None:
    from sklearn.ensemble import GradientBoostingClassifier

    estimator = GradientBoostingClassifier(n_estimators=3, max_depth=2).fit(*_booster_data())
    getattr(estimator.estimators_[1, 0].tree_, field)[0] += 1
    with pytest.raises(TreeleaksError, match=f"tree 1 of this GradientBoostingClassifier "
                                             f"node 0 holds 61 rows \\({field}\\)"):
        from_sklearn(estimator)


def test_a_histogram_booster_node_count_edit_is_refused() -> None:
    from sklearn.ensemble import HistGradientBoostingClassifier

    estimator = HistGradientBoostingClassifier(max_iter=3, max_depth=2).fit(*_booster_data())
    estimator._predictors[2][0].nodes["count"][0] += 1
    with pytest.raises(TreeleaksError, match="tree 2 node 0 holds 61 rows"):
        from_sklearn(estimator)


def test_an_edited_lightgbm_internal_count_is_refused_naming_the_node(tmp_path: Path) -> None:
    lgb = pytest.importorskip("lightgbm")
    text = lgb.LGBMClassifier(n_estimators=3, num_leaves=4, min_child_samples=1,
                              verbose=-1).fit(*_booster_data()).booster_.model_to_string()
    lines = text.splitlines()
    at = next(i for i in range(lines.index("Tree=1"), len(lines))
              if lines[i].startswith("internal_count="))
    counts = lines[at].split("=")[1].split()
    counts[1] = str(int(counts[1]) + 1)
    lines[at] = "internal_count=" + " ".join(counts)
    path = tmp_path / "edited.txt"
    path.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(app, ["reconstruct", str(path)])
    line = one_line_error(result, 2)
    assert "LightGBM tree 1 node" in line and "internal_count" in line, line


def test_an_edited_xgboost_cover_is_refused_naming_the_node(tmp_path: Path) -> None:
    xgb = pytest.importorskip("xgboost")
    import json

    booster = xgb.XGBClassifier(n_estimators=3, max_depth=2).fit(*_booster_data())
    doc = json.loads(bytes(booster.get_booster().save_raw(raw_format="json")))
    doc["learner"]["gradient_booster"]["model"]["trees"][0]["sum_hessian"][0] += 1.0
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    line = one_line_error(CliRunner().invoke(app, ["reconstruct", str(path)]), 2)
    assert "XGBoost tree 0 node 0" in line and "sum_hessian" in line, line


def test_a_contradicted_model_is_not_written_as_json_that_would_hide_it() -> None:
    X, y = small_data(30, 7, regression=True)
    estimator = DecisionTreeRegressor(random_state=0).fit(X, y)
    estimator.tree_.value[0, 0, 0] += 1
    model = from_sklearn(estimator, allow_regression=True)
    with pytest.raises(TreeleaksError, match="tree 0 node 0's value"):
        model.to_json()


def test_inspect_names_what_an_edited_file_contradicts(tmp_path: Path) -> None:
    X, y = small_data(30, 8, regression=True)
    estimator = DecisionTreeRegressor(random_state=0).fit(X, y)
    estimator.tree_.n_node_samples[0] += 1
    path = tmp_path / "edited.skops"
    sio.dump(estimator, path)
    result = CliRunner().invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0, result.output
    words = " ".join(result.output.split())
    assert "Contradicts itself" in words and "tree 0 node 0 holds 31 distinct" in words


def test_an_edited_file_proves_no_singling_out_predicate() -> None:
    """The same file unedited proves single-row leaves' predicates; edited, none."""
    from treeleaks.attacks.singling_out import single_out

    X, y = small_data(30, 9, regression=True)
    estimator = DecisionTreeRegressor(random_state=0).fit(X, y)
    assert single_out(from_sklearn(estimator, allow_regression=True)).n_proven > 0
    estimator.tree_.value[0, 0, 0] += 1
    result = single_out(from_sklearn(estimator, allow_regression=True))
    assert result.n_proven == 0
    assert any("contradicts itself" in note for note in result.notes), result.notes
