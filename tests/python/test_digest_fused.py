"""The inline digest (byte sum, CRC32C, per-chunk statistics computed on the
writing thread) against references computed here, independently, on random
data: every numeric dtype, rows of 1 to 4 components, NaN, +-inf, -0.0,
subnormals, odd lengths, a start that is not aligned for the dtype, writes
split at odd rows.  Whatever kernels the CPU takes (carry-less folding,
crc32 streams, AVX2 row folders, scalar loops), the bits must be these."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colfile
from colfile.chunkindex import chunk_crc32c


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


CRC_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    t = CRC_TABLE
    for b in data:
        c = (c >> 8) ^ t[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


DTYPES = ["f8", "f4", "f2", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]
SPECIALS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, -2.5e-310, 1e-45, -1e-40, 6e-8, 1e300, -1e300,
            65504.0, 3.4e38]


def make_values(dt: np.dtype, n: int, seed: int, specials: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dt.kind == "f":
        scale = 10.0 ** rng.integers(-5, 6)
        x = (rng.standard_normal(n) * scale).astype(dt)
        with np.errstate(over="ignore"):
            for _ in range(specials):
                x[rng.integers(0, n)] = dt.type(SPECIALS[int(rng.integers(0, len(SPECIALS)))])
        return x
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    for _ in range(specials):
        x[rng.integers(0, n)] = info.min if rng.integers(0, 2) else info.max
    return x


def ref_stats(v: np.ndarray) -> tuple[int, int, float, float, float]:
    """count, NaNs, min, max (-0.0 below +0.0), correctly rounded sum."""
    if v.dtype.kind == "f":
        w = v.astype(np.float64)
        good = w[~np.isnan(w)]
        nan = int(len(w) - len(good))
        if len(good) == 0:
            return len(w), nan, math.inf, -math.inf, 0.0
        order = sorted(good.tolist(), key=lambda a: (a, math.copysign(1.0, a)))
        pos, neg = bool(np.any(good == math.inf)), bool(np.any(good == -math.inf))
        if pos and neg:
            s = math.nan
        elif pos or neg:
            s = math.inf if pos else -math.inf
        else:
            s = math.fsum(good.tolist()) + 0.0  # an exact zero is +0.0
        return len(w), nan, order[0], order[-1], s
    ints = [int(a) for a in v.tolist()]
    return len(ints), 0, outward(min(ints), -math.inf), outward(max(ints), math.inf), float(sum(ints))


def outward(x: int, way: float) -> float:
    """x as a double, rounded towards `way` (the statistics' integer min and max)."""
    d = float(x)
    if (way < 0 and int(d) > x) or (way > 0 and int(d) < x):
        d = math.nextafter(d, way)
    return d


def same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dtype=st.sampled_from(DTYPES), nmemb=st.integers(1, 4), rows=st.integers(1, 3000),
       chunk_rows=st.sampled_from([7, 64, 1000, 4096]), split=st.integers(0, 3000),
       misalign=st.integers(0, 7), specials=st.integers(0, 12), seed=st.integers(0, 2**32 - 1))
def test_inline_digest_matches_references(tmp_path: Path, dtype: str, nmemb: int, rows: int, chunk_rows: int,
                                          split: int, misalign: int, specials: int, seed: int) -> None:
    dt = np.dtype(dtype)
    values = make_values(dt, rows * nmemb, seed, specials)
    raw = values.tobytes()
    # the caller's buffer starts `misalign` bytes into an allocation
    store = np.zeros(len(raw) + 8, dtype=np.uint8)
    store[misalign:misalign + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    buf = store[misalign:misalign + len(raw)].view(dt)
    buf = buf.reshape(rows, nmemb) if nmemb > 1 else buf
    split = min(split, rows)
    path = tmp_path / f"f{seed}"
    with colfile.File(path, "w", durable=False, digest="inline") as f:
        assert f.digest_placement == "inline"
        col = f.create("c", (dtype, nmemb) if nmemb > 1 else dtype, size=rows, chunk_rows=chunk_rows)
        if split:
            col[:split] = buf[:split]
        if split < rows:
            col[split:] = buf[split:]
        # chunk CRC32Cs: known to the handle that wrote them
        rowbytes = nmemb * dt.itemsize
        for k in range(-(-rows // chunk_rows)):
            lo, hi = k * chunk_rows, min(rows, (k + 1) * chunk_rows)
            assert chunk_crc32c(col, k) == crc32c(raw[lo * rowbytes:hi * rowbytes])
        col.close()
    with colfile.File(path) as f:
        col = f["c"]
        info = col.blob_info(0)
        assert info["sum"] == sum(raw) % 2**32
        assert info["crc32c"] == crc32c(raw)
        stats = col.chunk_stats()
        nchunks = -(-rows // chunk_rows)
        assert stats.shape[0] == nchunks
        grid = values.reshape(rows, nmemb)
        for k in range(nchunks):
            lo, hi = k * chunk_rows, min(rows, (k + 1) * chunk_rows)
            for j in range(nmemb):
                rec = stats[k, j] if nmemb > 1 or stats.ndim > 1 else stats[k]
                assert bool(rec["valid"])
                count, nan, mn, mx, s = ref_stats(grid[lo:hi, j])
                assert int(rec["count"]) == count
                assert int(rec["nan_count"]) == nan
                if count > nan:
                    assert same(float(rec["min"]), mn), (k, j, rec["min"], mn)
                    assert same(float(rec["max"]), mx), (k, j, rec["max"], mx)
                assert same(float(rec["sum"]), s), (k, j, rec["sum"], s)
