"""Run one job in a child process of its own: its own peak memory (read from the kernel with
``os.wait4``), a wall-clock limit and a memory limit, and a crash, an out-of-memory kill or a
hang that ends that job only.

The child reads a JSON config and writes its result as JSON to ``config["result_path"]``
(set here); whatever it wrote before dying is kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20 if hasattr(os, "sysconf") else 0.0


@dataclass
class ChildOutcome:
    """How a child ended: its result (if it wrote one) and the kernel's accounting."""

    result: dict[str, Any] | None
    returncode: int | None
    timed_out: bool
    out_of_memory: bool
    wall_s: float
    peak_mem_mb: float | None
    log_tail: str


def maxrss_mb(ru_maxrss: int) -> float:
    """``ru_maxrss`` in MiB (Linux reports KiB, macOS bytes)."""
    return ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)


def run_isolated(
    command: Sequence[str],
    config: dict[str, Any],
    timeout_s: float,
    memory_mb: float | None = None,
    poll_s: float = 0.05,
) -> ChildOutcome:
    """Run ``command + [config.json]`` in its own process group and wait for it.

    After ``timeout_s`` of wall time, or once its resident memory passes ``memory_mb``
    (read from ``/proc``, where there is one), the process group is killed.
    """
    with tempfile.TemporaryDirectory(prefix="treeleaks-job-") as tmp:
        cfg_path, res_path, log_path = (Path(tmp) / n for n in ("cfg.json", "res.json", "log"))
        cfg_path.write_text(json.dumps({**config, "result_path": str(res_path)}))
        start = time.perf_counter()
        timed_out = out_of_memory = False
        with open(log_path, "wb") as log:
            proc = subprocess.Popen([*command, str(cfg_path)], stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                while True:
                    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                    if pid:
                        break
                    timed_out = time.perf_counter() - start > timeout_s
                    out_of_memory = memory_mb is not None and _rss_mb(proc.pid) > memory_mb
                    if timed_out or out_of_memory:
                        _kill_group(proc.pid)
                        _, status, usage = os.wait4(proc.pid, 0)
                        break
                    time.sleep(poll_s)
            except BaseException:
                _kill_group(proc.pid)
                os.wait4(proc.pid, 0)
                raise
        wall = time.perf_counter() - start
        result = _read_result(res_path)
        return ChildOutcome(
            result=result,
            returncode=os.waitstatus_to_exitcode(status),
            timed_out=timed_out,
            out_of_memory=out_of_memory,
            wall_s=wall,
            peak_mem_mb=maxrss_mb(usage.ru_maxrss),
            log_tail=_tail(log_path),
        )


def _read_result(path: Path) -> dict[str, Any] | None:
    """The child's result, or None when it wrote none (or died writing it)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MiB (0 where ``/proc`` is missing)."""
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return pages * PAGE_MB


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _tail(path: Path, n_chars: int = 2000) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return text[-n_chars:]
