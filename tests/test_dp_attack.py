"""The DP attack: exact likelihood of noisy counts, the most likely dataset, N unknown,
known rows, and the errors a user can make."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import laplace
from typer.testing import CliRunner

from treeleaks import (
    DPRandomForestClassifier,
    FeatureSchema,
    Knowledge,
    KnowledgeError,
    TreeleaksError,
    UnsupportedModelError,
    from_dp_forest,
    reconstruct,
)
from treeleaks.attacks.marginal_prior import marginal_log_prior, posterior_row
from treeleaks.attacks.reconstruction.dp import n_rows_interval
from treeleaks.cli import app
from treeleaks.counts.cells import CellBudget, EveryClassOccupancy, enumerate_cells
from treeleaks.counts.noise import likelihood_lines, log_mass
from treeleaks.evaluation.metrics import evaluate
from treeleaks.ir.model import ModelFormatError, NoiseMechanism

from conftest import binary_frame


def dp_model(n_rows: int = 40, n_features: int = 5, trees: int = 3, depth: int = 3,
             epsilon: float = 5.0, seed: int = 0):
    X, y = binary_frame(n_rows, n_features, seed)
    schema = FeatureSchema.from_frame(X)
    forest = DPRandomForestClassifier(n_estimators=trees, max_depth=depth, epsilon=epsilon,
                                      schema=schema, random_state=seed).fit(X, y)
    truth = X.copy()
    truth["label"] = y
    return from_dp_forest(forest), schema, truth


def log_likelihood_of(model, rows: pd.DataFrame) -> float:
    X = rows[list(model.feature_names)].to_numpy(dtype=float)
    implied = model.leaf_counts_of(X, rows[model.label_name].to_numpy())
    return float(sum(log_mass(t.counts, z, model.noise.scale).sum()
                     for t, z in zip(model.trees, implied)))


# --- the likelihood ------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.05, 1.0, 30.0])
def test_log_mass_is_the_laplace_mass_of_what_truncates_to_the_release(scale):
    released = np.array([-4, -1, 0, 0, 1, 3, 7])
    count = np.array([2, 0, 0, 3, 1, 5, 2])
    low = np.where(released > 0, released, np.where(released < 0, released - 1, -1)) - count
    high = np.where(released > 0, released + 1, np.where(released < 0, released, 1)) - count
    mass = laplace.cdf(high, scale=scale) - laplace.cdf(low, scale=scale)
    with np.errstate(divide="ignore"):
        expected = np.log(mass)
    finite = mass > 1e-300
    assert np.allclose(log_mass(released, count, scale)[finite], expected[finite], rtol=1e-9)
    # A proper distribution over the released value, for any true count.
    values = np.arange(-2000, 2000)
    assert np.exp(log_mass(values, 4, scale)).sum() == pytest.approx(1.0, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-20, 40), min_size=1, max_size=20),
       st.lists(st.integers(0, 6), min_size=20, max_size=20),
       st.sampled_from([0.02, 0.4, 3.0, 80.0]), st.integers(0, 30))
def test_the_lines_are_exact_at_every_whole_count(released, offsets, scale, z_max):
    released = np.array(released)
    offset = np.array(offsets[: released.size])
    lines = likelihood_lines(released, scale, z_max, offset)
    z = np.arange(z_max + 1)
    envelope = np.full((released.size, z.size), np.inf)
    for owner, slope, intercept in zip(lines.owner, lines.slope, lines.intercept):
        envelope[owner] = np.minimum(envelope[owner], slope * z + intercept)
    exact = log_mass(released[:, None], z[None, :] + offset[:, None], scale)
    assert np.allclose(envelope, exact, rtol=1e-9, atol=1e-9)


# --- the attack ----------------------------------------------------------------------


def test_with_almost_no_noise_every_count_is_explained_by_truncation_alone():
    """At scale 1e-7 a release is int(z + Y) with |Y| tiny: z itself, or z - 1 when Y < 0
    (truncation toward zero). The rows found must imply counts the release allows."""
    model, schema, truth = dp_model(epsilon=1e7)
    rec = reconstruct(model, schema, time_limit=20, shrinkage=0)
    assert rec.formulation == "dp" and rec.dp.likelihood_checked and rec.status == "OPTIMAL"
    X = rec.rows[list(model.feature_names)].to_numpy(dtype=float)
    for tree, z in zip(model.trees, model.leaf_counts_of(X, rec.rows["label"].to_numpy())):
        assert np.all((tree.counts == z) | (tree.counts == z - 1))
    assert rec.dp.log_likelihood >= log_likelihood_of(model, truth) - 1e-9


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([0.5, 2.0, 10.0]), st.integers(1, 3),
       st.integers(1, 3))
def test_an_optimal_reconstruction_is_at_least_as_likely_as_the_truth(seed, epsilon, trees,
                                                                      depth):
    model, schema, truth = dp_model(n_rows=25, n_features=4, trees=trees, depth=depth,
                                    epsilon=epsilon, seed=seed)
    rec = reconstruct(model, schema, time_limit=20, shrinkage=0)
    assert rec.status == "OPTIMAL" and rec.dp.likelihood_checked and rec.n_rows == 25
    assert rec.dp.log_likelihood == pytest.approx(log_likelihood_of(model, rec.rows))
    assert rec.dp.log_likelihood >= log_likelihood_of(model, truth) - 1e-9
    assert rec.dp.log_likelihood <= rec.dp.log_likelihood_bound + 1e-6


def test_the_attack_beats_the_random_baseline_at_a_large_budget():
    model, schema, truth = dp_model(n_rows=60, n_features=6, trees=10, depth=4, epsilon=30)
    rec = reconstruct(model, schema, time_limit=20)
    score = evaluate(truth, rec.rows, schema, label="label", n_baseline_draws=5)
    assert score.error < 0.5 * score.baseline_error
    assert rec.dp.first_solution_s < rec.time_s
    assert rec.summary()["n_rows_used"] == 60


def test_shrinkage_trades_likelihood_for_typical_rows_and_says_so():
    model, schema, _ = dp_model(n_rows=60, n_features=6, trees=6, depth=3, epsilon=2)
    likeliest = reconstruct(model, schema, time_limit=20, shrinkage=0)
    shrunk = reconstruct(model, schema, time_limit=20)
    assert shrunk.dp.likelihood_checked and shrunk.n_rows == 60
    assert shrunk.dp.log_likelihood <= likeliest.dp.log_likelihood + 1e-9
    assert shrunk.dp.log_likelihood_bound == pytest.approx(likeliest.dp.log_likelihood_bound)
    assert "shrunk toward the column frequencies" in shrunk.message
    assert f"the most likely {likeliest.dp.log_likelihood:.3f}" in shrunk.message


def test_an_unknown_n_is_estimated_within_bounds_that_hold_it():
    for seed in range(4):
        model, schema, _ = dp_model(n_rows=80, trees=8, depth=3, epsilon=4, seed=seed)
        bounds = n_rows_interval(model)
        assert bounds.low <= 80 <= bounds.high
        rec = reconstruct(model, schema, n_unknown=True, time_limit=20)
        assert rec.n_rows == round(bounds.estimate)
        assert rec.dp.n_rows_interval == (bounds.low, bounds.high)
        assert rec.summary()["n_rows_interval"] == [bounds.low, bounds.high]


def test_the_informed_adversary_beats_the_majority_baseline():
    """All rows but one known: the missing row, reconstructed at eps = 30, is closer to the
    truth than the per-column majority of the training set (the best constant guess)."""
    errors, baseline = [], []
    for seed in range(6):
        model, schema, truth = dp_model(n_rows=30, n_features=6, trees=10, depth=4,
                                        epsilon=30, seed=seed)
        features = list(model.feature_names)
        known = Knowledge(rows=truth.iloc[1:].reset_index(drop=True))
        rec = reconstruct(model, schema, knowledge=known, time_limit=20)
        assert rec.n_rows == 30
        pd.testing.assert_frame_equal(rec.rows.iloc[1:].reset_index(drop=True)[features],
                                      truth.iloc[1:].reset_index(drop=True)[features],
                                      check_dtype=False)
        guess = rec.rows.iloc[0][features].to_numpy(dtype=float)
        majority = (truth[features].mean() > 0.5).to_numpy(dtype=float)
        target = truth.iloc[0][features].to_numpy(dtype=float)
        errors.append(np.abs(guess - target).mean())
        baseline.append(np.abs(majority - target).mean())
    assert np.mean(errors) < np.mean(baseline)


# --- bad input -----------------------------------------------------------------------


def test_a_model_that_does_not_state_n_needs_it_given():
    model, schema, _ = dp_model()
    silent = replace(model, facts={})
    with pytest.raises(TreeleaksError, match="does not state its training-set size N"):
        reconstruct(silent, schema)
    assert reconstruct(silent, schema, n_rows=40, time_limit=10).n_rows == 40
    with pytest.raises(TreeleaksError, match="not both"):
        reconstruct(silent, schema, n_rows=40, n_unknown=True)


def test_epsilon_and_scale_must_agree():
    model, _, _ = dp_model(trees=3, epsilon=5.0)
    data = model.to_dict()
    data["noise"]["scale"] = 1.0
    with pytest.raises(ModelFormatError, match=r"scale 0\.6.*records scale 1"):
        type(model).from_dict(data)
    data["noise"] = {"kind": "gaussian", "epsilon": 5.0, "scale": 0.6}
    with pytest.raises(UnsupportedModelError, match="'gaussian' is not supported"):
        type(model).from_dict(data)


def test_a_tiny_budget_gives_a_status_not_a_crash():
    model, schema, _ = dp_model(n_rows=60, trees=10, depth=4)
    rec = reconstruct(model, schema, time_limit=1e-9)
    assert rec.status in ("FEASIBLE", "UNKNOWN")
    assert rec.status == "UNKNOWN" or rec.n_rows == 60


def test_side_knowledge_that_does_not_apply_is_refused():
    model, schema, truth = dp_model()
    with pytest.raises(KnowledgeError, match="known columns are not supported for DP"):
        reconstruct(model, schema, knowledge=Knowledge(columns=truth[["f0"]]))
    with pytest.raises(KnowledgeError, match="41 known rows, but N is 40"):
        reconstruct(model, schema, knowledge=Knowledge(rows=pd.concat([truth, truth[:1]])))
    exact = replace(model, noise=None, trees=[replace(t, counts=abs(t.counts))
                                              for t in model.trees])
    with pytest.raises(TreeleaksError, match="n_rows, n_unknown and shrinkage are for DP"):
        reconstruct(exact, schema, n_unknown=True)


def test_the_attack_refuses_exact_counts():
    from treeleaks.attacks.reconstruction.dp import reconstruct_dp
    from treeleaks.attacks.reconstruction.options import RunOptions

    model, schema, _ = dp_model()
    with pytest.raises(UnsupportedModelError, match="has exact counts"):
        reconstruct_dp(replace(model, noise=None), schema, RunOptions())
    odd = replace(model, noise=NoiseMechanism("geometric", 5.0, 0.6))
    with pytest.raises(UnsupportedModelError, match="'geometric' noise"):
        reconstruct_dp(odd, schema, RunOptions())


# --- command line --------------------------------------------------------------------


def test_train_dp_then_reconstruct_on_the_command_line(tmp_path):
    X, y = binary_frame(50, 5, 3)
    data = X.copy()
    data["target"] = y
    data.to_csv(tmp_path / "train.csv", index=False)
    runner = CliRunner()
    trained = runner.invoke(app, ["train-dp", str(tmp_path / "train.csv"), "--label", "target",
                                  "--epsilon", "5", "--trees", "4", "--depth", "3",
                                  "--out", str(tmp_path / "model.json")])
    assert trained.exit_code == 0, trained.output
    assert "5-differential privacy" in trained.output and "Train accuracy" in trained.output
    shown = runner.invoke(app, ["inspect", str(tmp_path / "model.json")])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.replace("│", " ").split())
    assert "50 given away (stated in the file); the noisy counts put it between" in text
    assert "cells enumerated" in shown.output and "epsilon=5" in shown.output
    run = runner.invoke(app, ["reconstruct", str(tmp_path / "model.json"), "--out",
                              str(tmp_path / "rows.csv"), "--json", str(tmp_path / "s.json"),
                              "--time-limit", "20", "--n-unknown"])
    assert run.exit_code == 0, run.output
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["formulation"] == "dp" and summary["likelihood_checked"]
    assert summary["first_solution_s"] >= 0 and summary["log_likelihood"] < 0
    low, high = summary["n_rows_interval"]
    assert low <= summary["n_rows_used"] <= high
    assert len(pd.read_csv(tmp_path / "rows.csv")) == summary["n_rows_used"]


@pytest.mark.parametrize("args, message", [
    (["--label", "nope", "--epsilon", "1"], "no label column 'nope'"),
    (["--label", "target", "--epsilon", "0"], "epsilon"),
    (["--label", "target", "--epsilon", "nan"], "epsilon"),
])
def test_train_dp_refuses_bad_input(tmp_path, args, message):
    X, y = binary_frame(20, 3, 0)
    X.assign(target=y).to_csv(tmp_path / "train.csv", index=False)
    result = CliRunner().invoke(app, ["train-dp", str(tmp_path / "train.csv"), *args,
                                      "--out", str(tmp_path / "m.json")])
    assert result.exit_code == 2
    assert message in result.output


# --- cells on demand -----------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_generated_cells_find_the_same_optimum_as_listed_ones(seed, monkeypatch):
    """Beyond the cell budget, cells come from a few sampled points and pricing; with
    pricing proving no better cell, the optimum equals the one over every listed cell."""
    monkeypatch.setattr("treeleaks.counts.cell_pool.SAMPLED_POINTS", 3)
    model, schema, truth = dp_model(n_rows=30, n_features=8, trees=4, depth=3, epsilon=8,
                                    seed=seed)
    listed = reconstruct(model, schema, time_limit=30, shrinkage=0)
    generated = reconstruct(model, schema, time_limit=30, shrinkage=0,
                            cell_budget=CellBudget(max_cells=1))
    assert listed.strategy == "enumerate" and generated.strategy == "generate"
    assert generated.timings["pricing_calls"] > 2 and generated.n_cells > 3
    assert generated.dp.likelihood_checked and generated.n_rows == 30
    assert generated.dp.log_likelihood <= listed.dp.log_likelihood_bound + 1e-6
    assert generated.status == "OPTIMAL"
    assert generated.dp.log_likelihood == pytest.approx(listed.dp.log_likelihood, abs=1e-6)
    assert generated.dp.log_likelihood >= log_likelihood_of(model, truth) - 1e-9


def test_cells_are_priced_when_the_domain_cannot_be_sampled():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=40), "b": rng.integers(0, 2, 40)})
    y = (X["x"] > 0).astype(int).to_numpy()
    domains = FeatureSchema.from_dict({"numerical": {"x": [-4.0, 4.0]}})
    forest = DPRandomForestClassifier(n_estimators=3, max_depth=2, epsilon=20,
                                      schema=domains, random_state=0).fit(X, y)
    model = from_dp_forest(forest)
    open_range = FeatureSchema.from_dict({"numerical": {"x": [-np.inf, np.inf]}})
    rec = reconstruct(model, open_range, time_limit=20, cell_budget=CellBudget(max_cells=1))
    assert rec.strategy == "generate" and rec.n_rows == 40 and rec.dp.likelihood_checked


def test_with_a_flat_posterior_the_row_is_the_known_rows_mode():
    """Counts that say nothing leave the prior: each column at its most common value among
    the known rows, a one-hot group at its most common member, the label likewise."""
    rng = np.random.default_rng(1)
    member = rng.choice(3, size=40, p=[0.2, 0.5, 0.3])
    X = pd.DataFrame({"a": (np.arange(40) % 4 == 0).astype(int), "g0": member == 0,
                      "g1": member == 1, "g2": member == 2}).astype(int)
    y = np.where(np.arange(40) % 3 == 0, 1, 0)
    schema = FeatureSchema.from_frame(X, one_hot_groups=[["g0", "g1", "g2"]])
    forest = DPRandomForestClassifier(n_estimators=2, max_depth=2, epsilon=1.0,
                                      schema=schema, random_state=0).fit(X, y)
    model = from_dp_forest(forest)
    cells = enumerate_cells(model, schema, occupancy=EveryClassOccupancy(model))
    flat = marginal_log_prior(cells, schema, model, X.to_numpy(float), y).ravel()
    values, sure, cls = posterior_row(cells, flat, schema, model, X.to_numpy(float), y)
    assert values.tolist() == [0.0, 0.0, 1.0, 0.0] and cls == 0
    assert np.all((sure > 0.5) & (sure < 1.0))


def test_known_rows_and_shrinkage_on_the_command_line(tmp_path):
    X, y = binary_frame(40, 5, 4)
    data = X.assign(target=y)
    data.to_csv(tmp_path / "train.csv", index=False)
    data.iloc[1:].to_csv(tmp_path / "known.csv", index=False)
    runner = CliRunner()
    trained = runner.invoke(app, ["train-dp", str(tmp_path / "train.csv"), "--label", "target",
                                  "--epsilon", "30", "--trees", "6", "--depth", "3",
                                  "--out", str(tmp_path / "model.json")])
    assert trained.exit_code == 0, trained.output
    informed = runner.invoke(app, ["reconstruct", str(tmp_path / "model.json"), "--known-rows",
                                   str(tmp_path / "known.csv"), "--out",
                                   str(tmp_path / "rows.csv"), "--json",
                                   str(tmp_path / "s.json"), "--time-limit", "20"])
    assert informed.exit_code == 0, informed.output
    summary = json.loads((tmp_path / "s.json").read_text())
    assert "39 rows in full" in summary["knowledge"] and "prior" in summary["knowledge"]
    assert "one unknown row" in summary["message"]
    rows = pd.read_csv(tmp_path / "rows.csv")
    assert len(rows) == 40
    pd.testing.assert_frame_equal(rows.iloc[1:].reset_index(drop=True),
                                  data.iloc[1:].reset_index(drop=True), check_dtype=False)
    plain = runner.invoke(app, ["reconstruct", str(tmp_path / "model.json"), "--shrinkage",
                                "0", "--json", str(tmp_path / "p.json"), "--time-limit", "20"])
    assert plain.exit_code == 0, plain.output
    assert "shrunk" not in json.loads((tmp_path / "p.json").read_text())["message"]
    exact = runner.invoke(app, ["train-dp", str(tmp_path / "train.csv"), "--label", "target",
                                "--epsilon", "inf", "--trees", "2", "--depth", "2",
                                "--out", str(tmp_path / "exact.json")])
    assert exact.exit_code == 0 and "none: epsilon=inf" in exact.output
    refused = runner.invoke(app, ["reconstruct", str(tmp_path / "exact.json"), "--shrinkage",
                                  "0.5"])
    assert refused.exit_code == 2 and "for DP forests" in refused.output


def test_leak_test_on_the_command_line(tmp_path):
    """The custodian's check: a reconstruction equal to the training rows is a leak; one
    drawn from the population is not. A partial schema is completed from the data, so
    every column is scored."""
    rng = np.random.default_rng(5)
    population = pd.DataFrame(rng.random((600, 6)) < 0.2, columns=[f"c{j}" for j in range(6)])
    population = population.astype(int).assign(label=rng.integers(0, 2, 600))
    train, rest = population.iloc[:50], population.iloc[50:]
    train.to_csv(tmp_path / "train.csv", index=False)
    rest.to_csv(tmp_path / "population.csv", index=False)
    rest.iloc[:50].to_csv(tmp_path / "other.csv", index=False)
    (tmp_path / "schema.json").write_text(json.dumps({"at_most_one_groups": [["c0", "c1"]]}))
    runner = CliRunner()
    outcomes = {}
    for name in ("train", "other"):
        result = runner.invoke(app, ["leak-test", str(tmp_path / f"{name}.csv"), "--truth",
                                     str(tmp_path / "train.csv"), "--population",
                                     str(tmp_path / "population.csv"), "--label", "label",
                                     "--schema", str(tmp_path / "schema.json"), "--json",
                                     str(tmp_path / f"{name}.json")])
        assert result.exit_code == 0, result.output
        outcomes[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert outcomes["train"]["leak"] and outcomes["train"]["error"] == 0
    assert not outcomes["other"]["leak"]
    schema = FeatureSchema.from_frame(train.drop(columns="label"),
                                      at_most_one_groups=[["c0", "c1"]])
    assert outcomes["other"]["error"] == pytest.approx(
        evaluate(train, rest.iloc[:50], schema, label="label", n_baseline_draws=0).error)
    missing = runner.invoke(app, ["leak-test", str(tmp_path / "train.csv"), "--truth",
                                  str(tmp_path / "train.csv"), "--population",
                                  str(tmp_path / "nope.csv")])
    assert missing.exit_code == 2  # the path named as what it is (issue 41)
    assert "population" in missing.output and "nope.csv' does not exist" in missing.output
