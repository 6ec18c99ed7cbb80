"""Whole-File tools: copy (with repartition and dtype conversion), sample
and join.

Each tool writes a new File next to its destination under a hidden
staging name, reads every column back and compares it byte for byte with
what it meant to write, and only then renames the staging directory to the
destination: a failure or a crash leaves the destination as it was (absent,
or the old File when ``overwrite=True``).  Rows move in chunks of at most
``chunk_bytes`` bytes, so memory stays bounded whatever the size of the
columns.  Attributes of the File, of every group holding a copied column
and of every copied column are copied in their stored form (dtype token
and bytes), so they read back exactly.

>>> import os, tempfile, numpy as np, colfile
>>> from colfile import tools
>>> d = tempfile.mkdtemp()
>>> with colfile.File(os.path.join(d, "a"), "w") as f:
...     f.create("g/x", data=np.arange(10.0), nfile=2).attrs["unit"] = "m"
>>> tools.copy(os.path.join(d, "a"), os.path.join(d, "b"), dtype="f4", nfile=3)
['g/x']
>>> with colfile.File(os.path.join(d, "b")) as f:
...     x = f["g/x"]
...     print(x.dtype, x.blob_rows, x.attrs["unit"])
float32 [3, 3, 4] m
"""

from __future__ import annotations

import os
import pickle
import shutil
import warnings
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from .errors import Error, IncompleteWarning
from .file import File

__all__ = ["copy", "sample", "join", "ToolError", "CHUNK_BYTES"]

#: default bound on the bytes of one chunk of rows held in memory
CHUNK_BYTES = 32 << 20

_STAGE = ".colfile-copy."


class ToolError(Error, ValueError):
    """A tool cannot do what it was asked (columns that differ between the
    Files of a join, a destination that exists, ...)."""


# ---------------------------------------------------------------------------
# helpers


def _chunk_rows(col: Any, chunk_bytes: int) -> int:
    row = max(1, col.dtype.itemsize * max(1, col.nmemb))
    return max(1, int(chunk_bytes) // row)


def _chunks(col: Any, chunk_bytes: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, rows) of ``col`` in bounded chunks."""
    step = _chunk_rows(col, chunk_bytes)
    for start in range(0, col.size, step):
        yield start, col.read(start, min(col.size, start + step))


def _out_dtype(col: Any, dtype: Any) -> Any:
    """The create() dtype of a copy of ``col`` (element dtype ``dtype``)."""
    el = col.dtype if dtype is None else np.dtype(dtype)
    return (el, col.nmemb) if col.ndim == 2 else el


def _convertible(path: str, name: str, src: np.dtype[Any], dst: np.dtype[Any] | None) -> None:
    """Refuse conversions that keep no meaning: between bytes and numbers,
    and complex to real (which would drop the imaginary part)."""
    if dst is None:
        return
    if (src.kind == "S") != (dst.kind == "S") or (src.kind == "c" and dst.kind != "c"):
        raise ToolError(f"{path}: column {name!r}: cannot convert {src.str} to {dst.str} "
                        "(bytes and numbers do not convert, nor complex to real)")


def _convert(rows: np.ndarray, dtype: Any) -> np.ndarray:
    if dtype is None:
        return rows
    el = np.dtype(dtype)
    return rows if rows.dtype == el else rows.astype(el)


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return bool(np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes())


def _check_dtype(dtype: Any) -> Any:
    if dtype is None:
        return None
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise ToolError(f"bad dtype {dtype!r}: {exc}") from None
    if dt.kind not in "iufcbS" or dt.shape or dt.fields:
        raise ToolError(f"bad dtype {dtype!r}: a column holds kinds i u f c b S, "
                        f"not {dt.str}")
    return dt


def _groups(names: Sequence[str]) -> list[str]:
    """The groups holding ``names`` (prefixes with a trailing slash)."""
    out: list[str] = []
    for n in names:
        parts = n.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            g = "/".join(parts[:i]) + "/"
            if g not in out:
                out.append(g)
    return out


def _copy_attrs(src: Any, dst: Any) -> None:
    """Every attribute of ``src`` onto ``dst`` in its stored form."""
    for key in list(src):
        tok, nmemb, data = src.raw(key)
        dst.set_raw(key, tok, nmemb, data)


def _group_attrs(f: File, group: str) -> Any:
    g = f.get(group)
    return None if g is None else g.attrs


def _resolve(f: File, columns: Sequence[str] | None) -> list[str]:
    if columns is None:
        return list(f.columns)
    out: list[str] = []
    for name in columns:
        try:
            f[name].close()
        except KeyError:
            raise ToolError(f"{f.path}: no column {name!r}") from None
        if name not in out:
            out.append(name)
    return out


def _stage_path(dst: str) -> str:
    parent, base = os.path.split(os.path.abspath(dst))
    return os.path.join(parent, f"{_STAGE}{base}.{os.getpid()}")


def _publish(stage: str, dst: str) -> None:
    """Rename the verified staging File to ``dst`` (an old ``dst`` is moved
    aside first and deleted once the new one is in place)."""
    old = None
    if os.path.lexists(dst):
        old = _stage_path(dst) + ".old"
        os.rename(dst, old)
    os.rename(stage, dst)
    parent = os.path.dirname(os.path.abspath(dst))
    fd = os.open(parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    if old is not None:
        shutil.rmtree(old)


def _refuse(srcs: Sequence[str], dst: str, overwrite: bool) -> None:
    for s in srcs:
        if not os.path.isdir(s):
            raise FileNotFoundError(f"{s}: no such File")
        if os.path.abspath(s) == os.path.abspath(dst):
            raise ToolError(f"{dst}: the destination is a source")
    if os.path.lexists(dst) and not overwrite:
        raise FileExistsError(f"{dst}: exists (pass overwrite=True, or --overwrite, "
                              "to replace it)")


class _Plan:
    """One output column: how to make it and the rows it gets.  ``rows()``
    yields the chunks of rows from the first on; ``part(lo, hi)``, where
    given, yields ``(first row, chunk)`` of rows ``lo:hi`` only, so that the
    ranks of an MPI job can each copy their share."""

    def __init__(self, name: str, dtype: Any, size: int, nfile: int | None,
                 blob_rows: list[int] | None, attrs: Any,
                 rows: Callable[[], Iterator[np.ndarray]] | None,
                 part: Callable[[int, int], Iterator[tuple[int, np.ndarray]]] | None = None,
                 ) -> None:
        self.name, self.dtype, self.size = name, dtype, size
        self.nfile, self.blob_rows, self.attrs, self.rows = nfile, blob_rows, attrs, rows
        self.part = part

    def share(self, rank: int, nranks: int) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, chunk) of the rows this rank writes and verifies:
        an even share where the plan can be cut, else all of them on rank 0."""
        assert self.rows is not None
        if self.part is not None:
            lo, hi = rank * self.size // nranks, (rank + 1) * self.size // nranks
            yield from self.part(lo, hi)
            return
        if rank != 0:
            return
        at = 0
        for chunk in self.rows():
            yield at, chunk
            at += len(chunk)


def _rank(comm: Any) -> tuple[int, int]:
    return (0, 1) if comm is None else (comm.Get_rank(), comm.Get_size())


def _agree(comm: Any, exc: BaseException | None) -> None:
    """Raise on every rank if any rank failed: its own error where it has
    one, else the first failing rank's (so that every rank exits alike and
    none goes on into a collective the others left)."""
    if comm is None:
        if exc is not None:
            raise exc
        return
    mine = None
    if exc is not None:
        try:
            mine = pickle.dumps(exc)
        except Exception:
            mine = pickle.dumps(ToolError(f"{type(exc).__name__}: {exc}"))
    failed = comm.allgather(mine)
    if exc is not None:
        raise exc
    first = next((m for m in failed if m is not None), None)
    if first is not None:
        try:
            other = pickle.loads(first)
        except Exception as err:
            other = ToolError(f"another rank failed ({err})")
        raise other


def _write(stage: str, plans: list[_Plan], file_attrs: Any,
           group_attrs: dict[str, Any], comm: Any) -> None:
    # a failure leaves columns short, which closing them warns about: the
    # staged File is removed then, and _verify catches anything short
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IncompleteWarning)
        _write_staged(stage, plans, file_attrs, group_attrs, comm)


def _write_staged(stage: str, plans: list[_Plan], file_attrs: Any,
                  group_attrs: dict[str, Any], comm: Any) -> None:
    rank, nranks = _rank(comm)
    # under comm= creates, attributes and closes are collective (every rank
    # passes the same values); each rank writes its share of the rows
    with File(stage, "x", comm=comm) as out:
        if file_attrs is not None:
            _copy_attrs(file_attrs, out.attrs)
        for p in plans:
            if p.rows is None:  # a header-only block
                col = out.create(p.name, None)
            else:
                col = out.create(p.name, p.dtype, size=p.size, nfile=p.nfile,
                                 blob_rows=p.blob_rows)
                failure: BaseException | None = None
                try:
                    for at, rows in p.share(rank, nranks):
                        if at + len(rows) > p.size:
                            raise ToolError(f"{stage}: column {p.name!r} got more than "
                                            f"{p.size} rows (a source changed while copying?)")
                        col.write(at, rows)
                except Exception as exc:
                    failure = exc
                _agree(comm, failure)
            if p.attrs is not None:
                _copy_attrs(p.attrs, col.attrs)
            col.close()
        for g, attrs in group_attrs.items():
            if attrs is not None and len(attrs):
                _copy_attrs(attrs, out[g].attrs)


def _verify(stage: str, plans: list[_Plan], comm: Any) -> None:
    """Read the staged File back (checksums verified) and compare every row
    (under MPI: each rank its share) with what was meant to be written."""
    rank, nranks = _rank(comm)
    with File(stage, "r", verify=True) as f:
        for p in plans:
            col = f[p.name]
            if p.rows is None:
                continue
            want = np.dtype(p.dtype[0] if isinstance(p.dtype, tuple) else p.dtype)
            if col.size != p.size or col.dtype != want:
                raise ToolError(f"{stage}: column {p.name!r} reads {col.size} rows of "
                                f"{col.dtype.str}, wrote {p.size} of {want.str}")
            seen = 0
            for at, rows in p.share(rank, nranks):
                back = col.read(at, at + len(rows))
                if not _same_bytes(np.asarray(rows, dtype=back.dtype), back):
                    raise ToolError(f"{stage}: column {p.name!r} reads back different "
                                    f"rows in {at}:{at + len(rows)}")
                seen += len(rows)
            if comm is None and seen != p.size:
                raise ToolError(f"{stage}: column {p.name!r} got {seen} rows of {p.size} "
                                "(a source changed while copying?)")


def _run(srcs: Sequence[str], dst: str, overwrite: bool,
         build: Callable[[list[File]], tuple[list[_Plan], Any, dict[str, Any]]],
         comm: Any = None) -> None:
    rank, _ = _rank(comm)
    stage = ""
    failure: BaseException | None = None
    if rank == 0:
        try:
            _refuse(srcs, dst, overwrite)
            stage = _stage_path(dst)
            if os.path.lexists(stage):
                shutil.rmtree(stage)
        except Exception as exc:
            failure = exc
    if comm is not None:
        stage = comm.bcast(stage, root=0)
    _agree(comm, failure)
    files: list[File] = []
    try:
        try:
            files = [File(s, "r") for s in srcs]
            plans, fattrs, gattrs = build(files)
        except Exception as exc:
            failure = exc
        _agree(comm, failure)
        try:
            _write(stage, plans, fattrs, gattrs, comm)
            try:
                _verify(stage, plans, comm)
            except Exception as exc:
                failure = exc
            _agree(comm, failure)
            if rank == 0:
                try:
                    _publish(stage, dst)
                except Exception as exc:
                    failure = exc
            _agree(comm, failure)
        except BaseException:
            if rank == 0:
                shutil.rmtree(stage, ignore_errors=True)
            raise
    finally:
        for f in files:
            f.close()


def _attrs_of(f: File, names: Sequence[str]) -> tuple[Any, dict[str, Any]]:
    return f.attrs, {g: _group_attrs(f, g) for g in _groups(names)}


def _each_column(columns: Sequence[str] | None, names: list[str],
                 plan_of: Callable[[File, str, Any], _Plan]) -> Callable[[list[File]], Any]:
    """The plan builder of a tool that reads one source File: ``names`` gets
    the columns resolved there; header-only blocks are copied as such,
    columns with data are planned by ``plan_of(f, name, col)``, attribute
    blocks go with the File's and groups' attributes."""
    def build(files: list[File]) -> tuple[list[_Plan], Any, dict[str, Any]]:
        f = files[0]
        names.extend(_resolve(f, columns))
        plans = []
        for name in names:
            col = f[name]
            if col.kind == "header-only":
                plans.append(_Plan(name, None, 0, None, None, col.attrs, None))
            elif col.kind == "data":
                plans.append(plan_of(f, name, col))
        fattrs, gattrs = _attrs_of(f, names)
        return plans, fattrs, gattrs
    return build


# ---------------------------------------------------------------------------
# the tools


def copy(src: str, dst: str, columns: Sequence[str] | None = None, *,
         nfile: int | None = None, dtype: Any = None, overwrite: bool = False,
         chunk_bytes: int = CHUNK_BYTES, comm: Any = None) -> list[str]:
    """Copy the File ``src`` (or its ``columns``) to a new File ``dst``.

    Each column keeps its blob layout (the rows of every blob) unless
    ``nfile`` is given: then its rows are split evenly over ``nfile`` blobs
    (bigfile's rule).  ``dtype`` converts the elements of every column with
    data (numpy's ``astype``: floats to integers truncate), vector columns
    keep their components; bytes columns convert only to bytes, numbers
    only to numbers, complex only to complex (:class:`ToolError` before
    anything is written).  Header-only
    blocks are copied as such.  ``dst`` must not exist unless
    ``overwrite``.  Returns the names of the columns copied.

    With ``comm`` (an mpi4py communicator; every rank calls with the same
    arguments) each rank copies and verifies an even share of every
    column's rows, and the File is written collectively (``File(...,
    comm=comm)``); rank 0 checks the destination and renames the verified
    copy into place.  An error on any rank is raised on every rank.
    """
    dt = _check_dtype(dtype)
    _check_nfile(nfile)
    names: list[str] = []

    def plan_of(f: File, name: str, col: Any) -> _Plan:
        _convertible(f.path, name, col.dtype, dt)

        def rows() -> Iterator[np.ndarray]:
            for _, r in _chunks(col, chunk_bytes):
                yield _convert(r, dt)

        def part(lo: int, hi: int) -> Iterator[tuple[int, np.ndarray]]:
            step = _chunk_rows(col, chunk_bytes)
            for start in range(lo, hi, step):
                yield start, _convert(col.read(start, min(hi, start + step)), dt)

        return _Plan(name, _out_dtype(col, dt), col.size, nfile, None if nfile else list(col.blob_rows),
                     col.attrs, rows, part)

    _run([src], dst, overwrite, _each_column(columns, names, plan_of), comm)
    return names


def _check_nfile(nfile: int | None) -> None:
    """ToolError unless ``nfile`` is None or a whole number of blobs >= 1."""
    if nfile is not None and (int(nfile) != nfile or nfile < 1):
        raise ToolError(f"bad nfile {nfile!r}: at least 1 blob")


def _sample_mask(start: int, stop: int, every: int | None,
                 fraction: float | None, rng: Any) -> np.ndarray:
    if every is not None:
        idx = np.arange(start, stop)
        return idx % every == 0
    return rng.random(stop - start) < fraction


def sample(src: str, dst: str, columns: Sequence[str] | None = None, *,
           every: int | None = None, fraction: float | None = None,
           seed: int | None = None, nfile: int | None = None,
           overwrite: bool = False, chunk_bytes: int = CHUNK_BYTES) -> list[str]:
    """Write to ``dst`` every ``every``-th row (rows 0, k, 2k, ...) or a
    random ``fraction`` of the rows of ``src``'s ``columns``.

    The random choice is reproducible: row ``i`` of a column is kept when
    the ``i``-th number of ``numpy.random.default_rng(seed)`` (``random()``)
    is below ``fraction``, so columns of one length keep the same rows, and
    the same ``seed`` gives the same rows whatever the chunking.
    ``fraction`` needs a ``seed``.  Each column gets ``nfile`` blobs (default
    as many as its source, at most one per row).
    """
    if (every is None) == (fraction is None):
        raise ToolError("give exactly one of every= and fraction=")
    if every is not None and (int(every) != every or every < 1):
        raise ToolError(f"bad every {every!r}: a whole number, at least 1")
    if fraction is not None:
        if not 0.0 <= float(fraction) <= 1.0:
            raise ToolError(f"bad fraction {fraction!r}: between 0 and 1")
        if seed is None:
            raise ToolError("fraction= needs seed= (the sample must be reproducible)")
    _check_nfile(nfile)
    names: list[str] = []

    def masks(col: Any) -> Iterator[tuple[int, int, np.ndarray]]:
        rng = np.random.default_rng(seed) if fraction is not None else None
        step = _chunk_rows(col, chunk_bytes)
        for start in range(0, col.size, step):
            stop = min(col.size, start + step)
            yield start, stop, _sample_mask(start, stop, every, fraction, rng)

    def plan_of(f: File, name: str, col: Any) -> _Plan:
        kept = sum(int(m.sum()) for _, _, m in masks(col))

        def rows() -> Iterator[np.ndarray]:
            for start, stop, m in masks(col):
                yield col.read(start, stop)[m]

        n = nfile if nfile is not None else col.nfile
        n = max(1, min(n, kept)) if kept else 1
        return _Plan(name, _out_dtype(col, None), kept, n, None, col.attrs, rows)

    _run([src], dst, overwrite, _each_column(columns, names, plan_of))
    return names


def join(dst: str, srcs: Sequence[str], columns: Sequence[str] | None = None, *,
         nfile: int | None = None, overwrite: bool = False,
         chunk_bytes: int = CHUNK_BYTES) -> list[str]:
    """Concatenate the Files ``srcs`` along rows into a new File ``dst``.

    Every source must hold the same columns (or at least ``columns``) with
    the same dtype and components.  The blobs of the sources follow each
    other (the output column's blob layout is the sources' layouts one
    after the other) unless ``nfile`` is given.  Attributes come from the
    first source.
    """
    if len(srcs) < 1:
        raise ToolError("join needs at least one source File")
    _check_nfile(nfile)
    names: list[str] = []

    def build(files: list[File]) -> tuple[list[_Plan], Any, dict[str, Any]]:
        first = files[0]
        names.extend(_resolve(first, columns))
        if columns is None:
            for f in files[1:]:
                if set(f.columns) != set(names):
                    diff = sorted(set(f.columns) ^ set(names))
                    raise ToolError(f"{f.path}: columns differ from {first.path}'s: "
                                    f"{', '.join(diff)}")
        plans = []
        for name in names:
            cols = []
            for f in files:
                try:
                    cols.append(f[name])
                except KeyError:
                    raise ToolError(f"{f.path}: no column {name!r}") from None
            c0 = cols[0]
            for c, f in zip(cols[1:], files[1:]):
                if c.kind != c0.kind or (c.kind == "data" and (
                        c.dtype != c0.dtype or c.nmemb != c0.nmemb or c.ndim != c0.ndim)):
                    raise ToolError(f"{f.path}: column {name!r} is {c.kind} {c.dtype.str} "
                                    f"x{c.nmemb}, in {first.path} {c0.kind} "
                                    f"{c0.dtype.str} x{c0.nmemb}")
            if c0.kind == "header-only":
                plans.append(_Plan(name, None, 0, None, None, c0.attrs, None))
                continue
            if c0.kind != "data":
                continue

            def rows(cols: list[Any] = cols) -> Iterator[np.ndarray]:
                for c in cols:
                    for _, r in _chunks(c, chunk_bytes):
                        yield r

            layout = [n for c in cols for n in c.blob_rows]
            plans.append(_Plan(name, _out_dtype(c0, None), sum(c.size for c in cols),
                               nfile, None if nfile else layout, c0.attrs, rows))
        fattrs, gattrs = _attrs_of(first, names)
        return plans, fattrs, gattrs

    _run(list(srcs), dst, overwrite, build)
    return names
