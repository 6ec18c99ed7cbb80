"""Convert between HDF5 files (read and written with h5py) and colfile Files.

:func:`from_hdf5` copies an HDF5 file into a new colfile File,
:func:`to_hdf5` a colfile File into a new HDF5 file; :func:`convert` picks
the direction from what the source is (:func:`source_kind`: an HDF5 file by
its signature, a colfile File by being a directory).  ``colfile convert``
is the command line for it.  Needs h5py (``pip install colfile[hdf5]``).

The mapping (docs/hdf5.md):

* HDF5 groups are colfile groups, datasets are columns of the same path; a
  1-d dataset is a scalar column, a 2-d dataset of ``n x k`` a vector
  column of ``n`` rows of ``k`` components;
* a compound dataset becomes a group of that name holding one column per
  field (a field with a shape ``(k,)`` a vector column), with the group
  attribute ``hdf5:compound`` listing the fields in order, which
  :func:`to_hdf5` turns back into one compound dataset;
* attributes of the file, groups and datasets are copied;
* header-only blocks of a colfile File become HDF5 groups holding their
  attributes.

Data is copied in batches of about ``batch_bytes`` bytes, so memory stays
bounded whatever the size of a dataset.  The destination is written under
a hidden name beside it, read back and compared with the source (unless
``verify=False``), flushed to disk and only then renamed into place: a
failure or a crash leaves no half-written destination.  An existing
destination is refused unless ``overwrite=True``.  Every problem raises
:class:`ConvertError` naming the path and the object.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from typing import Any, Iterator

import numpy as np

try:  # the HDF5 directions need h5py; converting a zarr group does not
    import h5py
except ImportError:  # pragma: no cover - depends on the environment
    h5py = None

from .errors import Error
from .file import File
from .mpi import plan_share

__all__ = ["ConvertError", "convert", "from_hdf5", "to_hdf5", "source_kind",
           "COMPOUND_ATTR", "ONE_COMPONENT_ATTR"]

#: The group attribute that marks a group made from a compound dataset;
#: its value lists the field names in order.
COMPOUND_ATTR = "hdf5:compound"
#: The column attribute that marks a 2-d dataset of one component, which a
#: colfile column alone cannot tell from a 1-d one.
ONE_COMPONENT_ATTR = "hdf5:2d"
_RESERVED = (COMPOUND_ATTR, ONE_COMPONENT_ATTR)

_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_KINDS = "iufcbS"
BATCH_BYTES = 64 << 20


class ConvertError(Error, ValueError):
    """Input that cannot be converted, or a destination that is in the way."""


def _is_hdf5(path: str) -> bool:
    """True if ``path`` carries the HDF5 signature (at 0, 512, 1024, ...,
    where a user block may push it)."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            offset = 0
            while offset + len(_SIGNATURE) <= size:
                fh.seek(offset)
                if fh.read(len(_SIGNATURE)) == _SIGNATURE:
                    return True
                offset = 512 if offset == 0 else offset * 2
    except OSError:
        return False
    return False


def source_kind(path: str | os.PathLike[str]) -> str:
    """``'hdf5'`` for an HDF5 file, ``'zarr'`` for a directory holding a
    zarr group (``zarr.json``, or ``.zgroup`` of zarr format 2),
    ``'colfile'`` for another directory; else :class:`FileNotFoundError` or
    :class:`ConvertError`."""
    p = os.fspath(path)
    if os.path.isdir(p):
        if any(os.path.isfile(os.path.join(p, n)) for n in ("zarr.json", ".zgroup")):
            return "zarr"
        return "colfile"
    if not os.path.exists(p):
        raise FileNotFoundError(f"{p}: no such file or directory")
    if _is_hdf5(p):
        return "hdf5"
    raise ConvertError(f"{p}: neither an HDF5 file (no HDF5 signature) nor a colfile "
                       "File (not a directory)")


def convert(src: str | os.PathLike[str], dst: str | os.PathLike[str],
            **options: Any) -> list[str]:
    """Convert ``src`` to ``dst`` in the direction :func:`source_kind`
    gives; the options are those of :func:`from_hdf5` / :func:`to_hdf5`
    (:func:`colfile.convert_zarr.from_zarr` for a zarr group)."""
    kind = source_kind(src)
    if kind == "zarr":
        # convert_zarr builds on this module (and needs zarr): loaded on use
        return importlib.import_module(f"{__package__}.convert_zarr").from_zarr(src, dst,
                                                                              **options)
    if kind == "hdf5":
        return from_hdf5(src, dst, **options)
    return to_hdf5(src, dst, **options)


def _need_h5py() -> None:
    if h5py is None:
        raise ImportError("converting to or from HDF5 needs h5py: pip install colfile[hdf5]")


# ---------------------------------------------------------------------------
# destination handling: a hidden sibling, renamed into place when complete


def _prepare_destination(src: str, dst: str, overwrite: bool) -> str:
    """The hidden sibling of ``dst`` to build the copy in, after checking
    that ``dst`` may be made; anything left there by an earlier run is gone."""
    if os.path.abspath(src) == os.path.abspath(dst):
        raise ConvertError(f"{dst}: the destination is the source")
    if os.path.lexists(dst) and not overwrite:
        raise ConvertError(f"{dst}: exists (replace it with --overwrite, overwrite=True in Python)")
    parent = os.path.dirname(os.path.abspath(dst))
    if not os.path.isdir(parent):
        raise ConvertError(f"{dst}: the directory {parent} does not exist")
    tmp = os.path.join(parent, f".{os.path.basename(os.path.abspath(dst))}"
                               f".convert-{os.getpid()}")
    _remove(tmp)
    return tmp


def _fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.unlink(path)


def _publish(tmp: str, dst: str, durable: bool) -> None:
    """Rename the finished ``tmp`` to ``dst``, replacing what was there."""
    old = None
    if os.path.lexists(dst):
        old = tmp + "-old"
        os.rename(dst, old)
    os.rename(tmp, dst)
    if durable:
        _fsync_path(os.path.dirname(os.path.abspath(dst)))
    if old is not None:
        _remove(old)


# ---------------------------------------------------------------------------
# dtypes and attributes


def _element_dtype(dt: np.dtype[Any], where: str) -> np.dtype[Any]:
    """The colfile element dtype for an HDF5 scalar dtype, or ConvertError."""
    if h5py is not None:
        if h5py.check_string_dtype(dt) is not None and h5py.check_string_dtype(dt).length is None:
            raise ConvertError(f"{where}: variable-length strings are not supported "
                               "(colfile stores fixed-length byte strings)")
        if h5py.check_ref_dtype(dt) is not None:
            raise ConvertError(f"{where}: object or region references are not supported")
        if h5py.check_vlen_dtype(dt) is not None:
            raise ConvertError(f"{where}: variable-length data is not supported")
    if dt.kind in "OTU":  # zarr's variable-length and unicode strings
        raise ConvertError(f"{where}: variable-length or unicode strings are not "
                           "supported (colfile stores fixed-length byte strings)")
    if dt.kind not in _KINDS or dt.names is not None or dt.subdtype is not None:
        raise ConvertError(f"{where}: dtype {dt} is not supported (colfile stores "
                           "integers, floats, complex, bool and fixed-length bytes)")
    # an HDF5 enum reads as its integer type: keep that, without the mapping
    return np.dtype(dt.str)


def _check_columns_of(dt: np.dtype, shape: tuple[int, ...], where: str, noun: str) -> None:
    """Refuse, naming ``where``, an array (an HDF5 ``dataset``, a zarr
    ``array``) that cannot become columns: more than 1-d with fields, more
    than 2-d without (rows x components), a field name colfile cannot store
    or a field of more than one dimension, an element type without a
    colfile dtype."""
    ndim = len(shape)
    if dt.names is not None:
        if ndim != 1:
            raise ConvertError(f"{where}: a compound {noun} of {ndim} dimensions is not supported (only 1-d)")
        for field in dt.names:
            fdt = dt.fields[field][0]
            fwhere = f"{where}: field {field!r}"
            if not field or "/" in field or field.startswith(".") or any(c.isspace() for c in field):
                raise ConvertError(f"{fwhere}: a name colfile cannot store")
            base, fshape = (fdt.subdtype if fdt.subdtype else (fdt, ()))
            if len(fshape) > 1 or fshape == (0,):
                raise ConvertError(f"{fwhere}: a field of shape {fshape} is not supported")
            _element_dtype(base, fwhere)
        return
    if ndim not in (1, 2):
        raise ConvertError(f"{where}: a {noun} of {ndim} dimensions is not supported "
                           "(only 1-d, and 2-d as rows x components)")
    if ndim == 2 and shape[1] == 0:
        raise ConvertError(f"{where}: a 2-d {noun} of zero components is not supported")
    _element_dtype(dt, where)


def _to_colfile_attr(value: Any, where: str) -> Any:
    """An h5py attribute value as colfile stores it."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, np.bytes_)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise ConvertError(f"{where}: a byte string that is not UTF-8") from None
    if h5py is not None and isinstance(value, h5py.Empty):
        raise ConvertError(f"{where}: an empty (null dataspace) attribute is not supported")
    arr = np.asarray(value)
    if arr.ndim > 1:
        raise ConvertError(f"{where}: an attribute of {arr.ndim} dimensions is not "
                           "supported (colfile attributes are scalars or 1-d)")
    if arr.dtype.kind in "OS":
        out = []
        for v in arr.reshape(-1):
            if isinstance(v, (bytes, np.bytes_)):
                try:
                    v = bytes(v).decode("utf-8")
                except UnicodeDecodeError:
                    raise ConvertError(f"{where}: a byte string that is not UTF-8") from None
            if not isinstance(v, str):
                raise ConvertError(f"{where}: an attribute holding {type(v).__name__} "
                                   "values is not supported")
            out.append(v)
        return out if arr.ndim == 1 else out[0]
    if arr.dtype.kind not in "iufcb" or arr.dtype.names is not None:
        raise ConvertError(f"{where}: an attribute of dtype {arr.dtype} is not supported")
    return arr[()] if arr.ndim == 0 else np.ascontiguousarray(arr)


def _to_hdf5_attr(value: Any, where: str) -> Any:
    """A colfile attribute value as h5py stores it."""
    if isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise ConvertError(f"{where}: a list holding non-UTF-8 byte strings is not "
                               "supported")
        return np.array(value, dtype=h5py.string_dtype())
    if isinstance(value, np.ndarray) and value.dtype.kind == "V" or isinstance(value, np.void):
        raise ConvertError(f"{where}: an opaque attribute (dtype {value.dtype}) is not "
                           "supported")
    return value


def _check_attrs(h5obj: Any, where: str) -> None:
    """Refuse the attributes of ``h5obj`` colfile cannot hold."""
    for key, value in h5obj.attrs.items():
        if key in _RESERVED:
            raise ConvertError(f"{where}: attribute {key!r} is reserved by the converter")
        if not key or any(c in key for c in " \t\n\r"):
            raise ConvertError(f"{where}: attribute {key!r}: a name colfile cannot store "
                               "(empty, or holding a space, tab or newline)")
        _to_colfile_attr(value, f"{where}: attribute {key!r}")


def _copy_attrs_in(h5obj: Any, am: Any, where: str) -> None:
    for key, value in h5obj.attrs.items():
        try:
            am[key] = _to_colfile_attr(value, f"{where}: attribute {key!r}")
        except ValueError as exc:  # colfile's InvalidNameError among them
            if isinstance(exc, ConvertError):
                raise
            raise ConvertError(f"{where}: attribute {key!r}: {exc}") from None


def _copy_attrs_out(am: Any, h5obj: Any, where: str) -> None:
    for key in am:
        if key in _RESERVED:
            continue
        h5obj.attrs[key] = _to_hdf5_attr(am[key], f"{where}: attribute {key!r}")


def _batches(n: int, row_bytes: int, batch_bytes: int) -> Iterator[tuple[int, int]]:
    step = max(1, batch_bytes // max(1, row_bytes))
    for start in range(0, n, step):
        yield start, min(n, start + step)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtypes, shapes and bytes (so NaNs and -0.0 compare exactly)."""
    return (a.dtype == b.dtype and a.shape == b.shape
            and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes())


# ---------------------------------------------------------------------------
# HDF5 -> colfile


def _plan_hdf5(h5: Any, src: str) -> tuple[list[str], list[tuple[str, Any]]]:
    """The groups and the datasets of ``h5``, checked before anything is
    written."""
    groups: list[str] = []
    datasets: list[tuple[str, Any]] = []

    def visit(name: str, obj: Any) -> None:
        where = f"{src}: /{name}"
        if any(c.isspace() for c in name) or name.startswith(".") or "/." in name:
            raise ConvertError(f"{where}: a name colfile cannot store (spaces or a leading "
                               "dot)")
        _check_attrs(obj, where)
        if isinstance(obj, h5py.Group):
            groups.append(name)
            return
        if not isinstance(obj, h5py.Dataset):
            raise ConvertError(f"{where}: a {type(obj).__name__} is not supported")
        _check_columns_of(obj.dtype, obj.shape, where, "dataset")
        datasets.append((name, obj))

    _check_attrs(h5, f"{src}: /")
    h5.visititems(visit)
    # soft and external links are not objects: visititems skips them, and
    # copying would lose them silently
    for link in _links(h5):
        kind = h5.get(link, getlink=True)
        if isinstance(kind, (h5py.SoftLink, h5py.ExternalLink)):
            raise ConvertError(f"{src}: /{link}: a {type(kind).__name__} is not supported "
                               "(colfile has no links)")
    return groups, datasets


def _links(h5: Any) -> list[str]:
    names: list[str] = []
    if hasattr(h5, "visit_links"):  # h5py 3.11+
        h5.visit_links(names.append)
        return names

    def walk(group: Any, prefix: str) -> None:
        for key in group.keys():
            names.append(prefix + key)
            if isinstance(group.get(key, getlink=True), h5py.HardLink) and \
                    isinstance(group[key], h5py.Group):
                walk(group[key], prefix + key + "/")

    walk(h5, "")
    return names


def _fields(dt: np.dtype[Any]) -> list[tuple[str, np.dtype[Any], int]]:
    out = []
    for field in dt.names:
        fdt = dt.fields[field][0]
        base, shape = (fdt.subdtype if fdt.subdtype else (fdt, ()))
        out.append((field, np.dtype(base.str), shape[0] if shape else 0))
    return out


def _column_dtype(base: np.dtype[Any], k: int) -> Any:
    return (base, k) if k else base


def from_hdf5(src: str | os.PathLike[str], dst: str | os.PathLike[str], *,
              nfile: int | None = None, chunk_rows: int | None = None,
              overwrite: bool = False, verify: bool = True, durable: bool = True,
              batch_bytes: int = BATCH_BYTES, comm: Any = None) -> list[str]:
    """Copy the HDF5 file ``src`` into a new colfile File ``dst``.

    ``nfile`` and ``chunk_rows`` are given to every column
    (:meth:`colfile.Group.create`).  Returns the names of the columns
    written.  See the module documentation for the mapping.

    ``comm`` (an mpi4py communicator; collective then): every rank reads
    its even share of each dataset's rows with h5py and writes them with
    :meth:`colfile.Column.write_all`, and verifies its share; rank 0 alone
    checks the destination and renames the copy into place.  An error on
    any rank is raised on every rank."""
    _need_h5py()
    src, dst = os.fspath(src), os.fspath(dst)
    rank = comm.Get_rank() if comm is not None else 0

    def prepare() -> str:
        if not os.path.exists(src):
            raise FileNotFoundError(f"{src}: no such file")
        if not _is_hdf5(src):
            raise ConvertError(f"{src}: not an HDF5 file (no HDF5 signature)")
        return _prepare_destination(src, dst, overwrite)

    tmp = _on_root(comm, prepare)
    try:
        with h5py.File(src, "r") as h5:
            groups, datasets = _plan_hdf5(h5, src)
            return _copy_in(src, dst, tmp, h5, [(name, h5[name]) for name in groups], datasets,
                            nfile=nfile, chunk_rows=chunk_rows, verify=verify, durable=durable,
                            batch_bytes=batch_bytes, comm=comm)
    except BaseException:
        if rank == 0:
            _remove(tmp)
        raise


def _copy_in(src: str, dst: str, tmp: str, top: Any, groups: list[tuple[str, Any]],
             datasets: list[tuple[str, Any]], *, nfile: int | None, chunk_rows: int | None,
             verify: bool, durable: bool, batch_bytes: int, comm: Any) -> list[str]:
    """The copy every source format shares (HDF5, zarr): the attributes of
    ``top`` and of each group, each dataset as columns in the new File
    ``tmp``, then (``verify``) every rank reads its share back and compares,
    and rank 0 renames ``tmp`` to ``dst``.  Returns the columns written;
    the caller removes ``tmp`` on an error."""
    written: list[str] = []
    with File(tmp, "w", durable=durable, comm=comm) as f:
        _copy_attrs_in(top, f.attrs, f"{src}: /")
        for name, node in groups:
            _copy_attrs_in(node, f.require_group(name).attrs, f"{src}: /{name}")
        for name, ds in datasets:
            written += _dataset_in(f, name, ds, src, nfile, chunk_rows, batch_bytes, comm)
    if verify:
        def check() -> None:
            with File(tmp, "r") as f:
                for name, ds in datasets:
                    _verify_dataset(f, name, ds, src, batch_bytes, comm)
        _everywhere(comm, check)
    _on_root(comm, lambda: _publish(tmp, dst, durable))
    return written


def _on_root(comm: Any, fn: Any) -> Any:
    """``fn()`` on rank 0, its result (or its exception) on every rank."""
    if comm is None:
        return fn()
    out: Any = None
    if comm.Get_rank() == 0:
        try:
            out = (True, fn())
        except Exception as exc:  # raised on every rank below
            out = (False, exc)
    ok, value = comm.bcast(out, root=0)
    if not ok:
        raise value
    return value


def _everywhere(comm: Any, fn: Any) -> None:
    """``fn()`` on every rank; the first rank's exception raised on all."""
    if comm is None:
        fn()
        return
    failure: Exception | None = None
    try:
        fn()
    except Exception as exc:  # shared below
        failure = exc
    failures = comm.allgather(failure)
    first = next((x for x in failures if x is not None), None)
    if first is not None:
        raise first


def _share(n: int, comm: Any) -> tuple[int, int]:
    """This rank's rows ``[lo, hi)`` of ``n``."""
    if comm is None:
        return 0, n
    first, count = plan_share(n, comm.Get_size(), comm.Get_rank())
    return first, first + count


def _write_batches(n: int, row_bytes: int, batch_bytes: int,
                   comm: Any) -> Iterator[tuple[int, int]]:
    """This rank's share of ``n`` rows in batches; under MPI as many batches
    on every rank (the writes are collective), empty ones at the end."""
    lo, hi = _share(n, comm)
    step = max(1, batch_bytes // max(1, row_bytes))
    mine = -(-(hi - lo) // step)
    count = mine if comm is None else comm.allreduce(mine, op=_max_op())
    for i in range(count):
        start = min(hi, lo + i * step)
        yield start, min(hi, start + step)


def _max_op() -> Any:
    mpi4py = sys.modules["mpi4py.MPI"]  # loaded: a communicator was given
    return mpi4py.MAX


def _put(col: Any, start: int, stop: int, rows: np.ndarray, comm: Any) -> None:
    if comm is None:
        col[start:stop] = rows
    else:
        col.write_all(rows, start=start)


def _dataset_in(f: File, name: str, ds: Any, src: str, nfile: int | None,
                chunk_rows: int | None, batch_bytes: int, comm: Any = None) -> list[str]:
    n = ds.shape[0]
    opts = {"size": n, "nfile": nfile, "chunk_rows": chunk_rows}
    if ds.dtype.names is not None:
        fields = _fields(ds.dtype)
        g = f.require_group(name)
        _copy_attrs_in(ds, g.attrs, f"{src}: /{name}")
        g.attrs[COMPOUND_ATTR] = [fname for fname, _, _ in fields]
        cols = [g.create(fname, _column_dtype(base, k), **opts) for fname, base, k in fields]
        for start, stop in _write_batches(n, ds.dtype.itemsize, batch_bytes, comm):
            rows = ds[start:stop]
            for col, (fname, _, _) in zip(cols, fields):
                _put(col, start, stop, rows[fname], comm)
        for col in cols:
            col.close()
        return [f"{name}/{fname}" for fname, _, _ in fields]
    base = _element_dtype(ds.dtype, f"{src}: /{name}")
    k = ds.shape[1] if ds.ndim == 2 else 0
    col = f.create(name, _column_dtype(base, k), **opts)
    _copy_attrs_in(ds, col.attrs, f"{src}: /{name}")
    if k == 1:
        col.attrs[ONE_COMPONENT_ATTR] = 1
    for start, stop in _write_batches(n, base.itemsize * max(k, 1), batch_bytes, comm):
        rows = ds[start:stop]
        _put(col, start, stop, rows.reshape(-1) if k == 1 else rows, comm)
    col.close()
    return [name]


def _verify_dataset(f: File, name: str, ds: Any, src: str, batch_bytes: int,
                    comm: Any = None) -> None:
    n = ds.shape[0]
    lo, hi = _share(n, comm)
    where = f"{f.path}: {name} (from {src}: /{name})"
    if ds.dtype.names is not None:
        fields = _fields(ds.dtype)
        cols = [f[f"{name}/{fname}"] for fname, _, _ in fields]
        for col in cols:
            if col.shape[0] != n:
                raise ConvertError(f"{where}: verification failed: {col.shape[0]} rows, not {n}")
        for start, stop in _batches(hi - lo, ds.dtype.itemsize, batch_bytes):
            start, stop = start + lo, stop + lo
            rows = ds[start:stop]
            for col, (fname, base, _) in zip(cols, fields):
                if not _same(col[start:stop], np.asarray(rows[fname], dtype=base)):
                    raise ConvertError(f"{where}: verification failed: field {fname!r}, "
                                       f"rows {start}..{stop - 1} differ")
        return
    col = f[name]
    k = ds.shape[1] if ds.ndim == 2 else 0
    base = np.dtype(ds.dtype.str)
    expect_shape = (n, k) if k > 1 else (n,)
    if col.shape != expect_shape or col.dtype != base:
        raise ConvertError(f"{where}: verification failed: {col.dtype} {col.shape}, "
                           f"not {base} {expect_shape}")
    for start, stop in _batches(hi - lo, base.itemsize * max(k, 1), batch_bytes):
        start, stop = start + lo, stop + lo
        rows = np.asarray(ds[start:stop], dtype=base)
        if not _same(col[start:stop], rows.reshape(-1) if k == 1 else rows):
            raise ConvertError(f"{where}: verification failed: rows {start}..{stop - 1} differ")


# ---------------------------------------------------------------------------
# colfile -> HDF5


def _plan_colfile(f: File) -> tuple[list[str], list[str], dict[str, list[str]]]:
    """The groups (incl. header-only blocks), the data columns and the
    compound groups (name -> fields) of ``f``."""
    names = f.columns
    data = []
    groups = set()
    for name in names:
        if f[name].kind == "data":
            data.append(name)
        else:
            groups.add(name)
        parts = name.split("/")
        for i in range(1, len(parts)):
            groups.add("/".join(parts[:i]))
    # directories holding no column (empty groups, groups with attributes only)
    root = f.path
    column_set = set(names)
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        if rel != "." and rel not in column_set and not any(
                rel.startswith(c + "/") for c in data):
            groups.add(rel)
    clash = sorted(groups.intersection(data))
    if clash:
        raise ConvertError(f"{f.path}: {clash[0]!r} is a column with other columns below it, "
                           "which HDF5 cannot hold (a dataset has no members)")
    compound: dict[str, list[str]] = {}
    for g in sorted(groups):
        am = f[g].attrs if g in column_set else f[g + "/"].attrs
        if COMPOUND_ATTR in am:
            fields = am[COMPOUND_ATTR]
            members = [c for c in data if c.startswith(g + "/")]
            if sorted(members) != sorted(f"{g}/{x}" for x in fields):
                raise ConvertError(f"{f.path}: {g}: marked {COMPOUND_ATTR} but its columns "
                                   f"are not the fields {fields}")
            compound[g] = list(fields)
    return sorted(groups), data, compound


def to_hdf5(src: str | os.PathLike[str], dst: str | os.PathLike[str], *,
            overwrite: bool = False, verify: bool = True, durable: bool = True,
            batch_bytes: int = BATCH_BYTES, nfile: int | None = None,
            chunk_rows: int | None = None, comm: Any = None) -> list[str]:
    """Copy the colfile File ``src`` into a new HDF5 file ``dst``.

    ``nfile`` and ``chunk_rows`` describe colfile columns and are ignored
    here (accepted so that :func:`convert` takes the same options both
    ways).  Returns the names of the datasets written.  With ``comm`` (an
    mpi4py communicator; collective) rank 0 does the copy, as h5py writes
    serially, and every rank returns its result or raises its error."""
    _need_h5py()
    if comm is not None:
        return _on_root(comm, lambda: to_hdf5(src, dst, overwrite=overwrite, verify=verify,
                                               durable=durable, batch_bytes=batch_bytes))
    src, dst = os.fspath(src), os.fspath(dst)
    if not os.path.isdir(src):
        if not os.path.exists(src):
            raise FileNotFoundError(f"{src}: no such File")
        raise ConvertError(f"{src}: not a colfile File (not a directory)")
    tmp = _prepare_destination(src, dst, overwrite)
    written: list[str] = []
    try:
        with File(src, "r") as f:
            groups, data, compound = _plan_colfile(f)
            blocks = set(f.columns)
            with h5py.File(tmp, "w") as h5:
                _copy_attrs_out(f.attrs, h5, f"{src}: /")
                for g in groups:
                    if g in compound or any(g.startswith(c + "/") for c in compound):
                        continue
                    am = f[g].attrs if g in blocks else f[g + "/"].attrs
                    _copy_attrs_out(am, h5.require_group(g), f"{src}: {g}")
                for g, fields in compound.items():
                    written.append(g)
                    _compound_out(f, g, fields, h5, src, batch_bytes)
                for name in data:
                    if any(name.startswith(c + "/") for c in compound):
                        continue
                    written.append(name)
                    _column_out(f, name, h5, src, batch_bytes)
                h5.flush()
            if verify:
                with h5py.File(tmp, "r") as h5:
                    for name in data:
                        _verify_column(f, name, h5, compound, batch_bytes)
        if durable:
            _fsync_path(tmp)
        _publish(tmp, dst, durable)
    except BaseException:
        _remove(tmp)
        raise
    return sorted(written)


def _compound_out(f: File, g: str, fields: list[str], h5: Any, src: str,
                  batch_bytes: int) -> None:
    cols = [f[f"{g}/{x}"] for x in fields]
    n = cols[0].shape[0]
    if any(c.shape[0] != n for c in cols):
        raise ConvertError(f"{src}: {g}: the fields of a compound have different lengths")
    dt = np.dtype([(x, (c.dtype, c.shape[1]) if len(c.shape) == 2 else c.dtype)
                   for x, c in zip(fields, cols)])
    ds = h5.create_dataset(g, shape=(n,), dtype=dt)
    _copy_attrs_out(f[g + "/"].attrs, ds, f"{src}: {g}")
    for start, stop in _batches(n, dt.itemsize, batch_bytes):
        rows = np.empty(stop - start, dt)
        for x, c in zip(fields, cols):
            rows[x] = c[start:stop]
        ds[start:stop] = rows


def _column_out(f: File, name: str, h5: Any, src: str, batch_bytes: int) -> None:
    col = f[name]
    shape = col.shape
    if ONE_COMPONENT_ATTR in col.attrs and len(shape) == 1:
        shape = (shape[0], 1)
    ds = h5.create_dataset(name, shape=shape, dtype=col.dtype)
    _copy_attrs_out(col.attrs, ds, f"{src}: {name}")
    for start, stop in _batches(shape[0], col.dtype.itemsize * (shape[1] if len(shape) == 2
                                                                 else 1), batch_bytes):
        ds[start:stop] = col[start:stop].reshape((stop - start,) + shape[1:])


def _verify_column(f: File, name: str, h5: Any, compound: dict[str, list[str]],
                   batch_bytes: int) -> None:
    col = f[name]
    group = next((c for c in compound if name.startswith(c + "/")), None)
    ds = h5[group] if group else h5[name]
    field = name[len(group) + 1:] if group else None
    n = col.shape[0]
    where = f"{ds.file.filename}: /{ds.name.lstrip('/')} (from {f.path}: {name})"
    if ds.shape[0] != n:
        raise ConvertError(f"{where}: verification failed: {ds.shape[0]} rows, not {n}")
    row = col.dtype.itemsize * (col.shape[1] if len(col.shape) == 2 else 1)
    for start, stop in _batches(n, row, batch_bytes):
        got = ds[start:stop]
        got = got[field] if field else got
        want = col[start:stop]
        if not _same(np.asarray(got).reshape(want.shape), want) or \
                np.asarray(got).dtype != want.dtype:
            raise ConvertError(f"{where}: verification failed: rows {start}..{stop - 1} differ")
