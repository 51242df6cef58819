"""`strip` run in a child process, so a framework that aborts on a file (a segmentation
fault, LightGBM's fatal error, a C++ ``terminate``) ends the child, not the command: the
file's reader checks it first, but a framework can still fail on what no reader checks.

The child is a fresh interpreter (``python -m treeleaks.defences.strip_child``, on the
caller's ``sys.path``): it inherits no threads or locks and never re-runs the caller's
script. Its arguments go in on stdin and its answer comes back on a private copy of stdout,
both pickled; whatever the frameworks print goes to a file, not the terminal. A crash is
one line naming the framework, the signal and the framework's own last words, and nothing
is written; a framework's exception (XGBoost's carries a C++ stack trace) comes back as its
first line.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import tempfile
from typing import Any

from treeleaks.defences.strip import StripError, Stripped, strip
from treeleaks.defences.strip_check import StripCheckError, first_line
from treeleaks.runtime.errors import TreeleaksError

ISOLATED = True  # False runs strip in this process (tests that patch strip's internals)
# what the child may take: a minute for the largest forests; a damaged tree can send
# scikit-learn round in circles. Figures: docs/lab/2026-11-28-constants.md#defences-strip_child
CHILD_SECONDS = 300.0
_FRAMEWORKS = {"lightgbm": "LightGBM", "xgboost": "XGBoost", "sklearn": "scikit-learn"}


def strip_in_child(model: Any, file_format: str, *args: Any, **kwargs: Any) -> Stripped:
    """`treeleaks.defences.strip.strip` (same arguments) run in a new process: its result,
    its `TreeleaksError`, or, when the child dies or passes `CHILD_SECONDS`,
    `StripCheckError` naming the framework and the signal and its last words, or the
    time."""
    if not ISOLATED:
        return strip(model, file_format, *args, **kwargs)
    payload = pickle.dumps((model, file_format, args, kwargs))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with tempfile.TemporaryFile() as said:
        try:
            done = subprocess.run([sys.executable, "-m", __name__], input=payload, env=env,
                                  stdout=subprocess.PIPE, stderr=said, check=False,
                                  timeout=CHILD_SECONDS)
        except subprocess.TimeoutExpired:  # the child is killed
            raise StripCheckError(
                f"{framework_of(model, file_format)} did not finish loading or predicting "
                f"with the model in {CHILD_SECONDS:g} s (a damaged tree can send it round in "
                "circles): copy the file again from where it was saved; nothing was "
                "written") from None
        said.seek(0)
        words = said.read().decode("utf-8", errors="replace")
    if done.returncode or not done.stdout:
        raise StripCheckError(_crashed(framework_of(model, file_format), done.returncode,
                                       words))
    outcome = pickle.loads(done.stdout)  # our own child's answer
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


def _serve() -> None:
    """The child: read the arguments on stdin, run `strip` with stdout sent to stderr (a
    framework's prints must not mix with the answer), write the answer on the real stdout."""
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    model, file_format, args, kwargs = pickle.load(sys.stdin.buffer)  # from strip_in_child
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
        data = pickle.dumps(outcome)
    except (pickle.PicklingError, TypeError, AttributeError):  # an error that does not travel
        data = pickle.dumps(RuntimeError(f"{type(outcome).__name__}: {first_line(outcome)}"))
    answer.write(data)
    answer.flush()


def _crashed(framework: str, returncode: int, said: str) -> str:
    """The line saying the child died: how, and the framework's last words."""
    last = _last_words(said)
    return (f"{framework} crashed ({_how(returncode)}) loading or predicting with the model"
            + (f": {last}" if last else "")
            + "; the file is damaged in a way its reader does not check: copy it again "
              "from where it was saved; nothing was written")


def _how(returncode: int) -> str:
    """How the child ended: its exit code, or the signal that killed it."""
    if returncode >= 0:
        return f"exit code {returncode}"
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _last_words(said: str) -> str:
    """The last line the framework wrote, a fatal or error one first, up to 200 characters
    ("" when it wrote none)."""
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    fatal = [line for line in lines if "fatal" in line.lower() or "error" in line.lower()]
    return (fatal or lines or [""])[-1][:200]


if __name__ == "__main__":
    _serve()
