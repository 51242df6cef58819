"""The attack families' registry (attacks/family.py): every family has the one shape, is in
the public API, and reaches the command line and the audit by its name."""

from __future__ import annotations

import inspect
from importlib import import_module

import pytest

import treeleaks
from treeleaks.attacks.family import FAMILIES, public_names
from treeleaks.cli import app
from treeleaks.report.audit_steps import STEPS


def _load(pair: str) -> object:
    module, name = pair.split(":")
    return getattr(import_module(module), name)


@pytest.mark.parametrize("family", FAMILIES, ids=[f.name for f in FAMILIES])
def test_every_family_returns_a_result_of_the_one_shape(family) -> None:
    entry, result = _load(family.entry), _load(family.result)
    assert callable(entry) and inspect.isclass(result)
    assert callable(result.summary)
    assert "status" in inspect.get_annotations(result) or isinstance(
        getattr(result, "status", None), property)
    assert inspect.signature(entry).return_annotation in (result.__name__, result)


def test_the_public_api_holds_every_familys_names() -> None:
    for name, module in public_names().items():
        assert name in treeleaks.__all__
        assert getattr(treeleaks, name) is getattr(import_module(module), name)


def test_every_family_but_the_informed_adversary_has_a_command_and_an_audit_step() -> None:
    commands = {command.name for command in app.registered_commands}
    steps = {step.name for step in STEPS}
    for family in FAMILIES:
        if family.name == "informed":  # the DP study's adversary: a library call only
            continue
        assert family.name in commands
        assert family.name in steps

