"""``python -m treeleaks``: the command line, as the ``treeleaks`` script runs it."""

from treeleaks.cli import app

app()
