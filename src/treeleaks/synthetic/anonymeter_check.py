"""anonymeter's singling-out evaluator beside the shadow-model attack, on one PrivBayes
release of the custodian's table: in this process when anonymeter is importable, else in
another interpreter (anonymeter 1.1.0 pins numpy < 1.27, so it cannot share treeleaks'
environment) that runs ``anonymeter_script.py`` on CSV files and writes JSON.

anonymeter reads the tables as PrivBayes does (every value a category, wide numerical
columns in the population's bins): the original is the private table X, the synthetic one
release of PrivBayes fitted on it, and the control set population rows outside X.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from treeleaks.runtime.errors import TreeleaksError
from treeleaks.synthetic import anonymeter_script
from treeleaks.synthetic.encoding import Encoding, found_in
from treeleaks.synthetic.privbayes import PrivBayes

N_ATTACKS = 500  # anonymeter's default number of singling-out queries
TIME_FLOOR = 30.0  # seconds anonymeter gets in another interpreter when the budget is spent
HOW_TO = ("anonymeter not run: it needs numpy<1.27, so install it in its own environment "
          "(python -m venv anon && anon/bin/pip install anonymeter pandas) and pass "
          "--anonymeter-python anon/bin/python")


class AnonymeterError(TreeleaksError):
    """The interpreter given for anonymeter cannot run it."""


def available_in_process() -> bool:
    """Whether anonymeter is importable here."""
    return importlib.util.find_spec("anonymeter") is not None


def check_interpreter(python: Path) -> None:
    """Refuse an interpreter that does not exist or cannot import anonymeter."""
    try:
        done = subprocess.run([str(python), "-c", "import anonymeter, pandas"],
                              capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AnonymeterError(f"--anonymeter-python {str(python)!r} cannot be run ({exc}); "
                              "give the python of an environment with anonymeter") from exc
    if done.returncode != 0:
        raise AnonymeterError(f"--anonymeter-python {str(python)!r} cannot import anonymeter "
                              "and pandas; install them there: PYTHON -m pip install "
                              "anonymeter pandas")


def tables(private: pd.DataFrame, population: pd.DataFrame, epsilon: float,
           seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The original (X), one synthetic release of PrivBayes fitted on X at ε, and |X|
    control rows drawn from the distinct population rows outside X, as strings of their
    codes' values. The control set is as large as X because anonymeter 1.1.0's correction
    for a larger one can raise (its corrected control count can pass its attack count)."""
    encoding = Encoding.fit(population)
    real = encoding.codes(private, "private table")
    everyone = np.unique(encoding.codes(population, "population"), axis=0)
    synthetic = PrivBayes(epsilon, random_state=seed).fit(real, encoding.sizes) \
        .sample(len(real))
    outside = everyone[~found_in(everyone, real)]
    rng = np.random.default_rng(seed)
    control = outside[rng.choice(len(outside), min(len(real), len(outside)), replace=False)]
    return tuple(_decoded(encoding, codes) for codes in (real, synthetic, control))


def _decoded(encoding: Encoding, codes: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame([encoding.decode(row) for row in codes], columns=encoding.columns,
                        dtype=str)


def evaluate(original: pd.DataFrame, synthetic: pd.DataFrame, control: pd.DataFrame, *,
             python: Path | None = None, n_attacks: int = N_ATTACKS, seed: int = 0,
             timeout: float = 300.0) -> dict[str, Any]:
    """anonymeter's figures, from ``python`` when given, else in this process; a run that
    fails or passes ``timeout`` seconds gives ``{"failed": why}`` (the attack's figures
    stand without it)."""
    if python is None:
        return {**anonymeter_script.evaluate(original, synthetic, control, n_attacks, seed),
                "interpreter": "in-process"}
    with tempfile.TemporaryDirectory(prefix="treeleaks-anonymeter-") as folder:
        paths = [Path(folder) / f"{name}.csv" for name in ("original", "synthetic", "control")]
        for frame, path in zip((original, synthetic, control), paths):
            frame.to_csv(path, index=False)
        out = Path(folder) / "anonymeter.json"
        command = [str(python), anonymeter_script.__file__, *map(str, paths), str(out),
                   str(n_attacks), str(seed)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                  check=False)
        except subprocess.TimeoutExpired:
            return {"failed": f"anonymeter did not finish within {timeout:.0f} s"}
        if done.returncode != 0 or not out.exists():
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            return {"failed": f"anonymeter stopped with exit code {done.returncode}: {last}"}
        return {**json.loads(out.read_text("utf-8")), "interpreter": str(python)}


def run(private: pd.DataFrame, population: pd.DataFrame, epsilon: float, seed: int,
        python: Path | None, deadline: float) -> dict[str, Any]:
    """anonymeter's figures on one release of ``private`` at ε (in this process, or by
    ``python`` until ``deadline``, ``time.monotonic()`` seconds, or TIME_FLOOR seconds if
    that is later), or ``{"skipped": HOW_TO}`` when it is neither importable nor given."""
    if python is None and not available_in_process():
        return {"skipped": HOW_TO}
    timeout = max(TIME_FLOOR, deadline - time.monotonic())
    return evaluate(*tables(private, population, epsilon, seed), python=python, seed=seed,
                    timeout=timeout)


def summary(figures: dict[str, Any]) -> str:
    """anonymeter's risk with its interval and what it rests on, or why it did not run."""
    if "risk" not in figures:
        return figures.get("skipped") or figures["failed"]
    low, high = figures["ci"]
    return (f"singling-out risk {figures['risk']:.1%} (95% interval {low:.1%} to {high:.1%}); "
            f"{figures['n_success']} of {figures['n_attacks']} predicates single out an "
            f"original row, baseline {figures['n_baseline']}, control "
            f"{figures['n_control']:g}")
