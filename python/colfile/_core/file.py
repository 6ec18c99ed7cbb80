"""``cf_file`` handles: opening, closing, listing, removing, cleaning up.

A File handle is an opaque object to the rest of colfile; it is released
with :func:`close` (once).
"""

from __future__ import annotations

import os
from typing import Any

from .._ffi import _FS_ENCODING, encode, encode_name, environment_open_flags, ffi, lib, string
from ..errors import InvalidNameError
from ._errors import ERROR_P, check, new_error, raise_error
from .._constants import CF_CLEANUP_DRY_RUN, CF_CLEANUP_FORCE
from .memory import take_bytes, take_string_list

__all__ = [
    "encode_path", "open", "close", "forget_locks", "fs_type", "lock_scope", "list_names",
    "digest_choose", "digest_placement", "set_node",
    "cleanup", "catalog_update", "column_attrs", "remove", "remove_group", "name_check",
]

#: what opening a File allocates, parsed once
_FILE_PP = ffi.typeof("cf_file **")


def encode_path(path: str | bytes | os.PathLike[str]) -> bytes:
    """``path`` as C gets it (file system encoding); a NUL byte raises
    :class:`~colfile.InvalidNameError`."""
    return encode(path)


def open(path: str | bytes | os.PathLike[str], flags: int) -> Any:  # noqa: A001
    """``cf_file_open`` of ``path`` with ``flags`` (``CF_OPEN_*``) and those
    the environment asks for (``COLFILE_NO_MMAP``: see
    ``colfile._ffi.environment_open_flags``): the handle, or the error raised
    (a missing File: :class:`~colfile.NoSuchFileError`)."""
    # a str path the cheap way (opening a File is part of every small read)
    raw = path.encode(_FS_ENCODING, "surrogateescape") \
        if type(path) is str and "\0" not in path else encode(path)
    out = ffi.new(_FILE_PP)
    err = ffi.new(ERROR_P)
    rc = lib().cf_file_open(out, raw, flags | environment_open_flags(), err)
    if rc < 0:  # check() inline: opening a File is part of every small read
        raise_error(rc, err, "file")
    return out[0]


def close(h: Any) -> None:
    """Release File handle ``h`` (``cf_file_close``; cannot fail)."""
    lib().cf_file_close(h)


def forget_locks(h: Any) -> None:
    """In a forked child: close the child's copies of ``h``'s writer-lock
    files without unlocking (``cf_file_forget_locks``)."""
    lib().cf_file_forget_locks(h)


def fs_type(h: Any) -> str:
    """The file system holding the File (``cf_file_fs_type``)."""
    return string(lib().cf_file_fs_type(h))


def digest_choose(own_cpus: int, node_cpus: int, ranks_per_node: int) -> str:
    """The automatic digest placement, "helper" or "inline", of a process
    that may run on ``own_cpus`` CPUs, on a node whose ``ranks_per_node``
    ranks may run on ``node_cpus`` CPUs together (``cf_digest_choose``)."""
    return "helper" if lib().cf_digest_choose(own_cpus, node_cpus, ranks_per_node) else "inline"


def digest_placement(h: Any) -> str:
    """Where the columns File handle ``h`` opens now digest their writes:
    "inline" or "helper" (``cf_file_digest_placement``)."""
    return string(lib().cf_file_digest_placement(h))


def set_node(h: Any, ranks_per_node: int, node_cpus: int) -> None:
    """Tell File handle ``h`` how many ranks share its node and how many
    CPUs they may run on together (``cf_file_set_node``)."""
    lib().cf_file_set_node(h, ranks_per_node, node_cpus)


def lock_scope(h: Any) -> str:
    """How far writer locks reach (``cf_file_lock_scope``)."""
    return string(lib().cf_file_lock_scope(h))


def list_names(h: Any) -> list[str]:
    """The names of the File's columns (``cf_file_list``)."""
    err = new_error()
    L = lib()
    return take_string_list(lambda names, count: check(
        L.cf_file_list(h, names, count, err), err))


def catalog_stale(h: Any) -> bool:
    """True once a listing of ``h`` found the File's catalog listing other
    columns than the File holds although the File's generation did not
    change (``cf_file_catalog_stale``)."""
    return bool(lib().cf_file_catalog_stale(h))


def cleanup(h: Any, dry_run: bool, force: bool) -> list[str]:
    """Remove what interrupted writers left (``cf_file_cleanup``): one line
    per item found."""
    flags = (CF_CLEANUP_DRY_RUN if dry_run else 0) | (CF_CLEANUP_FORCE if force else 0)
    err = new_error()
    L = lib()
    return take_string_list(lambda lines, count: check(
        L.cf_file_cleanup(h, flags, lines, count, err), err, "file"))


def catalog_update(h: Any) -> None:
    """Rebuild the File's catalog (``cf_file_catalog_update``).  The catalog
    is a cache: a failure is not reported."""
    lib().cf_file_catalog_update(h, new_error())


def column_attrs(h: Any) -> bytes:
    """The packed attributes of every column (``cf_file_column_attrs``)."""
    err = new_error()
    L = lib()
    return take_bytes(lambda buf, size: check(
        L.cf_file_column_attrs(h, buf, size, err), err, "column"))


def remove(h: Any, name: str) -> None:
    """Remove column ``name`` (``cf_file_remove``)."""
    err = new_error()
    check(lib().cf_file_remove(h, encode_name(name), err), err, "column")


def rename(h: Any, src: str, dst: str) -> None:
    """Rename column ``src`` to ``dst`` (``cf_file_rename``)."""
    err = new_error()
    check(lib().cf_file_rename(h, encode_name(src), encode_name(dst), err), err, "column")


def remove_group(h: Any, name: str) -> None:
    """Remove group ``name`` and what it holds (``cf_file_remove_group``)."""
    err = new_error()
    check(lib().cf_file_remove_group(h, encode_name(name), err), err, "column")


def name_check(name: str, where: str | None = None) -> None:
    """The core's rules for column and group names (``cf_name_check``);
    the message starts with ``where`` (the File's path) when given, as the
    core's own refusals of a name do."""
    err = new_error()
    try:
        check(lib().cf_name_check(encode_name(name), err), err)
    except InvalidNameError as exc:
        if where is None:
            raise
        raise type(exc)(f"{where}: {exc}", exc.code) from None
