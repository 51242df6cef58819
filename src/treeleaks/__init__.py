"""treeleaks: what a released tree-based model reveals about its training data."""

from treeleaks.attacks.exact import reconstruct
from treeleaks.errors import SchemaError, TreeleaksError, UnsupportedModelError
from treeleaks.frontends.sklearn import from_sklearn
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
    "from_sklearn",
    "reconstruct",
]
__version__ = "0.1.0"
