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
from treeleaks.cli.app import EXIT_PARTIAL
from treeleaks.evaluation.metrics import evaluate
from treeleaks.ir.model import ReleasedModel

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


def test_the_command_line_writes_a_partial_dataset_as_a_result(monkeypatch, tmp_path):
    """Exit 5 (documented), a status line and no error line, the rows under the name asked
    for, the summary saying partial."""
    model, _ = numerical_forest(60, 4, 10, seed=3)
    path = tmp_path / "forest.json"
    path.write_text(model.to_json())
    cut_short(monkeypatch)
    out, summary = tmp_path / "rows.csv", tmp_path / "s.json"
    result = CliRunner().invoke(app, ["reconstruct", str(path), "--strategy", "generate",
                                      "--out", str(out), "--json", str(summary)])
    assert result.exit_code == EXIT_PARTIAL == 5, result.output
    assert "error:" not in result.output
    rows = pd.read_csv(out)
    s = json.loads(summary.read_text())
    assert s["partial"] is True and len(rows) == s["n_rows"] > 0
    text = " ".join(result.output.replace("│", " ").split())
    assert f"{len(rows)} of 60" in text and "within every count" in text
    assert f"Partial reconstruction: {len(rows)} of 60 rows, within every count" in text
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


def interrupt_after(monkeypatch, calls: int) -> None:
    """Ctrl-C during generation: its clock raises KeyboardInterrupt after ``calls`` readings,
    as the interpreter does wherever the user presses it."""
    readings = {"n": 0}

    def clock() -> float:
        readings["n"] += 1
        if readings["n"] > calls:
            raise KeyboardInterrupt
        return time.perf_counter()

    monkeypatch.setattr(generate, "time", SimpleNamespace(perf_counter=clock))


def test_ctrl_c_during_generation_returns_the_rows_in_hand_checked(monkeypatch):
    model, _ = numerical_forest(60, 4, 10, seed=3)
    interrupt_after(monkeypatch, 12)
    rec = reconstruct(model, time_limit=30, strategy="generate")
    assert rec.interrupted and rec.partial and rec.status == "FEASIBLE"
    assert 0 < rec.n_rows < 60 and rec.verified and leaf_excess(model, rec.rows) <= 0
    assert "interrupted (Ctrl-C)" in rec.message and "run longer" in rec.message
    assert rec.summary()["interrupted"] is True


def unpinnable_forest() -> ReleasedModel:
    """A forest whose leaves hold 5 rows or more: no single-row leaf pins a row."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 3)).round(2), columns=["a", "b", "c"])
    y = (X["a"] > 0).astype(int).to_numpy()
    return from_sklearn(RandomForestClassifier(n_estimators=5, bootstrap=False,
                                               min_samples_leaf=5, max_depth=2,
                                               random_state=0).fit(X, y))


def test_ctrl_c_with_no_row_in_hand_stops_the_command(monkeypatch, tmp_path):
    """No single-row leaf pins a row (leaves of 5 rows or more) and Ctrl-C comes before any LP:
    nothing to return, so the interrupt goes on to the command line (exit 130)."""
    path = tmp_path / "forest.json"
    path.write_text(unpinnable_forest().to_json())
    interrupt_after(monkeypatch, 0)
    out = tmp_path / "rows.csv"
    result = CliRunner().invoke(app, ["reconstruct", str(path), "--strategy", "generate",
                                      "--out", str(out)])
    assert result.exit_code == 130 and "interrupted" in result.output
    assert list(tmp_path.iterdir()) == [path]  # nothing written


def test_an_audit_interrupted_in_the_reconstruction_keeps_its_rows_and_stops(monkeypatch):
    import treeleaks.attacks.reconstruct as entry
    from treeleaks.report.collect import run_audit
    from treeleaks.report.evidence import AuditInput

    model, truth = numerical_forest(60, 4, 10, seed=3)
    generating = entry.reconstruct

    def by_generation(*args, **kwargs):
        return generating(*args, **{**kwargs, "strategy": "generate"})

    monkeypatch.setattr(entry, "reconstruct", by_generation)
    interrupt_after(monkeypatch, 12)
    audit = run_audit(AuditInput(model, "model", None, None, truth, "label", None, 30.0))
    run = audit.attack("reconstruct")
    assert run.status == "partial" and run.figures["interrupted"] and run.figures["n_rows"] > 0
    assert audit.interrupted and audit.partial
    after = audit.attacks[[a.name for a in audit.attacks].index("reconstruct") + 1:]
    assert any(a.status == "not run" for a in after)
    assert all(a.status == "does not apply" or (a.status == "not run" and "interrupted" in a.why)
               for a in after)


def test_the_audit_shows_a_partial_datasets_rows_with_their_intervals(monkeypatch):
    import treeleaks.attacks.reconstruct as entry
    from treeleaks.report.collect import run_audit
    from treeleaks.report.evidence import AuditInput
    from treeleaks.report.html_report import render
    from treeleaks.report.json_report import to_json

    model, truth = numerical_forest(60, 4, 10, seed=3)
    generating = entry.reconstruct
    monkeypatch.setattr(entry, "reconstruct", lambda *args, **kwargs: generating(
        *args, **{**kwargs, "strategy": "generate"}))
    cut_short(monkeypatch)
    audit = run_audit(AuditInput(model, "model", None, None, truth, "label", None, 30.0))
    n = audit.attack("reconstruct").figures["n_rows"]
    assert 0 < n < 60 and audit.verdict["rows_reconstructed"] == n
    assert audit.verdict["rows_reconstructed_partial"]
    report = json.loads(to_json(audit))  # validated against the schema
    rebuilt = report["rebuilt"]
    assert rebuilt["partial"] and rebuilt["n_rows"] == n and rebuilt["of"] == 60
    features = [f"x{j}" for j in range(4)]
    for row in rebuilt["rows"]:  # each value inside its interval, open ends as None
        for name in features:
            low, high = row["intervals"][name]
            assert (low is None or low < row["values"][name]) and (
                high is None or row["values"][name] <= high)
    page = " ".join(render(audit).split())
    assert f"at least {n} of 60 (a partial dataset that fits every count" in page
    assert f"At least {n} of 60 rows reconstructed: a partial dataset" in page
    assert page.count("<tr>", page.index('id="rebuilt-table"')) >= min(n, 50)


def test_counts_no_dataset_meets_are_infeasible_with_where_not_a_partial_dataset():
    """One class-1 row moved between two leaves of tree 0 (every total unchanged): generation
    proves no dataset fits and names the leaf the best cells leave short."""
    model, _ = numerical_forest(60, 4, 10, seed=3)
    data = model.to_dict()
    tree = data["trees"][0]
    counts, rows = np.array(tree["counts"]), np.array(tree["n_samples"])
    holding = np.flatnonzero(counts[:, 1] > 0)
    source, target = holding[0], holding[-1]
    counts[source, 1] -= 1
    counts[target, 1] += 1
    rows[source] -= 1
    rows[target] += 1
    tree["counts"], tree["n_samples"] = counts.tolist(), rows.tolist()
    rec = reconstruct(ReleasedModel.from_dict(data), time_limit=30, strategy="generate")
    assert rec.status == "INFEASIBLE" and rec.n_rows == 0 and not rec.partial
    assert "no dataset reproduces the released counts" in rec.message
    assert "at most 59.0 of 60 fit" in rec.message
    assert f"tree 0 leaf {target} releases {counts[target, 1]} rows of class 1" in rec.message


def test_a_time_limit_too_short_for_any_row_says_which_limit_to_try(monkeypatch):
    cut_short(monkeypatch, calls=0)
    rec = reconstruct(unpinnable_forest(), time_limit=0.5, strategy="generate")
    assert rec.status == "UNKNOWN" and rec.n_rows == 0 and not rec.partial
    assert "the time limit of 0.5 s ran out before a row was placed" in rec.message
    assert "raise it to 10 s or more" in rec.message


def test_raw_measurements_hand_generations_rows_to_the_row_search(monkeypatch):
    """On raw measurements `auto` gives cell generation a share of the time and the row
    search the rest, starting from generation's rows: never fewer, always within every
    count, and N rows make a complete dataset checked as one."""
    from treeleaks.attacks.reconstruct import raw_measurements
    from treeleaks.counts.cells import CellBudget

    model, _ = numerical_forest(80, 8, 15, seed=4)
    assert raw_measurements(model)
    cut_short(monkeypatch, calls=12)  # generation ends early with a few rows
    rec = reconstruct(model, time_limit=6, cell_budget=CellBudget(max_cells=100))
    generated, searched = rec.timings["generated_rows"], rec.timings["searched_rows"]
    assert rec.n_rows == searched >= generated > 0
    assert rec.verified and leaf_excess(model, rec.rows) <= 0
    assert "row search" in rec.message
    if rec.n_rows == 80:  # complete: every count met exactly
        assert not rec.partial and rec.certificate.n_counts_wrong == 0
    else:
        assert rec.partial and rec.message.startswith(f"a partial dataset: {rec.n_rows} of 80")
