"""A success rate over attacked releases, its 95% Wilson interval, and where the interval
lies against the baseline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scipy.stats import binomtest


@dataclass(frozen=True)
class Rate:
    """Successes in ``attacks`` releases, beside the baseline a random record achieves."""

    successes: int
    attacks: int
    baseline: float

    @property
    def success_rate(self) -> float:
        return self.successes / self.attacks

    @property
    def ci(self) -> tuple[float, float]:
        """The 95% Wilson interval of the success rate."""
        interval = binomtest(self.successes, self.attacks).proportion_ci(method="wilson")
        return float(interval.low), float(interval.high)

    @property
    def verdict(self) -> str:
        """Where the interval lies against the baseline."""
        low, high = self.ci
        return ("above the baseline" if low > self.baseline else
                "below the baseline" if high < self.baseline else "contains the baseline")

    def summary(self) -> dict[str, Any]:
        return {"success_rate": self.success_rate, "ci": list(self.ci),
                "baseline": self.baseline, "successes": self.successes,
                "attacks": self.attacks, "verdict": self.verdict}
