"""``cf_committer``: the core's background committer (a C thread that
closes column handles in the order handed over, never taking the GIL)."""

from __future__ import annotations

from typing import Any

from .._ffi import ERROR_P, ffi, lib
from ._errors import check, raise_error

__all__ = ["new", "free", "submit", "done", "wait", "error_buffer", "take_errors",
           "pause", "resume", "forget_after_fork", "TAKE"]

#: the failures taken at once
TAKE = 16
_ERRORS = ffi.typeof("cf_error[]")


def new() -> Any:
    """A new committer (its thread starts)."""
    out = ffi.new("cf_committer **")
    err = ffi.new(ERROR_P)
    check(lib().cf_committer_new(out, err), err)
    return out[0]


def free(q: Any) -> None:
    """Commit what is queued, end the thread and free the committer."""
    lib().cf_committer_free(q)


def submit(q: Any, handle: Any) -> int:
    """Hand column ``handle`` over; its sequence number.  May wait for
    room (the GIL is released meanwhile)."""
    return int(lib().cf_committer_submit(q, handle))


def done(q: Any) -> int:
    """The sequence number up to which every commit is done."""
    return int(lib().cf_committer_done(q))


def wait(q: Any, seq: int) -> None:
    """Wait until the commits up to ``seq`` are done."""
    lib().cf_committer_wait(q, seq)


def error_buffer() -> Any:
    """Room for :data:`TAKE` failures (see :func:`take_errors`)."""
    return ffi.new(_ERRORS, TAKE)


def take_errors(q: Any, buf: Any) -> list[BaseException]:
    """The failed commits not taken yet, as the exceptions to raise (at
    most :data:`TAKE` at once, through ``buf`` from :func:`error_buffer`)."""
    out: list[BaseException] = []
    n = lib().cf_committer_take_errors(q, buf, TAKE)
    for i in range(n):
        try:
            raise_error(buf[i].code, buf + i)
        except BaseException as exc:  # noqa: BLE001 - kept for the caller
            out.append(exc)
    return out


def pause(q: Any) -> None:
    """Before a fork: wait for the batch being closed and hold still."""
    lib().cf_committer_pause(q)


def resume(q: Any) -> None:
    lib().cf_committer_resume(q)


def forget_after_fork(q: Any) -> None:
    """In a forked child: release the queued handles without committing."""
    lib().cf_committer_forget_after_fork(q)
