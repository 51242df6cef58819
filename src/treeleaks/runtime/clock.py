"""One run's clock: when it started, when it must end, the share kept for the proofs, and
how long each stage took. Every attack reads its deadlines here instead of adding up
``time.perf_counter()`` by hand, so a stage never overruns the run it belongs to.

Below the public attacks time travels as deadlines (``time.perf_counter()`` instants);
`seconds_until` turns one into the seconds a solver's time limit takes (CP-SAT's
``max_time_in_seconds``, HiGHS's ``time_limit``), at the call into the solver and nowhere
else."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

PROOF_SHARE = 0.15  # of the time limit, kept for the proofs (at most certainty_time_limit)


def seconds_until(deadline: float, floor: float = 0.0, now: float | None = None) -> float:
    """The seconds from ``now`` (default: this instant) to ``deadline`` (a
    ``time.perf_counter()`` instant), at least ``floor``: what a solver's time limit is
    given when it is called. A caller that has just read the clock passes its reading."""
    return max(deadline - (time.perf_counter() if now is None else now), floor)


@dataclass
class RunClock:
    """The time of one run of ``time_limit`` seconds, of which the proofs keep
    ``min(proof_limit, PROOF_SHARE * time_limit)`` at the end: the search runs until
    `search_deadline`, the proofs until `deadline`. `lap` records each stage's seconds in
    `timings`, which a result reports as they are."""

    time_limit: float
    proof_limit: float = 0.0
    start: float = field(default_factory=time.perf_counter)
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._tick = self.start

    @property
    def deadline(self) -> float:
        return self.start + float(self.time_limit)

    @property
    def search_deadline(self) -> float:
        """When the search must stop so that the proofs keep their share."""
        return self.deadline - min(self.proof_limit, PROOF_SHARE * self.time_limit)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self, until: float | None = None) -> float:
        """Seconds from now to ``until`` (default: the run's end), never negative."""
        return seconds_until(self.deadline if until is None else until)

    def share(self, fraction: float, until: float | None = None) -> float:
        """The deadline ``fraction`` of the way from now to ``until`` (default: the run's
        end)."""
        return time.perf_counter() + fraction * self.left(until)

    def within(self, seconds: float) -> float:
        """The deadline at most ``seconds`` from now, within the run."""
        return min(self.deadline, time.perf_counter() + seconds)

    def proof_deadline(self) -> float:
        """When the proofs must stop: at most ``proof_limit`` from now, within the run."""
        return self.within(self.proof_limit)

    def lap(self, name: str) -> float:
        """Record the seconds since the previous lap (or the start) as stage ``name``;
        returns now."""
        now = time.perf_counter()
        self.timings[name] = now - self._tick
        self._tick = now
        return now

    def since_lap(self) -> float:
        """When the last lap (or the run) ended: the start of the stage now running."""
        return self._tick
