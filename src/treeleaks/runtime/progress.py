"""Progress events the engine reports while it works, for the CLI's live display.

The engine calls ``progress(Progress(...))`` at each step of a long run; the callback must
be cheap and must not raise. Stages, in order: ``cells`` (``done`` trees of ``total``
routed, ``detail["cells"]`` so far), ``pin`` (``done`` rows of ``total`` pinned by
single-row leaves, ``detail["round"]``), ``generate`` (``done`` rows of ``total`` placed by the
LP over the cells generated so far, ``detail["columns"]``), ``solve`` (the integer search),
``certainty`` (``done`` candidate rows of ``total`` settled), ``verify``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Progress:
    """One progress report: the stage, how far it is, and stage-specific figures."""

    stage: str
    done: int = 0
    total: int | None = None
    detail: dict[str, float | int | str] = field(default_factory=dict)


ProgressCallback = Callable[[Progress], None]


def report(callback: ProgressCallback | None, stage: str, done: int = 0,
           total: int | None = None, **detail: float | int | str) -> None:
    """Send one event to ``callback`` when there is one."""
    if callback is not None:
        callback(Progress(stage, done, total, dict(detail)))
