"""Run a grid's points as tasks on Dask: a `LocalCluster` of one single-threaded worker
per core by default (the solvers are CPU-bound), or an existing cluster's scheduler.

Every point runs in a child process of its own with the grid's wall-time and memory limits
(`treeleaks.sweep.isolate`), so a point that hangs, runs out of memory or crashes is
recorded as such and the sweep goes on; a grid of points that take milliseconds can run
them in the workers themselves (``isolate = false``: an exception is still recorded).
Each finished point is appended at once to ``points.jsonl`` in the output folder; a sweep
started again skips the points already there, so a sweep killed half-way resumes where it
stopped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from treeleaks.runtime.errors import TreeleaksError
from treeleaks.sweep.attacks import ATTACKS, DONE
from treeleaks.sweep.grid import Grid, current_names, point_key
from treeleaks.sweep.isolate import ChildOutcome, run_isolated

RECORDS = "points.jsonl"
TABLE = "results.csv"
CONNECT_TIMEOUT_S = 10
CHILD = (sys.executable, "-m", "treeleaks.sweep.child")


class SweepError(TreeleaksError):
    """A sweep cannot start (no scheduler, unwritable output); the message says why."""


def run_point(grid: Grid, point: dict[str, Any]) -> dict[str, Any]:
    """One point, in its own process unless the grid says otherwise, as one record (runs on
    a Dask worker)."""
    if not grid.isolate:
        return _run_here(grid, point)
    config = {"attack": grid.attack, "point": point,
              "data_dir": None if grid.data_dir is None else str(grid.data_dir)}
    outcome = run_isolated(CHILD, config, grid.time_limit_for(point), grid.point_memory_mb)
    return point_record(grid.attack, point, outcome)


def _run_here(grid: Grid, point: dict[str, Any]) -> dict[str, Any]:
    """One point in this process: an exception is recorded, nothing is limited."""
    start = time.perf_counter()
    log = ""
    try:
        result = ATTACKS[grid.attack].run(point, grid.data_dir)
    except Exception as exc:
        result, log = {"exception": f"{type(exc).__name__}: {exc}"}, traceback.format_exc()
    outcome = ChildOutcome(result, None, False, False, time.perf_counter() - start, None, log)
    return point_record(grid.attack, point, outcome)


def point_record(attack: str, point: dict[str, Any], outcome: ChildOutcome) -> dict[str, Any]:
    """The point, what its attack measured, and how the run ended: the attack's status, or
    ``timeout``, ``memory`` (killed at the memory limit), ``error`` (an exception, in
    ``exception``), ``crashed`` (no result), or ``done`` (an attack without a status)."""
    result = dict(outcome.result or {})
    if outcome.timed_out:
        status = "timeout"
    elif outcome.out_of_memory:
        status = "memory"
    elif "exception" in result:
        status = "error"
    elif outcome.result is None:
        status = "crashed"
    else:
        status = result.get("status", DONE)
    result = {k: None if isinstance(v, float) and not math.isfinite(v) else v
              for k, v in result.items()}
    record = {"key": point_key(attack, point), "attack": attack, **point, **result,
              "status": status, "wall_s": outcome.wall_s, "peak_mem_mb": outcome.peak_mem_mb,
              "returncode": outcome.returncode}
    if status in ("timeout", "memory", "error", "crashed"):
        record["log_tail"] = outcome.log_tail
    return record


def read_records(folder: Path) -> list[dict[str, Any]]:
    """The records written so far (a line cut off by a kill is skipped), renamed axes
    under their current names."""
    path = Path(folder) / RECORDS
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            records.append(current_names(json.loads(line)))
    return records


def run_sweep(
    grids: Grid | Sequence[Grid],
    out: str | Path,
    scheduler: str | None = None,
    workers: int | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every point of ``grids`` not yet recorded in ``out``; return the grids' records
    (finished earlier or now), in grid order. ``on_record`` sees each new record."""
    grids = [grids] if isinstance(grids, Grid) else list(grids)
    out = _output_folder(Path(out))
    points = [(point_key(g.attack, p), g, p) for g in grids for p in g.points()]
    pending = _not_recorded(points, out)
    if pending:
        _run_pending(pending, out, scheduler, workers, on_record)
    by_key = {r["key"]: r for r in read_records(out)}
    return [by_key[k] for k, _, _ in points if k in by_key]


def _not_recorded(points: list[tuple[str, Grid, dict[str, Any]]], out: Path
                  ) -> list[tuple[str, Grid, dict[str, Any]]]:
    """The points (key, grid, point) ``out`` holds no record of, once a line cut off by a
    kill is dropped."""
    _drop_cut_line(out / RECORDS)
    done = {r.get("key") for r in read_records(out)}
    return [(k, g, p) for k, g, p in points if k not in done]


def _output_folder(out: Path) -> Path:
    """``out``, created if missing; one line when it cannot be."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SweepError(f"cannot create the output folder {str(out)!r}: {exc.strerror}") \
            from exc
    return out


def _run_pending(pending: list[tuple[str, Grid, dict[str, Any]]], out: Path,
                 scheduler: str | None, workers: int | None,
                 on_record: Callable[[dict[str, Any]], None] | None) -> None:
    """Run the ``pending`` points (key, grid, point) on Dask, appending each record to
    ``out``'s records as it finishes (flushed to disk: a kill loses no finished point)."""
    with _client(scheduler, workers) as client, open(out / RECORDS, "a") as log:
        from dask.distributed import as_completed

        futures = {client.submit(run_point, grid, point, key=f"point-{key}", pure=False):
                   (grid, point) for key, grid, point in pending}
        for future in as_completed(futures):
            record = _result(future, *futures[future])
            log.write(json.dumps(record, default=_plain) + "\n")
            log.flush()
            os.fsync(log.fileno())
            if on_record is not None:
                on_record(record)


def _drop_cut_line(path: Path) -> None:
    """Cut a last line left unfinished by a kill, so new records start on a line of their
    own."""
    if not path.exists():
        return
    text = path.read_bytes()
    if text and not text.endswith(b"\n"):
        path.write_bytes(text[: text.rfind(b"\n") + 1])


def _result(future: Any, grid: Grid, point: dict[str, Any]) -> dict[str, Any]:
    """A future's record; a task whose worker died (every retry) is recorded as such."""
    try:
        return future.result()
    except Exception as exc:
        return {"key": point_key(grid.attack, point), "attack": grid.attack, **point,
                "status": "worker-died", "exception": f"{type(exc).__name__}: {exc}"}


@contextlib.contextmanager
def _client(scheduler: str | None, workers: int | None) -> Iterator[Any]:
    """A Dask client: on the scheduler at ``scheduler``, or on a new LocalCluster."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:
        raise SweepError("sweeps run on Dask, which is not installed: pip install "
                         "'treeleaks[sweep]'") from exc
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError) as exc:
            raise SweepError(f"cannot reach the Dask scheduler at {scheduler!r} ({exc}); "
                             "start one with `dask scheduler` and workers with `dask worker "
                             f"{scheduler}`") from exc
        with client:
            yield client
        return
    n_workers = workers or os.cpu_count() or 1
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        yield client


def _plain(value: Any) -> Any:
    """NumPy scalars and other numbers to JSON."""
    return value.item() if hasattr(value, "item") else str(value)
