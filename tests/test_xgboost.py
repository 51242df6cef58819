"""XGBoost binary classifiers: the JSON model file read into the IR (issue 30), the first
tree's row and class counts derived from its covers and leaf values, the later trees'
gradient sums."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from typer.testing import CliRunner

from treeleaks import FeatureSchema, reconstruct
from treeleaks.attacks.reconstruction.uncounted_trees import LISTING_MEMORY_MB, counted_only
from treeleaks.cli import app
from treeleaks.counts.cells import CellBudget
from treeleaks.counts.gradient_rows import largest_gradient_miss
from treeleaks.demos.demo_data import LABEL, demo_data
from treeleaks.evaluation.metrics import evaluate
from treeleaks.frontends.xgboost import read_xgboost
from treeleaks.io import load_model
from treeleaks.ir.model import ModelFormatError
from treeleaks.runtime.errors import UnsupportedModelError

xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def cancer() -> tuple[np.ndarray, np.ndarray]:
    return load_breast_cancer(return_X_y=True)


@pytest.mark.parametrize("options", [
    {}, {"n_estimators": 3, "max_depth": 3}, {"reg_lambda": 5.0, "learning_rate": 0.1},
    {"min_child_weight": 0, "max_depth": 8},
])
def test_the_first_trees_derived_counts_equal_the_true_counts(cancer, options) -> None:
    X, y = cancer
    fitted = xgb.XGBClassifier(**options).fit(X, y)
    model = read_xgboost(fitted)
    tree = model.trees[0]
    nodes = fitted.get_booster().predict(xgb.DMatrix(X), pred_leaf=True)[:, 0].astype(int)
    leaves = tree.leaf_of_node[nodes]
    true = np.zeros((tree.n_leaves, 2), dtype=np.int64)
    np.add.at(true, (leaves, y), 1)
    assert (tree.counts == true).all() and model.n_rows == len(y)
    assert (model.apply(X)[:, 0] == leaves).all()  # x < t routed as XGBoost routes it
    rounds = fitted.get_booster().num_boosted_rounds()
    assert model.n_trees == rounds == model.facts["trees in file"]
    assert not any(t.counted for t in model.trees[1:])  # later covers are no counts
    every = fitted.get_booster().predict(xgb.DMatrix(X), pred_leaf=True).astype(int)
    routed = model.apply(X)
    for t, later in enumerate(model.trees):
        assert (later.leaf_of_node[every[:, t]] == routed[:, t]).all()
    gradients = model.gradients
    added = np.column_stack([gradients.values[t][routed[:, t]] for t in range(rounds)])
    assert np.allclose(gradients.start + added.sum(axis=1),
                       fitted.predict(X, output_margin=True), atol=1e-5)
    miss, _ = largest_gradient_miss(model, routed, y)  # the training rows meet every sum
    assert miss <= 1.0


def test_a_saved_json_file_is_read_as_xgboost_and_reconstructed(cancer, tmp_path) -> None:
    X, y = cancer
    fitted = xgb.XGBClassifier(n_estimators=5, max_depth=3).fit(X, y)
    path = tmp_path / "m.json"
    fitted.save_model(path)
    model = load_model(path)
    assert model.source == "XGBoost" and (model.trees[0].counts
                                          == read_xgboost(fitted).trees[0].counts).all()
    result = CliRunner().invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0, result.output
    rec = reconstruct(model, time_limit=10)  # raw measurements: too many cells to list
    assert rec.verified and rec.n_rows == len(y)
    assert "tree(s) with counts were reconstructed alone" in rec.message
    assert rec.certificate.leaf_values_match is not None  # the later trees were checked


def test_a_binary_ubj_file_is_read_like_its_json(cancer, tmp_path) -> None:
    """XGBoost's binary format (.ubj, its default in recent versions) reads to the same
    model as the JSON file; a damaged one is one line naming it, exit 2."""
    X, y = cancer
    fitted = xgb.XGBClassifier(n_estimators=5, max_depth=3).fit(X, y)
    fitted.save_model(tmp_path / "m.ubj")
    fitted.save_model(tmp_path / "m.json")
    binary, text = load_model(tmp_path / "m.ubj"), load_model(tmp_path / "m.json")
    for a, b in zip(binary.trees, text.trees, strict=True):
        assert np.array_equal(a.feature, b.feature) and np.array_equal(a.counts, b.counts)
        assert np.array_equal(a.threshold, b.threshold, equal_nan=True)
    # the text file prints float32 values shortest; the binary one holds them exactly
    assert np.isclose(binary.gradients.start, text.gradients.start, rtol=1e-6)
    assert all(np.allclose(a, b, rtol=1e-6) for a, b in zip(binary.gradients.values,
                                                             text.gradients.values,
                                                             strict=True))
    result = CliRunner().invoke(app, ["inspect", str(tmp_path / "m.ubj")])
    assert result.exit_code == 0, result.output
    damaged = tmp_path / "damaged.ubj"
    damaged.write_bytes((tmp_path / "m.ubj").read_bytes()[:200])
    result = CliRunner().invoke(app, ["inspect", str(damaged)])
    assert result.exit_code == 2 and "damaged.ubj is not a binary JSON" in result.output


def test_later_trees_sums_reconstruct_a_fine_booster() -> None:
    X, y = demo_data()
    X, y = X.iloc[:100].reset_index(drop=True), np.unique(y[:100], return_inverse=True)[1]
    schema = FeatureSchema.from_frame(X)
    fitted = xgb.XGBClassifier(n_estimators=30, min_child_weight=0, random_state=0).fit(
        X.to_numpy(dtype=float), y)
    model = read_xgboost(fitted, list(X.columns), label_name=LABEL)
    rec = reconstruct(model, schema, time_limit=60)
    assert rec.status == "OPTIMAL" and rec.strategy == "enumerate" and rec.n_rows == 100
    assert rec.verified and rec.certificate.leaf_values_match
    truth = X.assign(**{LABEL: y})
    with_sums = evaluate(truth, rec.rows, schema, label=LABEL)
    first = reconstruct(counted_only(model), schema, time_limit=60)  # tree 0 alone
    alone = evaluate(truth, first.rows, schema, label=LABEL)
    assert with_sums.error < alone.error and with_sums.label_agreement >= 0.95


def test_weights_the_counts_do_not_explain_are_refused(cancer) -> None:
    X, y = cancer
    weighted = xgb.XGBClassifier(n_estimators=2).fit(X, y,
                                                     sample_weight=np.where(y == 1, 1.5, 1.0))
    with pytest.raises(UnsupportedModelError, match="sample weights"):
        read_xgboost(weighted)
    balanced = xgb.XGBClassifier(n_estimators=2, scale_pos_weight=3).fit(X, y)
    with pytest.raises(UnsupportedModelError, match="no whole class counts"):
        read_xgboost(balanced)


def test_other_objectives_are_refused(cancer) -> None:
    X, labels = cancer
    hinge = xgb.XGBClassifier(n_estimators=2, objective="binary:hinge").fit(X, labels)
    with pytest.raises(UnsupportedModelError, match="objective 'binary:hinge'"):
        read_xgboost(hinge)


def test_a_truncated_or_edited_file_is_one_line_naming_the_field(cancer, tmp_path) -> None:
    X, y = cancer
    fitted = xgb.XGBClassifier(n_estimators=2, max_depth=2).fit(X, y)
    data = json.loads(bytes(fitted.get_booster().save_raw(raw_format="json")))
    del data["learner"]["gradient_booster"]["model"]["trees"][0]["sum_hessian"]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["reconstruct", str(path)])
    assert result.exit_code == 2
    assert "field 'learner.gradient_booster.model.trees[0].sum_hessian' is missing" in (
        " ".join(result.output.split()))
    data = json.loads(bytes(fitted.get_booster().save_raw(raw_format="json")))
    data["learner"]["gradient_booster"]["model"]["trees"][0]["left_children"].pop()
    with pytest.raises(ModelFormatError, match="node fields differ in length"):
        read_xgboost(data)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_first_tree_without_a_pure_leaf_is_read(seed: int) -> None:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 4))
    y = (rng.random(120) < 0.3 + 0.4 * (X[:, 0] > 0)).astype(int)  # every leaf mixed
    fitted = xgb.XGBClassifier(n_estimators=2, max_depth=2, min_child_weight=4,
                               learning_rate=0.37).fit(X, y)
    model = read_xgboost(fitted)
    tree = model.trees[0]
    assert (tree.counts == model.leaf_counts_of(X, y)[0]).all()
    assert ((tree.counts > 0).all(axis=1)).any()  # the case this reads: mixed leaves
    assert model.facts["learning rate (recovered)"] == pytest.approx(0.37, rel=1e-4)


def test_the_audit_measures_the_trees_with_counts_and_says_why_not_the_others(tmp_path
                                                                            ) -> None:
    X, y = demo_data()
    X, y = X.iloc[:80].reset_index(drop=True), np.unique(y[:80], return_inverse=True)[1]
    path = tmp_path / "m.json"
    xgb.XGBClassifier(n_estimators=5, n_jobs=1).fit(X, y).save_model(path)
    result = CliRunner().invoke(app, ["audit", str(path), "--out", str(tmp_path / "a"),
                                      "--budget", "10"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert report["model"]["kind"] == "gradient-boosted model"
    leak = next(a for a in report["attacks"] if a["name"] == "leak")
    assert leak["status"] == "complete" and "4 trees have no counts" in leak["why"]
    covers = {f["name"]: f["exposes"] for f in report["exposed"]["description"]["fields"]}
    assert "tree 0" in covers["sum_hessian"]


def test_listing_every_trees_cells_stops_at_its_memory_bound(cancer) -> None:
    """A default booster on raw measurements: listing all 100 trees' cells stops at
    `LISTING_MEMORY_MB` (it ran to 80% of the limit and 1.6 GB before), and the first
    tree's rows come back verified with the time left."""
    X, y = cancer
    model = read_xgboost(xgb.XGBClassifier(random_state=0).fit(X, y))
    rec = reconstruct(model, time_limit=30)
    stopped = re.search(r"stopped at ([\d,]+) cells after \d+ of 100 trees \(more cells than "
                        "the budget allows", rec.message)
    assert stopped, rec.message
    cap = CellBudget(memory_mb=LISTING_MEMORY_MB).cap(X.shape[1])
    assert int(stopped.group(1).replace(",", "")) < 4 * cap  # 2.7 million before
    assert rec.verified and rec.n_rows == len(y)
