"""Partial datasets: when no complete dataset is found in time, the largest set of whole
rows found that stays within every released count (issue 29)."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier
from typer.testing import CliRunner

import treeleaks.counts.generate as generate
from treeleaks import FeatureSchema, from_sklearn, reconstruct
from treeleaks.cli import app
from treeleaks.evaluation.metrics import evaluate
from treeleaks.model import ReleasedModel

# the originals, before any test patches them (hypothesis reuses one monkeypatch)
GENERATE_CELLS = generate.generate_cells
OFFER = generate.BestPartial.offer


def numerical_forest(n_rows: int, n_features: int, n_trees: int, seed: int,
                     bootstrap: bool = False) -> tuple[ReleasedModel, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n_rows, n_features)).round(2),
                     columns=[f"x{j}" for j in range(n_features)])
    y = ((X["x0"] + rng.normal(0, 0.7, n_rows)) > 0).astype(int).to_numpy()
    forest = RandomForestClassifier(n_estimators=n_trees, bootstrap=bootstrap,
                                    random_state=seed).fit(X, y)
    return from_sklearn(forest, label_name="label"), X.assign(label=y)


def leaf_excess(model: ReleasedModel, rows: pd.DataFrame) -> int:
    """The most any leaf holds of one class beyond its released count (0: within)."""
    X = rows[list(model.feature_names)].to_numpy(dtype=float)
    leaves, cls = model.apply(X), model.class_index(rows["label"].to_numpy())
    worst = 0
    for t, tree in enumerate(model.trees):
        counts = np.zeros(tree.counts.shape, dtype=np.int64)
        np.add.at(counts, (leaves[:, t], tree.count_column(cls)), 1)
        worst = max(worst, int((counts - tree.counts).max()))
    return worst


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(n_rows=st.integers(15, 50), n_features=st.integers(2, 5), n_trees=st.integers(3, 12),
       seed=st.integers(0, 10_000))
def test_every_partial_dataset_offered_stays_within_every_count(
        monkeypatch, n_rows: int, n_features: int, n_trees: int, seed: int) -> None:
    """Whatever generation offers as a partial dataset (the whole part of each LP, the dive's
    fixed rows, the greedy rows) fits every count, on runs that end complete too."""
    model, _ = numerical_forest(n_rows, n_features, n_trees, seed)
    offered: list[np.ndarray] = []

    def recording(*args, **kwargs):
        def offer(best, rows):
            offered.append(np.asarray(rows, dtype=np.int64).copy())
            return OFFER(best, rows)

        monkeypatch.setattr(generate.BestPartial, "offer", offer)
        found = GENERATE_CELLS(*args, **kwargs)
        counts = np.concatenate([t.counts.ravel() for t in model.trees])
        A = generate.ColumnPool.of_columns(model, found).matrix()
        for rows in offered:
            assert (A[:, :rows.size] @ rows <= counts).all()
        assert found.partial.sum() == max(int(r.sum()) for r in offered)
        return found

    monkeypatch.setattr(generate, "generate_cells", recording)
    rec = reconstruct(model, time_limit=30, strategy="generate")
    assert offered  # generation ran and offered
    assert rec.status in ("OPTIMAL", "FEASIBLE") and rec.verified


def cut_short(monkeypatch, calls: int = 12) -> None:
    """Generation's clock jumps past every deadline after ``calls`` readings: its search
    ends early, the same way on every run, with whatever rows it had placed."""
    readings = {"n": 0}

    def clock() -> float:
        readings["n"] += 1
        return time.perf_counter() + (1e6 if readings["n"] > calls else 0.0)

    monkeypatch.setattr(generate, "time", SimpleNamespace(perf_counter=clock))


def test_a_partial_dataset_is_returned_checked_and_scored_within_the_counts(monkeypatch):
    model, truth = numerical_forest(60, 4, 10, seed=3)
    cut_short(monkeypatch)
    rec = reconstruct(model, time_limit=30, strategy="generate")
    assert rec.status == "FEASIBLE" and rec.partial and 0 < rec.n_rows < 60
    assert rec.verified and rec.certificate.n_counts_wrong == 0  # within every count
    assert leaf_excess(model, rec.rows) <= 0  # checked independently of the certificate
    assert rec.message.startswith(f"a partial dataset: {rec.n_rows} of 60 rows")
    summary = rec.summary()
    assert summary["partial"] is True and summary["lp_rows"] >= rec.n_rows - 1e-6
    features = truth.drop(columns=["label"])
    score = evaluate(truth, rec.rows, FeatureSchema.from_frame(features), label="label")
    assert score.error < 0.75 * score.baseline_error  # the placed rows are near true ones


def test_the_command_line_writes_a_partial_dataset_only_to_partial_files(monkeypatch,
                                                                        tmp_path):
    model, _ = numerical_forest(60, 4, 10, seed=3)
    path = tmp_path / "forest.json"
    path.write_text(model.to_json())
    cut_short(monkeypatch)
    out, summary = tmp_path / "rows.csv", tmp_path / "s.json"
    result = CliRunner().invoke(app, ["reconstruct", str(path), "--strategy", "generate",
                                      "--out", str(out), "--json", str(summary)])
    assert result.exit_code == 3, result.output  # not a complete reconstruction
    assert not out.exists()  # --out stays complete-only
    rows = pd.read_csv(tmp_path / "rows.partial.csv")
    s = json.loads(summary.read_text())
    assert s["partial"] is True and len(rows) == s["n_rows"] > 0
    text = " ".join(result.output.replace("│", " ").split())
    assert f"{len(rows)} of 60" in text and "within every count" in text
    assert leaf_excess(model, rows) <= 0


def test_the_audit_calls_a_partial_dataset_a_lower_bound(monkeypatch) -> None:
    from treeleaks.report.evidence import shortfall

    model, _ = numerical_forest(60, 4, 10, seed=3)
    cut_short(monkeypatch)
    rec = reconstruct(model, time_limit=30, strategy="generate")
    why = shortfall(rec, 30)
    assert f"a partial dataset of {rec.n_rows} rows fits every count" in why
    assert f"{rec.proven_rows} of them proven training rows" in why
    assert why.endswith("the figures are lower bounds")


def test_out_of_time_before_any_lp_the_partial_dataset_is_the_pinned_rows(monkeypatch):
    model, truth = numerical_forest(60, 4, 10, seed=3)
    cut_short(monkeypatch, calls=0)  # out of time before any LP
    rec = reconstruct(model, time_limit=30, strategy="generate")
    pinned = rec.timings["peeled_rows"]
    assert rec.status == "FEASIBLE" and rec.partial and rec.n_rows == pinned > 0
    assert rec.proven.all() and rec.verified  # single-row leaves prove them; within counts
    assert "raise the time limit" in rec.message
    features = [c for c in truth.columns if c != "label"]
    x, labels = truth[features].to_numpy(), truth["label"].to_numpy()
    for i in range(rec.n_rows):  # a proven row's box holds a training row of its label
        low = rec.lower[features].to_numpy(dtype=float)[i]
        high = rec.upper[features].to_numpy(dtype=float)[i]
        inside = ((low < x) & (x <= high)).all(axis=1) & (labels == rec.rows["label"][i])
        assert inside.any()
    assert leaf_excess(model, rec.rows) <= 0
