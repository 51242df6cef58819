"""The synthetic-data commands under bad input (issue 41): ``treeleaks synthetic`` and
``treeleaks audit --synthetic`` end with one line and exit 2 on empty cells, header-only
tables, an ε past what PrivBayes's arithmetic holds, a negative seed and a population of
one distinct row; duplicated private rows leave the baseline with a note."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from treeleaks.cli import app
from treeleaks.runtime.errors import TreeleaksError
from treeleaks.synthetic.privbayes import MAX_EPSILON, PrivBayes
from treeleaks.synthetic.singling_out import single_out_synthetic

from conftest import one_line_error, outlier_population

runner = CliRunner()
SMALL = ["--targets", "2", "--shadows", "3", "--attacks", "4", "--seed", "1"]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("synthetic_bad")
    pop = outlier_population(n=100, outliers=4)
    private = pop.sample(20, random_state=0)
    frames = {
        "population": pop, "private": private,
        "private_empty_cell": private.astype(object).mask(
            (private.index == private.index[2])[:, None] & (private.columns == "a1")),
        "population_empty_cell": pop.astype(object).mask(
            (pop.index == 5)[:, None] & (pop.columns == "a3")),
        "population_header": pop.iloc[:0], "private_header": private.iloc[:0],
        "population_same": pd.concat([pop.iloc[[0]]] * 30),
        "private_same": pd.concat([pop.iloc[[0]]] * 3),
        "private_duplicates": pd.concat([private, private.iloc[:5]]),
    }
    paths = {}
    for name, frame in frames.items():
        paths[name] = folder / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    paths["folder"] = folder
    return paths


def synthetic(tables: dict[str, Path], data: str, population: str, *extra: str) -> list[str]:
    return ["synthetic", "--data", str(tables[data]), "--population", str(tables[population]),
            "--json", str(tables["folder"] / "out.json"), *SMALL, *extra]


def audit(tables: dict[str, Path], data: str, population: str, *extra: str) -> list[str]:
    return ["audit", "--synthetic", "--data", str(tables[data]), "--population",
            str(tables[population]), "--out", str(tables["folder"] / "audit"), "--budget",
            "30", *extra]


CASES = [
    ("private_empty_cell", "population", ["--epsilon", "1"],
     "the private table has an empty cell at row 3 (line 4 of the CSV), column 'a1'"),
    ("private", "population_empty_cell", ["--epsilon", "1"],
     "the population has an empty cell at row 6 (line 7 of the CSV), column 'a3'"),
    ("private", "population_header", ["--epsilon", "1"],
     "the population has a header but no rows"),
    ("private_header", "population", ["--epsilon", "1"],
     "the private table has a header but no rows"),
    ("private", "population", ["--epsilon", "1e308"], "--epsilon must be a positive finite"),
    ("private_same", "population_same", ["--epsilon", "1"],
     "the population's 30 rows hold 1 distinct row"),
]


@pytest.mark.parametrize(("data", "population", "extra", "says"), CASES)
@pytest.mark.parametrize("command", [synthetic, audit])
def test_bad_synthetic_input_is_one_line(tables, command, data, population, extra,
                                         says) -> None:
    line = one_line_error(runner.invoke(app, command(tables, data, population, *extra)), 2)
    assert says in line, line
    assert "this is a bug" not in line


def test_a_negative_seed_is_one_line(tables) -> None:
    args = synthetic(tables, "private", "population", "--epsilon", "1", "--seed", "-1")
    line = one_line_error(runner.invoke(app, args), 2)
    assert "'--seed'" in line
    with pytest.raises(TreeleaksError, match="seed must be a whole number, 0 or more"):
        single_out_synthetic(pd.read_csv(tables["private"]), pd.read_csv(tables["population"]),
                             1.0, seed=-1)


def test_the_largest_epsilon_accepted_still_fits(tables) -> None:
    codes = pd.read_csv(tables["private"]).to_numpy() % 4
    model = PrivBayes(MAX_EPSILON, random_state=0).fit(codes, [4] * codes.shape[1])
    assert model.sample(5).shape == (5, codes.shape[1])
    with pytest.raises(TreeleaksError, match="past 1e"):
        PrivBayes(MAX_EPSILON * 10)


def test_duplicated_private_rows_leave_the_baseline_with_a_note(tables) -> None:
    args = synthetic(tables, "private_duplicates", "population", "--epsilon", "1")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads((tables["folder"] / "out.json").read_text())
    assert report["n_private"] == 25 and report["baseline_rows"] == 15
    assert report["baseline"] == pytest.approx(15 / report["n_population"])
    assert any("dropped from the baseline" in note for note in report["notes"])
