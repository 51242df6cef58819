"""What every formulation of the reconstruction is given, whichever runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from treeleaks.counts.cells import CellBudget
from treeleaks.runtime.limits import check_run_options
from treeleaks.runtime.progress import ProgressCallback


@dataclass(frozen=True)
class RunOptions:
    """What every formulation of the reconstruction is given, whichever runs: the time for
    the whole run and for its proofs, the solvers' threads and seed, the budget for listing
    cells, and where progress events go."""

    time_limit: float = 60.0
    certainty_time_limit: float = 30.0
    threads: int = 2
    seed: int = 0
    cell_budget: CellBudget | None = None
    progress: ProgressCallback | None = None

    def check(self, max_rows: int) -> None:
        """Refuse values a run cannot honour (see `check_run_options`)."""
        check_run_options(self.time_limit, self.certainty_time_limit, self.threads,
                          self.seed, max_rows)

    def keywords(self) -> dict[str, Any]:
        """These options as keyword arguments (the same objects, not copies)."""
        return dict(vars(self))
