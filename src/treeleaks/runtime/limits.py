"""Default limits on a run, kept light so the command line can show them without loading
the engine."""

from __future__ import annotations

import math
import os

from treeleaks.runtime.errors import TreeleaksError

DEFAULT_MAX_ROWS = 1_000_000  # training rows the counts may imply before a run is refused
SEED_MAX = 2**31 - 1  # CP-SAT takes a 32-bit seed


def check_run_options(
    time_limit: float, certainty_time_limit: float, threads: int, seed: int, max_rows: int
) -> None:
    """Refuse option values a run cannot honour, naming the option and its valid range."""
    for name, seconds in (("time_limit", time_limit),
                          ("certainty_time_limit", certainty_time_limit)):
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not (
            math.isfinite(seconds) and seconds >= 0
        ):
            raise TreeleaksError(f"{name} must be a finite number of seconds, 0 or more, "
                                 f"got {seconds!r}")
    for name, value, low, high in (("threads", threads, 1, 1024), ("seed", seed, 0, SEED_MAX),
                                   ("max_rows", max_rows, 1, 2**62)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise TreeleaksError(f"{name} must be a whole number from {low} to {high}, "
                                 f"got {value!r}")


def default_memory_mb() -> float:
    """A safe share of this machine for listing cells: a quarter of its physical memory,
    between 512 MB and 8 GB (1 GB where the size cannot be read)."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (AttributeError, ValueError, OSError):
        return 1024.0
    return float(min(max(total / 4, 512.0), 8192.0))
