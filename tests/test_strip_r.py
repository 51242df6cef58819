"""strip for R models: the per-row fields and an rpart's counts gone, the same trees read back,
R's predictions unchanged (where Rscript is installed), and what cannot be written refused
with the R lines that do it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from treeleaks.cli.app import app
from treeleaks.defences.strip_check import StripCheckError
from treeleaks.defences.strip_r import RStripError, r_lines, strip_r_release, strip_rds
from treeleaks.defences.strip_r_check import check_in_r
from treeleaks.frontends.r_models import read_r_model

FIXTURES = Path(__file__).parent / "fixtures" / "r"
MODELS = ["rpart_class", "rpart_reg", "rpart_factor", "rf_class", "rf_class_inbag", "rf_reg",
          "rf_factor", "ranger_class", "ranger_prob", "ranger_reg", "ranger_order"]
needs_r = pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed")


def _rows(name: str) -> pd.DataFrame:
    facts = json.loads((FIXTURES / f"{name}.json").read_text())
    if "X" not in facts:  # a table with factor columns, column by column
        return pd.DataFrame({column: facts[column] for column in facts["columns"]})
    return pd.DataFrame(facts["X"], columns=facts["columns"])


def _features(model, rows: pd.DataFrame) -> np.ndarray:
    """The rows as the model's features (a factor's levels one-hot)."""
    return (model.inputs.encode(rows) if model.inputs is not None else rows).to_numpy(float)


@pytest.mark.parametrize("name", MODELS)
def test_the_stripped_file_reads_as_the_same_trees_without_its_per_row_fields(
        name: str, tmp_path: Path) -> None:
    done = strip_rds(FIXTURES / f"{name}.rds", read_r_model)
    path = tmp_path / "stripped.rds"
    path.write_bytes(done.content)
    before, after = read_r_model(FIXTURES / f"{name}.rds"), read_r_model(path)
    assert before.rows and not after.rows  # every per-row field gone
    assert not any(f.per_row for f in after.model.described().fields)
    X = _features(before.model, _rows(name))
    assert np.array_equal(before.model.apply(X), after.model.apply(X))
    for a, b in zip(before.outputs, after.outputs, strict=True):
        assert np.array_equal(a, b)
    assert not after.model.counts_released
    if name.startswith("rpart"):  # its counts were there, and are 0 now
        assert before.model.counts_released and after.model.described().stripped
        assert after.model.trees[0].counts.sum() == 0
        if before.model.trees[0].values is not None:
            assert np.array_equal(before.model.trees[0].values, after.model.trees[0].values)


@needs_r
@pytest.mark.parametrize("name", MODELS)
def test_r_predicts_the_stripped_file_as_the_original(name: str) -> None:
    result = strip_r_release(FIXTURES / f"{name}.rds", read_r_model, _rows(name), n_random=500)
    assert "identical in R on 500 inputs (random inputs around the thresholds)" in result.compared
    assert f"identical in R on {len(_rows(name))} inputs (rows of --data)" in result.compared
    assert result.checked == "the file written was read back by treeleaks and by R"


@needs_r
def test_the_r_check_tells_two_models_apart() -> None:
    other = (FIXTURES / "rf_class_inbag.rds").read_bytes()  # another forest of the same data
    with pytest.raises(StripCheckError, match="R predicts differently"):
        check_in_r(FIXTURES / "rf_class.rds", other, "randomForest", _rows("rf_class"))


def test_the_training_data_kept_in_a_formulas_environment_is_reported_and_removed(
        tmp_path: Path) -> None:
    path = FIXTURES / "rpart_local_env.rds"
    fields = {f.name: f for f in read_r_model(path).model.described().fields}
    kept = fields["frame (in the environment of terms)"]
    assert kept.per_row and "120 rows" in kept.exposes
    done = strip_rds(path, read_r_model)
    assert any("the environment the model was fitted in (binding frame" in line
               for line in done.removed)
    out = tmp_path / "stripped.rds"
    out.write_bytes(done.content)
    assert not any("environment" in f.name for f in read_r_model(out).model.described().fields)


def test_what_rdata_cannot_write_is_refused_with_the_r_lines() -> None:
    with pytest.raises(RStripError, match=r"BCODE.*strip it in R instead: m <- readRDS"):
        strip_rds(FIXTURES / "rf_bytecode.rds", read_r_model)


@needs_r
def test_the_r_lines_strip_the_model_in_r(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "rf_bytecode.rds", tmp_path / "rf_bytecode.rds")
    lines = r_lines(tmp_path / "rf_bytecode.rds", "randomForest")
    subprocess.run(["Rscript", "-e", f"suppressPackageStartupMessages(library(randomForest)); "
                    f"{lines}"], cwd=tmp_path, check=True, capture_output=True)
    after = read_r_model(tmp_path / "stripped.rds")
    assert not after.rows


def test_the_command_writes_the_stripped_rds_and_refuses_options_it_cannot_apply(
        tmp_path: Path) -> None:
    out = tmp_path / "stripped.rds"
    runner = CliRunner()
    done = runner.invoke(app, ["strip", str(FIXTURES / "rf_class_inbag.rds"), "--out",
                               str(out), "--no-measure"])
    assert done.exit_code == 0, done.output
    assert "inbag (R field)" in done.output and out.exists()
    assert not read_r_model(out).rows
    refused = runner.invoke(app, ["strip", str(FIXTURES / "rpart_class.rds"), "--out",
                                  str(tmp_path / "r.rds"), "--thresholds", "simplest"])
    assert refused.exit_code == 2 and "scikit-learn models only" in refused.output
    assert not (tmp_path / "r.rds").exists()
    cannot = runner.invoke(app, ["strip", str(FIXTURES / "rf_bytecode.rds"), "--out",
                                 str(tmp_path / "b.rds")])
    assert cannot.exit_code == 2 and "strip it in R instead" in cannot.output
    assert not (tmp_path / "b.rds").exists()


def test_a_caret_object_is_refused_with_the_r_lines_that_strip_it_and_its_model() -> None:
    """caret keeps its functions as byte code, which rdata cannot write: the R lines drop
    caret's own copies of the rows and the finalModel's per-row fields."""
    with pytest.raises(RStripError, match=r"caret train object .* m\$trainingData <- NULL; "
                                          r"m\$pred <- NULL; m\$finalModel\$y <- NULL"):
        strip_rds(FIXTURES / "caret_rf.rds", read_r_model)


@pytest.mark.skipif(shutil.which("Rscript") is None or subprocess.run(
    ["Rscript", "-e", "library(caret)"], capture_output=True, check=False).returncode != 0
    if shutil.which("Rscript") else True, reason="R's caret not installed")
def test_the_caret_r_lines_leave_no_per_row_field(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "caret_rf.rds", tmp_path / "caret_rf.rds")
    lines = r_lines(tmp_path / "caret_rf.rds", "randomForest", caret=True)
    subprocess.run(["Rscript", "-e", f"suppressPackageStartupMessages(library(caret)); {lines}"],
                   cwd=tmp_path, check=True, capture_output=True)
    after = read_r_model(tmp_path / "stripped.rds")
    assert not after.rows
    assert not any(f.per_row for f in after.model.described().fields)
