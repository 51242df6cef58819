"""docs/limits.md's list of refusals walked: every refusal it lists is tried, and each
gives one line naming the cause and exit code 2 (issue 41, item 3: the list matches the
code). A bullet of the list with no case here fails the test, and so does a case whose
phrase the list no longer holds."""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import (
    ExtraTreesRegressor,
    GradientBoostingRegressor,
    RandomForestClassifier,
)
from sklearn.linear_model import LogisticRegression
from typer.testing import CliRunner

from treeleaks import from_sklearn
from treeleaks.cli import app

LIMITS = Path(__file__).resolve().parents[1] / "docs" / "limits.md"
runner = CliRunner()


def _bullets() -> list[str]:
    """The bullets of the section "Elsewhere, in one list", each on one line."""
    text = LIMITS.read_text(encoding="utf-8")
    section = text.split("## Elsewhere, in one list", 1)[1].split("\n## ", 1)[0]
    return [" ".join(item.split()) for item in re.split(r"\n- ", section)[1:]]


def _data(n: int = 40) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.integers(0, 2, size=(n, 3)), columns=["a", "b", "c"])
    return X, (X["a"] ^ X["b"]).to_numpy()


def _forest_json(tmp: Path) -> Path:
    X, y = _data()
    path = tmp / "forest.json"
    from_sklearn(RandomForestClassifier(n_estimators=3, bootstrap=False, random_state=0)
                 .fit(X, y)).to_json(path)
    return path


def _skops(tmp: Path, estimator: object, name: str) -> Path:
    path = tmp / name
    sio.dump(estimator, path)
    return path


def _pickle(tmp: Path) -> list[str]:
    path = tmp / "forest.pkl"
    path.write_bytes(pickle.dumps({"not": "run"}))
    return ["reconstruct", str(path)]


def _skops_other_type(tmp: Path) -> list[str]:
    X, y = _data()
    return ["reconstruct", str(_skops(tmp, LogisticRegression().fit(X, y), "lr.skops"))]


def _weighted(tmp: Path) -> list[str]:
    X, y = _data()
    forest = RandomForestClassifier(n_estimators=3, bootstrap=False, random_state=0).fit(
        X, y, sample_weight=np.arange(1, len(y) + 1))
    return ["reconstruct", str(_skops(tmp, forest, "weighted.skops"))]


def _max_rows(tmp: Path) -> list[str]:
    return ["reconstruct", str(_forest_json(tmp)), "--max-rows", "5"]


def _known_rows(tmp: Path) -> list[str]:
    model = _forest_json(tmp)
    known = tmp / "known.csv"
    pd.DataFrame({"a": [5] * 50, "b": [5] * 50, "c": [5] * 50}).to_csv(known, index=False)
    return ["reconstruct", str(model), "--known-rows", str(known)]


def _output_is_input(tmp: Path) -> list[str]:
    model = _forest_json(tmp)
    return ["reconstruct", str(model), "--out", str(model)]


def _missing_folder(tmp: Path) -> list[str]:
    return ["reconstruct", str(_forest_json(tmp)), "--out", str(tmp / "no" / "rows.csv")]


def _median_regressor(tmp: Path) -> list[str]:
    X, y = _data()
    forest = ExtraTreesRegressor(n_estimators=3, criterion="absolute_error").fit(
        X, y.astype(float) + X["c"].to_numpy())
    return ["reconstruct", str(_skops(tmp, forest, "medians.skops"))]


def _booster_knowledge(tmp: Path) -> list[str]:
    X, y = _data()
    booster = GradientBoostingRegressor(n_estimators=3).fit(X, y.astype(float))
    known = tmp / "columns.csv"
    X[["a"]].to_csv(known, index=False)
    return ["reconstruct", str(_skops(tmp, booster, "gb.skops")), "--known-columns",
            str(known)]


def _single_out_without_counts(tmp: Path) -> list[str]:
    X, y = _data()
    model = _skops(tmp, RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y),
                   "forest.skops")
    stripped = tmp / "stripped.skops"
    result = runner.invoke(app, ["strip", str(model), "--out", str(stripped),
                                 "--no-measure"])
    assert result.exit_code == 0, result.output
    return ["single-out", str(stripped)]


def _prune_without_object(tmp: Path) -> list[str]:
    return ["prune", str(_forest_json(tmp)), "--min-count", "2", "--out",
            str(tmp / "pruned.skops")]


def _dp_in_leak(tmp: Path) -> list[str]:
    X, y = _data()
    data = tmp / "train.csv"
    X.assign(label=y).to_csv(data, index=False)
    model = tmp / "dp.json"
    result = runner.invoke(app, ["train-dp", str(data), "--label", "label", "--out",
                                 str(model)])
    assert result.exit_code == 0, result.output
    return ["leak", str(model)]


def _sweep_axis(tmp: Path) -> list[str]:
    grid = tmp / "grid.toml"
    grid.write_text('attack = "forest"\n[axes]\ndataset = "x"\nleaves = [2]\n')
    return ["sweep", str(grid), "--out", str(tmp / "out")]


def _anonymeter(tmp: Path) -> list[str]:
    X, _ = _data()
    data, population = tmp / "x.csv", tmp / "d.csv"
    X.head(10).to_csv(data, index=False)
    X.to_csv(population, index=False)
    return ["synthetic", "--data", str(data), "--population", str(population),
            "--epsilon", "1", "--json", str(tmp / "s.json"), "--anonymeter-python",
            str(tmp / "no-python")]


def _strip_damaged(tmp: Path) -> list[str]:
    X, y = _data()
    tree = RandomForestClassifier(n_estimators=2, random_state=0).fit(X, y).estimators_[0]
    state = tree.tree_.__getstate__()
    cls, args = tree.tree_.__reduce__()[:2]
    empty = cls(*args)  # a tree without nodes: scikit-learn crashed on it
    empty.__setstate__({**state, "node_count": 0, "nodes": state["nodes"][:0],
                        "values": state["values"][:0]})
    tree.tree_ = empty
    return ["strip", str(_skops(tmp, tree, "empty.skops")), "--out", str(tmp / "safe.skops")]


# phrase of a bullet -> (the command line that hits that refusal, words its message holds)
CASES: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "A pickle (`.pkl`, `.pickle`, `.joblib`) without `--trust-pickle`":
        (_pickle, "--trust-pickle"),
    "a skops file holding any type but scikit-learn's trees": (_skops_other_type,
                                                                "LogisticRegression"),
    "Counts of weighted training (`sample_weight`, `class_weight`)": (_weighted,
                                                                       "sample_weight"),
    "models whose counts imply more rows than `--max-rows`": (_max_rows, "max-rows"),
    "Known rows the counts cannot hold": (_known_rows, "known row"),
    "Outputs that name an input": (_output_is_input, "input"),
    "sit in a missing or read-only folder": (_missing_folder, "folder"),
    "regression forests and trees under criteria other than `squared_error`":
        (_median_regressor, "absolute_error"),
    "a boosted regressor with side knowledge": (_booster_knowledge, "side knowledge"),
    "`single-out` on a model whose counts are all zero, without `--data`":
        (_single_out_without_counts, "--data"),
    "`prune` without the scikit-learn object": (_prune_without_object, "scikit-learn"),
    "`strip` on a damaged file": (_strip_damaged, "a tree has no nodes"),
    "DP models in `leak`": (_dp_in_leak, "DP"),
    "An unknown sweep axis": (_sweep_axis, "unknown axis 'leaves'"),
    "A `--anonymeter-python` that cannot import anonymeter": (_anonymeter, "anonymeter"),
}


def test_every_bullet_of_the_list_has_a_case_and_every_case_a_bullet() -> None:
    bullets = _bullets()
    assert bullets, "docs/limits.md has no list of refusals"
    for phrase in CASES:
        assert any(phrase in bullet for bullet in bullets), f"no bullet says: {phrase}"
    for bullet in bullets:
        assert any(phrase in bullet for phrase in CASES), f"no case walks: {bullet[:80]}"


@pytest.mark.parametrize("phrase", list(CASES))
def test_each_refusal_of_the_list_is_one_line_and_exit_2(phrase: str,
                                                         tmp_path: Path) -> None:
    make, words = CASES[phrase]
    args = make(tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (phrase, result.output)
    message = result.output.strip()
    assert "Traceback" not in message and message.count("\n") == 0, message
    assert words.lower() in message.lower(), (phrase, message)
