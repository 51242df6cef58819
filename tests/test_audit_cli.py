"""``treeleaks audit``: the report files, the printed verdict, and bad input refused as the
separate commands refuse it."""

from __future__ import annotations

import json
from pathlib import Path

import joblib
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from typer.testing import CliRunner

from treeleaks.cli import app
from treeleaks.io import save_model
from treeleaks.report.json_report import validate

from conftest import binary_frame, one_line_error

runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("audit")
    X, y = binary_frame(80, 6, seed=5)
    forest = RandomForestClassifier(n_estimators=10, bootstrap=False, random_state=0).fit(X, y)
    tree = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y)
    X.assign(label=y).to_csv(folder / "train.csv", index=False)
    X.assign(other=1, label=y).to_csv(folder / "wide.csv", index=False)
    joblib.dump(forest, folder / "forest.pkl")
    regressor = DecisionTreeRegressor(random_state=0).fit(X, y + 0.5 * X.f1 + 0.25 * X.f2)
    X.assign(label=regressor.predict(X)).to_csv(folder / "targets.csv", index=False)
    return {"forest": save_model(forest, folder / "forest.skops"),
            "tree": save_model(tree, folder / "tree.skops"),
            "regressor": save_model(regressor, folder / "regressor.skops"),
            "pickle": folder / "forest.pkl", "data": folder / "train.csv",
            "targets": folder / "targets.csv",
            "wide": folder / "wide.csv"}


def test_audit_writes_both_reports_and_prints_the_verdict(files, tmp_path) -> None:
    out = tmp_path / "new" / "audit"
    result = runner.invoke(app, ["audit", str(files["forest"]), "--data", str(files["data"]),
                                 "--label", "label", "--budget", "60", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    validate(report)
    assert report["partial"] is False
    assert f"{report['risk']['level']}" in result.stdout
    assert "Rows proven in the training data" in result.stdout
    page = (out / "report.html").read_text()
    assert 'id="verdict"' in page and "data:image/png;base64," in page
    assert "http://" not in page and "https://" not in page  # nothing to fetch


def test_audit_is_listed_first() -> None:
    listing = runner.invoke(app, ["--help"]).stdout
    first_command = listing[listing.index("Commands"):].splitlines()[1].split()[1]
    assert first_command == "audit"


def test_interrupted_audit_writes_a_partial_report_and_exits_130(files, tmp_path,
                                                                 monkeypatch) -> None:
    from treeleaks.report import evidence

    def ctrl_c(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(evidence, "singling_out", ctrl_c)
    result = runner.invoke(app, ["audit", str(files["tree"]), "--out", str(tmp_path)])
    assert "interrupted" in one_line_error(result, 130)
    assert json.loads((tmp_path / "report.json").read_text())["partial"] is True
    assert "Partial report." in (tmp_path / "report.html").read_text()


@pytest.mark.parametrize("case", ["missing", "pickle", "schema"])
def test_model_and_schema_refused_as_reconstruct_refuses_them(files, tmp_path, case) -> None:
    model = {"missing": tmp_path / "nope.skops", "pickle": files["pickle"],
             "schema": files["forest"]}[case]
    extra = ["--schema", str(tmp_path / "none.json")] if case == "schema" else []
    audit = runner.invoke(app, ["audit", str(model), "--out", str(tmp_path / "a"), *extra])
    other = runner.invoke(app, ["reconstruct", str(model), *extra])
    assert one_line_error(audit) == one_line_error(other)


@pytest.mark.parametrize("case", ["no label", "wrong columns", "unreadable"])
def test_data_refused_as_single_out_refuses_it(files, tmp_path, case) -> None:
    data = {"no label": files["data"], "wrong columns": files["wide"],
            "unreadable": tmp_path / "missing.csv"}[case]
    label = [] if case == "no label" else ["--label", "label"]
    args = [str(files["tree"]), "--data", str(data), *label]
    audit = runner.invoke(app, ["audit", *args, "--out", str(tmp_path / "a")])
    other = runner.invoke(app, ["single-out", *args])
    assert one_line_error(audit) == one_line_error(other)


def test_bad_options_are_one_line_errors(files, tmp_path) -> None:
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    model = str(files["tree"])
    budget = runner.invoke(app, ["audit", model, "--budget", "0", "--out", str(tmp_path)])
    assert "must be a positive number of seconds" in one_line_error(budget)
    out_file = runner.invoke(app, ["audit", model, "--out", str(a_file)])
    assert "is a file; name a folder" in one_line_error(out_file)
    population = runner.invoke(app, ["audit", model, "--population", str(files["data"]),
                                     "--label", "label", "--out", str(tmp_path)])
    assert "--population needs --data" in one_line_error(population)
    assert not (tmp_path / "report.json").exists()


def test_tree_report_draws_the_tree_and_lists_every_row(files, tmp_path) -> None:
    result = runner.invoke(app, ["audit", str(files["tree"]), "--data", str(files["data"]),
                                 "--label", "label", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "report.html").read_text()
    assert 'id="plot-tree"' in page and 'id="plot-entropy"' in page
    rows = json.loads((tmp_path / "report.json").read_text())["rows"]
    assert [r["row"] for r in rows] == list(range(len(pd.read_csv(files["data"]))))


def test_rule_list_audit_matches_treeleaks_leak(tmp_path) -> None:
    from test_rule_list import PAPER

    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(PAPER))
    leak = runner.invoke(app, ["leak", str(rules), "--json", str(tmp_path / "leak.json")])
    audit = runner.invoke(app, ["audit", str(rules), "--out", str(tmp_path / "a")])
    assert leak.exit_code == 0 and audit.exit_code == 0, audit.output
    expected = json.loads((tmp_path / "leak.json").read_text())
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    validate(report)
    assert report["verdict"]["dist_g"] == pytest.approx(expected["dist_g"])
    assert report["verdict"]["n_rows_given_away"] == expected["n_rows"] == 5
    assert report["verdict"]["class_balance_given_away"] == {"0": 2, "1": 3}
    assert report["risk"]["level"] == "MEDIUM" and report["risk"]["rule"] == "narrowed down"
    status = {a["name"]: a["status"] for a in report["attacks"]}
    assert status == {"leak": "complete", "reconstruct": "does not apply",
                      "single-out": "does not apply"}
    with_data = runner.invoke(app, ["audit", str(rules), "--data", str(tmp_path / "x.csv"),
                                    "--label", "y", "--out", str(tmp_path / "b")])
    assert "a rule list is audited from the file alone" in one_line_error(with_data)


def test_a_regressor_is_reconstructed_singled_out_and_pruned(files, tmp_path) -> None:
    from treeleaks.attacks.singling_out import check_against_data, single_out
    from treeleaks.io import load_model

    result = runner.invoke(app, ["audit", str(files["regressor"]), "--data",
                                 str(files["targets"]), "--label", "label", "--out",
                                 str(tmp_path)])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    model = load_model(files["regressor"], allow_regression=True)
    model.label_name = "label"
    exposure = check_against_data(single_out(model), model, pd.read_csv(files["targets"]),
                                  "label")
    assert report["verdict"]["rows_singled_out"] == len(exposure.singled_out) > 0
    status = {a["name"]: a["status"] for a in report["attacks"]}
    assert status["leak"] == "does not apply"  # the probabilistic reconstruction reads classes
    assert status["reconstruct"] in ("complete", "partial")
    rebuilt = report["verdict"]["targets_given_away"]
    assert rebuilt == report["verdict"]["rows_reconstructed"] > 0
    prune = next(a for a in report["attacks"] if a["name"] == "prune")["figures"]
    assert prune["metric"] == "R²" and prune["predicates_left"] == 0


def test_progress_shows_the_attack_and_the_engine_stage_on_a_terminal() -> None:
    import io

    from rich.console import Console

    from treeleaks.cli.audit import _progress
    from treeleaks.report.findings import AttackRun, RunStatus
    from treeleaks.runtime.progress import Progress

    with _progress(Console(file=io.StringIO())) as callbacks:
        assert callbacks == (None, None, None)  # not a terminal: results only
    screen = io.StringIO()
    with _progress(Console(file=screen, force_terminal=True, width=150)) as (
            engine, on_step, on_done):
        on_step("Predicate singling out", 1, 7, 12.5)
        engine(Progress("cells", 3, 10, {"cells": 42}))
        overall, stage = engine.bars.tasks
        assert (overall.description, overall.completed, overall.total) == (
            "Audit: Predicate singling out", 1, 7)
        assert overall.fields["figures"] == "attack 2 of 7, up to 12.5 s"
        on_done(AttackRun("single-out", "Predicate singling out", RunStatus.COMPLETE,
                          time_s=2.0, budget_s=12.5), 40.0)
        assert (stage.description, stage.fields["figures"]) == (
            "Listing cells", "3/10 trees · cells 42")
    line = "Predicate singling out: complete in 2.0 s of 12.5 s; 40 s of the budget left"
    assert line in screen.getvalue()  # the attack's line stays when the bars are gone
