"""The boosters' readers for fitted objects, named as treelite names its loaders.

``from_*`` takes an object in memory, ``load_*`` (`treeleaks.io`, through the registry of
readers) a file. ``read_lightgbm`` and ``read_xgboost`` are the frontends' implementation
behind both (a path, a text or an object); they are not public entries.
"""

from __future__ import annotations

from typing import Any

from treeleaks.ir.model import ReleasedModel
from treeleaks.runtime.errors import UnsupportedModelError


def from_lightgbm(model: Any, feature_names: list[str] | None = None,
                  label_name: str = "label") -> ReleasedModel:
    """Translate a fitted LightGBM model into a `ReleasedModel`.

    Reads a ``Booster``, ``LGBMClassifier`` or ``LGBMRegressor``.

    Parameters
    ----------
    model : lightgbm.Booster or lightgbm.LGBMModel
        The fitted model; a file is read by `treeleaks.io.load_lightgbm`.
    feature_names : list of str, optional
        The columns' names, when the model's own are not wanted.
    label_name : str
        The name of the label column of reconstructed rows.

    Returns
    -------
    ReleasedModel
        The model, validated.

    Raises
    ------
    UnsupportedModelError
        ``model`` is not a fitted LightGBM model, or one treeleaks does not read.
    CountsRemovedError
        Its counts were removed (``treeleaks strip``).
    """
    if not (hasattr(model, "booster_") or hasattr(model, "model_to_string")):
        raise UnsupportedModelError(
            f"from_lightgbm takes a fitted LightGBM Booster or LGBMModel, not "
            f"{type(model).__name__}; read a model file with treeleaks.io.load_lightgbm")
    from treeleaks.frontends.lightgbm import read_lightgbm

    return read_lightgbm(model, feature_names, label_name)


def from_xgboost(model: Any, feature_names: list[str] | None = None,
                 label_name: str = "label") -> ReleasedModel:
    """Translate a fitted XGBoost model into a `ReleasedModel`.

    Reads a ``Booster``, ``XGBClassifier`` or ``XGBRegressor``.

    Parameters
    ----------
    model : xgboost.Booster or xgboost.XGBModel
        The fitted model; a file is read by `treeleaks.io.load_xgboost`.
    feature_names : list of str, optional
        The columns' names, when the model's own are not wanted.
    label_name : str
        The name of the label column of reconstructed rows.

    Returns
    -------
    ReleasedModel
        The model, validated.

    Raises
    ------
    UnsupportedModelError
        ``model`` is not a fitted XGBoost model, or one treeleaks does not read.
    CountsRemovedError
        Its covers were zeroed (``treeleaks strip``).
    """
    if not (hasattr(model, "get_booster") or hasattr(model, "save_raw")):
        raise UnsupportedModelError(
            f"from_xgboost takes a fitted XGBoost Booster or XGBModel, not "
            f"{type(model).__name__}; read a model file with treeleaks.io.load_xgboost")
    from treeleaks.frontends.xgboost import read_xgboost

    return read_xgboost(model, feature_names, label_name)
