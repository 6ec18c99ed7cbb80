"""make_golden.py - write the golden files of colfile's extensions.

The golden files pin the bytes of what docs/format.md defines beyond
bigfile's own format (section 10): the CRC32C check values, the two byte-sum
examples of section 6, a current and a stale `colfile-v1` with their
statistics sections (8.1, 8.4), a `colfile-attrs` holding an empty array
(8.2), an interrupted in-place update (`colfile-torn`, 8.3) and the File
catalog (8.5).  This script writes them from the spec alone, without
colfile, so that it is a second implementation of those rules:
tests/python/test_golden.py checks that colfile reads the files as the spec
says and that colfile, given the same inputs, writes the same bytes.

    python tests/golden/make_golden.py [OUTDIR]     (default: tests/golden)

writes OUTDIR/ext (a File) and OUTDIR/colfile-catalog-v1.canonical (the
catalog of that File in canonical form, see CATALOG below).  Output is the
same on every run and machine; only numpy is needed.

The binding of `colfile-v1` to its header is a modification time (8.1),
which git does not keep: a File checked out from git has every `colfile-v1`
stale.  Tests copy `ext` and give each `colfile-v1` its header's time.
"""

from __future__ import annotations

import os
import shutil
import struct
import sys
from typing import Any

import numpy as np

# ----------------------------------------------------------------- inputs

#: The 8.4 example: a <f8 column of vectors of 3, blobs of 2 and 3 rows.
STATS_ROWS = [[1.5, 2.0, -0.0], [0.25, float("nan"), 0.0],
              [10.0, 20.0, 30.0], [11.0, 21.0, 31.0], [12.0, float("inf"), 32.5]]


def _fold_bytes() -> np.ndarray:
    """735 bytes whose sum is 96585 (section 6, example 2): a fixed pattern,
    raised byte by byte (never past 255) until the sum is reached."""
    b = [(i * 113 + 7) % 256 for i in range(735)]
    need, i = 96585 - sum(b), 0
    while need > 0:
        step = min(255 - b[i], need)
        b[i] += step
        need -= step
        i += 1
    return np.array(b, dtype="<u1")


def columns() -> list[dict[str, Any]]:
    """Every column of the golden File: the data of each blob as committed
    (the dtype is theirs), CHUNK when not the default, attributes, and a
    later write of rows over committed ones that colfile-v1 does not know
    of: ``foreign`` (blob, first row in it, values)."""
    i8 = np.dtype("<i8")
    return [
        # the CRC32C check value and the empty input (8.1)
        {"name": "crc/check", "blobs": [np.frombuffer(b"123456789", "<u1")]},
        {"name": "crc/empty", "blobs": [np.zeros(0, "<u1")]},
        # section 6, example 1: blob 000002 holds the bytes 52 B9 CD F5
        {"name": "sums/sparse", "blobs": [
            np.zeros(0, "<i4"), np.zeros(0, "<i4"),
            np.frombuffer(bytes([0x52, 0xB9, 0xCD, 0xF5]), "<i4"), np.zeros(0, "<i4"),
            np.array([123456789], "<i4"), np.zeros(0, "<i4"), np.array([-2], "<i4")]},
        # section 6, example 2: 735 bytes summing to 96585, folded to 31050
        {"name": "sums/fold", "blobs": [_fold_bytes()]},
        # the 8.4 example, CHUNK 2: a current colfile-v1 with statistics
        {"name": "stats", "chunk": 2, "blobs": [
            np.array(STATS_ROWS[:2], "<f8"), np.array(STATS_ROWS[2:], "<f8")]},
        # a stale colfile-v1: committed with [1, 2] [3, 4]; then a tool that
        # ignores colfile-v1 (bigfile) wrote 40 over the 4 and the header
        # (its rawsum counts the 40 on top of the 4, section 6)
        {"name": "stale", "blobs": [np.array([1, 2], i8), np.array([3, 4], i8)],
         "foreign": (1, 1, np.array([40], i8))},
        # colfile-attrs: an empty array, which attr-v2 cannot hold (8.2)
        {"name": "attrs", "blobs": [np.array([0.5, -1.5], "<f4")],
         "attrs": [("unit", "<a1", b"kpc")],
         "ext_attrs": [("empty", "<f8", b"")]},
        # an interrupted in-place update (8.3, step 5): committed [5, 6, 7],
        # the 6 overwritten by 60, the header never rewritten
        {"name": "torn", "blobs": [np.array([5, 6, 7], i8)],
         "foreign": (0, 1, np.array([60], i8)),
         "torn": b"in-place update by pid 4711\n"},
    ]


#: Attributes of the File itself.
FILE_ATTRS = [("BoxSize", "<f8", struct.pack("<d", 100.0))]

# ----------------------------------------------------------- the rules


def crc32c(data: bytes) -> int:
    """Castagnoli CRC: reflected polynomial 0x82F63B78, initial value and
    final xor 0xFFFFFFFF (8.1)."""
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    return c ^ 0xFFFFFFFF


def rawsum(data: bytes) -> int:
    """Section 6: the byte sum modulo 2^32."""
    return sum(data) & 0xFFFFFFFF


def foldsum(s: int) -> int:
    """Section 6: the SysV fold of a rawsum."""
    t = (s & 0xFFFF) + (s >> 16)
    return (t & 0xFFFF) + (t >> 16)


def header_text(token: str, nmemb: int, rows: list[int], sums: list[int]) -> bytes:
    """Section 3.1."""
    out = f"DTYPE: {token}\nNMEMB: {nmemb}\nNFILE: {len(rows)}\n"
    for i, (n, s) in enumerate(zip(rows, sums)):
        out += f"{i:06X}: {n} : {s} : {foldsum(s)}\n"
    return out.encode()


def g17(v: float) -> str:
    """A double as 8.4 writes it: inf, -inf, nan or C's %.17g."""
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return "%.17g" % v


def default_chunk(nmemb: int, width: int, rows: int) -> int:
    """8.4: for a column created with ``rows`` rows, the smallest power of
    two whose chunk holds at least 512 KiB per component, doubled while the
    column keeps at least 2^15 chunks, never above the coarsest default:
    the largest power of two up to 2^20 whose chunk holds at most 8 MiB, at
    least 1 (which a column created empty gets)."""
    coarse = 1 << 20
    while coarse > 1 and coarse * nmemb * width > (1 << 23):
        coarse >>= 1
    if rows <= 0:
        return coarse
    c = 1
    while c < coarse and c * width < (1 << 19):
        c <<= 1
    while c < coarse and rows // (2 * c) >= (1 << 15):
        c <<= 1
    return c


def chunk_line(k: int, j: int, v: np.ndarray) -> str:
    """One chunk line of 8.4 for the values v of component j of chunk k
    (integer and float kinds, which the golden columns use)."""
    n = len(v)
    if v.dtype.kind == "f":
        nan = int(np.isnan(v).sum())
        ok = [float(x) for x in v if x == x]
        # -0.0 orders below +0.0
        lo = min(ok, key=lambda x: (x, np.copysign(1, x)), default=float("inf"))
        hi = max(ok, key=lambda x: (x, np.copysign(1, x)), default=float("-inf"))
        total = float("nan") if (float("inf") in ok and float("-inf") in ok) else float(sum(ok))
        mn, mx, sm = g17(lo), g17(hi), g17(total)
    else:
        nan = 0
        ints = [int(x) for x in v]
        mn, mx, sm = str(min(ints)), str(max(ints)), g17(float(sum(ints)))
    return f"{k} {j} count={n} nan={nan} min={mn} max={mx} sum={sm}\n"


def ext_text(token: str, nmemb: int, blobs: list[np.ndarray], chunk: int) -> bytes:
    """8.1 and 8.4: blob lines with their CRC32C, the statistics section,
    and the checksum line sealing it all."""
    raw = [b.tobytes() for b in blobs]
    out = f"COLFILE-EXT: 1\nDTYPE: {token}\nNMEMB: {nmemb}\nNFILE: {len(blobs)}\n"
    for i, b in enumerate(raw):
        out += f"{i:06X}: {len(blobs[i])} : {rawsum(b)} : crc32c={crc32c(b):08x}\n"
    out += f"COLFILE-STATS: 1\nDTYPE: {token}\nNMEMB: {nmemb}\nNFILE: {len(blobs)}\nCHUNK: {chunk}\n"
    for i, b in enumerate(blobs):
        rows = b.reshape(len(b), nmemb)
        out += f"{i:06X}: {len(rows)} : {rawsum(raw[i])}\n"
        for k in range(0, len(rows), chunk):
            for j in range(nmemb):
                out += chunk_line(k // chunk, j, rows[k:k + chunk, j])
    body = out.encode()
    return body + b"CRC32C: %08x\n" % crc32c(body)


def humane(token: str, nmemb: int, data: bytes) -> str:
    """7.2 for the kinds used here: text for `a`, %g for `f8`."""
    if len(data) > 128:
        return "... (Too Long) "
    if token[1] == "a":
        text = data.split(b"\0")[0]
        if b"\n" in text:
            text = text.split(b"\n")[0] + b"..."
        return text.decode()
    assert token == "<f8", token
    return " ".join("%g" % x for x in struct.unpack(f"<{nmemb}d", data))


def attr_text(attrs: list[tuple[str, str, bytes]]) -> bytes:
    """7.1: one line per attribute, in bytewise order of names."""
    out = b""
    for name, token, data in sorted(attrs, key=lambda a: a[0].encode()):
        width = int(token[2:])
        nmemb = len(data) // width
        out += (f"{name} {token} {nmemb} {data.hex().upper()} "
                f"#HUMANE [ {humane(token, nmemb, data)} ]\n").encode()
    return out


# --------------------------------------------------------------- the File

#: Catalog slots, in order (8.5), and those whose bytes are never copied.
SLOTS = ["header", "colfile-v1", "colfile-stats-v1", "attr", "attr-v2", "colfile-attrs"]
NOT_COPIED = {"colfile-v1", "colfile-stats-v1"}
INLINE_MAX = 64 * 1024


def _write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def write_file(root: str) -> None:
    """The golden File at root (replaced when it exists)."""
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    _write(os.path.join(root, "attr-v2"), attr_text(FILE_ATTRS))
    for col in columns():
        d = os.path.join(root, *col["name"].split("/"))
        blobs = col["blobs"]
        dt = blobs[0].dtype
        token = dt.str.replace("|", "<")  # 4.2: `|` becomes the machine order
        nmemb = 1 if blobs[0].ndim == 1 else blobs[0].shape[1]
        chunk = col.get("chunk", default_chunk(nmemb, dt.itemsize, sum(len(b) for b in blobs)))
        now = [b.copy() for b in blobs]
        sums = [rawsum(b.tobytes()) for b in blobs]
        if "foreign" in col:  # rows written over committed ones
            i, row, values = col["foreign"]
            now[i][row:row + len(values)] = values
            if "torn" not in col:  # a writer that got to rewrite the header
                sums[i] = (sums[i] + rawsum(values.tobytes())) & 0xFFFFFFFF
        _write(os.path.join(d, "header"), header_text(token, nmemb, [len(b) for b in blobs], sums))
        _write(os.path.join(d, "colfile-v1"), ext_text(token, nmemb, blobs, chunk))
        _write(os.path.join(d, "attr-v2"), attr_text(col.get("attrs", [])))
        if col.get("ext_attrs"):
            _write(os.path.join(d, "colfile-attrs"), attr_text(col["ext_attrs"]))
        if "torn" in col:
            _write(os.path.join(d, "colfile-torn"), col["torn"])
        for i, b in enumerate(now):
            _write(os.path.join(d, f"{i:06X}"), b.tobytes())


# ------------------------------------------------------------- catalog

CATALOG = """The catalog of the golden File (8.5) in canonical form: generation 0
(the File has no generation file), every stamp seven zeros, and the directories in bytewise order of their paths (a
writer records them in the order its walk meets them, which depends on the
file system), the columns' indices and the CRC32C following from that."""


def _u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def _text(b: bytes) -> bytes:
    return _u64(len(b) + 1) + b + b"\0"


ZERO_STAMP = _u64(0) * 7


def catalog(root: str) -> bytes:
    """The canonical catalog of the File at root (CATALOG)."""
    names = []  # columns: directories holding a header, not entered
    dirs = [""]

    def walk(rel: str) -> None:
        for e in sorted(os.listdir(os.path.join(root, rel) if rel else root)):
            sub = f"{rel}/{e}" if rel else e
            if e.startswith(".") or not os.path.isdir(os.path.join(root, sub)):
                continue
            dirs.append(sub)
            if os.path.exists(os.path.join(root, sub, "header")):
                names.append(sub)
            else:
                walk(sub)

    walk("")
    dirs.sort(key=str.encode)
    # generation 0: no writer of the File has bumped it
    out = b"CFCAT2\n\0" + _u64(0) + _u64(len(dirs))
    for d in dirs:
        out += _text(d.encode()) + ZERO_STAMP
    out += _u64(len(names))
    for name in sorted(names, key=str.encode):
        parts = name.split("/")
        chain = ["/".join(parts[:i + 1]) for i in range(len(parts))]
        out += _text(name.encode()) + _u64(len(chain)) + b"".join(_u64(dirs.index(p)) for p in chain)
        cdir = os.path.join(root, name)
        if os.path.exists(os.path.join(cdir, "colfile-torn")):
            out += _u64(0)  # incomplete: rows are being, or were, changed
            continue
        out += _u64(1)
        for slot in SLOTS:
            p = os.path.join(cdir, slot)
            if not os.path.exists(p):
                out += _u64(0)
                continue
            with open(p, "rb") as fh:
                data = fh.read()
            if slot in NOT_COPIED or len(data) > INLINE_MAX:
                out += _u64(2) + ZERO_STAMP
            else:
                out += _u64(1) + ZERO_STAMP + _text(data)
    return out + struct.pack("<I", crc32c(out))


def main(argv: list[str]) -> int:
    out = argv[0] if argv else os.path.dirname(os.path.abspath(__file__))
    root = os.path.join(out, "ext")
    write_file(root)
    _write(os.path.join(out, "colfile-catalog-v1.canonical"), catalog(root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
