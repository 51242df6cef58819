"""`strip` run in a child process, so a framework that aborts on a file (a segmentation
fault, LightGBM's fatal error, a C++ ``terminate``) ends the child, not the command: the
file's reader checks it first, but a framework can still fail on what no reader checks.

The child's stderr goes to a file, not the terminal: a crash is one line naming the
framework, the signal and the framework's own last words, and nothing is written. A
framework's exception (XGBoost's carries a C++ stack trace) comes back as its first line.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import tempfile
from pathlib import Path
from typing import Any

from treeleaks.defences.strip import StripError, Stripped, strip
from treeleaks.defences.strip_check import StripCheckError, first_line
from treeleaks.runtime.errors import TreeleaksError

ISOLATED = True  # False runs strip in this process (tests that patch strip's internals)
_FRAMEWORKS = {"lightgbm": "LightGBM", "xgboost": "XGBoost", "sklearn": "scikit-learn"}


def strip_in_child(model: Any, file_format: str, *args: Any, **kwargs: Any) -> Stripped:
    """`treeleaks.defences.strip.strip` (same arguments) run in a new process: its result,
    its `TreeleaksError`, or, when the child dies, `StripCheckError` naming the framework,
    the signal and its last words."""
    if not ISOLATED:
        return strip(model, file_format, *args, **kwargs)
    context = multiprocessing.get_context("spawn")  # no threads or locks inherited
    receiver, sender = context.Pipe(duplex=False)
    with tempfile.TemporaryDirectory(prefix="treeleaks-strip-") as folder:
        stderr = Path(folder) / "stderr.txt"
        child = context.Process(target=_child, daemon=True,
                                args=(sender, str(stderr), model, file_format, args, kwargs))
        child.start()
        sender.close()
        try:
            outcome = receiver.recv()
        except EOFError:  # the child died before it answered
            outcome = None
        finally:
            child.join()
        said = stderr.read_text(encoding="utf-8", errors="replace") if stderr.exists() else ""
    if outcome is None:
        raise StripCheckError(_crashed(framework_of(model, file_format), child.exitcode, said))
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def framework_of(model: Any, file_format: str) -> str:
    """The framework that loads ``model``, by name (its package, or the file's format)."""
    if file_format == "lightgbm":
        return "LightGBM"
    if file_format.startswith("xgboost"):
        return "XGBoost"
    package = type(model).__module__.split(".")[0]
    return _FRAMEWORKS.get(package, package)


def _child(sender: Any, stderr: str, model: Any, file_format: str, args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> None:
    """Run `strip` with stderr in the file ``stderr`` and send back its result or error."""
    descriptor = os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(descriptor, 2)
    try:
        outcome: Any = strip(model, file_format, *args, **kwargs)
    except TreeleaksError as exc:
        outcome = exc
    except Exception as exc:
        package = type(exc).__module__.split(".")[0]
        outcome = StripError(  # a framework's own error, in one line
            f"{_FRAMEWORKS[package]} could not load or predict with the model "
            f"({type(exc).__name__}: {first_line(exc)}); nothing was written"
        ) if package in _FRAMEWORKS else exc
    try:
        sender.send(outcome)
    except (pickle.PicklingError, TypeError, AttributeError):  # an error that does not travel
        sender.send(RuntimeError(f"{type(outcome).__name__}: {first_line(outcome)}"))


def _crashed(framework: str, exitcode: int | None, said: str) -> str:
    """The line saying the child died: how, and the framework's last words."""
    how = f"exit code {exitcode}"
    if exitcode is not None and exitcode < 0:
        try:
            how = signal.Signals(-exitcode).name
        except ValueError:
            how = f"signal {-exitcode}"
    words = [line.strip() for line in said.splitlines() if line.strip()]
    fatal = [w for w in words if "fatal" in w.lower() or "error" in w.lower()]
    last = (fatal or words or [""])[-1][:200]
    return (f"{framework} crashed ({how}) loading or predicting with the model"
            + (f": {last}" if last else "")
            + "; the file is damaged in a way its reader does not check: copy it again "
              "from where it was saved; nothing was written")
