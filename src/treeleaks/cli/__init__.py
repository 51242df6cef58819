"""The ``treeleaks`` command line: a thin shell over the library.

Exit codes: 0 success; 1 a reconstruction that fails its own certificate (a bug, please
report it); 2 bad input or usage (unreadable model or schema, unsupported model, bad option,
unwritable output, an output that exists without --force); 3 no reconstruction (the counts
admit no dataset, the solver ran out of time before any row, or memory ran out); 4 an
unexpected error (a bug, please report it); 5 a partial reconstruction (a result, written
under the names asked for; no error line); 130 interrupted. Every error is one line on
stderr.
"""

# Each module registers its commands on `app`; `treeleaks --help` lists them in this order.
# isort: off
from treeleaks.cli.app import app
from treeleaks.cli import audit, demo, reconstruct, inspect, worst_case, train_dp  # noqa: F401
from treeleaks.cli import leak_or_distribution, leak, single_out, prune, strip  # noqa: F401
from treeleaks.cli import release, synthetic, sweep  # noqa: F401
# isort: on

__all__ = ["app"]
