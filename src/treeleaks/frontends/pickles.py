"""The pickle frontend: a pickle or joblib file → the estimator it holds. Unpickling runs code
from the file, so the door (`treeleaks.io`) calls it only on the caller's explicit opt-in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from treeleaks.ir.model import ModelFormatError


def load_pickle(path: Path) -> Any:
    """Unpickle with joblib (it reads plain pickles too); the caller has opted in."""
    import joblib

    try:
        return joblib.load(path)
    except Exception as exc:
        raise ModelFormatError(f"could not unpickle {path.name}: {exc}") from exc
