"""The golden files of colfile's extensions (tests/golden, docs/format.md
section 10): colfile reads them as the spec says, colfile writes the same
bytes from the same inputs (so a format change fails here first), and
tests/golden/make_golden.py, a second implementation of those rules,
still writes exactly the files kept in git."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import struct
import subprocess
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import catalog_shards
import colfile

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
EXT = GOLDEN / "ext"
CANONICAL = GOLDEN / "colfile-catalog-v1.canonical"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gen = _generator()
COLUMNS = {c["name"]: c for c in gen.columns()}


def _tree(top: Path) -> dict[str, bytes]:
    """Every file below top (hidden ones too) and its bytes."""
    out = {}
    for dirpath, _, files in os.walk(top):
        for n in files:
            p = Path(dirpath) / n
            out[str(p.relative_to(top))] = p.read_bytes()
    return out


def _bind(root: Path, name: str, *, current: bool = True) -> None:
    """Give colfile-v1 its header's modification time (8.1), which git does
    not keep; with current False, one second less (stale)."""
    d = root / name
    t = os.stat(d / "header").st_mtime_ns - (0 if current else 1_000_000_000)
    os.utime(d / "colfile-v1", ns=(t, t))


def _copy(tmp_path: Path) -> Path:
    """A copy of the golden File with every colfile-v1 bound to its header."""
    root = tmp_path / "ext"
    shutil.copytree(EXT, root)
    for name in COLUMNS:
        _bind(root, name)
    return root


@pytest.fixture
def golden(tmp_path: Path, lib: Any) -> Path:
    return _copy(tmp_path)


# ------------------------------------------------------------ the generator


def test_generator_reproduces_the_golden_files(tmp_path: Path) -> None:
    """make_golden.py writes exactly the files kept in git, no more."""
    assert gen.main([str(tmp_path)]) == 0
    want = {k: v for k, v in _tree(GOLDEN).items()
            if k != "make_golden.py" and "__pycache__" not in k}
    assert _tree(tmp_path) == want


def test_generator_computes_the_spec_examples() -> None:
    """The generator's rules give the spec's numbers (8.1, section 6)."""
    assert gen.crc32c(b"123456789") == 0xE3069283
    assert gen.crc32c(b"") == 0
    assert gen.foldsum(96585) == 31050
    assert gen.default_chunk(3, 8, 0) == 262144
    assert gen.default_chunk(3, 8, 5) == 65536
    assert gen.default_chunk(3, 8, 1 << 33) == 262144


# ------------------------------------------------------------------- bytes


def test_crc32c_check_values_in_colfile_v1() -> None:
    """8.1: `123456789` gives e3069283, a blob without rows 00000000."""
    check = (EXT / "crc/check/colfile-v1").read_text()
    assert (EXT / "crc/check/000000").read_bytes() == b"123456789"
    assert "000000: 9 : 477 : crc32c=e3069283\n" in check
    assert "000000: 0 : 0 : crc32c=00000000\n" in (EXT / "crc/empty/colfile-v1").read_text()
    assert (EXT / "crc/empty/000000").read_bytes() == b""


def test_section6_examples_in_headers() -> None:
    """Both examples of section 6, as header lines."""
    sparse = (EXT / "sums/sparse/header").read_text().splitlines()
    assert sparse[3:] == ["000000: 0 : 0 : 0", "000001: 0 : 0 : 0", "000002: 1 : 717 : 717",
                          "000003: 0 : 0 : 0", "000004: 1 : 324 : 324", "000005: 0 : 0 : 0",
                          "000006: 1 : 1019 : 1019"]
    assert (EXT / "sums/sparse/000002").read_bytes() == bytes([0x52, 0xB9, 0xCD, 0xF5])
    assert (EXT / "sums/fold/header").read_text() == (
        "DTYPE: <u1\nNMEMB: 1\nNFILE: 1\n000000: 735 : 96585 : 31050\n")
    blob = EXT / "sums/fold/000000"
    assert len(blob.read_bytes()) == 735 and sum(blob.read_bytes()) == 96585
    if shutil.which("sum"):  # GNU sum -s prints the fold and the 512-byte blocks
        out = subprocess.run(["sum", "-s", str(blob)], capture_output=True, text=True, check=True)
        assert out.stdout.split()[:2] == ["31050", "2"]


def _doc_block(after: str) -> str:
    """The first ``` block of docs/format.md after the line `after`."""
    text = (ROOT / "docs" / "format.md").read_text()
    start = text.index(after)
    m = re.search(r"```\n(.*?)```\n", text[start:], re.S)
    assert m
    return m.group(1)


def test_statistics_section_is_the_spec_example() -> None:
    """The stats column's section is, byte for byte, the example of 8.4,
    sealed with the checksum line of 8.1."""
    text = (EXT / "stats/colfile-v1").read_text()
    section = text[text.index("COLFILE-STATS:"):text.index("CRC32C: ")]
    assert section == _doc_block("**Bytes written.** The text has LF line ends")
    body, seal = text[:text.index("CRC32C: ")], text[text.index("CRC32C: "):]
    assert seal == "CRC32C: %08x\n" % gen.crc32c(body.encode())
    # the 8.1 example's form: version, header facts, blob lines, checksum line
    assert text.startswith("COLFILE-EXT: 1\nDTYPE: <f8\nNMEMB: 3\nNFILE: 2\n000000: 2 : 1149 : crc32c=")


def test_colfile_attrs_holds_the_empty_array() -> None:
    """8.2: the empty array is in colfile-attrs, the rest in attr-v2."""
    assert (EXT / "attrs/colfile-attrs").read_bytes() == b"empty <f8 0  #HUMANE [  ]\n"
    assert (EXT / "attrs/attr-v2").read_bytes() == b"unit <a1 3 6B7063 #HUMANE [ kpc ]\n"


# ------------------------------------------------------ colfile reads them


def test_colfile_reads_crcs_and_sums(golden: Path) -> None:
    with colfile.File(str(golden)) as f:
        check = f["crc/check"]
        assert check.ext_state == "current"
        assert check.blob_info(0)["crc32c"] == 0xE3069283
        assert check.verify_blob(0) == {"OK"}
        assert bytes(check[:]) == b"123456789"
        assert f["crc/empty"].blob_info(0)["crc32c"] == 0
        assert f["crc/empty"].size == 0
        sparse = f["sums/sparse"]
        assert sparse.blob_rows == [0, 0, 1, 0, 1, 0, 1]
        assert sparse.blob_info(2)["sum"] == 717
        assert sparse[0] == int.from_bytes(bytes([0x52, 0xB9, 0xCD, 0xF5]), "little", signed=True)
        assert all(sparse.verify_blob(i) == {"OK"} for i in range(7))
        fold = f["sums/fold"]
        assert fold.blob_info(0)["sum"] == 96585
        assert colfile.column.fold(96585) == 31050
        assert fold.verify_blob(0) == {"OK"}


def test_colfile_reads_the_statistics(golden: Path) -> None:
    with colfile.File(str(golden)) as f:
        col = f["stats"]
        assert col.ext_state == "current"
        assert col.chunk_rows == 2
        assert [col.verify_blob(i) for i in range(2)] == [{"OK"}, {"OK"}]
        s = col.chunk_stats()
        assert s.shape == (3, 3) and s["valid"].all()
        assert s["first_row"][:, 0].tolist() == [0, 2, 4]
        assert s["count"].tolist() == [[2, 2, 2], [2, 2, 2], [1, 1, 1]]
        assert s["nan_count"].tolist() == [[0, 1, 0], [0, 0, 0], [0, 0, 0]]
        assert s["min"].tolist() == [[0.25, 2, -0.0], [10, 20, 30], [12, np.inf, 32.5]]
        assert np.signbit(s["min"][0, 2])
        assert s["max"].tolist() == [[1.5, 2, 0], [11, 21, 31], [12, np.inf, 32.5]]
        assert s["sum"].tolist() == [[1.75, 2, 0], [21, 41, 61], [12, np.inf, 32.5]]
    # a condition no chunk can meet is answered from the statistics alone
    with colfile.File(str(golden)) as f:
        assert len(colfile.where(f, "stats[0] > 100").rows) == 0
        assert colfile.where(f, "stats[0] > 11").rows.tolist() == [4]


def test_colfile_reads_a_stale_colfile_v1(tmp_path: Path, lib: Any) -> None:
    """The stale column's colfile-v1 describes [1, 2] [3, 4]; the blobs
    hold [1, 2] [3, 40] since a foreign write.  With the header's time
    only blob 0's line still matches the header; with another time
    nothing is trusted.  Never an error, data always as stored."""
    root = _copy(tmp_path)
    with colfile.File(str(root)) as f:
        col = f["stale"]
        assert col.ext_state == "current"
        assert col[:].tolist() == [1, 2, 3, 40]
        assert col.blob_info(0)["crc32c"] == gen.crc32c(struct.pack("<2q", 1, 2))
        assert col.blob_info(1)["crc32c"] is None
        assert col.chunk_stats()["valid"].tolist() == [True, False]
    _bind(root, "stale", current=False)
    with colfile.File(str(root)) as f:
        col = f["stale"]
        assert col.ext_state == "stale"
        assert [col.blob_info(i)["crc32c"] for i in range(2)] == [None, None]
        assert not col.chunk_stats()["valid"].any()
        assert col[:].tolist() == [1, 2, 3, 40]
        assert colfile.where(f, "stale > 30").rows.tolist() == [3]


def test_git_checkout_leaves_every_colfile_v1_stale(tmp_path: Path, lib: Any) -> None:
    """The binding is the modification time alone: the same bytes with
    other times are stale (8.1, rule 2)."""
    root = tmp_path / "ext"
    shutil.copytree(EXT, root)
    for name in COLUMNS:
        _bind(root, name, current=False)
    with colfile.File(str(root), torn="warn") as f, warnings.catch_warnings():
        warnings.simplefilter("ignore", colfile.TornWarning)
        for name in COLUMNS:
            if name != "torn":
                assert f[name].ext_state == "stale", name


def test_colfile_reads_the_attributes(golden: Path) -> None:
    with colfile.File(str(golden)) as f:
        assert f.attrs["BoxSize"] == 100.0
        a = f["attrs"].attrs
        assert a["unit"] == "kpc"
        empty = a["empty"]
        assert isinstance(empty, np.ndarray) and empty.dtype == np.dtype("<f8") and empty.shape == (0,)
        assert sorted(a) == ["empty", "unit"]
        assert f["attrs"][:].tolist() == [0.5, -1.5]


def test_colfile_refuses_the_torn_column(golden: Path) -> None:
    """8.3 step 5: a colfile-torn with no writer holding the lock; the
    CRC32C and statistics are not trusted even with the header's time (the
    update changed the 6 into 60 after they were written)."""
    with colfile.File(str(golden)) as f:
        with pytest.raises(colfile.TornError, match="torn"):
            f["torn"]
    with colfile.File(str(golden), torn="warn") as f:
        with pytest.warns(colfile.TornWarning):
            col = f["torn"]
        assert col.torn and col.ext_state == "torn"
        assert col[:].tolist() == [5, 60, 7]
        assert col.blob_info(0)["crc32c"] is None
        assert not col.chunk_stats()["valid"].any()


# ------------------------------------------------------------- the catalog


def _take_text(buf: bytes, pos: int) -> tuple[bytes, int]:
    (n,) = struct.unpack_from("<Q", buf, pos)
    pos += 8
    assert n >= 1 and buf[pos + n - 1] == 0, "a text ends in NUL"
    return buf[pos:pos + n - 1], pos + n


def parse_catalog(buf: bytes) -> dict[str, Any]:
    """A strict reader of 8.5: the whole file, nothing left over."""
    assert buf[:8] == b"CFCAT2\n\0"
    (crc,) = struct.unpack_from("<I", buf, len(buf) - 4)
    assert crc == gen.crc32c(buf[:-4]), "CRC32C of everything before it"
    (generation,) = struct.unpack_from("<Q", buf, 8)
    pos = 16

    def u64() -> int:
        nonlocal pos
        (v,) = struct.unpack_from("<Q", buf, pos)
        pos += 8
        return int(v)

    def stamp() -> tuple[int, ...]:
        return tuple(u64() for _ in range(7))

    dirs = []
    for _ in range(u64()):
        path, pos = _take_text(buf, pos)
        dirs.append((path, stamp()))
    cols = []
    for _ in range(u64()):
        name, pos = _take_text(buf, pos)
        chain = [u64() for _ in range(u64())]
        complete = u64()
        files = []
        if complete:
            for _slot in gen.SLOTS:
                state = u64()
                st = stamp() if state else None
                data = None
                if state == 1:
                    data, pos = _take_text(buf, pos)
                files.append((state, st, data))
        cols.append({"name": name, "chain": chain, "complete": complete, "files": files})
    assert pos == len(buf) - 4, "nothing between the columns and the CRC32C"
    return {"generation": generation, "dirs": dirs, "cols": cols}


def write_catalog(cat: dict[str, Any], stamp_of: Any) -> bytes:
    """The catalog cat with its directories in path order and each stamp
    given by stamp_of(path relative to the root) (the inverse of
    parse_catalog, up to that order)."""
    u64 = gen._u64
    order = sorted(range(len(cat["dirs"])), key=lambda i: cat["dirs"][i][0])
    new_index = {old: new for new, old in enumerate(order)}
    out = b"CFCAT2\n\0" + u64(cat["generation"]) + u64(len(order))
    for i in order:
        path = cat["dirs"][i][0]
        out += gen._text(path) + stamp_of(path.decode())
    out += u64(len(cat["cols"]))
    for c in cat["cols"]:
        out += gen._text(c["name"]) + u64(len(c["chain"]))
        out += b"".join(u64(new_index[j]) for j in c["chain"]) + u64(c["complete"])
        for slot, (state, _, data) in zip(gen.SLOTS, c["files"]):
            out += u64(state)
            if state:
                out += stamp_of(c["name"].decode() + "/" + slot)
            if state == 1:
                out += gen._text(data)
    return out + struct.pack("<I", gen.crc32c(out))


def test_colfile_writes_the_golden_catalog(golden: Path) -> None:
    """A writer's catalog of the golden File (index and shards) is the
    canonical single-file one once its stamps are zeroed and its
    directories sorted: the torn column
    incomplete, colfile-v1 present but not copied, the other files' bytes
    inline."""
    target = golden / ".colfile-catalog" / catalog_shards.INDEX
    for wait in (0, 2.5):
        # where timestamps may be coarser than the clock (not ext4, XFS,
        # btrfs, tmpfs, ...) stamps younger than 2 s are not trusted (8.5)
        time.sleep(wait)
        with colfile.File(str(golden), "a"):
            pass  # a writer's close brings the catalog up to date
        if target.exists() and all(c["complete"] or c["name"] == b"torn"
                                   for c in catalog_shards.read_catalog(golden)["cols"]):
            break
    # the sharded catalog a writer writes holds the canonical one
    cat = catalog_shards.read_catalog(golden)
    assert [c["name"] for c in cat["cols"]] == sorted(c.encode() for c in COLUMNS)
    assert all(c["complete"] == (c["name"] != b"torn") for c in cat["cols"])
    assert write_catalog(cat, lambda _: gen.ZERO_STAMP) == CANONICAL.read_bytes()


def _lstat_stamp(root: Path) -> Any:
    def stamp_of(rel: str) -> bytes:
        st = os.lstat(root / rel if rel else root)
        return struct.pack("<7Q", st.st_ino, st.st_size, st.st_mode,
                           st.st_mtime_ns // 10**9, st.st_mtime_ns % 10**9,
                           st.st_ctime_ns // 10**9, st.st_ctime_ns % 10**9)
    return stamp_of


def test_colfile_reads_the_golden_catalog(golden: Path) -> None:
    """The canonical catalog, given the copy's stamps, is used: a header
    kept in it (here a false one, four rows of crc/check instead of nine)
    is what a reader sees while the stamps hold; with a wrong CRC32C the
    catalog is ignored as a whole."""
    cat = parse_catalog(CANONICAL.read_bytes())
    i = [c["name"] for c in cat["cols"]].index(b"crc/check")
    state, st, data = cat["cols"][i]["files"][0]
    assert (state, data) == (1, (EXT / "crc/check/header").read_bytes())
    cat["cols"][i]["files"][0] = (1, st, data.replace(b"9 : 477 : 477", b"4 : 202 : 202"))
    (golden / ".colfile-catalog").mkdir()  # before the stamps: it changes the root's
    buf = write_catalog(cat, _lstat_stamp(golden))
    target = golden / ".colfile-catalog" / "colfile-catalog-v1"
    tmp = golden / ".colfile-catalog" / "new"
    tmp.write_bytes(buf)
    os.rename(tmp, target)
    with colfile.File(str(golden)) as f:
        assert f["crc/check"].size == 4
        assert f["crc/check"][:].tolist() == list(b"1234")
        assert f["stats"].size == 5
    tmp.write_bytes(buf[:-4] + struct.pack("<I", gen.crc32c(buf[:-4]) ^ 1))
    os.rename(tmp, target)
    with colfile.File(str(golden)) as f:
        assert f["crc/check"].size == 9


# ----------------------------------------------- colfile writes the same


def _write_like_golden(root: Path) -> dict[str, bytes]:
    """Write the golden File's columns with colfile from the generator's
    inputs, then make the foreign writes the golden File holds.  Returns
    the files those writes change, as they were before them (the marker
    while the update is live)."""
    kept: dict[str, bytes] = {}
    with colfile.File(str(root), "w") as f:
        for name, tok, data in gen.FILE_ATTRS:
            assert tok == "<f8"
            f.attrs[name] = struct.unpack("<d", data)[0]
        for name, c in COLUMNS.items():
            data = np.concatenate(c["blobs"])
            kw = {"chunk_rows": c["chunk"]} if "chunk" in c else {}
            col = f.create(name, data=data, nfile=len(c["blobs"]), **kw)
            assert col.blob_rows == [len(b) for b in c["blobs"]]
            for aname, _tok, value in c.get("attrs", []):
                col.attrs[aname] = value.decode()
            for aname, tok, value in c.get("ext_attrs", []):
                col.attrs[aname] = np.frombuffer(value, tok)
            col.close()
    for k in ("stale/colfile-v1", "torn/header", "torn/colfile-v1"):
        kept[k] = (root / k).read_bytes()
    # the stale column's foreign write: 40 over the 4, header rewritten
    # (bigfile writes the same header bytes as colfile)
    with colfile.File(str(root), "a") as f:
        f["stale"][3] = 40
    # the torn column: an in-place update, the marker read while it is live
    with colfile.File(str(root), "a") as f:
        col = f["torn"]
        col[1] = 60
        kept["torn/colfile-torn"] = (root / "torn" / "colfile-torn").read_bytes()
        col.close()
    assert not (root / "torn" / "colfile-torn").exists()
    return kept


def test_colfile_writes_the_golden_bytes(tmp_path: Path, lib: Any) -> None:
    """Every file colfile writes for the same inputs equals the golden one
    (for stale and torn: before the foreign writes recorded in them)."""
    root = tmp_path / "w"
    kept = _write_like_golden(root)
    mine = {k: v for k, v in _tree(root).items() if not k.startswith(".") and "/." not in k}
    want = _tree(EXT)
    # the marker names the writer's pid
    marker = re.compile(rb"in-place update by pid [1-9][0-9]*\n")
    assert marker.fullmatch(kept.pop("torn/colfile-torn"))
    assert marker.fullmatch(want.pop("torn/colfile-torn"))
    for k, v in kept.items():
        assert mine[k] != v, k  # changed by the later commit
        mine[k] = v
    assert sorted(mine) == sorted(want)
    for k in want:
        assert mine[k] == want[k], k


# ------------------------------------------------- the spec's own examples

SHARED = ROOT.parent / "shared" / "fixtures"


def test_colfile_v1_example_of_the_spec_is_sealed_right() -> None:
    """8.1's example: its checksum line is the CRC32C of the lines above
    it, and, where the bigfile fixture it describes is at hand, its CRCs
    are those of the fixture's blobs."""
    text = _doc_block("LF line ends, in exactly this form (here for `main/1/Position`")
    body, seal = text[:text.index("CRC32C: ")], text[text.index("CRC32C: "):]
    assert seal == "CRC32C: %08x\n" % gen.crc32c(body.encode())
    both = "000001: 3 : 7461 : crc32c=638d515f"
    assert f"`{both}`" in (ROOT / "docs" / "format.md").read_text()
    cols = [p for p in SHARED.glob("*/main/1/Position") if (p / "header").exists()]
    if not cols:
        pytest.skip(f"the bigfile fixture main/1/Position is not in {SHARED}")
    col = cols[0]
    assert (col / "header").read_text().splitlines()[3:] == [
        "000000: 2 : 5844 : 5844", "000001: 3 : 7461 : 7461"]
    assert gen.crc32c((col / "000000").read_bytes()[:2 * 3 * 8]) == 0x08ECA2D0
    assert gen.crc32c((col / "000001").read_bytes()[:3 * 3 * 8]) == 0x638D515F
