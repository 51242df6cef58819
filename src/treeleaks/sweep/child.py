"""Child-process side of a sweep point: ``python -m treeleaks.sweep.child CONFIG.json``.

Runs the point's attack and writes its figures as JSON to ``config["result_path"]``; an
exception is written as ``{"exception": ...}`` (its traceback goes to the log).
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

from treeleaks.sweep.attacks import ATTACKS


def main(config_path: str) -> int:
    config = json.loads(Path(config_path).read_text())
    data_dir = None if config["data_dir"] is None else Path(config["data_dir"])
    try:
        result = ATTACKS[config["attack"]].run(config["point"], data_dir)
    except Exception as exc:
        traceback.print_exc()
        result, code = {"exception": f"{type(exc).__name__}: {exc}"}, 1
    else:
        code = 0
    Path(config["result_path"]).write_text(json.dumps(result, default=float))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
