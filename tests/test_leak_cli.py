"""``treeleaks leak`` on trees (skops, JSON IR), rule lists and forests; bad input exits 2."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier
from test_probabilistic import PAPER_SCHEMA, paper_tree
from test_rule_list import PAPER
from typer.testing import CliRunner

from treeleaks.cli import app
from treeleaks.io import save_model

from conftest import binary_frame, one_line_error

runner = CliRunner()


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def paper_files(tmp_path: Path) -> dict[str, Path]:
    paper_tree().to_json(tmp_path / "tree.json")
    return {"tree": tmp_path / "tree.json",
            "schema": write(tmp_path / "schema.json", PAPER_SCHEMA),
            "rules": write(tmp_path / "rules.json", PAPER)}


def test_leak_on_the_paper_tree(paper_files: dict[str, Path], tmp_path: Path) -> None:
    out, rows, domains = tmp_path / "leak.json", tmp_path / "rows.csv", tmp_path / "dom.csv"
    result = runner.invoke(app, ["leak", str(paper_files["tree"]), "--schema",
                                 str(paper_files["schema"]), "--json", str(out),
                                 "--rows", str(rows), "--domains", str(domains)])
    assert result.exit_code == 0, result.output
    assert "dist" in result.output and "0.7356" in result.output
    report = json.loads(out.read_text())
    assert {"dist", "dist_g", "n_rows", "per_leaf"} <= set(report)
    assert round(report["dist"], 3) == 0.736 and report["n_rows"] == 4
    assert [leaf["admitted_vectors"] for leaf in report["per_leaf"]] == [12, 8, 16]
    assert [leaf["support"] for leaf in report["per_leaf"]] == [1, 1, 2]
    per_row = pd.read_csv(rows)
    assert len(per_row) == 4
    assert per_row["ratio"].mean() == pytest.approx(report["dist_g"], abs=1e-6)
    table = pd.read_csv(domains)  # Table II of the paper, one line per leaf
    assert table[["a1", "a3"]].to_numpy().tolist() == [["{10..15}", "{1}"],
                                                       ["{10..11}", "{2..3}"],
                                                       ["{12..15}", "{2..3}"]]


def test_leak_on_a_rule_list(paper_files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "leak.json"
    result = runner.invoke(app, ["leak", str(paper_files["rules"]), "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "if a3 == 1 then 0" in result.output
    report = json.loads(out.read_text())
    assert report["dist_g"] == pytest.approx((2 + 3 * math.log2(3)) / 15)
    assert [r["admitted_vectors"] for r in report["per_leaf"]] == [2, 3, 3]


def test_leak_on_a_skops_tree(tmp_path: Path) -> None:
    X, y = binary_frame(200, 6, seed=4)
    tree = save_model(DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y),
                      tmp_path / "tree.skops")
    out = tmp_path / "leak.json"
    result = runner.invoke(app, ["leak", str(tree), "--json", str(out), "--top", "2"])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["n_rows"] == 200 and 0 <= report["dist_g"] <= report["dist"] <= 1
    assert sum(leaf["support"] for leaf in report["per_leaf"]) == 200


def test_leak_on_a_forest_gives_per_tree_figures(tmp_path: Path) -> None:
    X, y = binary_frame(100, 5, seed=5)
    forest = save_model(RandomForestClassifier(n_estimators=3, bootstrap=False, max_depth=3,
                                               random_state=0).fit(X, y), tmp_path / "rf.skops")
    out = tmp_path / "leak.json"
    result = runner.invoke(app, ["leak", str(forest), "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "treeleaks reconstruct" in " ".join(result.output.split())
    report = json.loads(out.read_text())
    assert report["n_trees"] == 3 and len(report["per_tree"]) == 3
    assert all(t["n_rows"] == 100 for t in report["per_tree"])


def test_rule_list_without_counts(tmp_path: Path) -> None:
    bare = json.loads(json.dumps(PAPER))
    for rule in [*bare["rules"], bare["default"]]:
        del rule["counts"]
    del bare["n_rows"]
    result = runner.invoke(app, ["leak", str(write(tmp_path / "bare.json", bare))])
    assert "dist and dist_g weigh each rule by the training rows" in one_line_error(result)


def test_rule_list_supports_not_adding_up(tmp_path: Path) -> None:
    wrong = {**PAPER, "n_rows": 9}
    result = runner.invoke(app, ["leak", str(write(tmp_path / "wrong.json", wrong))])
    assert "supports add up to 5 rows but n_rows is 9" in one_line_error(result)


def test_schema_missing_a_split_column(paper_files: dict[str, Path], tmp_path: Path) -> None:
    schema = write(tmp_path / "partial.json", {"ordinal": {"a3": [1, 3]}})
    result = runner.invoke(app, ["leak", str(paper_files["tree"]), "--schema", str(schema)])
    assert "'a1' is split at 11.5, so it is not binary" in one_line_error(result)


def test_threshold_outside_the_declared_range(paper_files: dict[str, Path],
                                              tmp_path: Path) -> None:
    schema = write(tmp_path / "narrow.json", {"ordinal": {"a1": [12, 15], "a3": [1, 3]}})
    result = runner.invoke(app, ["leak", str(paper_files["tree"]), "--schema", str(schema)])
    assert "outside its declared ordinal range [12, 15]" in one_line_error(result)


def test_tree_without_counts(tmp_path: Path) -> None:
    data = paper_tree().to_dict()
    data["trees"][0]["counts"] = [[0, 0], [0, 0], [0, 0]]
    result = runner.invoke(app, ["leak", str(write(tmp_path / "bare.json", data)), "--schema",
                                 str(write(tmp_path / "s.json", PAPER_SCHEMA))])
    assert "dist and dist_g weigh each leaf" in one_line_error(result)
