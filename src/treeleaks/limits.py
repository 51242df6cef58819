"""Default limits on a run, kept light so the command line can show them without loading
the engine."""

from __future__ import annotations

import os

DEFAULT_MAX_ROWS = 1_000_000  # training rows the counts may imply before a run is refused


def default_memory_mb() -> float:
    """A safe share of this machine for listing cells: a quarter of its physical memory,
    between 512 MB and 8 GB (1 GB where the size cannot be read)."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (AttributeError, ValueError, OSError):
        return 1024.0
    return float(min(max(total / 4, 512.0), 8192.0))
