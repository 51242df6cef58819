"""One time budget for the whole audit, shared among its attacks by a stated rule.

The rule (`RULE`): the attacks share 95% of the budget; the rest is kept for the verdict,
the custodian's table and writing the report. When its turn comes, an attack gets the time
left times its weight over the weights of the attacks still to run, itself included (each
step's weight is on the step, `treeleaks.report.audit_steps.STEPS`: the reconstruction
weighs 4, the worst case and the bootstrap attack without the random states 2 each, every
other step 1). Time an attack does not use passes to those after it. With
``--attack-budget A`` no attack gets more than A seconds. Reading the model and the data
comes before the clock starts. A reconstruction scored against the custodian's rows keeps
part of its share for the scoring (`treeleaks.report.evidence.engine_seconds`), so the step
as a whole keeps it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from treeleaks.report.audit_steps import STEPS, weights_words

WEIGHTS = {step.name: step.weight for step in STEPS}
ATTACKS_SHARE = 0.95  # of the budget; the rest is for the verdict and the report
MIN_SECONDS = 0.1  # an attack with less time left than this is not started
RULE = (f"the attacks share {ATTACKS_SHARE:.0%} of the budget (the rest is for the verdict "
        "and the report); each attack gets the time left times its weight over the weights "
        f"of the attacks still to run ({weights_words('every other step')}), so time one "
        "does not use passes to the next; --attack-budget caps each share; a reconstruction "
        "scored against --data keeps part of its share for the scoring; reading the model "
        "comes before the clock")


def weight(name: str) -> float:
    """An attack's weight in the rule: its step's (1 for a name no step has)."""
    return WEIGHTS.get(name, 1.0)


def share(left: float, name: str, waiting: list[str], cap: float | None = None) -> float:
    """Seconds for attack ``name`` out of ``left``, ``waiting`` being the attacks still to
    run after it; at most ``cap`` (the per-attack budget) when given."""
    total = weight(name) + sum(weight(n) for n in waiting)
    seconds = left * weight(name) / total if math.isfinite(left) else math.inf
    return min(seconds, cap) if cap is not None else seconds


@dataclass
class AuditClock:
    """The audit's clock: started when the attacks start, after the model was read.
    ``budget`` is the whole audit's (may be infinite when only ``attack_budget`` bounds
    each attack, as a sweep asks)."""

    budget: float
    attack_budget: float | None = None
    start: float = field(default_factory=time.perf_counter)

    def elapsed(self) -> float:
        """Seconds since the clock started."""
        return time.perf_counter() - self.start

    def left(self) -> float:
        """Seconds the attacks may still use."""
        return self.budget * ATTACKS_SHARE - self.elapsed()

    def share(self, name: str, waiting: list[str]) -> float | None:
        """This attack's seconds by the rule, or None when too little is left to start it."""
        left = self.left()
        if left < MIN_SECONDS:
            return None
        seconds = share(left, name, waiting, self.attack_budget)
        return max(seconds, MIN_SECONDS)

    def record(self) -> dict[str, float | str | None]:
        """What the report states: the budget, the per-attack cap, the rule and the wall
        time the audit used (from the clock's start to now)."""
        return {"budget_s": self.budget if math.isfinite(self.budget) else None,
                "attack_budget_s": self.attack_budget, "rule": RULE,
                "wall_time_s": round(self.elapsed(), 3)}
