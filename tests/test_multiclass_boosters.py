"""Multiclass boosters of every framework (issue 41, item 6): the first round's class
counts derived from the leaf values and the later rounds' softmax gradient sums against the
training rows, the model reconstructed and verified, the certificate checking what it
claims, and what stays refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits, load_iris, load_wine
from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier
from typer.testing import CliRunner

from treeleaks import FeatureSchema, reconstruct
from treeleaks.attacks.singling_out import single_out
from treeleaks.cli import app
from treeleaks.counts.gradient_rows import largest_gradient_miss
from treeleaks.counts.verify import verify
from treeleaks.evaluation.metrics import evaluate
from treeleaks.frontends.lightgbm import read_lightgbm
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.frontends.xgboost import read_xgboost
from treeleaks.ir.model import ReleasedModel
from treeleaks.runtime.errors import UnsupportedModelError

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

# each framework's defaults and leaves as fine as a forest's
FINE = {"lightgbm": {"min_child_samples": 1, "min_child_weight": 0},
        "xgboost": {"min_child_weight": 0},
        "gb": {"max_depth": None, "max_leaf_nodes": 31},
        "hgb": {"min_samples_leaf": 1}}


def dataset(name: str) -> tuple[pd.DataFrame, np.ndarray]:
    if name == "digits500":
        X, y = load_digits(return_X_y=True, as_frame=True)
        return X.iloc[:500].reset_index(drop=True), y.to_numpy()[:500]
    X, y = {"iris": load_iris, "wine": load_wine}[name](return_X_y=True, as_frame=True)
    return X, y.to_numpy()


def fitted_model(framework: str, options: dict[str, Any], X: pd.DataFrame, y: np.ndarray,
                 rounds: int) -> ReleasedModel:
    """The framework's booster fitted on (X, y), read back into the IR."""
    matrix = X.to_numpy(dtype=float)
    if framework == "lightgbm":
        fitted = lgb.LGBMClassifier(n_estimators=rounds, verbose=-1, **options).fit(matrix, y)
        return read_lightgbm(fitted.booster_.model_to_string(), list(X.columns))
    if framework == "xgboost":
        fitted = xgb.XGBClassifier(n_estimators=rounds, **options).fit(matrix, y)
        return read_xgboost(fitted, list(X.columns))
    estimator = (GradientBoostingClassifier(n_estimators=rounds, random_state=0, **options)
                 if framework == "gb" else
                 HistGradientBoostingClassifier(max_iter=rounds, random_state=0, **options))
    return from_sklearn(estimator.fit(X, y))


@pytest.mark.parametrize("framework", sorted(FINE))
@pytest.mark.parametrize("name", ["iris", "wine", "digits500"])
@pytest.mark.parametrize("leaves", ["default", "fine"])
def test_every_derived_count_is_the_training_rows(framework, name, leaves) -> None:
    X, y = dataset(name)
    n_classes = np.unique(y).size
    model = fitted_model(framework, FINE[framework] if leaves == "fine" else {}, X, y, 3)
    truth = model.leaf_counts_of(X.to_numpy(dtype=float), y)
    assert model.n_classes == n_classes and model.n_trees == 3 * n_classes
    for t, (tree, held) in enumerate(zip(model.trees, truth)):
        if t < n_classes:  # first round: class t's rows against the rest, leaf by leaf
            assert tree.apart == t
            assert (tree.counts[:, t] == held[:, t]).all()
            assert (tree.counts[:, tree.rest_column] == held.sum(axis=1) - held[:, t]).all()
        elif tree.counted:  # later rounds: rows per leaf, every class together
            assert tree.pooled and (tree.counts[:, 0] == held.sum(axis=1)).all()
        else:
            assert framework == "xgboost"
    assert model.class_totals().tolist() == np.bincount(y).tolist()
    # every later leaf's softmax gradient and hessian sums hold for the training rows
    miss, where = largest_gradient_miss(model, model.apply(X.to_numpy(dtype=float)), y)
    assert miss <= 1.0, where


@pytest.mark.parametrize("framework", sorted(FINE))
@pytest.mark.parametrize("leaves", ["default", "fine"])
def test_a_multiclass_booster_is_reconstructed_and_verified(framework, leaves) -> None:
    X, y = dataset("iris")
    model = fitted_model(framework, FINE[framework] if leaves == "fine" else {}, X, y, 10)
    schema = FeatureSchema.from_frame(X)
    rec = reconstruct(model, schema, time_limit=60, threads=1, seed=0)
    assert rec.n_rows == len(y) and rec.verified and rec.time_s < 60
    assert rec.certificate.leaf_values_match is not None  # the later rounds' sums checked
    truth = X.assign(**{model.label_name: y})
    score = evaluate(truth, rec.rows, schema, label=model.label_name)
    # XGBoost's later trees have no counts and their softmax sums are not read yet: on
    # iris its first round says little more than the class balance (the lab note)
    assert score.error < score.baseline_error * (1.05 if framework == "xgboost" else 1.0)


def test_the_certificate_catches_rows_of_the_wrong_class() -> None:
    """Relabelling a row of class 0 as class 1 keeps every pooled count but breaks the
    first round's: the certificate says so."""
    X, y = dataset("iris")
    model = fitted_model("lightgbm", FINE["lightgbm"], X, y, 3)
    rows = X.assign(**{model.label_name: y})
    truth = verify(model, rows)
    assert truth.verified and truth.leaf_values_match
    assert not verify(model, rows.iloc[:0]).verified  # no rows: checked, not an error
    wrong = rows.copy()
    wrong.loc[0, model.label_name] = 1
    certificate = verify(model, wrong)
    assert not certificate.verified and "class" in certificate.first_mismatch


def test_single_out_names_the_class_a_first_round_leaf_counts() -> None:
    X, y = dataset("wine")
    model = fitted_model("gb", FINE["gb"], X, y, 3)
    predicates = single_out(model, cells=False).predicates
    labelled = [p for p in predicates if p.tree < model.n_classes and p.label is not None]
    assert labelled
    matrix = X.to_numpy(dtype=float)
    for p in predicates:  # every predicate, labelled or not, matches exactly one row
        inside = np.ones(len(y), dtype=bool)
        lower, upper = model.trees[p.tree].node_boxes(model.n_features)
        inside &= ((matrix > lower[p.node]) & (matrix <= upper[p.node])).all(axis=1)
        if p.label is not None:
            inside &= y == p.label
        assert inside.sum() == 1


def test_what_stays_refused_says_why() -> None:
    X, y = dataset("wine")
    weights = np.where(y == 1, 2.0, 1.0)
    ova = lgb.LGBMClassifier(n_estimators=2, verbose=-1, objective="multiclassova").fit(X, y)
    with pytest.raises(UnsupportedModelError, match="'multiclassova'"):
        read_lightgbm(ova)
    weighted = lgb.LGBMClassifier(n_estimators=2, verbose=-1).fit(X, y, sample_weight=weights)
    with pytest.raises(UnsupportedModelError, match="no whole class counts"):
        read_lightgbm(weighted)
    # a weight of 2 reads as a row held twice (the file cannot tell them apart); 1.5 cannot
    weighted = xgb.XGBClassifier(n_estimators=2).fit(X, y, sample_weight=weights * 0.75 + 0.25)
    with pytest.raises(UnsupportedModelError, match=r"XGBoost.*sample weights"):
        read_xgboost(weighted)
    for estimator, message in ((GradientBoostingClassifier(n_estimators=2), "sample_weight"),
                               (HistGradientBoostingClassifier(max_iter=2),
                                "no whole class counts")):
        with pytest.raises(UnsupportedModelError, match=message):
            from_sklearn(estimator.fit(X, y, sample_weight=weights))
    with pytest.raises(UnsupportedModelError, match="subsample"):
        from_sklearn(GradientBoostingClassifier(n_estimators=2, subsample=0.5).fit(X, y))


def test_the_commands_read_the_saved_files(tmp_path) -> None:
    """`inspect` gives the class balance from the first round; `single-out` checks its
    predicates against the training rows; `reconstruct` writes verified rows."""
    X, y = dataset("iris")
    X = X.set_axis([f"x{j}" for j in range(X.shape[1])], axis=1)  # LightGBM's own names
    lgb.LGBMClassifier(n_estimators=5, verbose=-1, **FINE["lightgbm"]).fit(
        X, y).booster_.save_model(tmp_path / "m.txt")
    xgb.XGBClassifier(n_estimators=5).fit(X, y).save_model(tmp_path / "m.json")
    X.assign(label=y).to_csv(tmp_path / "iris.csv", index=False)
    for model in ("m.txt", "m.json"):
        path = str(tmp_path / model)
        shown = CliRunner().invoke(app, ["inspect", path])
        assert shown.exit_code == 0, shown.output
        assert "150 given away" in shown.output and "0: 50, 1: 50, 2: 50 given" in shown.output
        singled = CliRunner().invoke(app, ["single-out", path, "--data",
                                           str(tmp_path / "iris.csv"), "--label", "label"])
        assert singled.exit_code == 0, singled.output
    rebuilt = CliRunner().invoke(app, ["reconstruct", str(tmp_path / "m.txt"), "--out",
                                       str(tmp_path / "rows.csv"), "--time-limit", "30"])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert len(pd.read_csv(tmp_path / "rows.csv")) == len(y)


def test_the_row_search_reads_pooled_trees() -> None:
    """The row search (rows as points) over a multiclass booster: its rows stay within
    every count, the first round's class against the rest and the later rounds' pooled
    leaves, at every moment; complete, they reproduce every count and the rows' leaves
    are those of the filled values."""
    from treeleaks.counts.row_search import row_points, search_rows

    X, y = dataset("iris")
    model = fitted_model("lightgbm", {}, X, y, 3)
    assert any(tree.pooled and tree.apart is None for tree in model.trees)
    seen: list[int] = []

    def within(leaves: np.ndarray, cls: np.ndarray) -> None:
        seen.append(len(cls))
        for t, tree in enumerate(model.trees):
            held = np.zeros_like(tree.counts)
            np.add.at(held, (leaves[:, t], tree.count_column(cls)), 1)
            assert (held <= tree.counts).all()

    import time

    leaves, cls = search_rows(model, time.perf_counter() + 15, seed=0, on_better=within)
    within(leaves, cls)
    assert len(cls) == len(y)  # iris at 3 rounds: every row placed well within 15 s
    assert (np.bincount(cls, minlength=3) == np.bincount(y)).all()
    points = row_points(model, leaves)
    rows = pd.DataFrame(points, columns=X.columns).assign(**{model.label_name: cls})
    certificate = verify(model, rows)
    assert certificate.verified


def test_a_many_round_booster_is_handed_to_the_row_search() -> None:
    """A booster of many rounds on raw measurements (wine, 30 rounds of LightGBM's
    defaults): its cells are not listed in time, and the rows returned, placed by
    generation and the row search, stay within every count and score better than random
    guessing against the training rows."""
    X, y = dataset("wine")
    model = fitted_model("lightgbm", {}, X, y, 30)
    schema = FeatureSchema.from_frame(X)
    rec = reconstruct(model, schema, time_limit=12, threads=1, seed=0)
    assert rec.verified and rec.n_rows >= 0.8 * len(y)
    assert "row_search" in rec.timings
    truth = X.assign(**{model.label_name: y})
    score = evaluate(truth, rec.rows, schema, label=model.label_name)
    assert score.error < score.baseline_error


def test_a_lightgbm_tree_without_a_split_is_read() -> None:
    """LightGBM writes a tree it grew no split in (late in a multiclass booster, a class
    with nothing left to gain) with one leaf, value 0 and no ``leaf_weight``: it is read,
    its count holds every row and it adds no gradient sum."""
    X, y = dataset("iris")
    text = lgb.LGBMClassifier(n_estimators=3, verbose=-1).fit(
        X.to_numpy(dtype=float), y).booster_.model_to_string()
    head, _, rest = text.rpartition("Tree=8\n")  # the last tree of 3 rounds of 3 classes
    tail = rest[rest.index("\n\n"):]
    one_leaf = ("Tree=8\nnum_leaves=1\nnum_cat=0\nsplit_feature=\nsplit_gain=\nthreshold=\n"
                "decision_type=\nleft_child=\nright_child=\nleaf_value=0\nleaf_weight=\n"
                f"leaf_count={len(y)}\ninternal_value=\ninternal_weight=\ninternal_count=\n"
                "is_linear=0\nshrinkage=1")
    model = read_lightgbm(head + one_leaf + tail, list(X.columns))
    assert model.trees[8].n_leaves == 1 and model.trees[8].counts.sum() == len(y)
    assert model.gradients is not None and not model.gradients.sums[8].size
    rows = X.assign(**{model.label_name: y})
    assert verify(model, rows).verified
    assert largest_gradient_miss(model, model.apply(X.to_numpy(dtype=float)), y)[0] <= 1.0
