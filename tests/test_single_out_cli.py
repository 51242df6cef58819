"""``treeleaks single-out`` and ``treeleaks prune`` on the command line: outputs, and bad
input as one line on stderr with exit code 2, the input untouched."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from typer.testing import CliRunner

from treeleaks import from_sklearn
from treeleaks.cli import app
from treeleaks.io import load_estimator, save_model

from conftest import binary_frame, one_line_error

runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("single_out")
    X, y = binary_frame(120, 6, seed=0)
    train = X.assign(outcome=y)
    train.to_csv(folder / "train.csv", index=False)
    tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    stripped = from_sklearn(tree).to_dict()
    for record in stripped["trees"]:
        record["counts"] = [[0, 0] for _ in record["counts"]]
        record.pop("n_samples")
    (folder / "stripped.json").write_text(json.dumps(stripped))
    regressor = DecisionTreeRegressor(random_state=0).fit(X, np.arange(120.0))
    X.assign(outcome=np.arange(120.0)).to_csv(folder / "reg.csv", index=False)
    return {"tree": save_model(tree, folder / "tree.skops"), "train": folder / "train.csv",
            "stripped": folder / "stripped.json",
            "regressor": save_model(regressor, folder / "reg.skops"),
            "reg_data": folder / "reg.csv"}


def test_single_out_lists_predicates_that_each_match_one_training_row(
    files: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "predicates.json"
    result = runner.invoke(app, ["single-out", str(files["tree"]), "--data", str(files["train"]),
                                 "--label", "outcome", "--json", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    predicates = report["predicates"]
    assert predicates and report["n_proven"] == len(predicates)
    train = pd.read_csv(files["train"])
    for p in predicates:
        assert set(p) >= {"conditions", "label", "node", "tree", "proven", "matches"}
        mask = train.outcome == p["label"]
        for c in p["conditions"]:
            column = train[c["feature"]]
            mask &= column <= c["threshold"] if c["op"] == "<=" else column > c["threshold"]
        assert p["matches"] == list(np.flatnonzero(mask)) and len(p["matches"]) == 1
    exposure = report["exposure"]
    assert exposure["n_singled_out"] == len({p["matches"][0] for p in predicates})
    assert "outcome = " in result.stdout  # the predicates read with the data's label name


def test_single_out_reads_regressors(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "reg.json"
    result = runner.invoke(app, ["single-out", str(files["regressor"]), "--data",
                                 str(files["reg_data"]), "--label", "outcome", "--json", str(out)])
    assert result.exit_code == 0, result.output
    predicates = json.loads(out.read_text())["predicates"]
    assert predicates and all(len(p["matches"]) == 1 for p in predicates)
    assert all(p["label"] == p["matches"][0] for p in predicates)  # y is the row number
    # reconstruct gives back the rows alone in their leaves; 120 rows over 64 binary
    # patterns share leaves of several targets, which are left out, never given a mean
    partial = runner.invoke(app, ["reconstruct", str(files["regressor"])])
    assert partial.exit_code == 5 and "left out" in " ".join(partial.stdout.split())
    assert "error:" not in partial.output  # a partial dataset is a result


def test_stripped_counts_say_only_the_ranking_is_available(
    files: dict[str, Path], tmp_path: Path
) -> None:
    message = one_line_error(runner.invoke(app, ["single-out", str(files["stripped"])]))
    assert "only the no-counts ranking is available" in message
    out = tmp_path / "guesses.json"
    ranked = runner.invoke(app, ["single-out", str(files["stripped"]), "--no-counts",
                                 "--json", str(out)])
    assert ranked.exit_code == 0, ranked.output
    guesses = json.loads(out.read_text())["predicates"]
    assert guesses and not any(g["proven"] for g in guesses)
    measured = runner.invoke(app, ["single-out", str(files["stripped"]), "--data",
                                   str(files["train"]), "--label", "outcome"])
    assert measured.exit_code == 0 and "Tries without counts (data)" in measured.stdout


def test_data_whose_columns_do_not_match_are_refused(
    files: dict[str, Path], tmp_path: Path
) -> None:
    wrong = tmp_path / "wrong.csv"
    pd.read_csv(files["train"]).drop(columns="f3").to_csv(wrong, index=False)
    for command in (["single-out", str(files["tree"])],
                    ["prune", str(files["tree"]), "--min-count", "2", "--out",
                     str(tmp_path / "p.skops")]):
        result = runner.invoke(app, [*command, "--data", str(wrong), "--label", "outcome"])
        assert "lack the model's columns f3" in one_line_error(result)
    assert not (tmp_path / "p.skops").exists()
    no_label = runner.invoke(app, ["single-out", str(files["tree"]), "--data",
                                   str(files["train"])])
    assert "--data needs --label" in one_line_error(no_label)


def test_prune_writes_a_model_the_attack_finds_nothing_in(
    files: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "pruned.skops"
    result = runner.invoke(app, ["prune", str(files["tree"]), "--min-count", "2", "--out",
                                 str(out), "--data", str(files["train"]), "--label", "outcome"])
    assert result.exit_code == 0, result.output
    assert "Vulnerable nodes after (single-out) │ 0" in result.stdout
    assert "Accuracy on train.csv" in result.stdout
    pruned = load_estimator(out)
    X = pd.read_csv(files["train"]).drop(columns="outcome")
    assert pruned.predict(X).shape == (120,)
    again = runner.invoke(app, ["single-out", str(out), "--json", str(tmp_path / "a.json")])
    assert again.exit_code == 0
    assert json.loads((tmp_path / "a.json").read_text())["predicates"] == []


def test_prune_bad_input_is_one_line_and_leaves_the_input_alone(
    files: dict[str, Path], tmp_path: Path
) -> None:
    model = tmp_path / "model.skops"
    model.write_bytes(files["tree"].read_bytes())
    before = model.read_bytes()
    cases = {
        "at least 1": ["--min-count", "0", "--out", str(tmp_path / "x.skops")],
        "would overwrite the input": ["--min-count", "2", "--out", str(model)],
        "name it *.skops": ["--min-count", "2", "--out", str(tmp_path / "x.json")],
    }
    for expected, options in cases.items():
        result = runner.invoke(app, ["prune", str(model), *options])
        assert expected in one_line_error(result)
    json_model = runner.invoke(app, ["prune", str(files["stripped"]), "--min-count", "2",
                                     "--out", str(tmp_path / "y.skops")])
    assert "give the .skops (or pickle) file" in one_line_error(json_model)
    assert model.read_bytes() == before
    assert not (tmp_path / "x.skops").exists()
