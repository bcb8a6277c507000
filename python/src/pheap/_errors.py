"""The exceptions of pheap: one base class, one subclass per cause.

Every message names the datastore, the operation and the cause, exactly as the C++
``pheap::error`` does, e.g. ``pheap: open /data/g1: not a pheap datastore: ...``.
Subclasses also derive from the built-in exception a Python caller expects: a missing
datastore is a ``FileNotFoundError``, a type mismatch a ``TypeError``, a bad argument a
``ValueError``.
"""


class Error(Exception):
    """A pheap failure.

    Attributes: ``code`` (the C++ ``pheap::errc`` as text, e.g. ``"corrupt"``), ``path``
    (the datastore or file concerned), ``op`` (the operation) and ``errno`` (the OS error, 0
    when the failure is not one).
    """

    code = "unknown"
    path = ""
    op = ""
    errno = 0


class StoreIOError(Error, OSError):
    """An OS call failed (EIO, EBADF, ...); ``errno`` says which."""


class NoSpaceError(Error, OSError):
    """The device is full (ENOSPC / EDQUOT)."""


class NotFoundError(Error, FileNotFoundError):
    """No datastore, file or named object of that name."""


class ExistsError(Error, FileExistsError):
    """Create on a path that holds something, or a name that is taken."""


class NotADatastoreError(Error):
    """The directory exists but is not a pheap datastore (foreign files)."""


class FormatError(Error):
    """Written by a newer pheap, or by an older format this build no longer reads."""


class CorruptError(Error):
    """Damaged data: a checksum mismatch (the message names the file and the page), torn or
    impossible metadata."""


class LockedError(Error):
    """Another opener holds the datastore: one writer or any number of readers."""


class ReadOnlyError(Error):
    """A mutation through a datastore opened read-only."""


class InvalidArgumentError(Error, ValueError):
    """A bad argument or option."""


class TypeMismatchError(Error, TypeError):
    """An object of another type than the call handles; the message names both."""


class UnavailableError(Error):
    """A kernel facility (userfaultfd, io_uring) is missing or refused."""


class PoisonedError(Error):
    """An earlier fatal error (a failed fdatasync) ended the epoch: reopen to continue."""


class StaleError(Error):
    """The writer released the watermark this reader read (its pin limit): refresh or reopen."""


class IngestError(Error, ValueError):
    """``add_edges`` cannot run as asked: another unfinished job, nothing was inserted."""


class ClosedError(Error, ValueError):
    """The datastore or graph handle was closed."""


# pheap::errc (C++) -> class; the extension raises through this table.
BY_CODE = {
    "io": StoreIOError,
    "no_space": NoSpaceError,
    "not_found": NotFoundError,
    "already_exists": ExistsError,
    "not_a_datastore": NotADatastoreError,
    "newer_format": FormatError,
    "older_format": FormatError,
    "corrupt": CorruptError,
    "locked": LockedError,
    "read_only": ReadOnlyError,
    "invalid_argument": InvalidArgumentError,
    "type_mismatch": TypeMismatchError,
    "unavailable": UnavailableError,
    "poisoned": PoisonedError,
    "stale": StaleError,
    "ingest": IngestError,
    "closed": ClosedError,
}


def _make(code, message, path, op, errno):
    """Builds the exception the extension raises (called from C++)."""
    e = BY_CODE.get(code, Error)(message)
    e.code, e.path, e.op, e.errno = code, path, op, errno
    return e
