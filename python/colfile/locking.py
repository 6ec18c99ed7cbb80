"""What the writer lock of a File is worth on the file system holding it.

colfile's writer lock (docs/format.md 8.3) keeps a second writer of a
column out.  On a local file system, and on Lustre mounted ``flock``, GPFS
or NFS with its lock manager, that holds between every process that can
reach the File.  Elsewhere it does not:

- Lustre mounted ``noflock`` (or with neither ``flock`` nor ``localflock``
  on old clients): every lock call fails, so writes fail unless the File
  is opened with ``locking=False``;
- Lustre ``localflock``, NFS ``nolock`` or ``local_lock=all|flock|posix``,
  and BeeGFS (whose client keeps locks on its own node unless global file
  locks are configured, which the mount table does not show): locks
  exclude processes of one node only.

:func:`lock_scope` reads the mount table (``/proc/self/mountinfo``) and
tells which case a path is in; :class:`colfile.File` warns with a
:class:`LockingWarning` when it opens a writable File where locks give no
exclusion between nodes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ._warnings import FileSystemWarning

__all__ = ["LockingWarning", "Mount", "parse_mountinfo", "mount_of", "lock_scope", "scope_note"]


class LockingWarning(FileSystemWarning):
    """The File's writer locks do not exclude writers on other nodes (or
    do not work at all) on its file system."""


@dataclass(frozen=True)
class Mount:
    """One line of /proc/self/mountinfo: where, what and how."""

    mount_point: str
    fstype: str
    source: str
    options: frozenset[str]


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash as \ooo octal
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of mountinfo text (proc(5)): mount point, file system
    type, source, and the per-mount and super-block options together.
    Lines that do not parse are skipped."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            sep = fields.index("-", 6)
        except ValueError:
            continue
        if len(fields) < sep + 3:
            continue
        opts = set(fields[5].split(","))
        opts.update(fields[sep + 3].split(",") if len(fields) > sep + 3 else ())
        mounts.append(Mount(_unescape(fields[4]), fields[sep + 1], _unescape(fields[sep + 2]),
                            frozenset(o for o in opts if o)))
    return mounts


def mount_of(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount holding ``path`` (made absolute and resolved): the one
    with the longest mount point that contains it, the last mounted of
    those on one point (mountinfo lists mounts in mount order)."""
    p = os.path.realpath(path)
    best: Mount | None = None
    for m in mounts:
        mp = m.mount_point.rstrip("/") or "/"
        inside = p == mp or mp == "/" or p.startswith(mp + "/")
        if inside and (best is None or len(mp) >= len(best.mount_point.rstrip("/") or "/")):
            best = m
    return best


def _option(opts: frozenset[str], key: str) -> str | None:
    for o in opts:
        if o.startswith(key + "="):
            return o[len(key) + 1:]
    return None


def scope_of_mount(m: Mount) -> str:
    """``'none'`` (lock calls fail), ``'node'`` (locks exclude processes of
    one node only) or ``'cluster'`` (every client sees them; local file
    systems too)."""
    fs, opts = m.fstype, m.options
    if fs == "lustre":
        if "localflock" in opts:
            return "node"
        if "flock" in opts:
            return "cluster"
        return "none"  # noflock, the default of older clients
    if fs in ("nfs", "nfs4"):
        if "nolock" in opts:
            return "node"
        if _option(opts, "local_lock") in ("all", "flock", "posix"):
            return "node"
        return "cluster"
    if fs == "beegfs":
        return "node"
    return "cluster"


def lock_scope(path: str, mountinfo: str | None = None) -> tuple[str, Mount | None]:
    """The scope of locks at ``path`` (see :func:`scope_of_mount`) and its
    mount; ``('cluster', None)`` where the mount table cannot be read.
    ``mountinfo`` is the table's text (default: /proc/self/mountinfo)."""
    if mountinfo is None:
        try:
            with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
                mountinfo = fh.read()
        except OSError:
            return "cluster", None
    m = mount_of(path, parse_mountinfo(mountinfo))
    return (scope_of_mount(m), m) if m else ("cluster", None)


def scope_note(path: str, scope: str, m: Mount | None) -> str | None:
    """The warning text for a writable File at path whose locks have this
    scope, or None when they exclude writers everywhere."""
    if scope == "cluster" or m is None:
        return None
    where = f"{m.fstype} mounted at {m.mount_point}"
    if scope == "none":
        return (f"{path}: on {where} without flock, lock calls fail and so would every write: "
                "open the File with locking=False, making sure that one process at a time writes it "
                "(docs/reliability.md, 'Locking on parallel file systems')")
    return (f"{path}: on {where}, locks are node-local: colfile's writer lock keeps out writers on "
            "this node only, not on other nodes, and `colfile repair` relies on owner records "
            "to leave other nodes' work alone; make sure one job writes a column at a time, "
            "or pass locking='local' to say so (docs/reliability.md, 'Locking on parallel file systems')")
