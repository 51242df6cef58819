"""scipy's HiGHS MIP with a time limit that holds.

HiGHS checks its time limit while it searches but not everywhere in presolve: on the
covering problem of a bootstrap forest of 10 extra trees on iris (126,000 columns, 164
rows) presolve ran 72 s past a 10 s limit. A large model therefore runs in a child
process that is killed once its limit and a grace have passed; the caller gets "time
limit reached, nothing found", as it would from HiGHS itself. Small models run here, where
starting a process (about 0.35 s) would cost more than the solve.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scipy.optimize import OptimizeResult, milp

# Models with at least this many nonzeros run in a child process. Presolve overruns were
# seen from 500,000 nonzeros; below 250,000 no solve took long enough to matter.
CHILD_NONZEROS = 250_000
GRACE_S = 2.0  # beyond the limit (plus 5% of it) before the child is killed
TIME_LIMIT_STATUS = 1  # scipy's milp status for "time limit reached"
OTHER_STATUS = 4  # scipy's milp status for "other"


def bounded_milp(c: Any, *, integrality: Any = None, bounds: Any = None,
                 constraints: Any = None, options: dict[str, Any] | None = None,
                 ) -> OptimizeResult:
    """`scipy.optimize.milp` with the same arguments, ended at ``options["time_limit"]``
    even where HiGHS would overrun it (see the module doc)."""
    kwargs = {"c": c, "integrality": integrality, "bounds": bounds,
              "constraints": constraints, "options": dict(options or {})}
    limit = kwargs["options"].get("time_limit")
    if limit is None or _nonzeros(constraints) < CHILD_NONZEROS:
        return milp(**kwargs)
    with tempfile.TemporaryDirectory(prefix="treeleaks-milp-") as folder:
        problem, answer = Path(folder) / "problem.pkl", Path(folder) / "answer.pkl"
        problem.write_bytes(pickle.dumps(kwargs, protocol=pickle.HIGHEST_PROTOCOL))
        child = subprocess.Popen([sys.executable, "-m", __name__, str(problem), str(answer)],
                                 stdin=subprocess.DEVNULL)
        try:
            child.wait(timeout=float(limit) * 1.05 + GRACE_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            return OptimizeResult(x=None, fun=None, status=TIME_LIMIT_STATUS, success=False,
                                  message=f"stopped at the time limit of {float(limit):g} s")
        if child.returncode == 0 and answer.exists():
            return pickle.loads(answer.read_bytes())
    return OptimizeResult(x=None, fun=None, status=OTHER_STATUS, success=False,
                          message=f"the solver's process failed (exit code {child.returncode}; "
                          "out of memory?): nothing found")


def _nonzeros(constraints: Any) -> int:
    if constraints is None:
        return 0
    items = constraints if isinstance(constraints, (list, tuple)) else [constraints]
    total = 0
    for item in items:
        A = getattr(item, "A", item)
        total += int(A.nnz) if hasattr(A, "nnz") else int(getattr(A, "size", 0))
    return total


def _child(problem: Path, answer: Path) -> None:
    """Solve the pickled problem and pickle the result (written whole, then renamed)."""
    started = time.perf_counter()
    kwargs = pickle.loads(problem.read_bytes())
    limit = kwargs["options"].get("time_limit")
    if limit is not None:  # reading the problem took part of the time
        kwargs["options"]["time_limit"] = max(float(limit) - (time.perf_counter() - started),
                                              0.01)
    result = milp(**kwargs)
    partial = answer.with_suffix(".part")
    partial.write_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    partial.replace(answer)


if __name__ == "__main__":
    _child(Path(sys.argv[1]), Path(sys.argv[2]))
