"""Task-local streams (``include/colfile_stream.h``, docs/format.md 8.7):
the layout arithmetic, writers and their tasks, task states handed
between processes, readers.

Writer, task and reader handles are opaque to the rest of colfile; a
writer is released by :func:`close` or :func:`discard` (which also free
its tasks), a reader by :func:`reader_close`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .._ffi import encode, encode_name, ffi, lib, string
from ._errors import check, new_error
from .memory import ptr, take_string_list

__all__ = [
    "file_of", "chunk_offset", "layout_choose", "files_default", "create", "reopen", "writer_info", "join", "writer_dir", "task_open",
    "append", "task_rows", "task_state", "commit_states", "task_part", "part_begin", "part_write", "part_end",
    "crc32c_join", "flush", "close", "discard",
    "reopen_head", "join_head", "table_slice", "task_resume", "slices_check", "writer_table_bytes",
    "open", "reader_close", "info", "size", "task_size", "task_start", "set_verify",
    "read_task", "read", "chunk", "check_chunk", "chunk_stats", "list_streams",
    "open_head", "join_reader", "reader_slice", "reader_slices_check", "reader_index", "reader_table_bytes",
]

Layout = tuple[int, int, int, int]  # tasks, files, chunk, align


def _layout(layout: Layout) -> Any:
    c = ffi.new("cf_stream_layout *")
    c.tasks, c.files, c.chunk, c.align = (int(v) for v in layout)
    return c


def file_of(tasks: int, files: int, task: int) -> tuple[int, int, int]:
    """(file, first task of that file, tasks in it); file -1 out of range."""
    first = ffi.new("int64_t *")
    count = ffi.new("int64_t *")
    f = lib().cf_stream_file_of(tasks, files, task, first, count)
    return int(f), int(first[0]), int(count[0])


def chunk_offset(layout: Layout, task: int, block: int) -> int:
    """Offset of chunk ``block`` of ``task`` in its file (-1 out of range)."""
    return int(lib().cf_stream_chunk_offset(_layout(layout), task, block))


def layout_choose(fh: Any, tasks: int, files: int, chunk: int, align: int) -> Layout:
    """``cf_stream_layout_choose``: (tasks, files, chunk, align)."""
    out = ffi.new("cf_stream_layout *")
    err = new_error()
    check(lib().cf_stream_layout_choose(out, fh, tasks, files, chunk, align, err), err, "create")
    return int(out.tasks), int(out.files), int(out.chunk), int(out.align)


def files_default(fh: Any, tasks: int, nodes: int) -> int:
    """``cf_stream_files_default``: physical files by default for ``tasks``
    tasks on ``nodes`` nodes (one per task on a local file system)."""
    return int(lib().cf_stream_files_default(fh, tasks, nodes))


def create(fh: Any, name: str, dtype: str, nmemb: int, layout: Layout) -> Any:
    """``cf_stream_create``: the owner's writer handle."""
    out = ffi.new("cf_stream_writer **")
    err = new_error()
    check(lib().cf_stream_create(out, fh, encode_name(name), dtype.encode(), nmemb, _layout(layout), err),
          err, "create")
    return out[0]


def reopen(fh: Any, name: str) -> Any:
    """``cf_stream_reopen``: the owner's writer of a committed stream."""
    out = ffi.new("cf_stream_writer **")
    err = new_error()
    check(lib().cf_stream_reopen(out, fh, encode_name(name), err), err, "column")
    return out[0]


def writer_info(w: Any) -> tuple[Layout, str, int]:
    """(layout, dtype token or "raw", nmemb) of a writer."""
    lay = ffi.new("cf_stream_layout *")
    dt = ffi.new("char[16]")
    nmemb = ffi.new("int64_t *")
    lib().cf_stream_writer_info(w, lay, dt, nmemb)
    return ((int(lay.tasks), int(lay.files), int(lay.chunk), int(lay.align)), ffi.string(dt).decode(),
            int(nmemb[0]))


def join(fh: Any, name: str, directory: str, dtype: str, nmemb: int, layout: Layout) -> Any:
    """``cf_stream_join``: a writer on another process of the owner's stream."""
    out = ffi.new("cf_stream_writer **")
    err = new_error()
    check(lib().cf_stream_join(out, fh, encode_name(name), encode(directory), dtype.encode(), nmemb,
                               _layout(layout), err), err, "create")
    return out[0]


def writer_dir(w: Any) -> str:
    """Where the writer's tasks write (``cf_stream_writer_dir``)."""
    return string(lib().cf_stream_writer_dir(w))


def task_open(w: Any, task: int) -> Any:
    """``cf_stream_task_open``: the task's handle (owned by ``w``)."""
    out = ffi.new("cf_stream_task **")
    err = new_error()
    check(lib().cf_stream_task_open(out, w, task, err), err, "create")
    return out[0]


def error_record() -> Any:
    """A ``cf_error *`` record for a task's appends to reuse."""
    return new_error()


def append(t: Any, rows: np.ndarray, count: int, err: Any = None) -> None:
    """``cf_stream_append`` of ``count`` rows from the C-contiguous array
    ``rows`` (already in the stream's dtype).  ``err``: a ``cf_error *``
    record to reuse (the task's own: a fresh one costs about as much as a
    small append)."""
    if err is None:
        err = new_error()
    check(lib().cf_stream_append(t, ptr(rows) if count else ffi.NULL, count, err), err, "column")


def task_rows(t: Any) -> int:
    """Rows appended to the task so far."""
    return int(lib().cf_stream_task_rows(t))


def task_state(t: Any) -> bytes:
    """``cf_stream_task_state``: the task's file made durable, and its state."""
    n = ffi.new("int64_t *")
    err = new_error()
    L = lib()
    check(L.cf_stream_task_state(t, ffi.NULL, 0, n, err), err, "column")
    buf = bytearray(int(n[0]))
    check(L.cf_stream_task_state(t, ffi.from_buffer(buf), len(buf), n, err), err, "column")
    return bytes(buf)


def commit_states(w: Any, states: bytes) -> None:
    """``cf_stream_commit_states``: the owner commits these states."""
    err = new_error()
    check(lib().cf_stream_commit_states(w, states, len(states), err), err, "column")


def task_part(t: Any) -> tuple[bytes, int]:
    """``cf_stream_task_part``: the task's file made durable, and its lines
    of the next table with their CRC32C."""
    text = ffi.new("char **")
    n = ffi.new("int64_t *")
    crc = ffi.new("uint32_t *")
    err = new_error()
    L = lib()
    check(L.cf_stream_task_part(t, text, n, crc, err), err, "column")
    try:
        return bytes(ffi.buffer(text[0], int(n[0]))), int(crc[0])
    finally:
        L.cf_free(text[0])


def part_begin(w: Any) -> tuple[str, int, int]:
    """``cf_stream_part_begin``: (temporary table, its head's length and CRC32C)."""
    tmp = ffi.new("char **")
    n = ffi.new("int64_t *")
    crc = ffi.new("uint32_t *")
    err = new_error()
    L = lib()
    check(L.cf_stream_part_begin(w, tmp, n, crc, err), err, "column")
    try:
        return os.fsdecode(ffi.string(tmp[0])), int(n[0]), int(crc[0])
    finally:
        L.cf_free(tmp[0])


def part_write(w: Any, tmp: str, offset: int, data: bytes, sync: bool) -> None:
    """``cf_stream_part_write``: bytes of the table at ``offset`` of ``tmp``."""
    err = new_error()
    check(lib().cf_stream_part_write(w, encode(tmp), offset, data, len(data), int(sync), err), err, "column")


def part_end(w: Any, tmp: str, length: int, crc: int, ok: bool) -> None:
    """``cf_stream_part_end``: seal and rename (ok), or remove ``tmp``."""
    err = new_error()
    check(lib().cf_stream_part_end(w, encode(tmp), length, crc, int(ok), err), err, "column")


def crc32c_join(a: int, b: int, len_b: int) -> int:
    """``cf_stream_crc32c_join``: the CRC32C of A then B."""
    return int(lib().cf_stream_crc32c_join(a, b, len_b))


def reopen_head(fh: Any, name: str) -> tuple[Any, bytes, int]:
    """``cf_stream_reopen_head``: (the owner's writer, the table's head
    lines, the table's size), reading nothing else of the table."""
    out = ffi.new("cf_stream_writer **")
    head = ffi.new("char **")
    hlen = ffi.new("int64_t *")
    tlen = ffi.new("int64_t *")
    err = new_error()
    L = lib()
    check(L.cf_stream_reopen_head(out, fh, encode_name(name), head, hlen, tlen, err), err, "column")
    try:
        return out[0], bytes(ffi.buffer(head[0], int(hlen[0]))), int(tlen[0])
    finally:
        L.cf_free(head[0])


def join_head(fh: Any, name: str, directory: str, head: bytes) -> Any:
    """``cf_stream_join_head``: a writer made from the table's head lines."""
    out = ffi.new("cf_stream_writer **")
    err = new_error()
    check(lib().cf_stream_join_head(out, fh, encode_name(name), encode(directory), head, len(head), err), err,
          "column")
    return out[0]


def table_slice(w: Any, lo: int, hi: int, end: int) -> tuple[int, list[bytes], int]:
    """``cf_stream_table_slice``: (first task, the lines of each task whose
    task line starts in bytes ``lo .. hi-1``, the CRC32C of those bytes)."""
    text = ffi.new("char **")
    n = ffi.new("int64_t *")
    ends = ffi.new("int64_t **")
    first = ffi.new("int64_t *")
    count = ffi.new("int64_t *")
    crc = ffi.new("uint32_t *")
    err = new_error()
    L = lib()
    check(L.cf_stream_table_slice(w, lo, hi, end, text, n, ends, first, count, crc, err), err, "column")
    try:
        data = bytes(ffi.buffer(text[0], int(n[0])))
        cuts = [0] + [int(ends[0][i]) for i in range(int(count[0]))]
        return int(first[0]), [data[a:b] for a, b in zip(cuts, cuts[1:])], int(crc[0])
    finally:
        L.cf_free(text[0])
        L.cf_free(ends[0])


def task_resume(w: Any, task: int, lines: bytes) -> None:
    """``cf_stream_task_resume``: the task continues after the state its
    lines of the table give."""
    err = new_error()
    check(lib().cf_stream_task_resume(w, task, lines, len(lines), err), err, "column")


def slices_check(w: Any, body_len: int, body_crc: int, tasks: int) -> None:
    """``cf_stream_slices_check``: the readers' ranges make the sealed table."""
    err = new_error()
    check(lib().cf_stream_slices_check(w, body_len, body_crc, tasks, err), err, "column")


def writer_table_bytes(w: Any) -> int:
    """Bytes of the committed table the writer read."""
    return int(lib().cf_stream_writer_table_bytes(w))


def flush(w: Any) -> None:
    """``cf_stream_flush``: commit every task opened through ``w``."""
    err = new_error()
    check(lib().cf_stream_flush(w, err), err, "column")


def close(w: Any) -> None:
    """``cf_stream_close``: commit, then release ``w`` (also on failure)."""
    err = new_error()
    check(lib().cf_stream_close(w, err), err, "column")


def discard(w: Any) -> None:
    """``cf_stream_discard``: release ``w`` without committing."""
    lib().cf_stream_discard(w)


def open(fh: Any, name: str) -> Any:  # noqa: A001
    """``cf_stream_open``: a reader of the committed stream."""
    out = ffi.new("cf_stream_reader **")
    err = new_error()
    check(lib().cf_stream_open(out, fh, encode_name(name), err), err, "column")
    return out[0]


def open_head(fh: Any, name: str) -> tuple[Any, bytes, int]:
    """``cf_stream_open_head``: (a reader of an open in slices, the table's
    head lines, the table's size), reading nothing else of the table."""
    out = ffi.new("cf_stream_reader **")
    head = ffi.new("char **")
    hlen = ffi.new("int64_t *")
    tlen = ffi.new("int64_t *")
    err = new_error()
    check(lib().cf_stream_open_head(out, fh, encode_name(name), head, hlen, tlen, err), err, "column")
    return out[0], bytes(ffi.buffer(head[0], int(hlen[0]))), int(tlen[0])


def join_reader(fh: Any, name: str, head: bytes, table_len: int) -> Any:
    """``cf_stream_join_reader``: a reader of the table the owner opened."""
    out = ffi.new("cf_stream_reader **")
    err = new_error()
    check(lib().cf_stream_join_reader(out, fh, encode_name(name), head, len(head), table_len, err), err,
          "column")
    return out[0]


def reader_slice(r: Any, lo: int, hi: int) -> tuple[int, np.ndarray, np.ndarray, int]:
    """``cf_stream_reader_slice``: (first task, where each task's lines
    start and the last ends, each task's committed bytes, the CRC32C of
    bytes ``lo .. hi-1``)."""
    first = ffi.new("int64_t *")
    count = ffi.new("int64_t *")
    at = ffi.new("int64_t **")
    nb = ffi.new("int64_t **")
    crc = ffi.new("uint32_t *")
    err = new_error()
    L = lib()
    check(L.cf_stream_reader_slice(r, lo, hi, first, count, at, nb, crc, err), err, "column")
    try:
        n = int(count[0])
        return (int(first[0]), np.frombuffer(ffi.buffer(at[0], 8 * (n + 1)), np.int64).copy(),
                np.frombuffer(ffi.buffer(nb[0], 8 * n), np.int64).copy() if n else np.zeros(0, np.int64),
                int(crc[0]))
    finally:
        L.cf_free(at[0])
        L.cf_free(nb[0])


def reader_slices_check(r: Any, body_len: int, body_crc: int, tasks: int) -> None:
    """``cf_stream_reader_slices_check``: the readers' ranges make the
    sealed table."""
    err = new_error()
    check(lib().cf_stream_reader_slices_check(r, body_len, body_crc, tasks, err), err, "column")


def reader_index(r: Any, nbytes: np.ndarray, line_at: np.ndarray) -> None:
    """``cf_stream_reader_index``: every task's bytes and lines' offsets."""
    b = np.ascontiguousarray(nbytes, np.int64)
    a = np.ascontiguousarray(line_at, np.int64)
    err = new_error()
    check(lib().cf_stream_reader_index(r, ffi.cast("int64_t *", ptr(b)), ffi.cast("int64_t *", ptr(a)), err), err,
          "column")


def reader_table_bytes(r: Any) -> int:
    """Bytes of the committed table the reader read."""
    return int(lib().cf_stream_reader_table_bytes(r))


def reader_close(r: Any) -> None:
    lib().cf_stream_reader_close(r)


def info(r: Any) -> dict[str, Any]:
    """The layout, dtype token (or ``"raw"``), nmemb and commit count."""
    lay = ffi.new("cf_stream_layout *")
    dt = ffi.new("char[16]")
    nmemb = ffi.new("int64_t *")
    commit = ffi.new("int64_t *")
    lib().cf_stream_info(r, lay, dt, nmemb, commit)
    return {"tasks": int(lay.tasks), "files": int(lay.files), "chunk": int(lay.chunk),
            "align": int(lay.align), "dtype": ffi.string(dt).decode(), "nmemb": int(nmemb[0]),
            "commit": int(commit[0])}


def size(r: Any) -> int:
    return int(lib().cf_stream_size(r))


def task_size(r: Any, task: int) -> int:
    return int(lib().cf_stream_task_size(r, task))


def task_start(r: Any, task: int) -> int:
    return int(lib().cf_stream_task_start(r, task))


def set_verify(r: Any, on: bool) -> None:
    lib().cf_stream_set_verify(r, 1 if on else 0)


def read_task(r: Any, task: int, start: int, count: int, out: np.ndarray) -> None:
    """``cf_stream_read_task`` into the C-contiguous array ``out``."""
    err = new_error()
    check(lib().cf_stream_read_task(r, task, start, count, ptr(out) if count else ffi.NULL, err), err,
          "column")


def read(r: Any, start: int, count: int, out: np.ndarray) -> None:
    """``cf_stream_read`` (the global view) into the C-contiguous ``out``."""
    err = new_error()
    check(lib().cf_stream_read(r, start, count, ptr(out) if count else ffi.NULL, err), err, "column")


def chunk(r: Any, task: int, block: int) -> tuple[int, int, int, int]:
    """(file, offset, committed bytes, CRC32C) of a task's chunk."""
    f = ffi.new("int64_t *")
    off = ffi.new("int64_t *")
    n = ffi.new("int64_t *")
    crc = ffi.new("uint32_t *")
    err = new_error()
    check(lib().cf_stream_chunk(r, task, block, f, off, n, crc, err), err, "column")
    return int(f[0]), int(off[0]), int(n[0]), int(crc[0])


def check_chunk(r: Any, task: int, block: int) -> None:
    """``cf_stream_check_chunk``: raise when the chunk's committed bytes
    are missing, cut short or do not match its CRC32C."""
    err = new_error()
    check(lib().cf_stream_check_chunk(r, task, block, err), err, "column")


def chunk_stats(r: Any, task: int, block: int, component: int) -> tuple[Any, ...]:
    """``cf_stream_chunk_stats``: ``(blob, first_row, rows, valid, ordered,
    count, nan_count, min, max, sum)``, blob being the task."""
    st = ffi.new("cf_chunk_stats *")
    err = new_error()
    check(lib().cf_stream_chunk_stats(r, task, block, component, st, err), err, "column")
    return (st.blob, st.first_row, st.rows, st.valid, st.ordered, st.count, st.nan_count, st.min, st.max,
            st.sum)


def list_streams(fh: Any) -> list[str]:
    """The File's streams (``cf_file_list_streams``), sorted."""
    err = new_error()
    L = lib()
    return take_string_list(lambda names, count: check(L.cf_file_list_streams(fh, names, count, err), err))
