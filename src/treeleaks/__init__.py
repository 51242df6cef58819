"""treeleaks: what a released tree-based model reveals about its training data."""

from treeleaks.attacks.exact import reconstruct
from treeleaks.errors import (
    SchemaError,
    TreeleaksError,
    UnsupportedModelError,
    UntrustedPickleError,
)
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.io import load_model, save_model
from treeleaks.model import ReleasedModel
from treeleaks.result import Reconstruction
from treeleaks.schema import FeatureSchema

__all__ = [
    "FeatureSchema",
    "Reconstruction",
    "ReleasedModel",
    "SchemaError",
    "TreeleaksError",
    "UnsupportedModelError",
    "UntrustedPickleError",
    "from_sklearn",
    "load_model",
    "reconstruct",
    "save_model",
]
__version__ = "0.1.0"
