"""The command line: outputs, exit codes, and one-line errors instead of tracebacks."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from rich.console import Console
from sklearn.ensemble import RandomForestClassifier
from typer.testing import CliRunner, Result

from treeleaks import from_sklearn
from treeleaks.cli import app
from treeleaks.io import load_model, save_model
from treeleaks.runtime.display import live_progress
from treeleaks.runtime.progress import Progress

from conftest import binary_frame, one_line_error

runner = CliRunner()


@pytest.fixture(scope="module")
def truth() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.integers(0, 2, (60, 6)), columns=[f"f{i}" for i in range(6)])
    return X.assign(label=((X.f0 ^ X.f1) | X.f2).astype(np.int64))


@pytest.fixture(scope="module")
def files(truth: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A no-bootstrap forest as skops, pickle and JSON, and a bootstrap forest as skops."""
    folder = tmp_path_factory.mktemp("models")
    X, y = truth.drop(columns="label"), truth["label"]
    forest = RandomForestClassifier(n_estimators=20, bootstrap=False, random_state=0).fit(X, y)
    joblib.dump(forest, folder / "forest.pkl")
    tampered = from_sklearn(forest).to_dict()
    tampered["trees"][0]["counts"][0][0] += 1  # one more row in tree 0 than in the others
    tampered["trees"][0]["n_samples"][0] += 1
    (folder / "tampered.json").write_text(json.dumps(tampered))
    bagged = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    return {
        "forest": save_model(forest, folder / "forest.skops"),
        "pickle": folder / "forest.pkl",
        "tampered": folder / "tampered.json",
        "bagged": save_model(bagged, folder / "bagged.skops"),
    }


def test_reconstruct_writes_the_training_rows_and_a_summary(
    files: dict[str, Path], truth: pd.DataFrame, tmp_path: Path
) -> None:
    out, summary = tmp_path / "recon.csv", tmp_path / "summary.json"
    result = runner.invoke(
        app, ["reconstruct", str(files["forest"]), "--out", str(out), "--json", str(summary)]
    )
    assert result.exit_code == 0, result.output
    rows = pd.read_csv(out)
    assert list(rows.columns) == list(truth.columns)
    by_all = list(truth.columns)
    expected = truth.sort_values(by_all).reset_index(drop=True)
    pd.testing.assert_frame_equal(rows.sort_values(by_all).reset_index(drop=True), expected)
    report = json.loads(summary.read_text())
    assert report["status"] == "OPTIMAL" and report["verified"] is True
    assert report["n_rows"] == len(truth) and report["proven_rows"] == len(truth)
    assert report["time_s"] >= 0 and report["model_path"] == str(files["forest"])


def test_inspect_reports_what_the_model_exposes(files: dict[str, Path]) -> None:
    result = runner.invoke(app, ["inspect", str(files["forest"])])
    assert result.exit_code == 0, result.output
    for expected in ("Trees", "20", "Leaves per tree", "Bootstrap", "Training rows N", "60"):
        assert expected in result.stdout
    bagged = runner.invoke(app, ["inspect", str(files["bagged"])])
    assert bagged.exit_code == 0 and "exposed" in bagged.stdout


def test_schema_naming_an_unknown_column_exits_2(files: dict[str, Path], tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"numerical": {"blood_pressure": [0, 200]}}))
    result = runner.invoke(app, ["reconstruct", str(files["forest"]), "--schema", str(schema)])
    assert "blood_pressure" in one_line_error(result, 2)


def test_pickle_needs_trust_pickle(files: dict[str, Path]) -> None:
    refused = runner.invoke(app, ["inspect", str(files["pickle"])])
    assert "loading a pickle runs code from the file" in one_line_error(refused, 2)
    trusted = runner.invoke(app, ["inspect", str(files["pickle"]), "--trust-pickle"])
    assert trusted.exit_code == 0, trusted.output


def test_a_bootstrap_forest_is_rebuilt_and_verified(
    files: dict[str, Path], truth: pd.DataFrame, tmp_path: Path
) -> None:
    out, summary = tmp_path / "rows.csv", tmp_path / "summary.json"
    result = runner.invoke(app, ["reconstruct", str(files["bagged"]), "--out", str(out),
                                 "--json", str(summary)])
    assert result.exit_code == 0, result.output
    assert "bootstrap-known" in result.stdout
    facts = json.loads(summary.read_text())
    assert facts["formulation"] == "bootstrap-known" and facts["verified"]
    assert len(pd.read_csv(out)) == len(truth) == facts["n_rows"]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["inspect", "absent.skops"], "does not exist"),
        (["inspect", "model.xlsx"], "model file 'model.xlsx' does not exist"),
        (["reconstruct", "{forest}", "--schema", "absent.json"], "schema file"),
        (["reconstruct", "{forest}", "--out", "no/such/folder/x.csv"], "folder does not exist"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    files: dict[str, Path], args: list[str], fragment: str
) -> None:
    args = [a.format(**{k: str(v) for k, v in files.items()}) for a in args]
    assert fragment in one_line_error(runner.invoke(app, args), 2)


def test_counts_no_dataset_can_produce_exit_3_with_outputs_labelled_none(
    files: dict[str, Path], tmp_path: Path
) -> None:
    out, details, summary = tmp_path / "recon.csv", tmp_path / "details.csv", tmp_path / "s.json"
    result = runner.invoke(app, ["reconstruct", str(files["tampered"]), "--json", str(summary),
                                 "--out", str(out), "--details", str(details)])
    assert "no dataset reproduces the released counts" in one_line_error(result, 3)
    report = json.loads(summary.read_text())
    assert report["status"] == "INFEASIBLE" and report["partial"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "details.csv", "recon.csv", "s.json"]  # under the names asked for, said partial
    assert pd.read_csv(out).empty
    assert "(none: no dataset produces this file) to" in result.stdout


def test_demo_rebuilds_the_default_forests_wines_and_scores_rows_recovered() -> None:
    from treeleaks.demos.demo_raw import raw_data, run_raw_demo

    X, _ = raw_data()
    summary = run_raw_demo(console=Console(file=io.StringIO()))
    assert summary["verified"] and summary["strategy"] == "per-row"
    assert summary["n_rows"] == len(X) and summary["rows_recovered"] >= 0.85 * len(X)
    assert summary["recovered_share"] == summary["rows_recovered"] / len(X)
    assert summary["error"] < 0.5 * summary["baseline_error"]
    assert summary["true_box_error"] <= summary["matched_error"] < 0.5 * summary["random_error"]


def test_binarized_demo_proves_training_rows() -> None:
    result = runner.invoke(app, ["demo", "--binarized"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "bootstrap=False" in text and "verified" in text and "proven" in text


def test_demo_runs_and_is_verified() -> None:
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert "verified" in result.stdout


def test_details_carry_each_rows_proof_and_bounds(
    files: dict[str, Path], truth: pd.DataFrame, tmp_path: Path
) -> None:
    out, details = tmp_path / "recon.csv", tmp_path / "details.csv"
    result = runner.invoke(app, ["reconstruct", str(files["forest"]), "--out", str(out),
                                 "--details", str(details), "--strategy", "generate"])
    assert result.exit_code == 0, result.output
    rows, table = pd.read_csv(out), pd.read_csv(details)
    assert len(table) == len(rows) == len(truth)
    assert {"row", "proven", "proven_pattern", "f0:free", "f0:lower", "f0:upper"} <= set(table)
    for name in (f"f{i}" for i in range(6)):
        inside = (table[f"{name}:lower"] <= rows[name]) & (rows[name] <= table[f"{name}:upper"])
        assert inside.all()
    assert "generated on demand" in result.stdout


@pytest.mark.parametrize(
    ("clash", "fragment"),
    [("model", "overwrite the input"), ("schema", "overwrite the input"),
     ("each-other", "same file"), ("json", "same file"), ("folder", "it is a folder"),
     ("symlink", "overwrite the input"), ("hard-link", "overwrite the input"),
     ("dot", "overwrite the input")],
)
def test_outputs_never_overwrite_inputs_or_each_other(
    files: dict[str, Path], tmp_path: Path, clash: str, fragment: str
) -> None:
    model, schema = tmp_path / "model.json", tmp_path / "schema.json"
    model.write_text(files["tampered"].read_text())
    schema.write_text("{}")
    before = model.read_text(), schema.read_text()
    (tmp_path / "link.csv").symlink_to(model)
    os.link(schema, tmp_path / "hard.csv")
    details = {"model": model, "schema": schema, "each-other": tmp_path / "same.csv",
               "json": tmp_path / "same.csv", "folder": tmp_path, "symlink": tmp_path / "link.csv",
               "hard-link": tmp_path / "hard.csv", "dot": tmp_path / "sub" / ".." / "model.json",
               }[clash]
    (tmp_path / "sub").mkdir()
    other = "--json" if clash == "json" else "--out"
    result = runner.invoke(app, ["reconstruct", str(model), "--schema", str(schema), other,
                                 str(tmp_path / "same.csv"), "--details", str(details)])
    assert fragment in one_line_error(result, 2)
    assert (model.read_text(), schema.read_text()) == before


def test_inspect_estimates_which_strategy_will_run(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = runner.invoke(app, ["inspect", str(files["forest"])])
    assert result.exit_code == 0, result.output
    assert "Estimated cost" in result.stdout and "cells enumerated" in result.stdout
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"ordinal": {"f3": [0, 1]}}))
    result = runner.invoke(app, ["inspect", str(files["forest"]), "--schema", str(schema)])
    assert result.exit_code == 0 and "cells enumerated" in result.stdout, result.output
    monkeypatch.setattr("treeleaks.cli.inspect.PROBE_SECONDS", 0.0)
    result = runner.invoke(app, ["inspect", str(files["forest"])])
    assert "listing did not finish" in result.stdout and "probably generated" in result.stdout


def test_inspect_refuses_a_schema_that_does_not_fit(files: dict[str, Path], tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"ordinal": {"age": [0, 99]}}))
    result = runner.invoke(app, ["inspect", str(files["forest"]), "--schema", str(schema)])
    assert "'age'" in one_line_error(result, 2)


def test_summary_says_how_cells_were_found_and_proofs_obtained(files: dict[str, Path]) -> None:
    result = runner.invoke(app, ["reconstruct", str(files["forest"])])
    assert result.exit_code == 0, result.output
    assert "every cell listed" in result.stdout and "Proofs" in result.stdout


def test_skops_forest_loads_without_skops_or_sklearn(
    files: dict[str, Path], truth: pd.DataFrame
) -> None:
    """A plain tree classifier is read from the archive itself: importing skops and
    scikit-learn would cost seconds of start-up."""
    code = ("import sys; from treeleaks.io import load_model; "
            f"load_model({str(files['forest'])!r}); "
            "print(sorted(m for m in ('skops', 'sklearn') if m in sys.modules))")
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True).stdout.strip()
    assert imported == "[]"
    X, y = truth.drop(columns="label"), truth["label"]
    forest = RandomForestClassifier(n_estimators=20, bootstrap=False, random_state=0).fit(X, y)
    assert load_model(files["forest"]).to_dict() == from_sklearn(forest).to_dict()


def test_a_skops_tree_with_broken_nodes_is_refused_in_one_line(
    files: dict[str, Path], tmp_path: Path
) -> None:
    broken = tmp_path / "broken.skops"
    with zipfile.ZipFile(files["forest"]) as source, zipfile.ZipFile(broken, "w") as target:
        schema = json.loads(source.read("schema.json"))
        tree = schema["content"]["content"]["estimators_"]["content"][0]["content"]["content"]
        nodes_file = tree["tree_"]["content"]["content"]["nodes"]["file"]
        for item in source.infolist():
            data = source.read(item)
            if item.filename == nodes_file:
                nodes = np.load(io.BytesIO(data))
                nodes["left_child"][0] = 10_000
                buffer = io.BytesIO()
                np.save(buffer, nodes)
                data = buffer.getvalue()
            target.writestr(item, data)
    result = runner.invoke(app, ["inspect", str(broken)])
    assert "malformed tree" in one_line_error(result, 2)


def test_live_progress_draws_stages_and_figures_on_a_terminal() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=150)
    with live_progress(console) as show:
        assert show is not None
        show(Progress("cells", 12, 100, {"cells": 3412}))
        bars = show.bars  # type: ignore[attr-defined]
        task = bars.tasks[-1]
        assert (task.description, task.total, task.fields["figures"]) == (
            "Listing cells", 100, "12/100 trees · cells 3,412")
        show(Progress("polish", 1, None, {"odd_key": "x"}))  # a stage the CLI does not know
        assert len(bars.tasks) == 1 and bars.tasks[-1].total is None
    assert "Polish" in screen.getvalue() and "odd key x" in screen.getvalue()
    with live_progress(Console(file=io.StringIO())) as show:
        assert show is None  # not a terminal: nothing is drawn


def test_progress_figures_read_well() -> None:
    from treeleaks.runtime.display import figures_text

    assert figures_text({"cells": 3412, "columns": 12.0, "bound": 98.76543, "note": "x"}) == (
        "cells 3,412 · cells generated 12 · bound 98.77 · note x"
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["reconstruct", "{forest}", "--bogus"], "No such option: --bogus"),
        (["reconstruct"], "Missing argument 'MODEL'"),
        (["frobnicate"], "No such command 'frobnicate'"),
        (["reconstruct", "{forest}", "--time-limit", "soon"], "'--time-limit'"),
        (["reconstruct", "{forest}", "--time-limit", "0"], "'--time-limit'"),
        (["reconstruct", "{forest}", "--time-limit", "-5"], "'--time-limit'"),
        (["reconstruct", "{forest}", "--time-limit", "nan"], "'--time-limit'"),
        (["reconstruct", "{forest}", "--certainty-time-limit", "inf"], "'--certainty-time-limit'"),
        (["reconstruct", "{forest}", "--threads", "0"], "'--threads'"),
        (["reconstruct", "{forest}", "--seed", str(2**32)], "'--seed'"),
        (["reconstruct", "{forest}", "--seed", "-1"], "'--seed'"),
        (["reconstruct", "{forest}", "--strategy", "guess"], "'--strategy'"),
    ],
)
def test_usage_errors_are_one_line_naming_the_option(
    files: dict[str, Path], args: list[str], fragment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("treeleaks.attacks.reconstruct.reconstruct", never_called)
    args = [a.format(**{k: str(v) for k, v in files.items()}) for a in args]
    assert fragment in one_line_error(runner.invoke(app, args), 2)


def never_called(*args: object, **kwargs: object) -> None:
    raise AssertionError("the run started although its options or outputs were refused")


@pytest.fixture
def run_folder(files: dict[str, Path], tmp_path: Path) -> Path:
    """A folder holding a model and a schema, to check they come out byte-identical."""
    (tmp_path / "model.skops").write_bytes(files["forest"].read_bytes())
    (tmp_path / "schema.json").write_text("{}")
    return tmp_path


def folder_state(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def run_in(folder: Path, *options: str) -> Result:
    return runner.invoke(app, ["reconstruct", str(folder / "model.skops"), "--schema",
                               str(folder / "schema.json"), *options])


@pytest.mark.parametrize(
    ("error", "code", "fragments"),
    [
        (MemoryError(), 3, ("memory ran out", "--time-limit", "--strategy generate", "--schema")),
        (KeyboardInterrupt(), 130, ("interrupted",)),
        (RuntimeError("solver\nexploded"), 4, ("unexpected RuntimeError: solver exploded",
                                               "this is a bug, please report it")),
    ],
)
def test_a_crash_in_the_run_is_one_line_with_a_documented_code_and_no_files(
    run_folder: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException, code: int,
    fragments: tuple[str, ...]
) -> None:
    def crash(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr("treeleaks.attacks.reconstruct.reconstruct", crash)
    before = folder_state(run_folder)
    result = run_in(run_folder, "--out", str(run_folder / "recon.csv"),
                    "--json", str(run_folder / "summary.json"))
    line = one_line_error(result, code)
    assert all(fragment in line for fragment in fragments), line
    assert folder_state(run_folder) == before  # inputs unchanged, nothing written, no temps


def test_the_traceback_of_a_bug_shows_only_when_asked(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("solver exploded")

    monkeypatch.setattr("treeleaks.attacks.reconstruct.reconstruct", crash)
    monkeypatch.setenv("TREELEAKS_DEBUG", "1")
    result = runner.invoke(app, ["reconstruct", str(files["forest"])])
    assert result.exit_code == 4
    assert "Traceback" in result.stderr and "in crash" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: unexpected RuntimeError")


def test_a_failed_write_names_the_path_and_leaves_no_output_behind(
    run_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary is written after the CSV: its failure must not leave the CSV looking
    like a success."""
    from treeleaks.runtime import outputs

    real_replace = os.replace

    def replace(source: Path, target: Path) -> None:
        if Path(target).name == "summary.json":
            raise OSError(28, "No space left on device")
        real_replace(source, target)

    monkeypatch.setattr(outputs.os, "replace", replace)
    before = folder_state(run_folder)
    result = run_in(run_folder, "--out", str(run_folder / "recon.csv"),
                    "--details", str(run_folder / "details.csv"),
                    "--json", str(run_folder / "summary.json"))
    line = one_line_error(result, 2)
    assert str(run_folder / "summary.json") in line and "No space left on device" in line
    assert folder_state(run_folder) == before


def test_an_unwritable_output_is_refused_before_the_run(
    run_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("treeleaks.attacks.reconstruct.reconstruct", never_called)
    before = folder_state(run_folder)
    for target, fragment in [(run_folder / "no" / "out.csv", "folder does not exist"),
                             (run_folder / "schema.json" / "out.csv", "is not a folder")]:
        result = run_in(run_folder, "--details", str(target))
        line = one_line_error(result, 2)
        assert str(target) in line and fragment in line
    assert folder_state(run_folder) == before


def test_suggest_schema_is_written_atomically_and_never_over_an_input(
    files: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / "schema.json"
    target.write_text("old")
    result = runner.invoke(app, ["inspect", str(files["forest"]), "--suggest-schema",
                                 str(target), "--force"])  # replacing "old" is asked for
    assert result.exit_code == 0, result.output
    assert isinstance(json.loads(target.read_text()), dict)
    assert [p.name for p in tmp_path.iterdir()] == ["schema.json"]
    clash = runner.invoke(app, ["inspect", str(files["forest"]), "--suggest-schema",
                                str(files["forest"])])
    assert "would overwrite the input" in one_line_error(clash, 2)


def test_the_installed_entry_point_prints_one_line_too(files: dict[str, Path]) -> None:
    """`treeleaks` runs `treeleaks.cli:app`: outside CliRunner, through typer's own call."""
    result = subprocess.run(
        [sys.executable, "-c", "from treeleaks.cli import app; app()", "reconstruct",
         str(files["forest"]), "--seed", "-3"],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "40"},
    )
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "'--seed'" in lines[0], result.stderr


def test_counts_implying_more_rows_than_max_rows_exit_2_naming_the_limit(
    files: dict[str, Path]
) -> None:
    result = runner.invoke(app, ["reconstruct", str(files["forest"]), "--max-rows", "59"])
    message = one_line_error(result, 2)
    assert "imply 60 training rows" in message and "--max-rows" in message


def test_enumeration_beyond_max_memory_exits_3_saying_what_to_try(tmp_path: Path) -> None:
    X, y = binary_frame(100, 40, seed=4)
    forest = RandomForestClassifier(n_estimators=20, bootstrap=False, random_state=0).fit(X, y)
    model, summary = tmp_path / "wide.json", tmp_path / "s.json"
    model.write_text(json.dumps(from_sklearn(forest).to_dict()))
    result = runner.invoke(app, ["reconstruct", str(model), "--strategy", "enumerate",
                                 "--max-memory", "1", "--json", str(summary)])
    assert "too many cells to list" in one_line_error(result, 3)
    written = json.loads(summary.read_text())
    assert written["partial"] and written["status"] == "UNKNOWN"


def test_reconstruct_takes_known_columns_and_rows(
    files: dict[str, Path], truth: pd.DataFrame, tmp_path: Path
) -> None:
    columns, rows = tmp_path / "columns.csv", tmp_path / "rows.csv"
    truth[["f0", "f3"]].to_csv(columns, index=False)
    truth.iloc[:5].to_csv(rows, index=False)
    out, summary = tmp_path / "recon.csv", tmp_path / "summary.json"
    result = runner.invoke(app, [
        "reconstruct", str(files["forest"]), "--known-columns", str(columns),
        "--known-columns-as", "multisets", "--known-rows", str(rows), "--out", str(out),
        "--json", str(summary)])
    assert result.exit_code == 0, result.output
    assert "Side knowledge" in result.stdout
    facts = json.loads(summary.read_text())
    assert facts["verified"] and facts["knowledge"] == (
        "known columns f0, f3 (each as a multiset) and 5 rows in full")
    got = pd.read_csv(out)
    for name in ("f0", "f3"):
        assert sorted(got[name]) == sorted(truth[name])


def test_known_columns_of_the_wrong_length_are_one_line_errors(
    files: dict[str, Path], truth: pd.DataFrame, tmp_path: Path
) -> None:
    columns = tmp_path / "short.csv"
    truth[["f0"]].iloc[:7].to_csv(columns, index=False)
    result = runner.invoke(app, ["reconstruct", str(files["forest"]), "--known-columns",
                                 str(columns)])
    assert "have 7 rows but the model was trained on 60" in one_line_error(result, 2)


@pytest.mark.parametrize("ignore", [False, True])
def test_reconstruct_writes_the_draws_of_a_bootstrap_forest(
    files: dict[str, Path], tmp_path: Path, ignore: bool
) -> None:
    out, draws = tmp_path / "rows.csv", tmp_path / "draws.csv"
    args = ["reconstruct", str(files["bagged"]), "--out", str(out), "--draws", str(draws)]
    result = runner.invoke(app, args + (["--ignore-draws"] if ignore else []))
    assert result.exit_code == 0, result.output
    model, rows, drawn = load_model(files["bagged"]), pd.read_csv(out), pd.read_csv(draws)
    assert list(drawn.columns) == ["row"] + [f"tree_{t}" for t in range(model.n_trees)]
    assert len(drawn) == len(rows)
    leaves = model.apply(rows[model.feature_names].to_numpy(dtype=float))
    labels = model.class_index(rows[model.label_name].to_numpy())
    for t, tree in enumerate(model.trees):
        weighted = np.zeros_like(tree.counts)
        np.add.at(weighted, (leaves[:, t], labels), drawn[f"tree_{t}"].to_numpy())
        np.testing.assert_array_equal(weighted, tree.counts)
        if not ignore:  # training order: the model's own draws
            np.testing.assert_array_equal(drawn[f"tree_{t}"], tree.draws)


@pytest.mark.parametrize("flag", ["--ignore-draws", "--ignore-multiplicities"])
def test_ignore_draws_keeps_its_former_name(
    files: dict[str, Path], tmp_path: Path, flag: str
) -> None:
    summary = tmp_path / "summary.json"
    result = runner.invoke(app, ["reconstruct", str(files["bagged"]), flag, "--json",
                                 str(summary)])
    assert result.exit_code == 0, result.output
    assert json.loads(summary.read_text())["formulation"] == "bootstrap-unknown"


def test_draws_of_a_forest_without_bootstrap_are_a_one_line_error(
    files: dict[str, Path], tmp_path: Path
) -> None:
    result = runner.invoke(app, ["reconstruct", str(files["forest"]), "--draws",
                                 str(tmp_path / "d.csv")])
    assert "did not bootstrap" in one_line_error(result, 2)


def test_the_certificate_line_says_when_the_draws_were_inferred() -> None:
    from treeleaks.runtime.display import certificate_text

    summary = {"certificate": {"counts_checked": 12, "counts_wrong": 0}, "verified": True,
               "formulation": "bootstrap-unknown"}
    assert str(certificate_text(summary)) == (
        "verified: the rows reproduce all 12 released leaf counts with the draws inferred "
        "for them")
    summary["formulation"] = "bootstrap-known"
    assert str(certificate_text(summary)).endswith("all 12 released leaf counts")


def test_a_reader_that_leaves_early_gets_no_bug_report() -> None:
    """`treeleaks reconstruct --help | head -1`: the pipe closes under the help text."""
    child = subprocess.Popen([sys.executable, "-m", "treeleaks", "reconstruct", "--help"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, "COLUMNS": "80"})
    assert child.stdout is not None and child.stderr is not None
    child.stdout.read(40)
    child.stdout.close()
    error = child.stderr.read().decode()
    assert child.wait(timeout=60) in (0, 1)
    assert "bug" not in error and "Traceback" not in error
