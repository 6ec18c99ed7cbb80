"""Opening a File by its path from below :mod:`colfile.file`.

Unpickled columns, dask tasks and histogram tasks reopen the File they
read by its absolute path.  They live below the module that defines
:class:`~colfile.File`, so that module registers the class here when it is
imported (importing colfile imports it), instead of those modules
importing it back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["register", "open_file", "opened_columns"]

_file_class: Any = None


def register(cls: Any) -> None:
    """Make ``cls`` (:class:`colfile.File`) what :func:`open_file` opens."""
    global _file_class
    _file_class = cls


def open_file(path: str, **options: Any) -> Any:
    """``File(path, "r", **options)``: the File at ``path``, read-only and
    serial."""
    if _file_class is None:  # colfile.file registers it when imported
        raise RuntimeError("colfile.file is not imported: import colfile first")
    return _file_class(path, "r", **options)


@contextmanager
def opened_columns() -> Iterator[Callable[[str, str], Any]]:
    """A task's resolver ``column(path, name)``: the column ``name`` of the
    File at ``path``, each File opened once (read-only) and all of them
    closed when the block ends."""
    files: dict[str, Any] = {}

    def column(path: str, name: str) -> Any:
        if path not in files:
            files[path] = open_file(path)
        return files[path][name]

    try:
        yield column
    finally:
        for f in files.values():
            f.close()
