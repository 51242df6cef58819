"""Sweeps: grids checked before anything runs, points run on a Dask LocalCluster with the
same results as run directly, failures recorded, interrupted sweeps resumed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from treeleaks.cli import app
from treeleaks.sweep import GridError, load_grid, read_records, run_sweep
from treeleaks.sweep.attacks import ATTACKS
from treeleaks.sweep.grid import grid_from_dict, point_key
from treeleaks.sweep.runner import RECORDS

runner = CliRunner()

FOUR_POINTS = """
attack = "forest"
[axes]
dataset = "breast-cancer"
n = 60
trees = 40
depth = ["none", 3]
seed = [0, 1]
time_limit = 20
"""


def write(folder: Path, text: str, name: str = "grid.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict]]:
    """The four-point grid run by the CLI on a two-worker LocalCluster."""
    folder = tmp_path_factory.mktemp("sweep")
    grid = write(folder, FOUR_POINTS)
    result = runner.invoke(app, ["sweep", str(grid), "--out", str(folder / "out"),
                                 "--workers", "2"])
    assert result.exit_code == 0, result.output
    return grid, folder / "out", read_records(folder / "out")


def test_four_points_run_as_they_would_alone(swept: tuple[Path, Path, list[dict]]) -> None:
    grid_path, out, records = swept
    grid = load_grid(grid_path)
    assert len(records) == 4
    assert {(r["depth"], r["seed"]) for r in records} == {(None, 0), (None, 1), (3, 0), (3, 1)}
    for record in records:
        assert record["status"] == "OPTIMAL" and record["verified"], record
        point = {k: record[k] for k in ATTACKS["forest"].axes}
        alone = ATTACKS["forest"].run(point, grid.data_dir)  # same point, this process
        assert record["error"] == pytest.approx(alone["error"], abs=1e-12)
        assert record["n_rows"] == alone["n_rows"] == 60
        assert 0 <= record["error"] < record["baseline_error"]
    table = pd.read_csv(out / "results.csv")
    assert len(table) == 4 and {"dataset", "depth", "seed", "error", "status"} <= set(table)


def test_the_summary_groups_seeds(swept: tuple[Path, Path, list[dict]]) -> None:
    grid, out, _ = swept
    again = runner.invoke(app, ["sweep", str(grid), "--out", str(out)])  # nothing left to run
    assert again.exit_code == 0, again.output
    lines = [line for line in again.output.splitlines() if line.startswith("│")]
    assert len(lines) == 2 and lines[0].split("│")[1].strip() == "none"


def test_a_killed_sweep_resumes_without_redoing_finished_points(
    swept: tuple[Path, Path, list[dict]], tmp_path: Path
) -> None:
    grid_path, _, records = swept
    resumed = tmp_path / "out"
    resumed.mkdir()
    kept = records[:2]  # two points finished, the third was being written when killed
    text = "".join(json.dumps(r) + "\n" for r in kept) + json.dumps(records[2])[:40]
    (resumed / RECORDS).write_text(text)
    ran: list[dict] = []
    final = run_sweep(load_grid(grid_path), resumed, workers=2, on_record=ran.append)
    assert sorted(r["key"] for r in ran) == sorted(r["key"] for r in records[2:])
    assert sorted(r["key"] for r in final) == sorted(r["key"] for r in records)
    before = {r["key"]: r["wall_s"] for r in kept}
    assert {r["key"]: r["wall_s"] for r in final if r["key"] in before} == before
    assert len(read_records(resumed)) == 4


def test_failing_points_are_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    grid = grid_from_dict({"attack": "forest", "point_time_limit": 60,
                           "axes": {"dataset": ["breast-cancer", "no-such-data"], "n": 40,
                                    "trees": 5, "time_limit": 10}})
    records = run_sweep(grid, tmp_path, workers=1)
    status = {r["dataset"]: r for r in records}
    assert status["breast-cancer"]["status"] == "OPTIMAL"
    assert status["no-such-data"]["status"] == "error"
    assert "no-such-data" in status["no-such-data"]["exception"]


def test_a_point_over_its_wall_time_is_killed_and_recorded(tmp_path: Path) -> None:
    grid = grid_from_dict({"attack": "forest", "point_time_limit": 0.2,
                           "axes": {"dataset": "breast-cancer", "n": 40, "trees": 5}})
    (record,) = run_sweep(grid, tmp_path, workers=1)
    assert record["status"] == "timeout" and record["wall_s"] < 30


@pytest.mark.parametrize(("grid", "message"), [
    ('attack = "forest"\n[axes]\ndataset = "x"\nleaves = [2]\n', "unknown axis 'leaves'"),
    ('attack = "guess"\n[axes]\ndataset = "x"\n', "unknown attack 'guess'"),
    ('attack = "forest"\n[axes]\ndataset = "x"\nseed = []\n', "axis 'seed' has no values"),
    ('attack = "forest"\n[axes]\ndataset = "x"\ndepth = [0]\n', "axis 'depth': 0 is not"),
    ('attack = "forest"\n[axes]\nseed = [1]\n', "names no dataset"),
    ('attack = "forest"\n', "no [axes] table"),
    ('attack = "forest"\nworkers = 2\n[axes]\ndataset = "x"\n', "unknown key 'workers'"),
    ('attack = "forest"\n[axes\n', "not valid TOML"),
    ('attack = "forest"\nisolate = "no"\n[axes]\ndataset = "x"\n', "isolate must be true or false"),
])
def test_bad_grids_are_refused_with_exit_2(tmp_path: Path, grid: str, message: str) -> None:
    path = write(tmp_path, grid)
    with pytest.raises(GridError, match=message.replace("[", r"\[")):
        load_grid(path)
    result = runner.invoke(app, ["sweep", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()


def test_an_unreachable_scheduler_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("treeleaks.sweep.runner.CONNECT_TIMEOUT_S", 1)
    grid = write(tmp_path, FOUR_POINTS)
    result = runner.invoke(app, ["sweep", str(grid), "--out", str(tmp_path / "out"),
                                 "--scheduler", "tcp://127.0.0.1:9"])
    assert result.exit_code == 2
    assert "cannot reach the Dask scheduler at 'tcp://127.0.0.1:9'" in result.output


def test_plot_writes_a_png_and_names_a_missing_column(
    swept: tuple[Path, Path, list[dict]], tmp_path: Path
) -> None:
    _, out, _ = swept
    png = tmp_path / "plot.png"
    result = runner.invoke(app, ["sweep", "plot", str(out), "--x", "depth", "--y", "error",
                                 "--by", "seed", "--out", str(png)])
    assert result.exit_code == 0, result.output
    assert png.read_bytes().startswith(b"\x89PNG")
    bad = runner.invoke(app, ["sweep", "plot", str(out), "--x", "leaves"])
    assert bad.exit_code == 2 and "no column 'leaves'" in bad.output


def test_a_bootstrap_point_reports_rows_recovered_and_the_worst_case() -> None:
    point = {**{k: a.default for k, a in ATTACKS["forest"].axes.items()},
             "dataset": "breast-cancer", "n": 40, "trees": 40, "bootstrap": True,
             "worst_case": True, "time_limit": 20}
    out = ATTACKS["forest"].run(point, None)
    assert out["formulation"] == "bootstrap-known" and out["verified"]
    assert out["recovered"] >= 36 and out["recovered_share"] == out["recovered"] / 40
    assert out["recovered_error"] < 0.1 < out["recovered_random_error"]
    assert out["error"] < 0.1 < out["baseline_error"]
    assert 0 <= out["worst_mean_found"] <= out["worst_mean_bound"] <= 1


def test_a_dp_point_runs_the_leak_test_and_the_informed_adversary() -> None:
    point = {**{k: a.default for k, a in ATTACKS["dp-forest"].axes.items()},
             "dataset": "breast-cancer", "n": 40, "trees": 3, "depth": 3, "epsilon": 5.0,
             "leak_test": True, "informed": 2, "time_limit": 20}
    out = ATTACKS["dp-forest"].run(point, None)
    assert out["verified"] and out["n_rows"] == 40
    assert 0 <= out["leak_p_value"] <= 1 and "p_value" in out["leak_test"]
    assert 0 <= out["informed_error"] <= 1 and 0 <= out["informed_wins"] <= 1


def test_point_keys_ignore_axes_left_at_their_default() -> None:
    base = grid_from_dict({"attack": "forest", "axes": {"dataset": "x", "seed": [0, 1]}})
    explicit = grid_from_dict({"attack": "forest", "axes": {
        "dataset": "x", "seed": [0, 1], "bootstrap": False, "worst_case": False}})
    other = grid_from_dict({"attack": "forest", "axes": {"dataset": "x", "seed": [0, 1],
                                                         "bootstrap": True}})
    keys = [point_key("forest", p) for p in base.points()]
    assert keys == [point_key("forest", p) for p in explicit.points()]
    assert len(set(keys)) == 2
    assert not set(keys) & {point_key("forest", p) for p in other.points()}


def test_the_former_axis_name_ignore_multiplicities_is_read_as_ignore_draws(
    tmp_path: Path,
) -> None:
    axes = {"dataset": "x", "bootstrap": True}
    old = grid_from_dict({"attack": "forest", "axes": {**axes, "ignore_multiplicities": [True]}})
    new = grid_from_dict({"attack": "forest", "axes": {**axes, "ignore_draws": [True]}})
    assert old.axes == new.axes and old.points() == new.points()
    # points recorded before the renaming keep their keys, and read back under the new name
    before = json.dumps({"attack": "forest", **axes, "ignore_multiplicities": True},
                        sort_keys=True)
    assert point_key("forest", new.points()[0]) == hashlib.sha1(before.encode()).hexdigest()[:16]
    (tmp_path / RECORDS).write_text(json.dumps({"key": "k", "ignore_multiplicities": True}) + "\n")
    assert read_records(tmp_path) == [{"key": "k", "ignore_draws": True}]
    with pytest.raises(GridError, match="given twice"):
        grid_from_dict({"attack": "forest", "axes": {
            **axes, "ignore_draws": True, "ignore_multiplicities": True}})


def test_points_run_in_the_worker_when_the_grid_does_not_isolate_them(tmp_path: Path) -> None:
    grid = grid_from_dict({"attack": "interpretable", "isolate": False, "axes": {
        "dataset": ["breast-cancer", "no-such-data"], "learner": "cart", "depth": 3}})
    records = {r["dataset"]: r for r in run_sweep(grid, tmp_path, workers=1)}
    done = records["breast-cancer"]
    assert done["status"] == "done" and done["peak_mem_mb"] is None
    alone = ATTACKS["interpretable"].run({k: done[k] for k in ATTACKS["interpretable"].axes},
                                         None)
    assert done["dist_g"] == pytest.approx(alone["dist_g"], abs=1e-12) and done["size"] == 7
    assert records["no-such-data"]["status"] == "error"
    assert "Traceback" in records["no-such-data"]["log_tail"]


def test_a_single_out_point_finds_nothing_after_pruning() -> None:
    point = {**{k: a.default for k, a in ATTACKS["single-out"].axes.items()},
             "dataset": "breast-cancer", "min_rows": 200, "max_rows": 400, "search": 2}
    out = ATTACKS["single-out"].run(point, None)
    assert 200 <= out["n_rows"] <= 400 and out["vulnerable_after"] == 0
    assert out["vulnerable"] == (out["vulnerable_pairs"] > 0)


def test_an_audit_point_keeps_the_verdict_of_the_release_audit() -> None:
    point = {**{k: a.default for k, a in ATTACKS["audit"].axes.items()},
             "dataset": "breast-cancer", "kind": "tree", "n": 100, "population": 100,
             "budget": 20}
    out = ATTACKS["audit"].run(point, None)
    assert out["rows_singled_out"] >= 1 and out["risk"] == "HIGH" and out["rule"]
    ran = {name for name, a in out["attacks"].items() if a["status"] == "complete"}
    assert ran == {"single-out", "leak", "prune"}  # a tree is not reconstructed


def test_the_summary_says_how_many_points_of_each_combination_were_solved() -> None:
    from treeleaks.sweep.results import records_table, summarise

    grid = grid_from_dict({"attack": "forest", "axes": {
        "dataset": "breast-cancer", "n": 60, "trees": 40, "depth": ["none", 3],
        "seed": [0, 1]}})
    records = [
        {"depth": None, "seed": 0, "status": "OPTIMAL", "verified": True, "error": 0.0},
        {"depth": None, "seed": 1, "status": "OPTIMAL", "verified": False, "error": 0.1},
        {"depth": 3, "seed": 0, "status": "OPTIMAL", "verified": True, "error": 0.0},
        {"depth": 3, "seed": 1, "status": "FEASIBLE", "verified": True, "error": 0.0},
    ]
    summary = summarise(records_table(records), grid)
    assert "points" not in summary
    assert summary.set_index("depth")["solved"].to_dict() == {"none": "1/2 (50%)",
                                                              3: "2/2 (100%)"}


def test_a_synthetic_point_reports_the_success_rate_beside_the_baseline() -> None:
    point = {**{k: a.default for k, a in ATTACKS["synthetic"].axes.items()},
             "dataset": "breast-cancer", "n": 20, "epsilon": 100.0, "targets": 2,
             "shadows": 3, "attacks": 5}
    out = ATTACKS["synthetic"].run(point, None)
    assert out["ci_low"] <= out["success_rate"] <= out["ci_high"]
    assert out["baseline"] == 0.2 and out["attacks_made"] == 5 and out["status"] == "done"
    assert 0 <= out["js_distance_mean"] <= 1
    grids = Path(__file__).parents[1] / "bench" / "grids"
    for name, size in (("synthetic_adult", 10), ("synthetic_default_credit", 10)):
        grid = load_grid(grids / f"{name}.toml")
        assert len(grid.points()) == size
        assert all(grid.time_limit_for(p) > p["time_limit"] == 900 for p in grid.points())


def test_groups_turn_back_into_categorical_attributes() -> None:
    from treeleaks.sweep.datasets import Dataset

    frame = pd.DataFrame({"edu_low": [1, 0, 0], "edu_high": [0, 1, 0], "edu_mid": [0, 0, 1],
                          "job:a": [1, 0, 0], "job:b": [0, 0, 1], "y": [0, 1, 1]})
    data = Dataset("toy", frame, "y", [["edu_low", "edu_high", "edu_mid"]], [["job:a", "job:b"]])
    table = data.categorical()
    assert list(table.columns) == ["y", "edu", "job"]
    assert list(table["edu"]) == ["low", "high", "mid"]
    assert list(table["job"]) == ["a", "none", "b"]
