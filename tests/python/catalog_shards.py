"""A strict reader of the sharded File catalog (docs/format.md 8.5), for
tests: the index and its shards, checked byte for byte, and the same
catalog in the shape of the single-file one (test_golden.parse_catalog),
so that either can be compared with the canonical catalog."""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from exttext import crc32c

SLOTS = ["header", "colfile-v1", "colfile-stats-v1", "attr", "attr-v2", "colfile-attrs"]
INDEX = "colfile-catalog-index"
SHARD_PREFIX = "colfile-catalog-shard-"


class _Reader:
    def __init__(self, buf: bytes, magic: bytes) -> None:
        assert buf[:8] == magic, buf[:8]
        (crc,) = struct.unpack_from("<I", buf, len(buf) - 4)
        assert crc == crc32c(buf[:-4]), "CRC32C of everything before it"
        self.buf, self.pos, self.crc = buf, 8, crc

    def u64(self) -> int:
        (v,) = struct.unpack_from("<Q", self.buf, self.pos)
        self.pos += 8
        return int(v)

    def text(self) -> bytes:
        n = self.u64()
        assert n >= 1 and self.buf[self.pos + n - 1] == 0, "a text ends in NUL"
        out = self.buf[self.pos:self.pos + n - 1]
        self.pos += n
        return out

    def stamp(self) -> tuple[int, ...]:
        return tuple(self.u64() for _ in range(7))

    def done(self) -> None:
        assert self.pos == len(self.buf) - 4, "nothing between the content and the CRC32C"


def read_index(root: Path) -> dict[str, Any]:
    """The index: "marks" is the number of '+' open in the generation
    file's first "generation" bytes, None in an index before that field
    (CFIDX3)."""
    buf = (root / ".colfile-catalog" / INDEX).read_bytes()
    r = _Reader(buf, b"CFIDX3\n\0" if buf[:8] == b"CFIDX3\n\0" else b"CFIDX4\n\0")
    generation = r.u64()
    marks = r.u64() if buf[:8] == b"CFIDX4\n\0" else None
    assert marks is None or marks <= generation
    dirs = [(r.text(), r.stamp()) for _ in range(r.u64())]
    assert [d[0] for d in dirs] == sorted(d[0] for d in dirs) and dirs[0][0] == b""
    shards = []
    for _ in range(r.u64()):
        shard = {"file": r.text().decode(), "first": r.text(), "last": r.text(),
                 "count": r.u64(), "size": r.u64(), "crc": r.u64(), "bytes": None}
        if not shard["file"]:  # a small catalog: the shard's bytes follow
            shard["bytes"] = r.buf[r.pos:r.pos + shard["size"]]
            r.pos += shard["size"]
        shards.append(shard)
    r.done()
    return {"generation": generation, "marks": marks, "dirs": dirs, "shards": shards}


def read_shard(root: Path, shard: dict[str, Any]) -> list[dict[str, Any]]:
    buf = shard["bytes"] if shard["bytes"] is not None else (root / ".colfile-catalog" / shard["file"]).read_bytes()
    assert len(buf) == shard["size"]
    r = _Reader(buf, b"CFSHD3\n\0")
    assert r.crc == shard["crc"]
    cols = []
    for _ in range(r.u64()):
        name, own, complete = r.text(), r.stamp(), r.u64()
        files = []
        for _slot in SLOTS if complete else []:
            state = r.u64()
            st = r.stamp() if state else None
            files.append((state, st, r.text() if state == 1 else None))
        cols.append({"name": name, "own": own, "complete": complete, "files": files})
    r.done()
    assert len(cols) == shard["count"]
    assert cols[0]["name"] == shard["first"] and cols[-1]["name"] == shard["last"]
    return cols


def read_catalog(root: Path) -> dict[str, Any]:
    """The whole sharded catalog of the File at root as test_golden's
    parse_catalog gives the single-file one: the directories (groups,
    then each column's own), each column's chain of directory indices."""
    index = read_index(root)
    dirs = list(index["dirs"])
    where = {d[0]: i for i, d in enumerate(dirs)}
    cols = []
    for shard in index["shards"]:
        for c in read_shard(root, shard):
            parts = c["name"].split(b"/")
            chain = [where[b"/".join(parts[:k])] for k in range(1, len(parts))]
            chain.append(len(dirs))
            dirs.append((c["name"], c["own"]))
            cols.append({"name": c["name"], "chain": chain, "complete": c["complete"], "files": c["files"]})
    names = [c["name"] for c in cols]
    assert names == sorted(names) and len(set(names)) == len(names)
    return {"generation": index["generation"], "dirs": dirs, "cols": cols}


def _u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def _text(b: bytes) -> bytes:
    return _u64(len(b) + 1) + b + b"\0"


def _stamp(st: tuple[int, ...]) -> bytes:
    return b"".join(_u64(v) for v in st)


def write_shard(root: Path, shard: dict[str, Any], cols: list[dict[str, Any]]) -> None:
    """Replace the shard's file with these columns (read_shard's shape) and
    record its new size and CRC32C in `shard` (write_index then names it)."""
    out = b"CFSHD3\n\0" + _u64(len(cols))
    for c in cols:
        out += _text(c["name"]) + _stamp(c["own"]) + _u64(c["complete"])
        for state, st, data in c["files"]:
            out += _u64(state) + (_stamp(st) if state else b"") + (_text(data) if state == 1 else b"")
    crc = crc32c(out)
    out += struct.pack("<I", crc)
    if shard["file"]:
        (root / ".colfile-catalog" / shard["file"]).write_bytes(out)
    else:
        shard["bytes"] = out
    shard.update(size=len(out), crc=crc, count=len(cols))


def write_index(root: Path, index: dict[str, Any]) -> None:
    """Replace the index (read_index's shape; "marks" None: an index
    before that field, CFIDX3)."""
    marks = index.get("marks")
    out = (b"CFIDX3\n\0" + _u64(index["generation"]) if marks is None
           else b"CFIDX4\n\0" + _u64(index["generation"]) + _u64(marks))
    out += _u64(len(index["dirs"]))
    for path, st in index["dirs"]:
        out += _text(path) + _stamp(st)
    out += _u64(len(index["shards"]))
    for s in index["shards"]:
        out += (_text(s["file"].encode()) + _text(s["first"]) + _text(s["last"]) + _u64(s["count"])
                + _u64(s["size"]) + _u64(s["crc"]) + (s["bytes"] if not s["file"] else b""))
    tmp = root / ".colfile-catalog" / "new-index"
    tmp.write_bytes(out + struct.pack("<I", crc32c(out)))
    tmp.rename(root / ".colfile-catalog" / INDEX)
