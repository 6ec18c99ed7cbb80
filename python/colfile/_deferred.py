"""Deferred commits: ``File(..., deferred=True)``.

Closing a column commits it: its header, attribute and extension files are
written, a new column's staging directory is renamed into place, and (on a
durable File) all of it is fsynced.  For a File of many small columns that
is most of the time spent, and the caller waits for it although it only
matters once the File is closed.  With deferred commits, ``Column.close()``
hands the column's handle to the File's committer (``cf_committer`` of the
core) and returns.  The committer's thread is a C thread: it closes the
handles in the order they were handed over, beside the caller's next
columns on the second core, and never takes the GIL.

The committer knows sequence numbers, not names; this module keeps the
names.  The File keeps the order of events a caller can see: before
anything that looks at the File's columns (opening, listing, removing,
attributes of the File or of all columns, flush, close), it waits for
every pending commit, and creating a column waits for pending commits of
the same name, of the directories above it and of columns below it.  A
commit that fails is raised by the next call that waits for all of them
(``File.close()`` at the latest), with the message an immediate commit
would have raised.

After ``os.fork()`` the child starts with an empty queue: the columns its
parent closed are the parent's to commit (the child's copies of their
handles are released without a commit: ``cf_column_forget``), and the
child's own closes get a thread of their own.  ``os.fork()`` first waits
for the batch being committed, if any, so that no handle is half released
in the child.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import deque
from typing import Any

from ._core import column as _col
from ._core import committer as _cq

__all__ = ["Committer"]

#: handles waiting at most in the core's committer: a caller faster than the
#: commits then waits for room, so the memory the handles hold stays bounded
QUEUE_LIMIT = 64


def _ancestors(name: str) -> list[str]:
    """The directories above column ``name``: ``"a/b/c"`` -> ``["a", "a/b"]``."""
    parts = name.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


#: every live Committer, to be reset in a forked child
_LIVE: weakref.WeakSet[Committer] = weakref.WeakSet()


def _pause_for_fork() -> None:
    for c in list(_LIVE):
        c._pause()


def _resume_in_parent() -> None:
    for c in list(_LIVE):
        c._resume()


def _reset_in_child() -> None:
    for c in list(_LIVE):
        c._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_pause_for_fork, after_in_parent=_resume_in_parent,
                        after_in_child=_reset_in_child)


class Committer:
    """The background commits of one File: a ``cf_committer`` (its thread
    closes the handles, in the order handed over) and the names of the
    columns whose commits are pending."""

    def __init__(self) -> None:
        self._q: Any = _cq.new()
        # also at exit, for a File never closed: every handle is committed
        self._finalizer = weakref.finalize(self, _cq.free, self._q)
        self._reset()
        _LIVE.add(self)

    def _reset(self) -> None:
        self._lock = threading.Lock()        # guards what follows
        self._pending: deque[tuple[int, str, list[str]]] = deque()  # seq, name, ancestors
        self._names: dict[str, int] = {}     # pending column -> count
        self._above: dict[str, int] = {}     # directories above pending columns
        self._last = 0                       # sequence number of the last handed over
        self._errors: list[BaseException] = []
        self._taken = _cq.error_buffer()  # failures are taken into this

    # -- the caller's side ------------------------------------------------

    def submit(self, name: str, handle: Any) -> None:
        """Commit and release ``handle`` (column ``name``) in the background."""
        above = _ancestors(name)
        with self._lock:
            if self._q is None:  # closed with its File: commit here
                _col.close(handle)
                return
            # may wait for room (the GIL is released meanwhile)
            seq = _cq.submit(self._q, handle)
            self._pending.append((seq, name, above))
            self._last = seq
            self._names[name] = self._names.get(name, 0) + 1
            for a in above:
                self._above[a] = self._above.get(a, 0) + 1

    def pending(self) -> bool:
        """True while commits are waiting or running, or an error is unreported."""
        with self._lock:
            if self._pending and self._q is not None:
                self._prune(_cq.done(self._q))
            if not self._pending:
                self._collect()
            return bool(self._pending or self._errors)

    def settle(self, name: str | None = None) -> None:
        """Wait for every pending commit, then raise the first error of
        those that failed.  With ``name``, wait only for the commits that
        touch column ``name``, its directories or columns below it, and
        raise nothing: whether a commit of another column failed by then
        depends on timing, and errors are reported at one place."""
        with self._lock:
            if name is not None:
                seq = self._last_conflict(name)
                if seq:
                    self._wait(seq)
                return
            self._wait(self._last)
            self._collect()
            if self._errors:
                errors, self._errors = self._errors, []
                first = errors[0]
                if len(errors) > 1 and hasattr(first, "add_note"):  # Python >= 3.11
                    first.add_note(f"{len(errors) - 1} more deferred commit(s) failed: " +
                                   "; ".join(str(e) for e in errors[1:]))
                raise first

    def wait(self) -> bool:
        """Wait for every pending commit without reporting failures (they
        stay for the next settle()); True if one failed."""
        with self._lock:
            self._wait(self._last)
            self._collect()
            return bool(self._errors)

    def close(self) -> None:
        """Commit what is pending and end the thread (the File closes);
        failures not yet raised are raised by the next settle()."""
        with self._lock:
            if self._q is None:
                return
            self._wait(self._last)
            self._collect()
            self._q = None
            self._finalizer()  # cf_committer_free: the thread ends

    # -- bookkeeping (self._lock held) ------------------------------------

    def _wait(self, seq: int) -> None:
        if self._pending and self._q is not None:
            _cq.wait(self._q, seq)  # the GIL is released meanwhile
            self._prune(seq)

    def _prune(self, done: int) -> None:
        """Forget the names of the commits up to sequence number ``done``."""
        pending, names, above = self._pending, self._names, self._above
        while pending and pending[0][0] <= done:
            _, name, ups = pending.popleft()
            names[name] -= 1
            if not names[name]:
                del names[name]
            for a in ups:
                above[a] -= 1
                if not above[a]:
                    del above[a]

    def _collect(self) -> None:
        """Take the committer's failures, as the exceptions to raise."""
        if self._q is None:
            return
        while True:
            taken = _cq.take_errors(self._q, self._taken)
            self._errors.extend(taken)
            if len(taken) < _cq.TAKE:
                return

    def _last_conflict(self, name: str) -> int:
        """The sequence number of the last pending commit that touches
        ``name`` (the same column, a column below it, or one above), or 0."""
        ups = _ancestors(name)
        if not (name in self._names or name in self._above
                or any(a in self._names for a in ups)):
            return 0
        for seq, other, above in reversed(self._pending):
            if other == name or name in above or other in ups:
                return seq
        return 0

    # -- fork -------------------------------------------------------------

    def _pause(self) -> None:
        # Before a fork: wait until no batch is being closed, and hold the
        # committer still until after it, so that the child never inherits
        # handles half released, whose lock descriptors it would keep open
        # (the parent could then not write those columns while the child
        # lives).
        if self._q is not None:
            _cq.pause(self._q)

    def _resume(self) -> None:
        if self._q is not None:
            _cq.resume(self._q)

    def _forked(self) -> None:
        # In a forked child: what is queued is the parent's to commit;
        # committing it here as well would publish it twice.  The core
        # releases the child's copies of those handles without a commit.
        if self._q is not None:
            _cq.forget_after_fork(self._q)
        self._reset()
