"""anonymeter's singling-out evaluator on one synthetic release, as a script another
interpreter runs (anonymeter 1.1.0 pins numpy < 1.27, so it lives in its own environment):

    python anonymeter_script.py ORIGINAL.csv SYNTHETIC.csv CONTROL.csv OUT.json N_ATTACKS SEED

It imports nothing from treeleaks, only anonymeter and pandas; treeleaks also calls
``evaluate`` in-process when anonymeter is importable there.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any

N_COLS = 3  # anonymeter's default: the predicates combine three attributes
# Tries at drawing a predicate that singles out a synthetic row (anonymeter's default, 10⁷,
# does not finish); the JSON's warnings say how many were found.
# Figures: docs/lab/2026-11-28-constants.md#synthetic-anonymeter_script
MAX_ATTEMPTS = 100_000


class _Kept(logging.Handler):
    """Keeps what anonymeter logs (how many predicates it found, when short)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def evaluate(original: Any, synthetic: Any, control: Any, n_attacks: int,
             seed: int) -> dict[str, Any]:
    """anonymeter's multivariate singling-out risk of ``synthetic`` against ``original``,
    corrected by the ``control`` rows, with the figures it reports."""
    from anonymeter.evaluators import SinglingOutEvaluator

    start = time.monotonic()
    kept = _Kept()
    logger = logging.getLogger("anonymeter")
    logger.addHandler(kept)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            evaluator = SinglingOutEvaluator(ori=original, syn=synthetic, n_attacks=n_attacks,
                                             n_cols=N_COLS, control=control,
                                             max_attempts=MAX_ATTEMPTS, seed=seed).evaluate()
            results = evaluator.results(confidence_level=0.95)
            risk = evaluator.risk(confidence_level=0.95)
    finally:
        logger.removeHandler(kept)

    def rate(value: Any) -> dict[str, float] | None:
        return None if value is None else {"value": float(value.value),
                                           "error": float(value.error)}

    return {"risk": float(risk.value), "ci": [float(risk.ci[0]), float(risk.ci[1])],
            "n_attacks": int(n_attacks), "n_cols": N_COLS, "mode": "multivariate",
            "max_attempts": MAX_ATTEMPTS,
            "n_success": int(results.n_success), "n_baseline": int(results.n_baseline),
            "n_control": None if results.n_control is None else float(results.n_control),
            "attack_rate": rate(results.attack_rate),
            "baseline_rate": rate(results.baseline_rate),
            "control_rate": rate(results.control_rate),
            "warnings": kept.messages + [str(w.message) for w in caught],
            "seconds": time.monotonic() - start}


def main(argv: list[str]) -> int:
    """Read the three CSVs (every value a string), evaluate, write the JSON."""
    import pandas as pd

    original, synthetic, control, out, n_attacks, seed = argv
    tables = [pd.read_csv(path, dtype=str, keep_default_na=False)
              for path in (original, synthetic, control)]
    figures = evaluate(*tables, int(n_attacks), int(seed))
    Path(out).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    # Run as a file, Python puts this folder first on the path; its modules (plot, queries,
    # ...) must not shadow what anonymeter imports.
    here = Path(__file__).resolve().parent
    sys.path = [p for p in sys.path if Path(p or ".").resolve() != here]
    raise SystemExit(main(sys.argv[1:]))
