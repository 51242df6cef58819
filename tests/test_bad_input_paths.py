"""Input paths that are not readable files (issue 41): a symlink loop, a dangling link, a
named pipe, a folder or an unreadable file given as a model, schema or data path is named
as what it is in one line (exit 2), never "does not exist" nor a traceback, and a pipe is
never opened (it would block)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from sklearn.ensemble import RandomForestClassifier
from typer.testing import CliRunner

from treeleaks import from_sklearn
from treeleaks.cli import app
from treeleaks.runtime.paths import unreadable

from conftest import binary_frame, one_line_error

runner = CliRunner()


def symlink_loop(path: Path) -> None:
    other = path.with_name(path.name + ".other")
    path.symlink_to(other.name)
    other.symlink_to(path.name)


def dangling(path: Path) -> None:
    path.symlink_to("nowhere" + path.suffix)


def fifo(path: Path) -> None:
    os.mkfifo(path)


def folder(path: Path) -> None:
    path.mkdir()


KINDS: dict[str, tuple[Callable[[Path], None], str]] = {
    "loop": (symlink_loop, "is a symbolic link loop"),
    "dangling": (dangling, "is a symbolic link to 'nowhere"),
    "fifo": (fifo, "is a named pipe (FIFO), not a regular file"),
    "folder": (folder, "is a folder; give the"),
}


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    X, y = binary_frame(30, 4, seed=0)
    forest = RandomForestClassifier(n_estimators=2, bootstrap=False, max_depth=2,
                                    random_state=0).fit(X, y)
    model = tmp_path / "model.json"
    from_sklearn(forest).to_json(model)
    data = tmp_path / "data.csv"
    X.assign(label=y).to_csv(data, index=False)
    return {"model": model, "data": data, "folder": tmp_path}


def commands(inputs: dict[str, Path], bad: Path) -> dict[str, list[str]]:
    model, data, out = inputs["model"], inputs["data"], inputs["folder"]
    return {
        "model file": ["inspect", str(bad)],
        "schema file": ["reconstruct", str(model), "--schema", str(bad), "--time-limit", "5"],
        "private table": ["synthetic", "--data", str(bad), "--population", str(data),
                          "--epsilon", "1", "--json", str(out / "s.json")],
        "data": ["audit", str(model), "--data", str(bad), "--label", "label", "--out",
                 str(out / "audit")],
    }


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("what", ["model file", "schema file", "private table", "data"])
def test_a_path_that_is_no_readable_file_is_named_as_what_it_is(inputs, kind, what) -> None:
    make, expected = KINDS[kind]
    bad = inputs["folder"] / f"bad{'.csv' if what in ('private table', 'data') else '.json'}"
    make(bad)
    line = one_line_error(runner.invoke(app, commands(inputs, bad)[what]), 2)
    assert f"{what} {str(bad)!r} {expected}" in line, line
    assert "this is a bug" not in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_file_is_named_so(tmp_path: Path) -> None:
    path = tmp_path / "model.json"
    path.write_text("{}")
    path.chmod(0)
    assert "is not readable (permission denied)" in (unreadable(path, "model file") or "")


def test_an_output_that_is_a_symlink_loop_is_named_so(inputs) -> None:
    out = inputs["folder"] / "rows.csv"
    symlink_loop(out)
    line = one_line_error(runner.invoke(app, ["reconstruct", str(inputs["model"]), "--out",
                                              str(out), "--time-limit", "5"]), 2)
    assert "is a symbolic link loop" in line
