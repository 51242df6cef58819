"""What retraining with differential privacy costs and buys, as the project's DP benchmark
measured it. The audit cites these figures: a DP forest is another model, trained with a
chosen ε, so its effect cannot be measured on the model being audited.

Source: ``bench/results/dp_quick.json`` (``python bench/dp.py --quick``: 10 trees of depth
5, N = 100, 5 seeds per cell, 120 s per attack). A test checks these figures against that
file.
"""

from __future__ import annotations

from typing import NamedTuple

SOURCE = ("treeleaks benchmark bench/dp.py --quick (bench/results/dp_quick.json): DP forests "
          "of 10 trees of depth 5 trained on 100 rows, means over 5 seeds")


class DPCost(NamedTuple):
    """Means over the benchmark's seeds at one (dataset, ε)."""

    error: float  # reconstruction error of the DP attack
    baseline: float  # error of random guesses consistent with the schema
    perfect_share: float  # share of training rows reconstructed exactly
    test_accuracy: float  # the DP forest's accuracy on held-out rows


MEASURED: dict[tuple[str, float], DPCost] = {
    ("compas", 1.0): DPCost(0.134, 0.204, 0.268, 0.569),
    ("compas", 5.0): DPCost(0.052, 0.204, 0.612, 0.632),
    ("compas", 10.0): DPCost(0.035, 0.204, 0.716, 0.635),
    ("compas", 30.0): DPCost(0.016, 0.204, 0.850, 0.637),
    ("adult", 1.0): DPCost(0.170, 0.182, 0.076, 0.735),
    ("adult", 5.0): DPCost(0.081, 0.182, 0.302, 0.762),
    ("adult", 10.0): DPCost(0.069, 0.182, 0.354, 0.762),
    ("adult", 30.0): DPCost(0.054, 0.182, 0.438, 0.762),
    ("default_credit", 1.0): DPCost(0.222, 0.268, 0.008, 0.763),
    ("default_credit", 5.0): DPCost(0.137, 0.268, 0.058, 0.785),
    ("default_credit", 10.0): DPCost(0.121, 0.268, 0.094, 0.783),
    ("default_credit", 30.0): DPCost(0.106, 0.268, 0.118, 0.783),
}
