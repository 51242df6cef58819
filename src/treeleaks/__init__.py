"""treeleaks: what a released tree-based model reveals about its training data.

Public names load on first use (PEP 562), so ``treeleaks inspect`` does not pay for the
solvers' imports; the attacks' come from their registry (`treeleaks.attacks.family`).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from treeleaks.attacks.family import public_names

_PUBLIC = {
    **public_names(),  # every attack family's entry point and result (attacks/family.py)
    "AttackResult": "treeleaks.result",
    "DPRandomForestClassifier": "treeleaks.defences.dp_forest",
    "Formulation": "treeleaks.runtime.vocabulary",
    "Status": "treeleaks.runtime.vocabulary",
    "Strategy": "treeleaks.runtime.vocabulary",
    "FeatureSchema": "treeleaks.ir.schema",
    "Knowledge": "treeleaks.ir.knowledge",
    "KnowledgeError": "treeleaks.ir.knowledge",
    "BootstrapDetails": "treeleaks.result",
    "DPDetails": "treeleaks.result",
    "PackingDetails": "treeleaks.result",
    "RegressionDetails": "treeleaks.result",
    "ReleasedModel": "treeleaks.ir.model",
    "SchemaError": "treeleaks.runtime.errors",
    "TreeleaksError": "treeleaks.runtime.errors",
    "UnsupportedModelError": "treeleaks.runtime.errors",
    "UntrustedPickleError": "treeleaks.runtime.errors",
    "from_dp_forest": "treeleaks.frontends.dp",
    "from_fitted": "treeleaks.frontends.fitted",
    "from_lightgbm": "treeleaks.frontends.objects",
    "from_xgboost": "treeleaks.frontends.objects",
    "load_lightgbm": "treeleaks.io",
    "load_xgboost": "treeleaks.io",
    "from_sklearn": "treeleaks.frontends.sklearn",
    "load_model": "treeleaks.io",
    "save_model": "treeleaks.io",
}

__all__ = sorted(_PUBLIC)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'treeleaks' has no attribute {name!r}")
    value = getattr(import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
