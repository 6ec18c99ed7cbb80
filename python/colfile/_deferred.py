"""Deferred commits: ``File(..., deferred=True)``.

Closing a column commits it: its header, attribute and extension files are
written, a new column's staging directory is renamed into place, and (on a
durable File) all of it is fsynced.  For a File of many small columns that
is most of the time spent, and the caller waits for it although it only
matters once the File is closed.  With deferred commits, ``Column.close()``
hands the column's handle to one background thread of the File and returns.
That thread closes whatever is queued with one ``cf_column_close_many``
call, during which cffi releases the GIL, so the commits' system calls run
beside the caller's next columns on the second core.

The File keeps the order of events a caller can see: before anything that
looks at the File's columns (opening, listing, removing, attributes of the
File or of all columns, flush, close), it waits for every pending commit,
and creating a column waits for pending commits of the same name, of the
directories above it and of columns below it.  A commit that fails is
raised by the next call that waits for all of them (``File.close()`` at the
latest), with the message an immediate commit would have raised.

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

from ._ffi import ffi, lib
from .errors import raise_error

__all__ = ["Committer"]

#: commits waiting at most: a caller faster than the commits then waits for
#: room, so the memory the handles hold stays bounded
QUEUE_LIMIT = 64

#: seconds an idle worker waits for more work before it ends (a File never
#: closed must not keep the interpreter from exiting: pending work is done
#: first, then the thread ends)
IDLE_SECONDS = 0.2


def _ancestors(name: str) -> list[str]:
    """The directories above column ``name``: ``"a/b/c"`` -> ``["a", "a/b"]``."""
    parts = name.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


#: the C types of a batch, parsed once
_ERRORS = ffi.typeof("cf_error[]")
_COLUMNS = ffi.typeof("cf_column *[]")

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
    """The background commits of one File: a queue of column handles and
    the thread that closes them, in the order they were handed over."""

    def __init__(self) -> None:
        self._start()
        _LIVE.add(self)

    def _start(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[tuple[str, Any, list[str]]] = deque()  # name, handle, ancestors
        self._names: dict[str, int] = {}     # pending column -> count
        self._above: dict[str, int] = {}     # directories above pending columns
        self._busy = 0                       # handed over and not yet committed
        self._inflight = False               # the thread is inside cf_column_close_many
        self._paused = 0                     # forks waiting: start no batch
        self._errors: list[BaseException] = []
        self._worker: threading.Thread | None = None

    # -- the caller's side ------------------------------------------------

    def submit(self, name: str, handle: Any) -> None:
        """Commit and release ``handle`` (column ``name``) in the background."""
        with self._cond:
            while self._busy >= QUEUE_LIMIT:
                self._cond.wait()
            above = _ancestors(name)
            self._queue.append((name, handle, above))
            self._busy += 1
            self._names[name] = self._names.get(name, 0) + 1
            for a in above:
                self._above[a] = self._above.get(a, 0) + 1
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="colfile-commit")
                self._worker.start()
            else:
                self._cond.notify_all()

    def pending(self) -> bool:
        """True while commits are waiting or running, or an error is unreported."""
        return self._busy > 0 or bool(self._errors)

    def settle(self, name: str | None = None) -> None:
        """Wait for every pending commit, then raise the first error of
        those that failed.  With ``name``, wait only for the commits that
        touch column ``name``, its directories or columns below it, and
        raise nothing: whether a commit of another column failed by then
        depends on timing, and errors are reported at one place."""
        with self._cond:
            if name is not None:
                while self._busy and self._conflicts(name):
                    self._cond.wait()
                return
            while self._busy:
                self._cond.wait()
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
        with self._cond:
            while self._busy:
                self._cond.wait()
            return bool(self._errors)

    def _pause(self) -> None:
        # Before a fork: wait until no batch is being closed, and start
        # none until after it, so that the child never inherits handles
        # half released, whose lock descriptors it would keep open (the
        # parent could then not write those columns while the child lives).
        with self._cond:
            self._paused += 1
            while self._inflight:
                self._cond.wait()

    def _resume(self) -> None:
        with self._cond:
            self._paused -= 1
            self._cond.notify_all()

    def _forked(self) -> None:
        # In a forked child: the worker thread did not survive, and the
        # condition may be held by it.  What is queued is the parent's to
        # commit; committing it here as well would publish it twice.  The
        # child's copies of the queued handles are released without a
        # commit (no batch was in flight: _pause).
        queued = list(self._queue)
        self._start()
        forget = lib().cf_column_forget
        for _, h, _ in queued:
            forget(h)

    def _conflicts(self, name: str) -> bool:
        return (name in self._names or name in self._above
                or any(a in self._names for a in _ancestors(name)))

    # -- the worker -------------------------------------------------------

    def _run(self) -> None:
        close_many = lib().cf_column_close_many
        while True:
            with self._cond:
                if not self._queue:
                    self._cond.wait(IDLE_SECONDS)
                while self._paused:  # a fork is under way (_pause)
                    self._cond.wait()
                if not self._queue:
                    self._worker = None
                    return
                batch = list(self._queue)
                self._queue.clear()
                self._inflight = True
            # One C call for everything queued: the GIL is released once per
            # batch, so the caller's thread rarely waits for it.
            failures: list[BaseException] = []
            try:
                n = len(batch)
                errs = ffi.new(_ERRORS, n)
                if close_many(ffi.new(_COLUMNS, [h for _, h, _ in batch]), n, errs):
                    for i in range(n):
                        if errs[i].code:
                            try:
                                raise_error(errs[i].code, errs + i)
                            except BaseException as exc:  # kept for the caller
                                failures.append(exc)
            except BaseException as exc:  # (out of memory): kept for the caller
                failures.append(exc)
            with self._cond:
                self._inflight = False
                self._errors.extend(failures)
                self._busy -= len(batch)
                for name, _, above in batch:
                    self._names[name] -= 1
                    if not self._names[name]:
                        del self._names[name]
                    for a in above:
                        self._above[a] -= 1
                        if not self._above[a]:
                            del self._above[a]
                self._cond.notify_all()
