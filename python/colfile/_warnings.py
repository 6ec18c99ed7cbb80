"""The warnings of opening and writing a File (defined below the modules
that warn, :mod:`colfile.file` and :mod:`colfile.locking`)."""

from __future__ import annotations

__all__ = ["TornWarning", "FileSystemWarning"]


class TornWarning(UserWarning):
    """A column marked torn was opened with ``torn='warn'``."""


class FileSystemWarning(UserWarning):
    """The File is on a file system where colfile's guarantees are weaker."""
