"""MkDocs hook: the Python API page, generated at build time.

A page holding the marker below gets one mkdocstrings block per public name of
``treeleaks`` (the table ``treeleaks._PUBLIC`` that ``import treeleaks`` loads lazily),
then the functions the documentation pages name by module path. mkdocstrings renders each
block from the docstrings, so the page follows the code.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

MARKER = "<!-- treeleaks-api-reference -->"
PACKAGE_INIT = Path(__file__).resolve().parents[2] / "src" / "treeleaks" / "__init__.py"

# Named on the documentation pages by module path, outside the top-level table.
ALSO_NAMED = [
    "treeleaks.evaluation.metrics.evaluate",
    "treeleaks.evaluation.entropy.summarize",
    "treeleaks.ir.schema_hints.suggest_groups",
    "treeleaks.ir.schema_hints.schema_json",
    "treeleaks.frontends.lightgbm.read_lightgbm",
    "treeleaks.frontends.xgboost.read_xgboost",
    "treeleaks.frontends.rule_list.RuleList",
    "treeleaks.frontends.rule_list.from_imodels",
    "treeleaks.defences.prune.prune",
    "treeleaks.defences.strip.strip",
    "treeleaks.report.collect.run_audit",
    "treeleaks.report.json_report.to_json",
    "treeleaks.report.html_report.render",
]


def public_names() -> dict[str, str]:
    """``treeleaks._PUBLIC`` read from the source, without importing the package: its
    literal entries, and the attack families' names from their registry (a module that
    imports nothing of the package, loaded from its file)."""
    tree = ast.parse(PACKAGE_INIT.read_text())
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "_PUBLIC":
            literal = {ast.literal_eval(key): ast.literal_eval(value)
                       for key, value in zip(node.value.keys, node.value.values, strict=True)
                       if key is not None}  # None: the families' ** entry
            return {**_families(), **literal}
    raise RuntimeError(f"no _PUBLIC table in {PACKAGE_INIT}")


def _families() -> dict[str, str]:
    """``treeleaks.attacks.family.public_names()``, the registry loaded from its file."""
    path = PACKAGE_INIT.parent / "attacks" / "family.py"
    spec = importlib.util.spec_from_file_location("_treeleaks_attack_families", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return module.public_names()


def api_reference() -> str:
    blocks = ["## `import treeleaks`", ""]
    for name, module in sorted(public_names().items(), key=lambda item: item[0].lower()):
        blocks += [f"::: {module}.{name}", "    options:", "      heading_level: 3",
                   "      show_root_full_path: false", ""]
    blocks += ["## Named elsewhere in these pages", ""]
    for path in ALSO_NAMED:
        blocks += [f"::: {path}", "    options:", "      heading_level: 3", ""]
    return "\n".join(blocks)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, api_reference())
