"""Rows one of many: the probe's second dataset fits every count, and the rows it flags
are ones that dataset lacks."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    RandomForestClassifier,
)
from typer.testing import CliRunner

from treeleaks import from_sklearn
from treeleaks.attacks.reconstruction.pinning import probe_applies, probe_seconds, rows_one_of_many
from treeleaks.cli import app
from treeleaks.counts.crossover import SHARED, kept_shares
from treeleaks.counts.verify import verify
from treeleaks.io import save_model
from treeleaks.result import Reconstruction
from treeleaks.runtime.vocabulary import Status


def measurements(n: int = 150) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.normal(size=(n, 6)).round(3), columns=[f"x{j}" for j in range(6)])
    return X, (X["x0"] + X["x1"] > 0).astype(int).to_numpy()


def as_reconstruction(model, X: pd.DataFrame, y: np.ndarray) -> Reconstruction:
    """The true rows as a verified reconstruction: what a complete attack returns."""
    rows = X.assign(label=y)
    empty = X.astype(bool) & False
    return Reconstruction(rows=rows, free=empty, lower=X, upper=X, proven=np.zeros(len(X), bool),
                          proven_pattern=np.zeros(len(X), bool), status=Status.OPTIMAL,
                          certificate=verify(model, rows), time_s=0.0)


def test_the_second_dataset_fits_every_count_and_lacks_the_rows_flagged():
    X, y = measurements()
    model = from_sklearn(ExtraTreesClassifier(n_estimators=10, random_state=0).fit(X, y),
                         label_name="label")
    recon = as_reconstruction(model, X, y)
    assert recon.verified
    found = rows_one_of_many(model, recon, deadline=time.perf_counter() + 30)
    assert found is not None and found.n_open > 0  # extra trees on measurements leave room
    assert verify(model, found.alternative).verified
    shares = kept_shares(model.apply(X.to_numpy()), np.ones((len(X), model.n_trees), bool),
                         model.apply(found.alternative[list(X.columns)].to_numpy()), model)
    assert ((shares < SHARED) == found.one_of_many).all()
    assert f"{found.n_open} of {len(X)}" in found.words()


def test_the_probe_stays_out_of_boosters_and_of_rows_outside_the_counts():
    X, y = measurements(60)
    booster = from_sklearn(GradientBoostingClassifier(n_estimators=3).fit(X, y),
                           label_name="label")
    assert not probe_applies(booster)
    forest = from_sklearn(RandomForestClassifier(n_estimators=4, random_state=0).fit(X, y),
                          label_name="label")
    assert probe_applies(forest)
    wrong = as_reconstruction(forest, X, 1 - y)  # every label flipped: outside the counts
    assert not wrong.verified
    assert rows_one_of_many(forest, wrong, deadline=time.perf_counter() + 5) is None
    assert probe_seconds(60, 0) == 6 and probe_seconds(300, 0) == 10
    assert probe_seconds(60, 58) == 2 and probe_seconds(60, 61) == 0


def test_reconstruct_reports_the_rows_one_of_many(tmp_path: Path):
    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.integers(0, 3, (80, 5)), columns=[f"x{j}" for j in range(5)])
    y = ((X["x0"] + X["x1"]) > 2).astype(int)
    forest = ExtraTreesClassifier(n_estimators=6, random_state=0).fit(X, y)
    path = save_model(forest, tmp_path / "extra.skops")
    details, summary = tmp_path / "details.csv", tmp_path / "summary.json"
    result = CliRunner().invoke(app, ["reconstruct", str(path), "--time-limit", "20",
                                      "--details", str(details), "--json", str(summary)])
    assert result.exit_code in (0, 5), result.output
    assert "Rows one of many" in result.output
    flagged = pd.read_csv(details)["one_of_many"]
    assert int(flagged.sum()) == json.loads(summary.read_text())["one_of_many_rows"]
