"""Every name ``treeleaks`` exports has a numpydoc docstring that matches its signature.

The names are ``treeleaks.__all__``; an exported class brings its own public methods and
properties (not those it inherits). ``numpydoc.validate`` reads each docstring and this test
fails on the checks listed in CHECKS. The API page (docs/reference/api.md) renders the same
docstrings with mkdocstrings' numpy style.
"""

from __future__ import annotations

import enum
import inspect
from typing import Protocol

import pytest

pytest.importorskip("numpydoc")
from numpydoc.validate import validate

import treeleaks

# The numpydoc checks this test holds the public API to, and why.
CHECKS = {
    "GL08": "the object has no docstring",
    "GL06": "an unknown section (a misspelt heading renders as prose)",
    "GL07": "sections out of the numpydoc order",
    "SS01": "no one-line summary",
    "SS02": "the summary does not start with a capital letter",
    "SS03": "the summary does not end with a period",
    "SS05": "the summary starts with a third-person verb ('Returns', not 'Return')",
    "SS06": "the summary spans more than one line",
    "PR01": "a parameter of the signature is not documented",
    "PR02": "a documented parameter is not in the signature",
    "PR03": "parameters documented out of the signature's order",
    "PR07": "a parameter has no description",
    "PR09": "a parameter's description does not end with a period",
    "PR10": "no space around the colon between a parameter and its type",
    "RT01": "the function returns a value and has no Returns section",
    "RT03": "a returned value has no description",
}
# Left out on purpose: GL01/GL02 (the summary opens on the quotes' line, as ruff's numpy
# convention allows), ES01/EX01/SA01 (extended summary, examples, see-also: optional),
# RT02 (named return values read better than bare types), PR08 (descriptions may open with
# a ``literal``).

# An enum is called with one of its values and a protocol is never called: their signatures
# are not parameters to document.
NO_PARAMETERS = {"PR01", "PR02", "PR03"}


def _is_unconstructed(obj: object) -> bool:
    return inspect.isclass(obj) and (
        issubclass(obj, enum.Enum) or Protocol in getattr(obj, "__mro__", ()))


def public_objects() -> list[tuple[str, object | None]]:
    """The import path of each exported name and of its classes' own public members.

    Beside each path, the exported object itself, or None for a member.
    """
    found = []
    for name in treeleaks.__all__:
        obj = getattr(treeleaks, name)
        found.append((f"treeleaks.{name}", obj))
        if not inspect.isclass(obj):
            continue
        for member, value in vars(obj).items():
            if member.startswith("_"):
                continue
            if isinstance(value, classmethod | staticmethod | property) \
                    or inspect.isfunction(value):
                found.append((f"{obj.__module__}.{obj.__qualname__}.{member}", None))
    return found


PUBLIC = public_objects()


def failures(path: str, owner: object | None = None) -> list[str]:
    """The listed checks ``path``'s docstring fails, as 'CODE message' lines."""
    skip = NO_PARAMETERS if _is_unconstructed(owner) else set()
    return [f"{code} {message}" for code, message in validate(path)["errors"]
            if code in CHECKS and code not in skip]


@pytest.mark.parametrize("path,owner", PUBLIC, ids=[path for path, _ in PUBLIC])
def test_public_docstring(path: str, owner: object) -> None:
    assert failures(path, owner) == []


def test_every_export_is_walked() -> None:
    walked = {path for path, _ in PUBLIC}
    assert {f"treeleaks.{name}" for name in treeleaks.__all__} <= walked
    assert "treeleaks.ir.model.ReleasedModel.apply" in walked  # a method of an exported class


def _documented(rows, label: str = "label") -> int:
    """Count rows.

    Parameters
    ----------
    rows : list
        The rows.

    Returns
    -------
    int
        How many there are.
    """
    return len(rows)


def test_an_undocumented_parameter_fails() -> None:
    found = failures(f"{__name__}._documented")
    assert [line[:4] for line in found] == ["PR01"]
    assert "label" in found[0]
