"""File.column_attrs / cf_file_column_attrs: every column's attributes in
one call give exactly what opening each column gives, with or without the
File catalog, however stale or damaged it is."""

from __future__ import annotations

import os
import shutil
import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile
from colfile._ffi import ffi, lib, new_error

FIXTURES = Path("/work/shared/fixtures/bigfile-0.1.52")
CATALOG = os.path.join(".colfile-catalog", "colfile-catalog-index")


def norm(v: Any) -> Any:
    """A value in a form == compares exactly (type, dtype, bytes)."""
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, np.generic):
        return ("scalar", type(v).__name__, v.dtype.str, v.tobytes())
    if isinstance(v, list):
        return ("list", tuple(norm(x) for x in v))
    return (type(v).__name__, v)


def per_column(path: str | Path, mode: str = "r") -> dict[str, Any]:
    """What ``f[name].attrs`` gives for every column, as raw and decoded."""
    with colfile.File(path, mode) as f:
        return {n: {k: (f[n].attrs.raw(k), norm(f[n].attrs[k])) for k in f[n].attrs}
                for n in f.columns}


def bulk(path: str | Path, mode: str = "r") -> dict[str, Any]:
    """The same from File.column_attrs, with the raw form from the C buffer."""
    with colfile.File(path, mode) as f:
        raw = unpack_raw(packed(f))
        got = f.column_attrs()
        assert list(got) == f.columns == list(raw)
    return {n: {k: (raw[n][k], norm(v)) for k, v in a.items()} for n, a in got.items()}


def packed(f: colfile.File) -> bytes:
    buf, size, err = ffi.new("void **"), ffi.new("size_t *"), new_error()
    rc = lib().cf_file_column_attrs(f._h, buf, size, err)
    assert rc == 0, ffi.string(err.message)
    try:
        return bytes(ffi.buffer(buf[0], size[0]))
    finally:
        lib().cf_free(buf[0])


def unpack_raw(raw: bytes) -> dict[str, dict[str, tuple[str, int, bytes]]]:
    """Decode the buffer by the layout include/colfile.h documents, checking
    every promise it makes (bounds, NULs, areas, order)."""
    ncols, nattrs, text_at, data_at = struct.unpack_from("=4Q", raw, 0)
    assert 32 + 32 * ncols + 56 * nattrs == text_at <= data_at <= len(raw)

    def text(off: int, n: int) -> bytes:
        assert text_at <= off and off + n < data_at and raw[off + n] == 0
        return raw[off:off + n]

    out: dict[str, dict[str, tuple[str, int, bytes]]] = {}
    seen = 0
    for i in range(ncols):
        off, n, first, count = struct.unpack_from("=4Q", raw, 32 + 32 * i)
        assert first == seen
        seen += count
        attrs = {}
        for j in range(first, first + count):
            rec = struct.unpack_from("=7Q", raw, 32 + 32 * ncols + 56 * j)
            no, nl, to, tl, nmemb, do, dl = rec
            assert data_at <= do and do + dl < len(raw) and raw[do + dl] == 0
            tok = text(to, tl).decode()
            width = int(tok[2:])
            assert dl == nmemb * width
            attrs[text(no, nl).decode("utf-8", "surrogateescape")] = (tok, nmemb, raw[do:do + dl])
        assert list(attrs) == sorted(attrs, key=lambda s: s.encode("utf-8", "surrogateescape"))
        out[text(off, n).decode("utf-8", "surrogateescape")] = attrs
    assert seen == nattrs
    return out


def catalog_used(path: str | Path) -> bool:
    return os.path.isfile(os.path.join(path, CATALOG))


def make_catalog(path: str | Path) -> None:
    """A writer's close writes the catalog (docs/format.md 8.5)."""
    colfile.File(path, "r+").close()
    assert catalog_used(path)


# ---------------------------------------------------------------------------
# equality with the per-column path


@pytest.mark.parametrize("tree", ["main", "shadow", "legacy_attr_v1"])
def test_bigfile_fixtures(tmp_path: Path, lib: Any, tree: str) -> None:
    if not (FIXTURES / tree).is_dir():
        pytest.skip("no bigfile fixtures")
    path = tmp_path / tree
    shutil.copytree(FIXTURES / tree, path)
    want = per_column(path)
    assert want  # every tree has columns
    assert bulk(path) == want  # no catalog: from the files
    make_catalog(path)
    assert bulk(path) == want == per_column(path)  # from the catalog


def test_fixture_attribute_kinds(tmp_path: Path, lib: Any) -> None:
    """The zoo column holds an attribute of every kind bigfile writes; the
    legacy tree a binary attr file under an attr-v2."""
    if not FIXTURES.is_dir():
        pytest.skip("no bigfile fixtures")
    shutil.copytree(FIXTURES / "main", tmp_path / "main")
    shutil.copytree(FIXTURES / "legacy_attr_v1", tmp_path / "legacy")
    with colfile.File(tmp_path / "main") as f:
        zoo = f.column_attrs()["attrs/zoo"]
        assert len(zoo) > 5 and {norm(v) for v in zoo.values()} == \
            {norm(f["attrs/zoo"].attrs[k]) for k in zoo}
    with colfile.File(tmp_path / "legacy") as f:
        assert f.column_attrs()["col"] and set(f.column_attrs()["col"]) == set(f["col"].attrs)


def rich_file(path: Path) -> None:
    with colfile.File(path, "w") as f:
        c = f.create("plain", data=np.arange(3))
        for dt in ["i1", "u1", "<i2", ">i2", "<u4", ">i8", "<f4", ">f8", "<c8", ">c16", "?"]:
            c.attrs[f"s_{dt}"] = np.array([1], dt)[0]
            c.attrs[f"a_{dt}"] = np.arange(3).astype(dt)
        c.attrs["empty"] = np.array([], "f4")  # colfile-attrs
        c.attrs["text"] = "héllo wörld"
        c.attrs["blank"] = ""
        c.attrs["words"] = ["a", "bcd", ""]
        c.attrs.set_raw("raw", "|S3", 1, b"\x00\x01\xff")  # bytes: stored raw only
        c.attrs["big"] = ["x" * 100_000]  # token <S100000: colfile-attrs, > 64 KiB
        c.attrs["long"] = np.arange(20_000, dtype="f8")  # attr-v2 > 64 KiB: not cached
        f.create("g/h/deep", data=np.zeros(2)).attrs["index"] = 7
        f.create("g/none", None)
        f.create("g/x.y-z", data=np.ones(1)).attrs["ünï"] = 1.5
        f.create("noattrs", data=np.ones(1))
        f["g/"].attrs["group_attr"] = 1  # not a column: not included
        f.attrs["file_attr"] = 2


def test_many_dtypes_strings_arrays(tmp_path: Path, lib: Any) -> None:
    path = tmp_path / "rich"
    rich_file(path)
    assert catalog_used(path)
    want = per_column(path)
    assert set(want) == {"plain", "g/h/deep", "g/none", "g/x.y-z", "noattrs"}
    assert want["noattrs"] == {} and "group_attr" not in str(want)
    assert bulk(path) == want  # catalog, with state-2 files read from disk
    assert bulk(path, "r+") == want  # a writable File does not use the catalog
    shutil.rmtree(path / ".colfile-catalog")
    assert bulk(path) == want


def test_values_are_what_attrs_returns(tmp_path: Path, lib: Any) -> None:
    path = tmp_path / "f"
    with colfile.File(path, "w") as f:
        for i in range(50):
            f.create(f"c{i:03d}", data=np.arange(2)).attrs.update(index=i, x=i / 2)
    with colfile.File(path) as f:
        got = f.column_attrs()
        assert [int(a["index"]) for a in got.values()] == list(range(50))
        assert type(got["c007"]["index"]) is type(f["c007"].attrs["index"])
        assert got["c007"]["x"] == 3.5 and list(got["c007"]) == ["index", "x"]


def test_many_columns_take_the_threaded_check(tmp_path: Path, lib: Any) -> None:
    """Past 2048 directories + columns the stamps are checked by several
    threads (catalog_lookup.c); the result is the same."""
    path = tmp_path / "many"
    with colfile.File(path, "w", durable=False) as f:
        for i in range(1100):
            f.create(f"c{i:05d}", data=np.arange(1)).attrs["index"] = i
    want = per_column(path)
    assert bulk(path) == want
    # a stale entry in the middle of the threaded pass
    v2 = path / "c00555" / "attr-v2"
    v2.write_bytes(v2.read_bytes().replace(b"2B02000000000000", b"2C02000000000000"))
    with colfile.File(path) as f:
        assert int(f.column_attrs()["c00555"]["index"]) == 556
    assert bulk(path) == per_column(path)


# ---------------------------------------------------------------------------
# a catalog that does not hold


def small(path: Path) -> None:
    with colfile.File(path, "w") as f:
        for i in range(4):
            f.create(f"c{i}", data=np.arange(4, dtype="i8")).attrs["index"] = i
        f.create("g/d", data=np.arange(2)).attrs["index"] = 9


def test_stale_catalog_plain_writes(tmp_path: Path, lib: Any) -> None:
    path = tmp_path / "f"
    small(path)
    v2 = path / "c1" / "attr-v2"
    old = v2.read_bytes()
    # in place, same size, same second as the catalog was written
    with open(v2, "r+b") as fh:
        fh.write(old.replace(b"0100000000000000", b"0500000000000000"))
    assert v2.stat().st_size == len(old)
    shutil.rmtree(path / "c2")  # a column removed
    (path / "new").mkdir()  # one added by hand, bigfile's bytes
    (path / "new" / "header").write_text("DTYPE: <i8\nNMEMB: 1\nNFILE: 0\n")
    (path / "new" / "attr-v2").write_text("index <i8 1 0700000000000000\n")
    (path / "c3" / "attr").write_bytes(b"")  # an empty legacy file appears
    (path / "g" / "d" / "colfile-attrs").write_text("e <f8 0\n")
    with colfile.File(path) as f:
        got = f.column_attrs()
    assert list(got) == ["c0", "c1", "c3", "g/d", "new"]
    assert int(got["c1"]["index"]) == 5 and int(got["new"]["index"]) == 7
    assert got["g/d"]["e"].size == 0
    assert bulk(path) == per_column(path)


def test_stale_catalog_bigfile_writes(tmp_path: Path, lib: Any) -> None:
    bigfile = pytest.importorskip("bigfile")
    path = tmp_path / "f"
    small(path)
    b = bigfile.File(str(path))
    with b.open("c1") as blk:
        blk.attrs["index"] = 5  # same size, in place, this same second
    with b.create("c2", dtype="i8", size=4) as blk:  # re-created: attributes gone
        blk.write(0, np.arange(4))
    with b.create("nb", dtype="f4", size=2) as blk:
        blk.attrs["unit"] = "km"
    with colfile.File(path) as f:
        got = f.column_attrs()
    assert int(got["c1"]["index"]) == 5 and got["c2"] == {} and got["nb"]["unit"] == "km"
    assert bulk(path) == per_column(path)


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "directory"])
def test_damaged_catalog(tmp_path: Path, lib: Any, damage: str) -> None:
    path = tmp_path / "f"
    rich_file(path)
    want = per_column(path)
    cat = path / CATALOG
    good = cat.read_bytes()
    cat.unlink()
    if damage == "truncate":
        cat.write_bytes(good[:len(good) // 2])
    elif damage == "flip":
        bad = bytearray(good)
        bad[len(bad) // 3] ^= 0x10
        cat.write_bytes(bytes(bad))
    elif damage == "garbage":
        cat.write_bytes(os.urandom(len(good)))
    elif damage == "empty":
        cat.write_bytes(b"")
    else:
        cat.mkdir()
    assert bulk(path) == want


def test_no_catalog(tmp_path: Path, lib: Any) -> None:
    path = tmp_path / "f"
    small(path)
    shutil.rmtree(path / ".colfile-catalog")
    assert bulk(path) == per_column(path)
    assert not catalog_used(path)  # readers never write it


# ---------------------------------------------------------------------------
# errors and what only attributes need


def error_of(fn: Any) -> tuple[type, str]:
    with pytest.raises(colfile.Error) as e:
        fn()
    return type(e.value), str(e.value)


@pytest.mark.parametrize("with_catalog", [True, False])
@pytest.mark.parametrize("what", ["attr-v2", "colfile-attrs", "attr", "a directory"])
def test_damaged_attribute_file_same_error(tmp_path: Path, lib: Any, with_catalog: bool,
                                           what: str) -> None:
    path = tmp_path / "f"
    small(path)
    if not with_catalog:
        shutil.rmtree(path / ".colfile-catalog")
    col = path / "c2"
    if what == "attr-v2":
        (col / "attr-v2").write_text("index <i8 1 01000000000000ZZ\n")
    elif what == "colfile-attrs":
        (col / "colfile-attrs").write_text("x <f8 two\n")
    elif what == "attr":
        (col / "attr").write_bytes(b"\x01\x00\x00\x00\xff\xff")  # a truncated record
    else:
        (col / "attr-v2").unlink()
        (col / "attr-v2").mkdir()
    with colfile.File(path) as f:
        # a read-only handle reads its attribute files when they are used:
        # its rows are readable, the damage is reported there
        np.testing.assert_array_equal(f["c2"][:], np.arange(4))
        want = error_of(lambda: f["c2"].attrs["index"])
        got = error_of(f.column_attrs)
    assert got == want
    assert str(col) in got[1]  # names the column's file


def test_damaged_header_or_torn_still_gives_attributes(tmp_path: Path, lib: Any) -> None:
    """Only attribute files are read: a column that cannot be opened still
    gives its attributes."""
    path = tmp_path / "f"
    small(path)
    (path / "c0" / "header").write_text("DTYPE: garbage\n")
    (path / "c1" / "colfile-torn").write_text("")
    with colfile.File(path) as f:
        got = f.column_attrs()
        assert int(got["c0"]["index"]) == 0 and int(got["c1"]["index"]) == 1
        error_of(lambda: f["c0"])
        error_of(lambda: f["c1"])
    make_catalog(path)
    with colfile.File(path) as f:
        assert int(f.column_attrs()["c0"]["index"]) == 0


def test_closed_file(tmp_path: Path, lib: Any) -> None:
    path = tmp_path / "f"
    small(path)
    f = colfile.File(path)
    f.close()
    with pytest.raises(colfile.ClosedError):
        f.column_attrs()


def test_empty_file(tmp_path: Path, lib: Any) -> None:
    path = tmp_path / "f"
    colfile.File(path, "w").close()
    with colfile.File(path) as f:
        assert f.column_attrs() == {}
    assert unpack_raw(packed_of(path)) == {}


def packed_of(path: Path) -> bytes:
    with colfile.File(path) as f:
        return packed(f)


# ---------------------------------------------------------------------------
# what this File has open or has not committed yet


def test_live_and_uncommitted_columns(tmp_path: Path, lib: Any) -> None:
    path = tmp_path / "f"
    small(path)
    with colfile.File(path, "r+") as f:
        new = f.create("staged", data=np.arange(2))  # not committed: not on disk
        new.attrs["index"] = 42
        f["c0"].attrs["extra"] = "x"  # written at once
        got = f.column_attrs()
        assert "staged" in f.columns and list(got) == f.columns
        assert int(got["staged"]["index"]) == 42 and got["c0"]["extra"] == "x"
        assert {n: {k: norm(v) for k, v in a.items()} for n, a in got.items()} == \
            {n: {k: norm(f[n].attrs[k]) for k in f[n].attrs} for n in f.columns}
    with colfile.File(path) as f:
        assert int(f.column_attrs()["staged"]["index"]) == 42


def test_reader_with_an_open_handle_sees_its_handle(tmp_path: Path, lib: Any) -> None:
    """file[name].attrs reads the open handle, so column_attrs does too.  A
    read-only handle loads its attributes when they are first used and
    keeps them from then on."""
    path = tmp_path / "f"
    small(path)
    with colfile.File(path) as f:
        col = f["c3"]
        assert int(col.attrs["index"]) == 3  # loaded now
        (path / "c3" / "attr-v2").write_text("index <i8 1 6300000000000000\n")
        assert int(f.column_attrs()["c3"]["index"]) == int(col.attrs["index"]) == 3
        del col
    with colfile.File(path) as f:
        col = f["c2"]  # opened, its attributes not used yet
        (path / "c2" / "attr-v2").write_text("index <i8 1 6200000000000000\n")
        assert int(f.column_attrs()["c2"]["index"]) == int(col.attrs["index"]) == 98
        del col
    with colfile.File(path) as f:
        assert int(f.column_attrs()["c3"]["index"]) == 99


# ---------------------------------------------------------------------------
# under MPI


MPI_SCRIPT = r"""
import sys, numpy as np, colfile
from mpi4py import MPI
comm = MPI.COMM_WORLD
path = sys.argv[1]
with colfile.File(path, "w", comm=comm) as f:
    for i in range(5):
        c = f.create(f"g/c{i}", data=np.arange(4, dtype="i8"))
        c.attrs["index"] = i
        c.attrs["name"] = f"col{i}"
    staged = f.column_attrs()  # uncommitted columns, on every rank
    assert [int(a["index"]) for a in staged.values()] == list(range(5)), staged
for mode in ("r", "r+"):
    with colfile.File(path, mode, comm=comm) as f:
        got = f.column_attrs()
        per = {n: {k: f[n].attrs[k] for k in f[n].attrs} for n in f.columns}
        assert repr(got) == repr(per), (got, per)
        every = comm.allgather(repr(got))
        assert all(e == every[0] for e in every), every
print("ok", comm.rank)
"""


@pytest.mark.parametrize("nranks", [2])
def test_under_mpi(tmp_path: Path, lib: Any, nranks: int) -> None:
    sys.path.insert(0, str(Path(__file__).parent / "mpi"))
    try:
        from mpirun import child_env, launch
    finally:
        sys.path.pop(0)
    script = tmp_path / "attrs_mpi.py"
    script.write_text(MPI_SCRIPT)
    proc = launch(nranks, [sys.executable, str(script), str(tmp_path / "f")], env=child_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("ok") == nranks, proc.stdout
