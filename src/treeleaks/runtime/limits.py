"""Default limits on a run and the one check of a run's time limits, kept light so the
command line can show and check them without loading the engine: the library
(`check_run_options`) and the command line's options (``--time-limit``,
``--certainty-time-limit``) refuse the same values with the same words."""

from __future__ import annotations

import math
import os

from treeleaks.runtime.errors import TreeleaksError

DEFAULT_MAX_ROWS = 1_000_000  # training rows the counts may imply before a run is refused
SEED_MAX = 2**31 - 1  # CP-SAT takes a 32-bit seed


def time_limit_problem(value: object) -> str | None:
    """What is wrong with ``value`` as the time a run may take (NaN, infinite, 0 or less, not
    a number), or None: a time the run can actually use."""
    if (seconds := _seconds(value)) is not None and seconds > 0:
        return None
    return f"must be a positive number of seconds, not {_shown(value)}"


def proof_limit_problem(value: object) -> str | None:
    """What is wrong with ``value`` as the time the proofs may take (NaN, infinite, below 0,
    not a number), or None: 0 or more seconds."""
    if (seconds := _seconds(value)) is not None and seconds >= 0:
        return None
    return f"must be 0 or a positive number of seconds, not {_shown(value)}"


def _seconds(value: object) -> float | None:
    """``value`` as finite seconds, or None for anything else (booleans included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _shown(value: object) -> str:
    """``value`` as the refusal shows it: a number as the command line prints it."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return repr(value)
    return f"{value:g}"


def check_run_options(
    time_limit: float, certainty_time_limit: float, threads: int, seed: int, max_rows: int
) -> None:
    """Refuse option values a run cannot honour, naming the option and its valid range."""
    for name, problem in (("time_limit", time_limit_problem(time_limit)),
                          ("certainty_time_limit", proof_limit_problem(certainty_time_limit))):
        if problem is not None:
            raise TreeleaksError(f"{name} {problem}")
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
