"""XGBoost's binary JSON (``.ubj``, its default format in recent versions) decoded in Python
to the JSON it stands for. XGBoost's own reader is not used: it crashes the process on a
truncated file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from treeleaks.ir.model import ModelFormatError


def read_ubjson(path: Path) -> Any:
    """The JSON a ``.ubj`` file holds, as its text form parses; damage is one error."""
    import ubjson

    try:
        data = ubjson.loadb(path.read_bytes())
    except Exception as exc:  # DecoderException, or a recursion or memory limit
        raise ModelFormatError(f"{path.name} is not a binary JSON (.ubj) file ({exc}): "
                               "truncated or damaged?") from None
    return _json_values(data)


def _json_values(value: Any) -> Any:
    """Binary JSON as its text form parses.

    Arrays of bytes (py-ubjson's reading of a typed uint8 array, such as XGBoost's
    ``split_type``) become lists of numbers.
    """
    if isinstance(value, bytes | bytearray):
        return list(value)
    if isinstance(value, dict):
        return {key: _json_values(item) for key, item in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], dict | list | bytes):
        return [_json_values(item) for item in value]
    return value
