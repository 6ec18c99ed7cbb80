"""The warnings of opening and writing a File (defined below the modules
that warn, :mod:`colfile.file` and :mod:`colfile.locking`)."""

from __future__ import annotations

__all__ = ["TornWarning", "FileSystemWarning", "CatalogWarning"]


class TornWarning(UserWarning):
    """A column marked torn was opened with ``torn='warn'``."""


class FileSystemWarning(UserWarning):
    """The File is on a file system where colfile's guarantees are weaker."""


class CatalogWarning(UserWarning):
    """The File's catalog (``.colfile-catalog/``) lists other columns than
    the File holds, though no colfile writer changed them since it was
    built: a writer that does not record the File's generation (bigfile, a
    copy, an older colfile) did.  The listing that warns is read from the
    directories and is right; on file systems whose directory timestamps
    lag behind other clients a later one may not be.  ``colfile index``
    rebuilds the catalog (so does the close of a writable File, which
    therefore does not warn)."""
