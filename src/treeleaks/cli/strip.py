"""``treeleaks strip``: the release-safe copy of a model file, in its own format, written
only once the framework has loaded it back and it predicts as the original."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from treeleaks.cli.app import (
    EXIT_BAD_INPUT,
    ModelArg,
    TrustPickle,
    app,
    describe,
    fail,
    guard_outputs,
    read_data,
    write_all,
)
from treeleaks.errors import TreeleaksError

_FORMAT_OF_SUFFIX = {".skops": "skops", ".pkl": "pickle", ".pickle": "pickle",
                     ".joblib": "joblib", ".txt": "lightgbm", ".json": "xgboost"}


@app.command("strip")
def strip_command(
    model_path: ModelArg,
    out: Annotated[Path, typer.Option(help="Write the stripped model here, in the input's "
                                      "format (same extension).", show_default=False)],
    data: Annotated[Path | None, typer.Option(
        help="CSV of the training data (features and label): predictions are also compared "
        "on its rows.")] = None,
    label: Annotated[str | None, typer.Option(help="The label column of --data.")] = None,
    trust_pickle: TrustPickle = False,
) -> None:
    """Write a copy of the model without what prediction does not need (row counts,
    weighted counts, impurities, hessian sums, random states), checked to predict as the
    original."""
    from treeleaks.defences.strip import strip

    suffix = model_path.suffix.lower()
    if suffix not in _FORMAT_OF_SUFFIX:
        fail(f"cannot strip {model_path.name!r}: treeleaks strips "
             f"{', '.join(_FORMAT_OF_SUFFIX)} model files", EXIT_BAD_INPUT)
    if out.suffix.lower() != suffix:
        fail(f"--out {str(out)!r}: the stripped model keeps the input's format; name it "
             f"*{suffix}", EXIT_BAD_INPUT)
    guard_outputs(model_path, data, [out])
    rows = None
    if data is not None:
        frame = read_data(data, label)
        if label not in frame.columns:
            fail(f"--label {label!r} is not a column of {data.name}", EXIT_BAD_INPUT)
        rows = frame.drop(columns=[label])
    try:
        result = strip(_read(model_path, trust_pickle), _FORMAT_OF_SUFFIX[suffix], rows)
    except (TreeleaksError, ValueError, OSError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)
    write_all({out: result.content})
    table = Table(title=escape(f"Stripped {model_path.name} ({result.kind})"),
                  show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for field in result.removed:
        table.add_row("Removed", escape(field))
    checked = f"{result.n_random:,} random inputs around the thresholds"
    if result.n_rows:
        checked = f"the {result.n_rows:,} rows of {escape(data.name)} and {checked}"
    table.add_row("Predictions", f"identical on {checked} (loaded back without treeleaks)")
    table.add_row("Still leaks", "the structure, each leaf's fractions or value, and the "
                  "thresholds (midpoints of neighbouring training values)")
    table.add_row("Written", escape(str(out)))
    Console().print(table)


def _read(path: Path, trust_pickle: bool) -> Any:
    """What the file holds, for `strip`: a scikit-learn estimator, a LightGBM model text or
    a parsed XGBoost JSON model; a treeleaks JSON model is refused naming its kind."""
    from treeleaks.errors import UnsupportedModelError
    from treeleaks.formats import read_json
    from treeleaks.frontends.xgboost import is_xgboost_json
    from treeleaks.io import load_estimator
    from treeleaks.model import ModelFormatError

    suffix = path.suffix.lower()
    if suffix not in (".json", ".txt"):
        return load_estimator(path, trust_pickle)
    if not path.is_file():
        raise TreeleaksError(f"model file {str(path)!r} does not exist")
    if suffix == ".txt":
        text = path.read_text(encoding="utf-8", errors="replace")
        if text.split("\n", 1)[0].strip() != "tree":
            raise ModelFormatError(f"{path.name} is not a LightGBM model file: it does not "
                                   "start with the line 'tree' (save it with "
                                   "booster.save_model)")
        return text
    data = read_json(path, "model", ModelFormatError)
    if is_xgboost_json(data):
        return data
    kind = {"treeleaks.RuleList": "a treeleaks rule list",
            "treeleaks.ReleasedModel": "a treeleaks JSON model"}.get(
        data.get("format") if isinstance(data, dict) else None, "a JSON file of unknown kind")
    if isinstance(data, dict) and data.get("noise"):
        kind = "a treeleaks JSON model of a DP forest"
    raise UnsupportedModelError(
        f"cannot strip {path.name}: it holds {kind}, not a framework's model file; strip "
        "reads scikit-learn (.skops or a pickle), LightGBM (.txt) and XGBoost (.json) models")
