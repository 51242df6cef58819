"""Shared fixtures: small forests and the shared datasets when present."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import Result

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def binary_frame(n_rows: int, n_features: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Random 0/1 features and a label correlated with them."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n_rows, n_features))
    y = (X[:, 0] ^ (rng.random(n_rows) < 0.2)).astype(int)
    return pd.DataFrame(X, columns=[f"f{j}" for j in range(n_features)]), y


def outlier_population(n: int = 240, outliers: int = 8, seed: int = 0) -> pd.DataFrame:
    """Distinct random rows over six 4-valued attributes, and outliers each with its own
    value of a seventh attribute that every other row has at 0."""
    rng = np.random.default_rng(seed)
    columns = [f"a{j}" for j in range(6)]
    common = pd.DataFrame(rng.integers(0, 4, (n, 6)), columns=columns).drop_duplicates()
    odd = pd.DataFrame(rng.integers(0, 4, (outliers, 6)), columns=columns)
    return pd.concat([common.assign(rare=0), odd.assign(rare=np.arange(1, outliers + 1))],
                     ignore_index=True)


@pytest.fixture(scope="session")
def compas() -> tuple[pd.DataFrame, pd.Series, dict]:
    """Binarized COMPAS from ../shared/data (skipped when the data is not beside the repo)."""
    meta_path = SHARED_DATA / "datasets.json"
    if not meta_path.exists():
        pytest.skip("shared datasets not available")
    info = json.loads(meta_path.read_text())["compas"]
    frame = pd.read_csv(SHARED_DATA / info["file"])
    label = frame.pop(info["label"])
    return frame, label, info


def one_line_error(result: Result, code: int = 2) -> str:
    """The command failed with ``code`` and said why in one ``error:`` line on stderr."""
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]
