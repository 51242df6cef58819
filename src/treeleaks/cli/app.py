"""The command group every ``treeleaks`` command registers on, and what commands share:
the exit codes, the common options, loading a model and a schema, writing outputs and
failing with one line on stderr."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

from treeleaks.io import load_any, load_model
from treeleaks.runtime.errors import TreeleaksError
from treeleaks.runtime.limits import proof_limit_problem, time_limit_problem
from treeleaks.runtime.outputs import OutputError, check_outputs, write_outputs
from treeleaks.runtime.paths import unreadable
from treeleaks.runtime.vocabulary import Status

if TYPE_CHECKING:
    import pandas as pd

    from treeleaks.ir.model import ReleasedModel
    from treeleaks.ir.schema import FeatureSchema

EXIT_UNVERIFIED = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3
EXIT_BUG = 4
EXIT_PARTIAL = 5  # a partial reconstruction: a result, written under the names asked for
EXIT_INTERRUPTED = 130
INCOMPLETE = (Status.INFEASIBLE, Status.UNKNOWN)  # statuses without a complete reconstruction
DEBUG_VARIABLE = "TREELEAKS_DEBUG"  # set to 1 to see the traceback of an unexpected error
OUT_OF_MEMORY = (
    "memory ran out before the run finished; try a shorter --time-limit, --strategy "
    "generate, or a --schema declaring one-hot groups (treeleaks inspect MODEL "
    "--suggest-schema schema.json)"
)


class _OneLineErrors(TyperGroup):
    """The command group, with every way a run can fail turned into one line on stderr and
    a documented exit code (see the module docstring) instead of a box or a traceback."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            with warnings.catch_warnings():
                if not os.environ.get(DEBUG_VARIABLE):  # one line on stderr, not a warning's
                    warnings.simplefilter("ignore", RuntimeWarning)
                code = super().main(args, prog_name, complete_var, standalone_mode=False,
                                    **extra)
        except typer.TyperException as exc:  # click's usage errors (unknown option, ...)
            if type(exc).__name__ == "NoArgsIsHelpError":  # bare `treeleaks`: help shown
                code = exc.exit_code
            else:
                ctx = getattr(exc, "ctx", None)
                hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
                code = print_error(one_line(exc.format_message()) + hint, exc.exit_code)
        except typer.Abort:  # end of input at a prompt
            code = print_error("interrupted", EXIT_INTERRUPTED)
        except BrokenPipeError:  # the reader left (`treeleaks ... | head`): nothing to say
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            code = 0
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.TyperException, typer.Exit, typer.Abort, BrokenPipeError):
            raise
        except KeyboardInterrupt:
            fail("interrupted; no output file was written", EXIT_INTERRUPTED)
        except MemoryError:
            fail(OUT_OF_MEMORY, EXIT_INCOMPLETE)
        except Exception as exc:
            if os.environ.get(DEBUG_VARIABLE):
                import traceback

                traceback.print_exc()
            fail(f"unexpected {type(exc).__name__}: {one_line(str(exc))}; this is a bug, "
                  f"please report it (set {DEBUG_VARIABLE}=1 to see the traceback)", EXIT_BUG)


app = typer.Typer(
    cls=_OneLineErrors,
    help="What does a released tree model reveal about its training data?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ModelArg = Annotated[
    Path,
    typer.Argument(
        metavar="MODEL",
        help="The model: treeleaks .json, scikit-learn .skops, LightGBM .txt, XGBoost .json, "
        "or a pickle (with --trust-pickle).",
        show_default=False,
    ),
]
SchemaOption = Annotated[
    Path | None,
    typer.Option(help="Feature schema JSON (one_hot_groups, at_most_one_groups, numerical, "
                 "ordinal). Default: inferred from the model's splits."),
]
LabelOption = Annotated[str | None, typer.Option(
    help="The label column of --data (default: the label the model names, such as an R "
         "formula's response, when --data has that column).")]
TrustPickle = Annotated[
    bool,
    typer.Option(
        "--trust-pickle",
        help="Allow .pkl/.pickle/.joblib files. Loading a pickle runs code from the file.",
    ),
]
Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace output files that already exist (a previous run's); without it such "
        "a run is refused before it starts.",
    ),
]


def positive_seconds(value: float) -> float:
    """``--time-limit``: a time the run can actually use (`time_limit_problem`)."""
    if (problem := time_limit_problem(value)) is not None:
        raise typer.BadParameter(problem)
    return value


def optional_positive_seconds(value: float | None) -> float | None:
    """An optional time limit: None, or refused as `positive_seconds` refuses it."""
    return None if value is None else positive_seconds(value)


def seconds(value: float) -> float:
    """``--certainty-time-limit``: 0 or more seconds (`proof_limit_problem`)."""
    if (problem := proof_limit_problem(value)) is not None:
        raise typer.BadParameter(problem)
    return value


def load(path: Path, trust_pickle: bool, allow_regression: bool = False,
         counts_removed_ok: bool = False) -> ReleasedModel:
    try:
        return load_model(path, trust_pickle=trust_pickle, allow_regression=allow_regression,
                          counts_removed_ok=counts_removed_ok)
    except (TreeleaksError, ValueError, OSError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)


def load_any_model(path: Path, trust_pickle: bool, allow_regression: bool = False,
                   counts_removed_ok: bool = False) -> Any:
    """A tree model (`ReleasedModel`) or, for a rule-list file, its ``RuleList``: for the
    commands that read both (leak, inspect, audit). The registry tells them apart."""
    try:
        return load_any(path, trust_pickle=trust_pickle, allow_regression=allow_regression,
                        counts_removed_ok=counts_removed_ok)
    except (TreeleaksError, ValueError, OSError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)


def bound_schema(path: Path | None, model: ReleasedModel) -> FeatureSchema:
    """The schema file bound to the model's columns, or the one inferred from its splits."""
    from treeleaks.ir.schema import FeatureSchema

    if path is not None and (problem := unreadable(path, "schema file")):
        fail(problem, EXIT_BAD_INPUT)
    try:
        schema = FeatureSchema.for_model(model) if path is None else FeatureSchema.from_json(path)
        return schema.bind(model)
    except (TreeleaksError, ValueError, OSError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)


def guard_outputs(model: Path | None, schema: Path | None, outputs: list[Path],
                  force: bool = False) -> None:
    """Refuse, before the run, outputs that cannot be written, would overwrite an input
    (``model``, ``schema``: any two input files, None for none) or each other, or already
    exist unless ``force`` (the command's `Force` option): one line naming the path, exit
    2. A command that writes into a folder passes the files it would write there, so an
    empty or unrelated folder is accepted. Call it before any work; `write_all` then
    replaces the files atomically. A new writing command takes ``force: Force = False``
    and calls ``guard_outputs(input, other_input, [its outputs], force)``."""
    try:
        check_outputs([p for p in (model, schema) if p is not None], outputs, force)
    except OutputError as exc:
        fail(str(exc), EXIT_BAD_INPUT)


def write_all(files: dict[Path, str | bytes]) -> None:
    """Write the output files all or nothing; a failure is one line naming the path."""
    try:
        write_outputs(files)
    except OutputError as exc:
        fail(str(exc), EXIT_BAD_INPUT)


def write_reports(audit: Any, html_path: Path, json_path: Path,
                  render: Callable[[Any], str]) -> None:
    """An audit's JSON report and its HTML page (``render``), written all or nothing; a
    report the schema refuses is a bug, said in one line."""
    from treeleaks.report.json_report import ReportSchemaError, to_json

    try:
        files = {json_path: to_json(audit), html_path: render(audit)}
    except ReportSchemaError as exc:
        fail(f"{exc}; this is a bug, please report it", EXIT_BUG)
    write_all(files)


def describe(exc: Exception) -> str:
    """One line for an error; OS errors name the file and the reason, not an errno."""
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"cannot access {exc.filename!r}: {exc.strerror}"
    return str(exc)


def fail(message: str, code: int) -> NoReturn:
    """Print one red line on stderr and exit with ``code``."""
    raise typer.Exit(print_error(message, code))


def print_error(message: str, code: int) -> int:
    """Print ``error: message`` as one red line on stderr; return ``code``."""
    Console(stderr=True).print(
        Text.assemble(("error: ", "bold red"), (message, "red")), soft_wrap=True
    )
    return code


def one_line(message: str) -> str:
    """A message with its line breaks and runs of spaces folded into single spaces."""
    return " ".join(message.split())


def check_outcome(status: Status, verified: bool, message: str, partial: bool = False) -> None:
    """Exit non-zero when there is no complete reconstruction (a partial dataset is not
    one), or it fails its certificate."""
    if status in (Status.INFEASIBLE, Status.UNKNOWN) or (partial and verified):
        fail(message or f"no complete reconstruction (status {status})", EXIT_INCOMPLETE)
    if not verified:
        fail(message or "the reconstruction does not reproduce the model", EXIT_UNVERIFIED)


def read_csv(path: Path, what: str) -> pd.DataFrame:
    """A CSV file with a header row; an unreadable one is one line naming ``what`` it is."""
    import pandas as pd

    if problem := unreadable(path, what):
        fail(problem, EXIT_BAD_INPUT)
    try:
        return pd.read_csv(path)
    except (OSError, ValueError) as exc:
        fail(f"cannot read the {what} {str(path)!r}: {describe(exc)}", EXIT_BAD_INPUT)


def checked_data(model: ReleasedModel, path: Path, label: str | None,
                 option: str = "--data") -> pd.DataFrame:
    """The custodian's rows of ``option`` in the file's column names (LightGBM's rewritten
    ones matched), refused in one line naming the columns unless they hold the model's
    columns and the label."""
    from treeleaks.attacks.singling_out import split_data
    from treeleaks.ir.data_columns import as_model_columns

    frame = read_data(path, label)
    if model.inputs is not None:  # a pipeline's: the custodian's columns, encoded
        frame = encoded_rows(model, frame, label, option)
    else:
        frame = as_model_columns(frame, model.feature_names, label)
    try:
        split_data(model, frame, label)
    except TreeleaksError as exc:
        fail(describe(exc) if option == "--data" else f"{option}: {describe(exc)}",
             EXIT_BAD_INPUT)
    return frame


def encoded_rows(model: ReleasedModel, frame: pd.DataFrame, label: str | None,
                 option: str = "--data") -> pd.DataFrame:
    """The custodian's rows, in their own columns, as the model's features and the label: a
    pipeline's model reads the columns its steps read (others are ignored, as the pipeline
    ignores them). Refused in one line naming what is missing or unreadable."""
    assert model.inputs is not None
    names = model.inputs.names
    missing = [c for c in names if c not in frame.columns]
    if label is None or label not in frame.columns:
        fail(f"{option}: the data have no label column {label!r}; name it with --label",
             EXIT_BAD_INPUT)
    if missing:
        fail(f"{option}: the data lack the columns the pipeline reads: "
             f"{', '.join(missing[:5])}; give the table the pipeline was fitted on (its "
             f"columns {', '.join(names[:5])}...)", EXIT_BAD_INPUT)
    try:
        return model.inputs.encode(frame[[*names, label]])
    except (ValueError, TypeError) as exc:
        fail(f"{option}: the data's columns do not fit the pipeline's steps ({exc}); give "
             "numbers where it scales or fills, as in its training table", EXIT_BAD_INPUT)


def label_column(model: ReleasedModel, path: Path, label: str | None) -> str | None:
    """``--label`` as given, else the label the model names (an R formula's response, a
    pipeline's target) when ``path``'s header has that column and the model does not read
    it as a feature: what a user who saved both expects."""
    if label is not None:
        return label
    from treeleaks.ir.model import GENERIC_LABEL

    named = model.label_name
    if named == GENERIC_LABEL or named in model.feature_names:  # the file names none
        return None
    return named if named in read_csv_header(path) else None


def read_csv_header(path: Path) -> list[str]:
    """The column names of a CSV file (its first line), or [] when it cannot be read (the
    full read says why)."""
    import pandas as pd

    try:
        return list(pd.read_csv(path, nrows=0).columns)
    except (OSError, ValueError):
        return []


def read_data(path: Path, label: str | None) -> pd.DataFrame:
    """The custodian's ``--data`` rows, which need ``--label``."""
    if label is None:
        fail("--data needs --label, the name of its label column", EXIT_BAD_INPUT)
    return read_csv(path, "data")
