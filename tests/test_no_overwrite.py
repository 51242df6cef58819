"""No silent overwrite (issue 48, item 5): every command that writes refuses, before any
work, an output that already holds something (a previous run's), in one line naming it
and pointing at --force (exit 2), leaving its inputs and the old output byte-equal; with
--force the output is replaced."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier
from typer.testing import CliRunner

from treeleaks import from_sklearn
from treeleaks.cli import app
from treeleaks.io import save_model
from treeleaks.synthetic import anonymeter_check

from conftest import binary_frame, one_line_error, outlier_population

runner = CliRunner()
PREVIOUS = b"a previous run's output\n"
SMALL_SYNTHETIC = ["--targets", "2", "--shadows", "2", "--attacks", "3", "--seed", "1",
                   "--epsilon", "10"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny inputs for every command: a bootstrap forest (.skops), a forest that saw every
    row once and a tree (treeleaks JSON), their rows, a population, a sweep's table."""
    folder = tmp_path_factory.mktemp("inputs")
    X, y = binary_frame(40, 4, seed=0)
    bagged = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, y)
    save_model(bagged, folder / "bagged.skops")
    forest = RandomForestClassifier(n_estimators=2, max_depth=2, bootstrap=False,
                                    random_state=0).fit(X, y)
    from_sklearn(forest).to_json(folder / "forest.json")
    tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
    from_sklearn(tree).to_json(folder / "tree.json")
    X.assign(label=y).to_csv(folder / "data.csv", index=False)
    other, other_y = binary_frame(40, 4, seed=1)
    other.assign(label=other_y).to_csv(folder / "population.csv", index=False)
    pop = outlier_population(n=60, outliers=3)
    pop.to_csv(folder / "people.csv", index=False)
    pop.sample(15, random_state=0).to_csv(folder / "private.csv", index=False)
    pd.DataFrame({"trees": [1, 1, 2, 2], "seed": [0, 1, 0, 1],
                  "error": [0.1, 0.2, 0.3, 0.2]}).to_csv(folder / "results.csv", index=False)
    return {p.stem: p for p in folder.iterdir()}


def command(name: str, i: dict[str, Path], out: Path) -> tuple[list[str], list[Path]]:
    """The command line of ``name`` writing into the folder ``out``, and its outputs."""
    files = {
        "audit": (["audit", i["bagged"], "--budget", "5", "--out", out / "audit"],
                  [out / "audit" / "report.json"]),
        "audit --synthetic": (["audit", "--synthetic", "--data", i["private"], "--population",
                               i["people"], "--epsilon", "10", "--budget", "3", "--out",
                               out / "audit"], [out / "audit" / "report.html"]),
        "reconstruct": (["reconstruct", i["forest"], "--time-limit", "10", "--out",
                         out / "rows.csv", "--details", out / "details.csv", "--json",
                         out / "s.json"], [out / "rows.csv", out / "details.csv",
                                           out / "s.json"]),
        "strip": (["strip", i["bagged"], "--no-measure", "--out", out / "stripped.skops"],
                  [out / "stripped.skops"]),
        "single-out": (["single-out", i["bagged"], "--json", out / "so.json"],
                       [out / "so.json"]),
        "prune": (["prune", i["bagged"], "--min-count", "2", "--out", out / "pruned.skops"],
                  [out / "pruned.skops"]),
        "train-dp": (["train-dp", i["data"], "--label", "label", "--trees", "2", "--depth",
                      "2", "--out", out / "dp.json"], [out / "dp.json"]),
        "synthetic": (["synthetic", "--data", i["private"], "--population", i["people"],
                       *SMALL_SYNTHETIC, "--budget", "20", "--json", out / "syn.json",
                       "--plot", out / "syn.png"], [out / "syn.png"]),
        "leak": (["leak", i["tree"], "--json", out / "leak.json", "--rows", out / "r.csv",
                  "--domains", out / "d.csv"], [out / "r.csv", out / "d.csv"]),
        "worst-case": (["worst-case", i["bagged"], "--truth", i["data"], "--time-limit", "5",
                        "--json", out / "wc.json"], [out / "wc.json"]),
        "leak-test": (["leak-test", i["data"], "--truth", i["data"], "--population",
                       i["population"], "--label", "label", "--samples", "5", "--json",
                       out / "lt.json"], [out / "lt.json"]),
        "inspect --suggest-schema": (["inspect", i["forest"], "--suggest-schema",
                                      out / "schema.json"], [out / "schema.json"]),
        "sweep plot": (["sweep", "plot", i["results"], "--x", "trees", "--y", "error",
                        "--out", out / "plot.png"], [out / "plot.png"]),
    }
    args, outputs = files[name]
    return [str(a) for a in args], outputs


@pytest.mark.parametrize("name", ["audit", "audit --synthetic", "reconstruct", "strip",
                                  "single-out", "prune", "train-dp", "synthetic", "leak",
                                  "worst-case", "leak-test", "inspect --suggest-schema",
                                  "sweep plot"])
def test_a_previous_output_is_refused_naming_it_and_replaced_with_force(
    inputs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(anonymeter_check, "available_in_process", lambda: False)
    args, outputs = command(name, inputs, tmp_path)
    for path in outputs:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(PREVIOUS)
    before = {p: p.read_bytes() for p in inputs.values()}
    line = one_line_error(runner.invoke(app, args))
    assert f"{str(outputs[0])!r} already exists" in line and "--force" in line
    assert all(p.read_bytes() == PREVIOUS for p in outputs)  # nothing touched
    replaced = runner.invoke(app, [*args, "--force"])
    assert replaced.exit_code in (0, 3), replaced.output  # 3: a worst case cut short
    assert all(p.read_bytes() != PREVIOUS for p in outputs)
    assert {p: p.read_bytes() for p in inputs.values()} == before  # the inputs, byte-equal


def test_an_empty_or_unrelated_folder_takes_a_report(inputs: dict[str, Path],
                                                     tmp_path: Path) -> None:
    out = tmp_path / "audit"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    args, _ = command("audit", inputs, tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (out / "report.html").exists() and (out / "notes.txt").read_text() == "mine"
    again = one_line_error(runner.invoke(app, args))  # now it holds a report
    assert "report.html' already exists" in again and "--force" in again
