"""The exceptions of colfile.

Every exception derives from :class:`Error` and, where one fits, from the
matching builtin too, so callers can catch either ``colfile.Error`` or the
builtin they already know (``KeyError``, ``FileNotFoundError``,
``IndexError``, ...).

================================== ================================= =======================
C code                             exception                         also a
================================== ================================= =======================
CF_EIO                             :class:`StorageError`             ``OSError``
CF_ENOENT (File)                   :class:`NoSuchFileError`          ``FileNotFoundError``
CF_ENOENT (column)                 :class:`ColumnNotFoundError`      ``KeyError``
CF_ENOENT (attribute)              :class:`AttributeNotFoundError`   ``KeyError``
CF_EEXIST                          :class:`AlreadyExistsError`       ``FileExistsError``,
                                                                     ``ValueError``
CF_EEXIST (create)                 :class:`ColumnExistsError`        ``FileExistsError``,
                                                                     ``ValueError``
CF_ENAME                           :class:`InvalidNameError`         ``ValueError``
CF_EDTYPE, CF_ECAST                :class:`DTypeError`               ``TypeError``
CF_EFORMAT, CF_ENOTFILE            :class:`FormatError`
CF_ESHORT                          :class:`IncompleteError`          (a :class:`FormatError`)
CF_ERANGE                          :class:`RangeError`               ``IndexError``
CF_ENOMEM                          :class:`OutOfMemoryError`         ``MemoryError``
CF_EARG                            :class:`InvalidArgumentError`     ``ValueError``
CF_ECHECKSUM                       :class:`ChecksumError`
CF_EREADONLY                       :class:`ReadOnlyError`            ``PermissionError``
CF_EKIND                           :class:`ColumnKindError`          ``TypeError``
CF_ETORN                           :class:`TornError`
CF_EBUSY                           :class:`BusyError`                ``BlockingIOError``
CF_EREPLACED                       :class:`ReplacedError`            ``FileNotFoundError``
                                   (a :class:`NoSuchFileError`)
(closed handle)                    :class:`ClosedError`              ``ValueError``
(MPI: collective by some ranks)    :class:`CollectiveError`          ``RuntimeError``
================================== ================================= =======================

The message of an exception raised for a failing C call is the C message,
which names the path and the problem.  ``exc.code`` holds the C code (0 for
errors detected in Python) and ``exc.code_name`` its name (``"CF_ENOENT"``).

Examples
--------
>>> import colfile
>>> issubclass(colfile.ColumnNotFoundError, KeyError)
True
>>> issubclass(colfile.NoSuchFileError, FileNotFoundError)
True
"""

from __future__ import annotations

from ._constants import (
    CF_EARG,
    CF_EBUSY,
    CF_ECAST,
    CF_ECHECKSUM,
    CF_EDTYPE,
    CF_EEXIST,
    CF_EFORMAT,
    CF_EIO,
    CF_EKIND,
    CF_ENAME,
    CF_ENOENT,
    CF_ENOMEM,
    CF_ENOTFILE,
    CF_EREADONLY,
    CF_EREPLACED,
    CF_ERANGE,
    CF_ESHORT,
    CF_ETORN,
    CF_OK,
    ERROR_NAMES,
)

__all__ = [
    "Error",
    "StorageError",
    "NoSuchFileError",
    "ColumnNotFoundError",
    "AttributeNotFoundError",
    "AlreadyExistsError",
    "ColumnExistsError",
    "InvalidNameError",
    "DTypeError",
    "FormatError",
    "IncompleteError",
    "IncompleteWarning",
    "RangeError",
    "OutOfMemoryError",
    "InvalidArgumentError",
    "ChecksumError",
    "ReadOnlyError",
    "ColumnKindError",
    "ClosedError",
    "TornError",
    "BusyError",
    "ReplacedError",
    "CollectiveError",
]

# The codes of colfile_errors.h are the generated constants imported above
# (colfile._constants), public here as colfile.errors.CF_*.
#: ``{code: "CF_ENOENT"}`` for every code of colfile_errors.h
CODE_NAMES: dict[int, str] = dict(ERROR_NAMES)


class Error(Exception):
    """Base class of every colfile exception.

    Attributes
    ----------
    code : int
        The negative ``CF_E*`` code of the failing C call, or 0 when the error
        was detected by the Python layer.
    """

    code: int = 0

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code

    @property
    def code_name(self) -> str:
        """The symbolic name of :attr:`code`, e.g. ``"CF_ENOENT"``."""
        return CODE_NAMES.get(self.code, "CF_UNKNOWN")

    def __str__(self) -> str:
        # KeyError (and OSError with one argument) would quote or mangle it.
        return str(self.args[0]) if self.args else ""


class StorageError(Error, OSError):
    """A system call failed (CF_EIO)."""


class NoSuchFileError(Error, FileNotFoundError):
    """The File, or a data file of a column, does not exist (CF_ENOENT)."""


class ColumnNotFoundError(Error, KeyError):
    """No column (or group) of that name (CF_ENOENT when opening a column)."""


class AttributeNotFoundError(Error, KeyError):
    """No attribute of that name (CF_ENOENT from an attribute call)."""


class AlreadyExistsError(Error, FileExistsError, ValueError):
    """The File exists and was to be created exclusively, or a name to be
    created is taken (CF_EEXIST).  Also a ``ValueError``, the class h5py
    raises for a name that is taken."""


class ColumnExistsError(AlreadyExistsError):
    """Creating a column where one exists without ``overwrite=True``, below
    a column (a column cannot hold columns), or where a group holds columns
    (CF_EEXIST from a create)."""


class InvalidNameError(Error, ValueError):
    """A column, group or attribute name is not allowed (CF_ENAME)."""


class DTypeError(Error, TypeError):
    """A dtype colfile cannot store, or a conversion it cannot do
    (CF_EDTYPE, CF_ECAST)."""


class FormatError(Error):
    """Damaged or foreign metadata or data on disk
    (CF_EFORMAT, CF_ENOTFILE; CF_ESHORT is its subclass
    :class:`IncompleteError`)."""


class IncompleteError(FormatError):
    """A read touched rows that hold no data (CF_ESHORT): rows past the last
    one written in their blob file.  The message names the column and the
    rows.  They were never written, or the blob was cut short (a crash of
    another tool, a copy that stopped): the two look the same on disk, so
    colfile never presents them as data (docs/writing.md, "Rows never
    written").  Write the rows, or recreate the column."""


class IncompleteWarning(UserWarning):
    """Closing a column this handle created or grew while some of its rows
    were never written: reading them raises :class:`IncompleteError`.  The
    message names the column and the rows."""


class RangeError(Error, IndexError):
    """Rows outside the column (CF_ERANGE, or an index out of bounds)."""


class OutOfMemoryError(Error, MemoryError):
    """The library ran out of memory (CF_ENOMEM)."""


class InvalidArgumentError(Error, ValueError):
    """An argument the library rejected (CF_EARG)."""


class ChecksumError(Error):
    """Data does not match its recorded checksum (CF_ECHECKSUM)."""


class ReadOnlyError(Error, PermissionError):
    """A write through a File or column opened read-only (CF_EREADONLY)."""


class ColumnKindError(Error, TypeError):
    """The operation does not fit this kind of column, e.g. reading rows of a
    header-only block (CF_EKIND)."""


class TornError(Error):
    """An in-place update of the column was interrupted (CF_ETORN): its rows
    may mix old and new values.  ``colfile repair`` makes it consistent;
    ``File(..., torn='warn')`` opens it anyway with a warning."""


class BusyError(Error, BlockingIOError):
    """Another writer, in this or another process, holds the column's writer
    lock, or committed a change to the column since this handle opened it
    and before its first change (CF_EBUSY): reopen the column."""


class ReplacedError(NoSuchFileError):
    """The column was replaced or removed by another process since this
    handle opened it, and the files of the version it reads are gone
    (CF_EREPLACED): reopen the column (``file[name]`` again, after the old
    handle is closed) to read what is there now.

    An open column keeps reading the version it opened while that version's
    files exist: never rows of two versions, and never a false
    :class:`ChecksumError`.  A writable column that another process
    replaced before its first change raises this instead of writing into
    the new version.  A :class:`NoSuchFileError` (and so a
    ``FileNotFoundError``): the files it needs no longer exist."""


class ClosedError(Error, ValueError):
    """Use of a closed File, column or attribute set."""


class CollectiveError(Error, RuntimeError):
    """Under MPI, a collective operation was not made by every rank: some
    ranks called another collective operation at the same point, or not
    every rank called one within the File's ``mpi_timeout``.  The message
    names the operation and what each rank called."""


_BY_CODE: dict[int, type[Error]] = {
    CF_EIO: StorageError,
    CF_ENOENT: NoSuchFileError,
    CF_EEXIST: AlreadyExistsError,
    CF_ENAME: InvalidNameError,
    CF_EDTYPE: DTypeError,
    CF_ECAST: DTypeError,
    CF_EFORMAT: FormatError,
    CF_ERANGE: RangeError,
    CF_ENOMEM: OutOfMemoryError,
    CF_EARG: InvalidArgumentError,
    CF_ECHECKSUM: ChecksumError,
    CF_EREADONLY: ReadOnlyError,
    CF_ESHORT: IncompleteError,
    CF_ENOTFILE: FormatError,
    CF_EKIND: ColumnKindError,
    CF_ETORN: TornError,
    CF_EBUSY: BusyError,
    CF_EREPLACED: ReplacedError,
}

# What CF_ENOENT means depends on what was asked for.
_ENOENT_BY_CONTEXT: dict[str, type[Error]] = {
    "file": NoSuchFileError,
    "column": ColumnNotFoundError,
    "attr": AttributeNotFoundError,
}


def error_class(code: int, context: str = "file") -> type[Error]:
    """The exception class for a C code.

    Parameters
    ----------
    code : int
        A negative ``CF_E*`` value.
    context : {'file', 'column', 'attr', 'create'}
        What the failing call looked up; decides the class of ``CF_ENOENT``
        (and of ``CF_EEXIST`` from creating a column).

    Examples
    --------
    >>> from colfile.errors import error_class, CF_ENOENT
    >>> error_class(CF_ENOENT, "column").__name__
    'ColumnNotFoundError'
    """
    if code == CF_ENOENT:
        return _ENOENT_BY_CONTEXT.get(context, NoSuchFileError)
    if code == CF_EEXIST and context == "create":
        return ColumnExistsError
    return _BY_CODE.get(code, Error)
