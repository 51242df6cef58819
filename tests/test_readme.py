"""The README is the front door: its quick start, its Python example and its links work."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
QUICK_START = ['pip install -e ".[dev]" && treeleaks demo', 'pip install -e ".[dev]" && pytest']


def test_readme_is_a_front_door_of_at_most_1500_words():
    assert len(README.split()) <= 1500


def test_quick_start_commands_are_the_ones_ci_runs():
    block = README.split("## Quick start", 1)[1].split("```")[1]
    assert block.strip().splitlines() == QUICK_START
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install --quiet -e ".[dev]"' in ci
    assert re.search(r"^pytest\b", ci, re.MULTILINE)
    assert re.search(r"^treeleaks demo\b", ci, re.MULTILINE)


def test_python_example_runs_and_rebuilds_every_row():
    example = re.search(r"```python\n(.*?)```", README, re.DOTALL).group(1)
    assert len([line for line in example.splitlines() if line.strip()]) <= 10
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(example, "README.md", "exec"), {})
    assert "'verified': True" in printed.getvalue()
    assert "ReconstructionScore(error=0.0" in printed.getvalue()


def test_relative_links_point_at_files():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if "://" not in target:
            assert (ROOT / target).exists(), target
