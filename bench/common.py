"""Shared helpers for the treeleaks benchmarks: datasets (`treeleaks.sweep.datasets`),
isolated runs (`treeleaks.sweep.isolate`), statistics, output.

Each benchmark run executes in a fresh Python process so that its peak memory is its own
(read from the kernel with ``os.wait4``) and a crash, an out-of-memory kill or a hang ends
that run only.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from treeleaks.sweep.datasets import Dataset as Dataset  # re-exported for the benchmarks
from treeleaks.sweep.datasets import dataset_info as dataset_info
from treeleaks.sweep.datasets import load_dataset as load_dataset
from treeleaks.sweep.grid import Grid
from treeleaks.sweep.isolate import ChildOutcome as ChildOutcome
from treeleaks.sweep.isolate import maxrss_mb as maxrss_mb
from treeleaks.sweep.isolate import run_isolated as isolated
from treeleaks.sweep.runner import RECORDS, run_sweep

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
DEFAULT_DATA_DIR = Path(os.environ.get("TREELEAKS_DATA", REPO_DIR.parent / "shared" / "data"))


# --- isolated runs -------------------------------------------------------------------------


def run_isolated(script: Path, config: dict[str, Any], timeout_s: float) -> ChildOutcome:
    """Run ``python <script> --worker <config.json>`` in a process of its own
    (`treeleaks.sweep.isolate.run_isolated`: own peak memory, killed after ``timeout_s``)."""
    return isolated([sys.executable, str(script), "--worker"], config, timeout_s)


def run_grids(grids: Grid | Sequence[Grid], out: Path, workers: int,
              on_record: Callable[[dict[str, Any]], None] | None = None,
              resume: bool = False) -> list[dict[str, Any]]:
    """Run a benchmark's sweep grids on `treeleaks.sweep`, its records beside ``out``
    (``out`` without its suffix: one JSON line per finished run); afresh unless
    ``resume``, which keeps the runs recorded there and runs only the rest."""
    folder = out.with_suffix("")
    if not resume:
        (folder / RECORDS).unlink(missing_ok=True)
    return run_sweep(grids, folder, workers=workers, on_record=on_record)


# --- statistics and output -----------------------------------------------------------------


def finite(values: Iterable[Any]) -> list[float]:
    """The values that are real finite numbers (drops None, NaN, booleans stay as 0/1)."""
    out = []
    for v in values:
        if v is None:
            continue
        f = float(v)
        if math.isfinite(f):
            out.append(f)
    return out


def median(values: Iterable[Any]) -> float | None:
    vals = finite(values)
    return statistics.median(vals) if vals else None


def mean(values: Iterable[Any]) -> float | None:
    vals = finite(values)
    return statistics.fmean(vals) if vals else None


def share(flags: Sequence[bool]) -> float | None:
    return sum(map(bool, flags)) / len(flags) if flags else None


def jsonable(obj: Any) -> Any:
    """NumPy scalars to Python, non-finite floats to None, recursively."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_json(path: Path, data: Any) -> None:
    """Write atomically (temp file + rename) so an interrupted grid leaves valid JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(jsonable(data), indent=1))
    tmp.replace(path)


def environment() -> dict[str, Any]:
    """Versions, machine and git state for the results file."""
    import ortools
    import scipy
    import sklearn

    import treeleaks

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=REPO_DIR, capture_output=True, text=True,
                                 timeout=10, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "treeleaks": getattr(treeleaks, "__version__", None),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
        "ortools": ortools.__version__,
        "git_commit": git("rev-parse", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain", "--", "src")),
    }


def fmt(value: Any, digits: int = 3) -> str:
    """A table cell: '-' for missing, fixed decimals for floats."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


# --- datasets beyond the shared files (offline; used by wide.py) ---------------------------

SKLEARN_DATASETS = {"cancer": "load_breast_cancer", "wine": "load_wine", "digits": "load_digits",
                    "iris": "load_iris"}


def sklearn_dataset(name: str, label: str = "label") -> Dataset:
    """One of scikit-learn's bundled datasets with its raw feature values (not binarized):
    ``cancer`` (30 numerical, 569 rows), ``wine`` (13 numerical, 178), ``digits``
    (64 pixel counts 0-16, 1,797) or ``iris`` (4 numerical, 150, three classes). Nothing is
    downloaded."""
    import sklearn.datasets

    if name not in SKLEARN_DATASETS:
        raise KeyError(f"unknown scikit-learn dataset {name!r}; have {', '.join(SKLEARN_DATASETS)}")
    data = getattr(sklearn.datasets, SKLEARN_DATASETS[name])(as_frame=True)
    frame = data.data.reset_index(drop=True).assign(**{label: data.target.to_numpy()})
    return Dataset(name=name, frame=frame, label=label, one_hot_groups=[], at_most_one_groups=[])


def classification_dataset(n_rows: int, n_features: int, seed: int,
                           label: str = "label") -> Dataset:
    """``sklearn.datasets.make_classification``: two classes over ``n_features`` raw
    numerical columns (its defaults: 2 informative, 2 redundant), ``n_rows`` rows drawn by
    ``seed``, values rounded to 4 decimals as a measured table would be."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n_rows, n_features=n_features, random_state=seed)
    frame = pd.DataFrame(X.round(4), columns=[f"x{j}" for j in range(n_features)])
    return Dataset(name=f"classif{n_features}", frame=frame.assign(**{label: y}), label=label,
                   one_hot_groups=[], at_most_one_groups=[])


def one_hot_dataset(
    width: int, n_rows: int = 5000, seed: int = 0, n_factors: int = 4, label: str = "label"
) -> Dataset:
    """Synthetic categorical data one-hot encoded to exactly ``width`` binary columns.

    Attributes ``a0, a1, ...`` have 3 to 12 levels (columns ``a3:0`` ... ``a3:k-1``, one
    one-hot group each). Every row draws ``n_factors`` correlated Gaussian latent factors;
    an attribute loads on one to three of them, and its level is drawn from a softmax of
    the loadings plus per-level offsets (so levels are unevenly common and attributes are
    correlated through the factors, not independent noise). The label is a noisy threshold
    of a fixed function of the factors. Deterministic in ``(width, n_rows, seed,
    n_factors)``.
    """
    if width < 3:
        raise ValueError(f"width must be at least 3 (one attribute of 3 levels), got {width}")
    rng = np.random.default_rng([seed, width])
    cards: list[int] = []
    while sum(cards) < width:
        left = width - sum(cards)
        k = left if 3 <= left <= 12 else int(rng.integers(3, 13))
        if left - k in (1, 2):  # a remainder too small for an attribute of its own
            k = left - 3  # left > 12 here, so 10 <= k <= 11
        cards.append(k)
    assert sum(cards) == width and all(3 <= k <= 12 for k in cards), cards

    corr = np.full((n_factors, n_factors), 0.3) + 0.7 * np.eye(n_factors)
    factors = rng.normal(size=(n_rows, n_factors)) @ np.linalg.cholesky(corr).T
    columns: dict[str, np.ndarray] = {}
    groups: list[list[str]] = []
    for a, k in enumerate(cards):
        loading = np.zeros((n_factors, k))
        used = rng.choice(n_factors, size=int(rng.integers(1, 4)), replace=False)
        loading[used] = rng.normal(scale=1.5, size=(len(used), k))
        offset = rng.normal(scale=1.0, size=k)
        gumbel = -np.log(-np.log(rng.random((n_rows, k))))
        level = np.argmax(factors @ loading + offset + gumbel, axis=1)
        names = [f"a{a}:{j}" for j in range(k)]
        for j, column in enumerate(names):
            columns[column] = (level == j).astype(np.int64)
        groups.append(names)
    score = factors[:, 0] - 0.7 * factors[:, 1] + 0.5 * factors[:, 2] * factors[:, 3 % n_factors]
    noisy = score + rng.normal(scale=0.6, size=n_rows)
    frame = pd.DataFrame(columns).assign(**{label: (noisy > np.median(noisy)).astype(np.int64)})
    return Dataset(name=f"onehot{width}", frame=frame, label=label, one_hot_groups=groups,
                   at_most_one_groups=[])


def mixed_dataset(n_rows: int, seed: int = 0, label: str = "label") -> Dataset:
    """Synthetic mixed table (issue 28's scaling series): 4 numerical columns and 3
    categorical ones with 4, 5 and 6 levels, one-hot encoded (15 binary columns, one group
    each), and a binary label. Every row draws 3 correlated Gaussian factors: the numerical
    columns are noisy functions of them (one log-normal, one rounded to whole numbers like
    an age), the levels a softmax of factor loadings, and the label a noisy threshold of a
    fixed function of the factors. Deterministic in ``(n_rows, seed)``."""
    rng = np.random.default_rng([seed, n_rows, 28])
    corr = np.full((3, 3), 0.4) + 0.6 * np.eye(3)
    f = rng.normal(size=(n_rows, 3)) @ np.linalg.cholesky(corr).T
    noise = rng.normal(size=(n_rows, 4))
    columns: dict[str, np.ndarray] = {
        "age": np.clip(np.round(45 + 12 * f[:, 0] + 6 * noise[:, 0]), 18, 90),
        "income": np.round(np.exp(10.3 + 0.5 * f[:, 1] + 0.3 * noise[:, 1]), 2),
        "score": np.round(0.6 * f[:, 2] - 0.3 * f[:, 0] + 0.5 * noise[:, 2], 3),
        "hours": np.round(np.clip(38 + 6 * f[:, 1] + 5 * noise[:, 3], 1, 80), 1),
    }
    groups: list[list[str]] = []
    for a, k in enumerate((4, 5, 6)):
        loading = rng.normal(scale=1.2, size=(3, k))
        gumbel = -np.log(-np.log(rng.random((n_rows, k))))
        level = np.argmax(f @ loading + rng.normal(size=k) + gumbel, axis=1)
        names = [f"c{a}:{j}" for j in range(k)]
        for j, column in enumerate(names):
            columns[column] = (level == j).astype(np.int64)
        groups.append(names)
    score = f[:, 0] - 0.8 * f[:, 1] + 0.5 * f[:, 2] ** 2 + rng.normal(scale=0.7, size=n_rows)
    frame = pd.DataFrame(columns).assign(**{label: (score > np.median(score)).astype(np.int64)})
    return Dataset(name=f"mixed{n_rows}", frame=frame, label=label, one_hot_groups=groups,
                   at_most_one_groups=[])


def stage_saver(out: dict[str, Any], result_path: str | Path,
                log: bool = True) -> Callable[[str], None]:
    """A child run's ``save(stage)``: it records the stage in ``out`` and rewrites the result
    JSON, so a later crash keeps every step before it (``log``: a timestamped line on
    stderr too)."""
    def save(stage: str) -> None:
        out["stage"] = stage
        if log:
            print(f"[{time.strftime('%H:%M:%S')}] {stage}", file=sys.stderr, flush=True)
        Path(result_path).write_text(json.dumps(jsonable(out)))
    return save


def run_status(outcome: ChildOutcome) -> str:
    """The status of an isolated run: the reconstruction's status, or ``timeout`` (killed by
    the guard), ``ERROR`` (a Python exception in the child) or ``CRASH(rc=...)`` (no result,
    e.g. killed by a signal such as the OOM killer)."""
    res = outcome.result or {}
    if outcome.timed_out:
        return "timeout"
    if "exception" in res:
        return "ERROR"
    status = res.get("status")
    return str(status) if status is not None else f"CRASH(rc={outcome.returncode})"


def isolated_record(script: Path, config: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One configuration run by `run_isolated`, flattened: the config, the worker's result,
    its status (`run_status`), wall time, peak memory and, when it failed, its log's tail."""
    child = run_isolated(script, config, timeout_s)
    status = run_status(child)
    failed = "exception" in (child.result or {}) or child.timed_out or not child.result
    return {**config, **(child.result or {}), "status": status, "wall_s": child.wall_s,
            "peak_mem_mb": child.peak_mem_mb, **({"log_tail": child.log_tail} if failed else {})}


def saved_in_r(folder: Path, setup: Sequence[str], calls: dict[str, str]) -> dict[str, Path]:
    """Run ``setup`` (R lines) in ``folder`` with Rscript, then fit each model of ``calls``
    (name → an R expression) after ``set.seed(1)`` and save it with ``saveRDS``; the files by
    name. Raises `subprocess.CalledProcessError` when R fails."""
    lines = list(setup)
    files = {}
    for index, (name, call) in enumerate(calls.items()):
        files[name] = folder / f"model{index}.rds"
        lines += ["set.seed(1)", f"saveRDS({call}, '{files[name].name}')"]
    (folder / "make.R").write_text("\n".join(lines) + "\n")
    subprocess.run(["Rscript", "make.R"], cwd=folder, check=True, capture_output=True)
    return files
