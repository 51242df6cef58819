"""`reconstruct`'s options, as data: what every formulation is given, and what a call asks.

Every option of `treeleaks.attacks.reconstruct.reconstruct` is a field of one of two frozen
dataclasses, and `OPTIONS` is the table of them, read off their fields (name, default, the
class that carries it):

- `RunOptions`: what every formulation is given, whichever runs (time, threads, seed, the
  cell budget, progress); their limits are checked by `RunOptions.check`;
- `Request`: what a call asks beyond the run (strategy, solver, side knowledge, draws set
  aside, a DP forest's N and shrinkage, the most rows the counts may imply). Which route
  takes which of them, and the words refusing the rest, is
  `treeleaks.attacks.reconstruction.route_options`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from treeleaks.counts.cells import CellBudget
from treeleaks.runtime.limits import DEFAULT_MAX_ROWS, check_run_options
from treeleaks.runtime.progress import ProgressCallback
from treeleaks.runtime.vocabulary import Strategy

if TYPE_CHECKING:
    from treeleaks.ir.knowledge import Knowledge


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


@dataclass(frozen=True)
class Request:
    """What a call asks beyond the run's options (`RunOptions`).

    The strategy and solver, side knowledge, whether a bootstrap forest's draws are set
    aside, a DP forest's N (given, or ``n_unknown`` to infer it) and how far its rows are
    pulled toward typical ones (``shrinkage``; None: the attack's default), and the most
    rows the counts may imply.
    """

    strategy: str = Strategy.AUTO
    solver: str = "highs"
    max_rows: int = DEFAULT_MAX_ROWS
    knowledge: Knowledge | None = None
    ignore_draws: bool = False
    n_rows: int | None = None
    n_unknown: bool = False
    shrinkage: float | None = None

    @property
    def knows(self) -> bool:
        """Whether side knowledge was given."""
        return self.knowledge is not None and not self.knowledge.empty


@dataclass(frozen=True)
class Option:
    """One of `reconstruct`'s options: its name, its default, and the class carrying it."""

    name: str
    default: Any
    carrier: type[RunOptions] | type[Request]


OPTIONS: dict[str, Option] = {
    field.name: Option(field.name, field.default, carrier)
    for carrier in (RunOptions, Request) for field in fields(carrier)
}


def split_options(caller: str, given: Mapping[str, Any]) -> tuple[RunOptions, Request]:
    """``given`` (option name → value) as the run's options and the request.

    A name not in `OPTIONS` raises the `TypeError` Python raises for an unexpected keyword
    argument of ``caller``.
    """
    for name in given:
        if name not in OPTIONS:
            raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}")
    def of(carrier: type) -> dict[str, Any]:
        return {name: value for name, value in given.items()
                if OPTIONS[name].carrier is carrier}

    return RunOptions(**of(RunOptions)), Request(**of(Request))


def asked(run: RunOptions, request: Request) -> dict[str, Any]:
    """Every option's value in one mapping, by name (the objects themselves, not copies)."""
    return {**vars(run), **vars(request)}
