"""The exceptions spool raises.

Every error from spool's C++ core is a :class:`spool.Error` carrying spool's
one-line message and, in :attr:`Error.code`, the name of its status code
("NotFound", "DataLoss", ...). Where Python has a built-in exception people
already catch for the same situation, the spool class derives from it too:
``except FileNotFoundError`` catches a missing object or bucket (and only
that), ``except PermissionError`` missing, refused or expired credentials and
denied access, ``except ValueError`` a bad argument, ``except TimeoutError``
a deadline. docs/troubleshooting.md has the whole table.
"""

from __future__ import annotations


class Error(Exception):
    """Base class of every error spool raises from its core."""

    #: The status code's name, e.g. "NotFound"; set on every instance.
    code: str = "Unknown"


class InvalidArgumentError(Error, ValueError):
    """A bad argument: a malformed URL, an unknown option, a wrong feature spec."""


class NotFoundError(Error, FileNotFoundError):
    """The object, file, step or bucket does not exist."""


class AlreadyExistsError(Error, FileExistsError):
    """The object or checkpoint step exists already and is not replaced."""


class PermissionDeniedError(Error, PermissionError):
    """The credentials do not allow the operation (or were refused)."""


class UnauthenticatedError(PermissionDeniedError):
    """No credentials were found, or the service refused them (unknown key,
    wrong secret, expired or revoked token).

    A :class:`PermissionError`, never a :class:`FileNotFoundError`: code that
    treats a missing checkpoint as "start from scratch" fails instead of
    silently restarting when the credentials are missing or expired.
    """


class FailedPreconditionError(Error):
    """The operation does not fit the current state (e.g. nothing to wait for)."""


class OutOfRangeError(Error, IndexError):
    """A position past the end (e.g. a read range beyond the object)."""


class UnavailableError(Error, ConnectionError):
    """The server (or the credential source a request needed) could not be
    reached, throttled or kept failing through every retry."""


class DeadlineExceededError(Error, TimeoutError):
    """A deadline passed before the operation finished."""


class DataLossError(Error):
    """Corrupt or truncated data: a checksum or size that does not match."""


class CancelledError(Error):
    """The operation was cancelled (the object doing it was closed)."""


class ResourceExhaustedError(Error):
    """A quota or budget is full (throttling that outlasts the retries is
    :class:`UnavailableError`)."""


class UnimplementedError(Error, NotImplementedError):
    """The store or build does not support the operation."""


class InternalError(Error):
    """A defect in spool; please report it with the message."""


_BY_CODE = {
    "InvalidArgument": InvalidArgumentError,
    "NotFound": NotFoundError,
    "AlreadyExists": AlreadyExistsError,
    "PermissionDenied": PermissionDeniedError,
    "Unauthenticated": UnauthenticatedError,
    "FailedPrecondition": FailedPreconditionError,
    "OutOfRange": OutOfRangeError,
    "Unavailable": UnavailableError,
    "DeadlineExceeded": DeadlineExceededError,
    "DataLoss": DataLossError,
    "Cancelled": CancelledError,
    "ResourceExhausted": ResourceExhaustedError,
    "Unimplemented": UnimplementedError,
    "Internal": InternalError,
}


def _from_status(code: str, message: str) -> Error:
    """The exception for a C++ status (called by the extension module)."""
    cls = _BY_CODE.get(code, Error)
    error = cls(message)
    error.code = code
    return error


__all__ = ["Error"] + sorted(cls.__name__ for cls in set(_BY_CODE.values()))
