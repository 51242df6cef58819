"""Reading JSON files, and the numbers the model file format fixes.

Kept apart from `treeleaks.ir.formats`, which checks the files' fields with pydantic: loading
pydantic takes a tenth of a second, which reading a skops archive, building the IR or
writing a model file need not pay.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1  # the model file format this treeleaks reads and writes
MAX_COUNT = 2**53  # the largest count a JSON number holds exactly
MAX_NODES = 2**31  # more nodes than any tree a framework builds


def read_json(path: Path, what: str, error: type[Exception]) -> Any:
    """A JSON file's content; malformed or too deeply nested text is one ``error``."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what} file {path.name} is not UTF-8 text: {exc.reason}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{what} file {path.name} is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise error(f"{what} file {path.name} nests its JSON too deeply to be a {what}") from exc
