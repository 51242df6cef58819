"""The audit's findings match what the separate attacks report, per model kind."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from treeleaks import DPRandomForestClassifier, from_dp_forest, from_sklearn, reconstruct
from treeleaks.attacks.probabilistic import tree_reconstruction
from treeleaks.attacks.reconstruction.dp import n_rows_interval
from treeleaks.attacks.singling_out import check_against_data, node_counts, single_out
from treeleaks.defences.prune import prune
from treeleaks.demos.demo_data import LABEL, demo_data
from treeleaks.evaluation.entropy import summarize
from treeleaks.evaluation.leak_or_distribution import leak_test
from treeleaks.evaluation.metrics import evaluate
from treeleaks.evaluation.recovered import References, rows_recovered
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.report import dp_costs
from treeleaks.report.collect import run_audit
from treeleaks.report.evidence import AuditInput
from treeleaks.report.findings import Audit
from treeleaks.report.json_report import ReportSchemaError, to_json, validate

from conftest import binary_frame

BENCH_DP = Path(__file__).resolve().parents[1] / "bench" / "results" / "dp_quick.json"


def audited(model: ReleasedModel, estimator: object = None, data: pd.DataFrame | None = None,
            label: str | None = None, population: pd.DataFrame | None = None,
            budget: float = 60.0) -> Audit:
    if data is not None:
        model.label_name = label
    audit = run_audit(AuditInput(model, "model", None, estimator, data, label, population,
                                 budget))
    validate(json.loads(to_json(audit)))  # every report written has the documented shape
    return audit


def statuses(audit: Audit) -> dict[str, str]:
    return {a.name: a.status for a in audit.attacks}


@pytest.fixture(scope="module")
def demo() -> tuple[RandomForestClassifier, pd.DataFrame, Audit]:
    X, y = demo_data()
    forest = RandomForestClassifier(n_estimators=100, bootstrap=False, random_state=0).fit(X, y)
    data = X.assign(**{LABEL: y})
    return forest, data, audited(from_sklearn(forest, label_name=LABEL), forest, data, LABEL)


def test_demo_forest_verdict_matches_the_separate_attacks(demo) -> None:
    forest, data, audit = demo
    model = from_sklearn(forest, label_name=LABEL)
    recon = reconstruct(model, FeatureSchema.for_model(model))
    score = evaluate(data, recon.rows, FeatureSchema.from_frame(data.drop(columns=LABEL)),
                     label=LABEL)
    singling = single_out(model)
    exposure = check_against_data(singling, model, data, LABEL)
    v = audit.verdict
    assert v["rows_proven"] == recon.proven_rows > 500
    assert v["rows_reconstructed_exactly"] == round(score.exact_share * len(data))
    assert v["error"] == pytest.approx(score.error)
    assert v["rows_singled_out"] == len(exposure.singled_out) > 0
    assert v["singled_out_measured_on_data"] is True
    assert v["n_rows_given_away"] == len(data)
    assert v["class_balance_given_away"] == data[LABEL].value_counts().to_dict()
    assert audit.risk["level"] == "HIGH" and audit.risk["rule"] == "proven rows"
    assert str(recon.proven_rows) in audit.risk["why"]
    assert statuses(audit)["reconstruct"] == "complete"


def test_demo_rows_table_marks_each_proven_row_once(demo) -> None:
    _, data, audit = demo
    rows = audit.rows
    assert len(rows) == len(data)
    assert sum(r["proven"] for r in rows) == audit.verdict["rows_proven"]
    assert sum(bool(r["rebuilt_exactly"]) for r in rows) == \
        audit.verdict["rows_reconstructed_exactly"]
    singled = [r["row"] for r in rows if r["singled_out"]]
    assert len(singled) == audit.verdict["rows_singled_out"]
    for r in rows:
        if r["singled_out"]:  # the predicate shown selects that row of the data alone
            assert r["predicate"] and f"{LABEL} = {r['label']}" in r["predicate"]


def test_demo_prune_defence_is_measured(demo) -> None:
    forest, data, audit = demo
    pruned, _ = prune(forest, 2)
    X, y = data.drop(columns=LABEL), data[LABEL]
    defence = next(d for d in audit.defences if d.name.startswith("Prune"))
    assert defence.figures["predicates_left"] == 0
    assert defence.figures["accuracy_before"] == pytest.approx(forest.score(X, y))
    assert defence.figures["accuracy_after"] == pytest.approx(pruned.score(X, y))
    assert defence.source == "measured on this model"
    assert any(d.source == dp_costs.SOURCE for d in audit.defences)


def test_bootstrap_forest_exposes_its_draws_and_stripping_them_is_measured() -> None:
    X, y = binary_frame(40, 5, seed=1)
    forest = RandomForestClassifier(n_estimators=4, random_state=0).fit(X, y)
    data = X.assign(label=y)
    audit = audited(from_sklearn(forest), forest, data, "label")
    model = from_sklearn(forest)
    recon = reconstruct(model)
    assert recon.formulation == "bootstrap-known"
    score = evaluate(data, recon.rows, FeatureSchema.from_frame(X), label="label")
    assert audit.exposed["multiplicities_exposed"] is True
    assert audit.verdict["n_rows_given_away"] == 40
    assert audit.verdict["rows_reconstructed_exactly"] == round(score.exact_share * 40)
    assert statuses(audit)["worst-case"] in ("complete", "partial")
    strip = audit.attack("strip-random-states")
    assert strip.figures["formulation"] == "bootstrap-unknown"
    defence = next(d for d in audit.defences if "random states" in d.name)
    assert defence.figures["exact_rows_with_states"] == audit.verdict[
        "rows_reconstructed_exactly"]
    unknown = reconstruct(model, ignore_draws=True)
    assert strip.figures["n_rows"] == unknown.n_rows


@pytest.fixture(scope="module")
def tree_and_data() -> tuple[DecisionTreeClassifier, pd.DataFrame]:
    X, y = binary_frame(200, 8, seed=4)
    tree = DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, y)
    return tree, X.assign(label=y)


def test_depth_limited_tree_singles_out_rows(tree_and_data) -> None:
    tree, data = tree_and_data
    model = from_sklearn(tree)
    audit = audited(from_sklearn(tree), tree, data, "label")
    singling = single_out(model)
    exposure = check_against_data(singling, model, data, "label")
    summary = summarize(tree_reconstruction(model))
    assert audit.verdict["rows_singled_out"] == len(exposure.singled_out) > 0
    assert audit.verdict["dist_g"] == pytest.approx(summary.dist_g)
    assert audit.risk["level"] == "HIGH"
    assert audit.vulnerable_nodes == sorted({p.node for p in singling.predicates})
    assert statuses(audit)["reconstruct"] == "does not apply"
    assert audit.attack("reconstruct").words.startswith("does not apply (a single tree: ")
    ratios = [r["entropy_ratio"] for r in audit.rows]
    assert np.mean(ratios) == pytest.approx(summary.dist_g)  # dist_g: the mean row ratio


def test_without_data_the_singled_out_rows_are_a_sound_lower_bound(tree_and_data) -> None:
    tree, data = tree_and_data
    model = from_sklearn(tree)
    audit = audited(model, tree)
    t = model.trees[0]
    leaves = t.feature < 0
    by_brute_force = int((node_counts(t)[leaves] == 1).sum())  # leaves hold disjoint rows
    assert audit.verdict["rows_singled_out"] == by_brute_force
    assert audit.verdict["singled_out_measured_on_data"] is False
    exposure = check_against_data(single_out(model), model, data, "label")
    assert by_brute_force <= len(exposure.singled_out)
    assert audit.rows is None


def test_pruned_tree_comes_out_clean_of_singling_out(tree_and_data) -> None:
    tree, data = tree_and_data
    pruned, _ = prune(tree, 2)
    audit = audited(from_sklearn(pruned), pruned, data, "label")
    assert audit.verdict["rows_singled_out"] == 0
    assert audit.attack("single-out").figures["n_predicates"] == 0
    assert not any(r["singled_out"] for r in audit.rows)
    assert audit.risk["rule"] not in ("singled out",)
    assert audit.attack("prune").figures["predicates_left"] == 0


@pytest.fixture(scope="module")
def dp_case() -> tuple[ReleasedModel, pd.DataFrame, pd.DataFrame]:
    X, y = binary_frame(120, 4, seed=7)
    frame = X.assign(label=y)
    train, population = frame.iloc[:60].reset_index(drop=True), frame.iloc[60:]
    forest = DPRandomForestClassifier(n_estimators=5, max_depth=3, epsilon=5.0,
                                      random_state=0).fit(train.drop(columns="label"),
                                                          train["label"])
    return from_dp_forest(forest, label_name="label"), train, population


def test_dp_forest_runs_the_noisy_attack_and_the_leak_test(dp_case) -> None:
    model, train, population = dp_case
    audit = audited(model, None, train, "label", population)
    assert statuses(audit)["reconstruct"] in ("complete", "partial")
    assert audit.attack("reconstruct").figures["formulation"] == "dp"
    assert statuses(audit)["leak"] == "does not apply"
    assert statuses(audit)["leak-test"] == "complete"
    recon = reconstruct(model, time_limit=60.0, certainty_time_limit=30.0)
    schema = FeatureSchema.from_frame(train.drop(columns="label"))
    expected = leak_test(recon.rows, truth=train, population=population, schema=schema,
                         label="label")
    got = audit.attack("leak-test").figures
    assert got["error"] == pytest.approx(expected.error)
    assert got["p_value"] == pytest.approx(expected.p_value)
    assert audit.verdict["leak_test_p_value"] == pytest.approx(expected.p_value)
    interval = n_rows_interval(model)
    assert audit.exposed["n_rows"]["low"] == interval.low
    assert audit.exposed["n_rows"]["high"] == interval.high
    assert audit.verdict["rows_proven"] == 0  # noisy counts prove nothing
    assert audit.risk["rule"] == "singled out"  # by guesses that the data confirm
    assert "the model does not prove its predicates" in audit.risk["why"]
    assert audit.verdict["singling_predicates_proven"] == 0
    if expected.leak:
        assert any("closer to the training rows" in also for also in audit.risk["also"])
    dp = next(d for d in audit.defences if d.source == dp_costs.SOURCE)
    assert "already DP with ε = 5" in dp.effect


def test_inconsistent_counts_are_listed_as_failed_and_the_report_still_comes() -> None:
    X, y = binary_frame(50, 5, seed=2)
    forest = RandomForestClassifier(n_estimators=5, bootstrap=False, random_state=0).fit(X, y)
    tampered = from_sklearn(forest).to_dict()
    tampered["trees"][0]["counts"][0][0] += 1  # one more row in tree 0 than in the others
    tampered["trees"][0]["n_samples"][0] += 1
    model = ReleasedModel.from_dict(tampered)
    audit = audited(model)
    run = audit.attack("reconstruct")
    assert run.status == "failed" and "no dataset reproduces the counts" in run.why
    singling = audit.attack("single-out")  # the trees' predicates still come
    assert singling.status == "partial" and "forest cells not analysed" in singling.why
    assert singling.figures["n_predicates"] == len(single_out(model, cells=False).predicates)


def test_interrupt_gives_a_partial_report(tree_and_data, monkeypatch) -> None:
    from treeleaks.report import evidence

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    tree, data = tree_and_data
    monkeypatch.setattr(evidence, "entropy_leak", interrupted)  # Ctrl-C during this step
    audit = audited(from_sklearn(tree), tree, data, "label")
    assert audit.interrupted and audit.partial
    after = audit.attacks[[a.name for a in audit.attacks].index("leak") + 1:]
    assert audit.attack("leak").why.startswith("interrupted")
    assert any(a.status == "not run" for a in after)  # the prune step
    assert all(a.status == "does not apply" or (a.status == "not run" and "interrupted" in a.why)
               for a in after)
    assert audit.attack("single-out").status == "complete"  # what ran before is kept
    assert json.loads(to_json(audit))["partial"] is True


def test_schema_rejects_reports_without_the_documented_shape(tree_and_data) -> None:
    tree, data = tree_and_data
    report = json.loads(to_json(audited(from_sklearn(tree), tree, data, "label")))
    bad_level = json.loads(json.dumps(report))
    bad_level["risk"]["level"] = "SOMEWHAT"
    no_number = json.loads(json.dumps(report))
    no_number["defences"][0]["effect"] = "prune the tree"  # a recommendation without a number
    silent = json.loads(json.dumps(report))
    silent["attacks"][0]["why"] = ""  # a step not run must say why
    for broken in (bad_level, no_number, silent):
        with pytest.raises(ReportSchemaError):
            validate(broken)


@pytest.mark.skipif(not BENCH_DP.exists(), reason="bench/results/dp_quick.json not present")
def test_cited_dp_figures_are_the_benchmark_s() -> None:
    aggregates = json.loads(BENCH_DP.read_text())["aggregates"]
    assert len(aggregates) == len(dp_costs.MEASURED)
    for row in aggregates:
        cost = dp_costs.MEASURED[(row["dataset"], row["epsilon"])]
        for cited, measured in zip(cost, (row["error_mean"], row["baseline_mean"],
                                          row["perfect_share_mean"],
                                          row["test_accuracy_mean"])):
            assert math.isclose(cited, measured, abs_tol=5e-4)


def test_risk_rules_in_order_with_the_numbers_and_lower_bounds() -> None:
    from treeleaks.report.risk import assess

    nothing = {"rows_reconstructed_exactly": None, "rows_proven": None,
               "rows_singled_out": None, "dist_g": None, "error": None,
               "baseline_error": None, "leak_test_p_value": None, "leak_test_leak": None}
    both = assess({**nothing, "rows_reconstructed_exactly": 3, "dist_g": 0.3}, partial=True)
    assert (both["level"], both["rule"]) == ("MEDIUM", "rows rebuilt exactly")
    assert "3 training row(s)" in both["why"] and both["lower_bound"] is True
    assert both["also"] == ["a tree leaves only 30% of its rows' entropy (dist_g 0.300)"]
    close = assess({**nothing, "error": 0.149, "baseline_error": 0.3}, partial=False)
    assert close["rule"] == "close reconstruction"
    assert assess({**nothing, "error": 0.151, "baseline_error": 0.3}, False)["level"] == "LOW"
    high = assess({**nothing, "rows_proven": 1, "rows_singled_out": 2}, partial=True)
    assert high["level"] == "HIGH" and high["lower_bound"] is False and len(high["also"]) == 1
    proven = assess({**nothing, "rows_proven": 5, "rows_reconstructed_exactly": 7}, False)
    assert proven["also"] == ["2 training row(s) are rebuilt exactly without proof"]
    exact = assess({**nothing, "rows_proven": 5, "rows_reconstructed_exactly": 5}, False)
    assert exact["also"] == []  # the proven rows are the rows rebuilt exactly
    low = assess(nothing, partial=True)
    assert low["level"] == "LOW" and "lower bound" in low["why"]
    binary = assess({**nothing, "rows_proven": 4}, False)
    assert "4 row(s) to be in the training data with their values" in binary["why"]
    boxes = assess({**nothing, "rows_proven": 301, "rows_proven_pinned": 0}, False)
    assert boxes["level"] == "LOW"  # rows proven only as wide boxes are no rows given away
    some = assess({**nothing, "rows_proven": 10, "rows_proven_pinned": 4}, False)
    assert "proves 4 row(s)" in some["why"] and "6 more are proven only as boxes" in some["why"]


def test_a_bootstrap_forest_gives_its_class_balance_away_within_a_few_rows() -> None:
    """Each tree drew N rows with replacement: the trees' class totals average to the
    class balance, so the report states it (as an estimate), draws or no draws."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    from treeleaks import from_sklearn
    from treeleaks.report.collect import exposed_facts

    X, y = load_breast_cancer(return_X_y=True)
    model = from_sklearn(RandomForestClassifier(n_estimators=100, random_state=0).fit(X, y))
    for kept in (True, False):
        if not kept:
            for tree in model.trees:
                tree.draws = None
            model.description = None  # described again, from the IR without the draws
        facts = exposed_facts(model)
        assert facts["class_balance_estimated"] is True
        balance = facts["class_balance"]
        assert sum(balance.values()) == len(y)
        truth = {"0": int((y == 0).sum()), "1": int((y == 1).sum())}
        assert all(abs(balance[c] - truth[c]) <= 0.02 * len(y) for c in truth)


def test_default_forest_on_raw_measurements_reports_rows_recovered_and_intervals() -> None:
    """Raw numerical columns: the rows come back row by row; the report says how tightly
    their values are pinned, and how many of the data's rows are recovered (a multiset)."""
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(60, 6)), columns=[f"x{j}" for j in range(6)])
    y = (X["x0"] + X["x1"] + rng.normal(0, 0.5, 60) > 0).astype(int).to_numpy()
    forest = RandomForestClassifier(n_estimators=20, random_state=3).fit(X, y)
    data = X.assign(label=y)
    audit = audited(from_sklearn(forest), forest, data, "label", budget=30)
    figures = audit.attack("reconstruct").figures
    recon = reconstruct(from_sklearn(forest), time_limit=30)
    assert figures["strategy"] == "per-row" and figures["verified"]
    score = rows_recovered(from_sklearn(forest), data, recon.rows,
                           FeatureSchema.from_frame(X),
                           references=References(n_random=0, true_boxes=False))
    assert figures["rows_recovered"] == score.rows_recovered >= 36  # 43 measured; random: 0
    assert figures["recovered_share"] == score.recovered_share
    width = recon.width.to_numpy(dtype=float)
    assert figures["pinned_within_5pct"] == pytest.approx((width <= 0.05).mean())
    assert audit.verdict["values_pinned_within_5pct"] == figures["pinned_within_5pct"]
