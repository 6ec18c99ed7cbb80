"""What an append costs beyond the write itself (docs/streams.md,
"Measuring appends"): a raw stream takes an array's or a buffer's bytes
where they are, without a copy, in any layout; the bytes are those of the
object as it is in memory."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np

import colfile
import colfile.stream as cs

MB = 1 << 20


def peak_during(fn) -> int:  # type: ignore[no-untyped-def]
    """Bytes allocated at the peak while fn() runs (numpy reports its
    buffers to tracemalloc)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - base


def test_raw_append_copies_nothing(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    data = rng.normal(size=(8 * MB) // 8)          # 8 MiB of doubles
    words = rng.integers(0, 1 << 30, MB // 4, dtype="<u4")
    with colfile.File(str(tmp_path / "f"), "w", durable=False) as f:
        with cs.create(f, "log", "raw") as w:
            t = w.task()
            t.append(b"head")
            # a contiguous array, a bytearray and a memoryview: no copy of their bytes
            for obj in (data, bytearray(data.tobytes()), memoryview(words)):
                assert peak_during(lambda o=obj: t.append(o)) < MB // 4, type(obj)
            t.append(data[::2])                     # strided: its elements in order
            t.append(data.reshape(-1, 2).T)         # Fortran order: as numpy's tobytes gives it
        got = cs.open(f, "log").task(0).tobytes()
    want = (b"head" + data.tobytes() + data.tobytes() + words.tobytes() + data[::2].tobytes()
            + data.reshape(-1, 2).T.tobytes())
    assert got == want


def test_typed_append_copies_nothing_in_its_dtype(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    data = rng.normal(size=(8 * MB) // 8)
    with colfile.File(str(tmp_path / "f"), "w", durable=False) as f:
        with cs.create(f, "x", "<f8") as w:
            assert peak_during(lambda: w.append(data)) < MB // 4
            w.append(data[::-1])                    # not contiguous: converted, same rows
            w.append(data[:5].astype("<f4"))        # same kind: cast
        got = cs.open(f, "x").task(0)
    np.testing.assert_array_equal(got, np.concatenate([data, data[::-1], data[:5].astype("<f4")]))
