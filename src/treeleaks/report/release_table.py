"""A release search's table (``candidates.json``) as advice: one line saying which file to
release, at what level and cost, or that no candidate measured audits lower. The audit's
"What to do" and `treeleaks release` both say it in these words."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from treeleaks.runtime.errors import TreeleaksError

LEVELS = ("LOW", "MEDIUM", "HIGH")
TABLE = "candidates.json"


class ReleaseTableError(TreeleaksError):
    """A release table that cannot be quoted: unreadable, another format, another file's."""


def level_rank(level: str | None) -> int | None:
    """A level's place in `LEVELS` (its first word, so "HIGH (presumed)" reads as HIGH)."""
    if not level:
        return None
    word = level.split()[0].upper()
    return LEVELS.index(word) if word in LEVELS else None


def advice(table: dict[str, Any]) -> str:
    """One line of advice from a ``candidates.json`` table: the file to release, its level
    and its cost, or that no candidate measured audits lower."""
    metric = table["metric"]
    word = "accuracy" if metric == "accuracy" else "R²"
    original = table["original"]
    chosen = table.get("chosen")
    measured = len(table["candidates"])
    if chosen is None:
        short = "" if table.get("complete", True) else " (the run stopped short)"
        if level_rank(original["level"]) == 0:
            return f"the original already audits {original['level']}: no level is below it"
        return (f"none of the {measured} candidates measured{short} audits below the "
                f"original's {original['level']}: larger leaves, shallower or fewer trees, "
                f"pruning and DP forests all leave it at {original['level']} or above")
    settings = table["candidates"][chosen["index"]]["settings"]
    shown = ", ".join(f"{k}={v}" for k, v in settings.items() if k != "learner")
    how = (f"a DP forest with {shown}" if settings.get("learner") == "dp_forest" else
           f"the same learner refitted with {shown or 'its settings'}, stripped")
    return (f"release {chosen['file']} ({how}): it audits {chosen['level']} against the original's "
            f"{original['level']}, at {word} {chosen[metric]:.3f} against "
            f"{original[metric]:.3f} ({table['folds']}-fold cross-validation)")


def file_sha256(path: Path) -> str:
    """The hex SHA-256 of a file's bytes (a release table names its original by it)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_table(path: Path, model: Path) -> dict[str, Any]:
    """The release table at ``path`` (a ``treeleaks release`` folder or its
    ``candidates.json``), checked to be the one made from the file ``model``."""
    file = path / TABLE if path.is_dir() else path
    try:
        table = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReleaseTableError(f"cannot read the release table {str(file)!r}: "
                                f"{type(exc).__name__}; give the folder `treeleaks release "
                                "--out` wrote") from None
    if not isinstance(table, dict) or table.get("format") != "treeleaks.release":
        raise ReleaseTableError(f"{str(file)!r} is not a `treeleaks release` table; give "
                                "the folder `treeleaks release --out` wrote")
    if table.get("model_sha256") != file_sha256(model):
        raise ReleaseTableError(f"{str(file)!r} was made from another file than "
                                f"{model.name!r}; run `treeleaks release {model.name} ...` "
                                "again for this one")
    return table
