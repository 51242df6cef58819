"""Errors treeleaks raises on bad input; each message names the problem and the fix."""


class TreeleaksError(Exception):
    """Base class: bad input or a request treeleaks cannot honour."""


class UnsupportedModelError(TreeleaksError):
    """The model cannot be audited as given (unfitted, unsupported, weighted, ...)."""


class SchemaError(TreeleaksError):
    """A feature schema is malformed or does not match the model."""


class UntrustedPickleError(TreeleaksError):
    """Loading the file would run arbitrary code and the caller did not opt in."""


class BudgetError(TreeleaksError):
    """The run would exceed a limit set on it (training rows, memory).

    The message says which limit to raise.
    """


class CountsRemovedError(UnsupportedModelError):
    """The file's counts were removed (``treeleaks strip``).

    No attack that reads them applies; the message says what an adversary can still do.
    """
