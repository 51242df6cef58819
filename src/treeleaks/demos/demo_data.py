"""The demo's data set: scikit-learn's breast-cancer patients (shipped with scikit-learn,
so nothing is downloaded), fifteen measurements binarized at their medians. Kept apart from
the demo's glue so a sweep can load it as a built-in dataset without importing the demo."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer

MEASUREMENTS = (
    "radius", "texture", "perimeter", "area", "smoothness",
    "compactness", "concavity", "concave points", "symmetry", "fractal dimension",
)
FEATURES = [f"mean {m}" for m in MEASUREMENTS] + [f"worst {m}" for m in MEASUREMENTS[:5]]
LABEL = "diagnosis"


def demo_data() -> tuple[pd.DataFrame, pd.Series]:
    """The 569 breast-cancer rows: 0/1 per feature (above its median) and the diagnosis."""
    data = load_breast_cancer(as_frame=True)
    measured = data.data[FEATURES]
    X = (measured > measured.median()).astype(np.int64)
    y = pd.Series(np.asarray(data.target_names)[data.target], name=LABEL)
    return X, y
