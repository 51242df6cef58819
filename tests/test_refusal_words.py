"""Every refusal the package can raise, read from its source: none tells the user to do what a
custodian holding only the file cannot (retrain, refit, change the training data), and each
says something (issue 51, item 5). The refusals' causes are walked case by case elsewhere
(`test_limits_list.py`, the bad-input tests); this walk catches a new message wherever it is
added."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "treeleaks"
# advice only the model's trainer could follow
CANNOT = re.compile(r"\bre-?train|\brefit (it|the|without|with)\b|before training|"
                    r"train(ed)? (it )?again|fill (the )?gaps before", re.IGNORECASE)


def _text(node: ast.expr) -> str:
    """The literal text of a message: string constants, f-strings' literal parts, and
    implicit concatenations; '{}' where a value goes."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v) if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    return ""


def _refusals() -> list[tuple[str, int, str]]:
    """(file, line, message text) of every ``raise SomethingError(<message>, ...)``."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            name = getattr(node.exc.func, "id", getattr(node.exc.func, "attr", ""))
            if name.endswith("Error") and node.exc.args:
                found.append((str(path.relative_to(SOURCE)), node.lineno,
                              _text(node.exc.args[0])))
    return found


REFUSALS = _refusals()


def test_the_walk_finds_the_refusals() -> None:
    assert len(REFUSALS) > 200  # the package raises its errors in some 260 places
    assert any("holds no trees" in text for _, _, text in REFUSALS)


@pytest.mark.parametrize(("where", "line", "text"), REFUSALS,
                         ids=[f"{w}:{n}" for w, n, _ in REFUSALS])
def test_no_refusal_asks_for_what_a_custodian_cannot_do(where: str, line: int,
                                                        text: str) -> None:
    assert not CANNOT.search(text), f"{where}:{line}: {text}"
