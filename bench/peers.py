"""colfile side by side with its peers: snapshot and metadata workloads.

    python bench/peers.py [--rows 16777216] [--repeats 3]
        [--systems numpy,colfile,colfile-nodurable,colfile-deferred,
                   colfile-deferred-durable,colfile-verify,colfile-percolumn,h5py,zarr,
                   adios2,bigfile,fs-floor,fs-floor-ext,fs-floor-commit,
                   fs-floor-read,fs-floor-fsync,fs-floor-fsync-percolumn]
        [--tmpdir DIR]
        [--cold-method auto|drop_caches|fadvise] [--nice -20] [--markdown docs/performance.md]
        [--json FILE] [--quick]

Systems (all from PyPI; ``pip install .[bench]``; a peer that is not installed
is skipped with a note):

* ``numpy``: raw files, one per column (``ndarray.tofile`` / ``np.fromfile``;
  partial reads through ``np.fromfile(offset=)`` and ``np.memmap``), the
  baseline every ratio is measured against;
* ``colfile``: its public Python API (``File.create(data=)``, ``col[...]``,
  ``col.read(out=)``, ``File.column_attrs()`` for the metadata reads),
  checksums and statistics on, durable commits (the defaults);
* ``colfile-nodurable``: the same writes with ``File(..., durable=False)``
  (commits not fsynced; where ``File`` has no ``durable=``, the
  ``CF_OPEN_NODURABLE`` flag through a private mode): colfile's page-cache
  mode, the one the ``write`` target is judged on (its reads are colfile's,
  not run again);
* ``colfile-deferred``: the metadata workload's creates with
  ``File(..., durable=False, deferred=True)``: each column's commit runs on
  a background thread while the next column is made (only where ``File``
  has ``deferred=``);
* ``colfile-deferred-durable``: the snapshot's write + fsync with
  ``File(..., deferred=True)`` and durable commits: each column's commit
  (whose fsync waits for the disk) runs in the background while the next
  column is copied;
* ``colfile-verify``: the same reads with ``File(..., verify=True)`` (the
  CRC32C of every blob a read covers whole is checked; off by default), to
  tell what verifying reads costs (its writes are colfile's, not run again);
* ``colfile-percolumn``: the metadata reads the way they were written
  before ``File.column_attrs`` (``f[name].attrs["index"]`` for each name of
  ``f.columns``), to tell what the one-call path buys (its files are
  written as colfile's);
* ``h5py``: one HDF5 file, contiguous datasets (no chunks, no filters);
* ``zarr``: zarr 3 group, uncompressed (no compressors, no filters), chunks
  of ``--zarr-chunk-rows`` rows;
* ``adios2``: BP5 engine, one step, serial;
* ``bigfile``: bigfile 0.1.52 (one blob per column);
* ``fs-floor``: not a library: the metadata workload in bigfile's layout with
  bare ``os`` calls (per column ``mkdir`` and the three files bigfile writes,
  ``header``, ``attr-v2`` and ``000000``, in its exact bytes; reads list the
  root and parse each ``attr-v2``): how much of that workload is the file
  system making and finding inodes, a floor for any library keeping the
  layout;
* ``fs-floor-ext``: ``fs-floor`` plus the file colfile adds per column
  (``colfile-v1``: checksums, then statistics): the floor of the layout
  with checksums and statistics kept in a file bigfile ignores;
* ``fs-floor-commit``: ``fs-floor-ext`` made as colfile commits a new
  column (a one-byte lock in the directory's lock file, files in a hidden
  staging directory renamed to the column's name): the floor of colfile's
  protocol.
* ``fs-floor-read``: not a library: the 1% read of a snapshot in bigfile's
  layout (made with bare ``os`` calls) by a reader that learns each
  column's dtype and shape from its ``header`` (open, read, close) and then
  reads the rows as the numpy raw row does: the floor of a read that
  describes itself.
* ``fs-floor-fsync``: not a library: the write + fsync of the snapshot's
  bytes (one raw file per column, as numpy's) with bare system calls, the
  copy overlapping the disk's write-back as colfile's durable writes do
  (blocks reserved with ``fallocate``, ``pwrite`` of 2 MiB pieces, write-back
  started with ``sync_file_range`` every 16 MiB; Linux only): what the disk
  takes to make these bytes durable in this run, the pace no library writing
  them can beat by much.
* ``fs-floor-fsync-percolumn``: the same, each column's file fsynced before
  the next column is written: the disk's pace for a write that makes every
  column durable as it is finished, which is what colfile's default
  (durable commits: a column is durable once closed) promises.

**Snapshot workload.**  ``--rows`` rows (2**24: 805 MB) of ``Position`` f8 x 3,
``Velocity`` f4 x 3, ``ID`` i8, ``Mass`` f4.  Phases:

* ``write``: create, write the four columns, close, into the page cache (the
  file system is synced before the timed write, not during it);
* ``write_fsync``: the same, then ``os.fsync`` on every file and directory the
  system wrote (none of the peers' Python APIs has a durable close of its own,
  so every system is made durable the same way), timed together;
* ``read_warm``: all four columns into new arrays, every file of the system in
  the page cache (dropped from it and read again through ``os.read``
  beforehand: "Page cache state" below);
* ``read_cold``: the same after dropping the page cache: as root
  ``sync; echo 3 > /proc/sys/vm/drop_caches`` (``drop_caches``), otherwise
  ``fsync`` + ``posix_fadvise(POSIX_FADV_DONTNEED)`` on every file of the
  system (``fadvise``; dentries and inodes stay cached);
* ``read_out``: warm, into caller-owned buffers that were allocated and
  touched beforehand (colfile ``read(out=)``, numpy ``readinto``, h5py
  ``read_direct``, bigfile ``read(out=)``, adios2 ``read_in_buffer``);
  compared with ``copyto``: ``np.copyto`` of the same bytes from memory into
  the same kind of touched buffers (the memcpy limit);
* ``rows``: 1% of the rows from the middle (contiguous), all four columns;
* ``stride``: ``[::--stride]``, all four columns;
* ``fancy_sorted`` / ``fancy_unsorted``: ``--fancy`` (10**6) random distinct row
  numbers, ascending / in random order, all four columns.

**Metadata workload** (``--md-columns`` 10,000 columns of 4 ``i8`` rows each,
one integer attribute ``index`` per column):

* ``md_create``: create every column, write its rows, set its attribute,
  close (bigfile through its low-level API: ``bigfile.Column().create(f,
  ...)``, because ``bigfile.File.create`` lists every block after every
  create; colfile through ``File.create`` and ``Column.attrs``);
* ``md_read_warm`` / ``md_read_cold``: open the File, list its columns and read
  the attribute of each (cold: page cache dropped as above).

Every measurement runs in a fresh subprocess (so peaks of memory do not mix
and no state carries over) that first does the same kind of operation on a
tiny File of its own (imports, library loading and first calls are not
timed); systems are interleaved within each repeat (the order rotates from
repeat to repeat), and each figure is the best of ``--repeats``; the
targets table also gives each target's figure from the lower quartiles of
the repeats (with 4 or more), to tell a difference from the spread.  On a
machine shared with other work, ``--nice -20`` (root) runs each measurement
in a session of its own whose scheduler autogroup gets that priority;
otherwise the others' processes take most of its CPU time.

Page cache state: how fast cached bytes are copied out depends on the size
of the page-cache folios that hold them, and that depends on the file's
history.  Pages a write put there sit in folios of up to 2 MiB; pages read
back from the disk get the folios read-ahead makes.  On the benchmark
machine a DAMON ``pageout`` scheme evicts page-cache pages left unused for
about a minute, so in a long run parts of some files, different ones from
run to run, come back in 4 KiB pages: the same 1% of the rows, at the same
offsets of two files of the same size, was copied out 30-50% slower from
the file whose middle was in 4 KiB pages (docs/performance.md, session 19).
Before every warm read of the snapshot (``read_warm``, ``read_out`` and the
partial reads) each file of the system is therefore dropped from the page
cache and read again, whole and in order, so that every system's files are
held in the folios of the same sequential read.

Memory priming: on a virtual machine whose host takes back the memory the
guest frees (free page reporting, as on the benchmark machine: freed pages
go back to the host within seconds), the first write to a page the guest
has not used lately faults into the host, about 2 ms per MiB there (0.45
GB/s, slower than the disk), and a timed write or read that lands on such
pages measures the host rather than the library.  Before each timed part
the child therefore touches and frees ``--prime`` bytes of memory (default:
the snapshot's size plus a quarter), so that every system finds the same
recently used free memory; ``--prime 0`` turns it off.  Every read is verified with ``np.array_equal`` against the
data written (regenerated from the seed after the timed part); every write is
read back and verified; every metadata read checks the names and each
attribute.  A measurement that does not verify is reported as FAILED and the
exit status is 1.

Figures: decimal GB/s (1e9 bytes per second) of the snapshot's bytes, ratios
``numpy time / system time`` measured in the same run (> 1: faster than
numpy), partial reads in milliseconds, and the peak RSS of each measurement
above what the process held before it (``/proc/self/clear_refs`` resets the
high-water mark; for reads into new arrays the arrays returned are
subtracted).

With ``--markdown FILE`` the tables replace the text between
``<!-- peers:begin -->`` and ``<!-- peers:end -->`` of that file (appended as
a new section if the markers are absent), with the command line, the commit
and the machine.  ``--quick`` uses small sizes (a smoke test; figures are
meaningless).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe as describe_machine  # noqa: E402  (bench/machine.py)
from mdsection import replace_section  # noqa: E402  (bench/mdsection.py)
from prime import prime_memory  # noqa: E402  (bench/prime.py)

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"

SYSTEMS = ["numpy", "colfile", "colfile-nodurable", "colfile-deferred",
           "colfile-deferred-durable", "colfile-verify",
           "colfile-percolumn", "h5py",
           "zarr", "adios2", "bigfile", "fs-floor", "fs-floor-ext", "fs-floor-commit",
           "fs-floor-read", "fs-floor-fsync", "fs-floor-fsync-percolumn"]
#: rows measured only in the phases their class lists (colfile with a
#: non-default option; the floors made with bare system calls)
VARIANTS = {"colfile-nodurable", "colfile-deferred", "colfile-deferred-durable", "colfile-verify",
            "colfile-percolumn",
            "fs-floor", "fs-floor-ext", "fs-floor-commit", "fs-floor-read", "fs-floor-fsync",
            "fs-floor-fsync-percolumn"}
LABELS = {
    "numpy": "numpy raw (tofile/fromfile, one file per column)",
    "colfile": "colfile",
    "colfile-nodurable": "colfile, durable=False (commits not fsynced)",
    "colfile-deferred": "colfile, durable=False, deferred=True (commits in the background)",
    "colfile-deferred-durable": "colfile, deferred=True (durable commits in the background)",
    "colfile-verify": "colfile, verify=True (reads check CRC32C)",
    "colfile-percolumn": "colfile, attributes column by column (f[name].attrs)",
    "h5py": "h5py, contiguous",
    "zarr": "zarr 3, uncompressed",
    "adios2": "adios2 BP5",
    "bigfile": "bigfile",
    "fs-floor": "file-system floor (bare os calls: mkdir, header, attr-v2, 000000)",
    "fs-floor-ext": "... plus colfile-v1 (checksums, statistics)",
    "fs-floor-commit": "... made as colfile commits (byte lock, staging directory, rename)",
    "fs-floor-read": "floor of a self-describing read (bare os calls: each header, then "
                     "np.fromfile)",
    "fs-floor-fsync": "floor of a durable write (bare os calls: pwrite, write-back started "
                      "every 16 MiB, fsync)",
    "fs-floor-fsync-percolumn": "... each column fsynced before the next is written",
}
MODULES = {"numpy": "numpy", "colfile": "colfile", "colfile-nodurable": "colfile",
           "colfile-deferred": "colfile", "colfile-deferred-durable": "colfile",
           "colfile-verify": "colfile", "colfile-percolumn": "colfile",
           "h5py": "h5py", "zarr": "zarr",
           "adios2": "adios2", "bigfile": "bigfile"}

#: (name, dtype, nmemb) of the snapshot's columns
COLUMNS = [("Position", "f8", 3), ("Velocity", "f4", 3), ("ID", "i8", 1), ("Mass", "f4", 1)]

SNAP_WRITE = ["write", "write_fsync"]
SNAP_READ = ["read_warm", "read_cold", "read_out"]
PARTIAL = ["rows", "stride", "fancy_sorted", "fancy_unsorted"]
META = ["md_create", "md_read_warm", "md_read_cold"]
#: every phase, in the order one repeat runs them; ``copyto`` is the memcpy
#: baseline of ``read_out`` (no system involved)
PHASES = SNAP_WRITE + SNAP_READ + ["copyto"] + PARTIAL + META


class NotSupported(Exception):
    """The system has no way to do this (reported as n/a, not an error)."""


class Failed(Exception):
    """A verification failed."""


# ---------------------------------------------------------------------------
# data


def make_data(n: int, seed: int) -> dict[str, np.ndarray]:
    """The snapshot: the same bytes for the same ``n`` and ``seed``."""
    rng = np.random.default_rng(seed)
    return {
        "Position": rng.random((n, 3)) * 1000.0,
        "Velocity": rng.standard_normal((n, 3), dtype=np.float32),
        "ID": np.arange(n, dtype=np.int64) * 7 + 3,
        "Mass": rng.random(n, dtype=np.float32),
    }


def snapshot_bytes(n: int) -> int:
    return n * sum(np.dtype(dt).itemsize * m for _, dt, m in COLUMNS)


def selections(n: int, seed: int, stride: int, fancy: int) -> dict[str, Any]:
    """The row selections of the partial reads."""
    m = max(1, n // 100)
    a = n // 2 - m // 2
    rng = np.random.default_rng(seed + 1)
    k = min(fancy, n)
    rows = rng.choice(n, size=k, replace=False).astype(np.int64)
    return {"rows": slice(a, a + m), "stride": slice(None, None, stride),
            "fancy_sorted": np.sort(rows), "fancy_unsorted": rows}


def bigfile_sums(data: Any) -> tuple[int, int]:
    """What bigfile's ``header`` records of a blob's bytes ``data`` (any
    C-contiguous buffer): their byte sum, wrapping at 32 bits, and its SysV
    fold."""
    s = int(np.frombuffer(memoryview(data).cast("B"), np.uint8).sum(dtype=np.uint64))
    s &= 0xFFFFFFFF
    r = (s & 0xFFFF) + (s >> 16)
    return s, (r & 0xFFFF) + (r >> 16)


def small_rows(i: int) -> np.ndarray:
    return np.arange(4, dtype=np.int64) + i


def md_names(count: int) -> list[str]:
    return [f"c{i:05d}" for i in range(count)]


# ---------------------------------------------------------------------------
# file-system helpers


def tree_files(path: str) -> tuple[list[str], list[str]]:
    """(files, directories) below ``path`` (``path`` included)."""
    files, dirs = [], []
    for root, dnames, fnames in os.walk(path):
        dirs.append(root)
        files.extend(os.path.join(root, f) for f in fnames)
    return files, dirs


def fsync_tree(path: str) -> None:
    """fsync every file, then every directory, below ``path`` and its parent."""
    files, dirs = tree_files(path)
    for p in files:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    for p in [*dirs, os.path.dirname(os.path.abspath(path))]:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def warm_tree(path: str, anew: bool = False) -> None:
    """Read every file below ``path`` once (into the page cache).

    With ``anew``, the tree's cached pages are dropped first
    (``drop_cache(path, "fadvise")``), so that the read brings every file in
    again: the page cache then holds every system's files in the folios the
    same sequential read makes, whatever happened to them before (module
    docstring, "Page cache state")."""
    if anew:
        drop_cache(path, "fadvise")
    buf = bytearray(4 << 20)
    files, _ = tree_files(path)
    for p in files:
        with open(p, "rb", buffering=0) as fh:
            while fh.readinto(buf):
                pass


def can_drop_caches() -> bool:
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("1")
        return True
    except OSError:
        return False


def drop_cache(path: str, method: str) -> None:
    """Make the next read of ``path`` come from the disk."""
    if method == "drop_caches":
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3")
        return
    files, _ = tree_files(path)
    for p in files:  # dirty pages are not dropped: write them first
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def remove(path: str) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


# ---------------------------------------------------------------------------
# memory


def _status(key: str) -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return -1


def reset_peak() -> bool:
    """Reset the high-water mark of the RSS to the current RSS (Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def rss_now() -> int:
    r = _status("VmRSS")
    return r if r >= 0 else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss_peak() -> int:
    r = _status("VmHWM")
    return r if r >= 0 else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ---------------------------------------------------------------------------
# the systems: each writes and reads the snapshot (a dict of arrays) in a
# directory of its own and does the metadata workload


class Peer:
    name = ""

    def version(self) -> str:
        mod = __import__(MODULES[self.name])
        return str(getattr(mod, "__version__", "?"))

    def load(self) -> None:
        """Import the system (and load its libraries) before anything is timed."""
        __import__(MODULES[self.name])

    # snapshot
    def write(self, path: str, data: dict[str, np.ndarray]) -> None:
        raise NotImplementedError

    def read(self, path: str) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def read_into(self, path: str, out: dict[str, np.ndarray]) -> None:
        raise NotSupported("no read into a caller's buffer")

    def read_sel(self, path: str, kind: str, sel: Any) -> dict[str, np.ndarray]:
        raise NotSupported(f"no {kind} selection")

    # metadata
    def md_create(self, path: str, names: list[str]) -> None:
        raise NotSupported("no attributes")

    def md_read(self, path: str) -> tuple[list[str], list[int]]:
        raise NotSupported("no attributes")


class NumpyRaw(Peer):
    name = "numpy"

    @staticmethod
    def _file(path: str, name: str) -> str:
        return os.path.join(path, name + ".raw")

    @staticmethod
    def _dtype(name: str) -> tuple[np.dtype, int]:
        for nm, dt, m in COLUMNS:
            if nm == name:
                return np.dtype(dt), m
        raise KeyError(name)

    def _shape(self, name: str, rows: int) -> tuple[int, ...]:
        return (rows,) if self._dtype(name)[1] == 1 else (rows, self._dtype(name)[1])

    def write(self, path, data):
        os.makedirs(path, exist_ok=True)
        for name, arr in data.items():
            arr.tofile(self._file(path, name))

    def read(self, path):
        out = {}
        for name, _, m in COLUMNS:
            a = np.fromfile(self._file(path, name), dtype=self._dtype(name)[0])
            out[name] = a if m == 1 else a.reshape(-1, m)
        return out

    def read_into(self, path, out):
        for name, arr in out.items():
            view = memoryview(arr).cast("B")
            with open(self._file(path, name), "rb", buffering=0) as fh:
                done = 0
                while done < len(view):
                    k = fh.readinto(view[done:])
                    if not k:
                        raise Failed(f"{name}: file is short")
                    done += k

    def _memmap(self, path: str, name: str) -> np.memmap:
        dt, m = self._dtype(name)
        rows = os.path.getsize(self._file(path, name)) // (dt.itemsize * m)
        return np.memmap(self._file(path, name), dtype=dt, mode="r",
                         shape=self._shape(name, rows))

    def read_sel(self, path, kind, sel):
        out = {}
        for name, _, m in COLUMNS:
            dt, _ = self._dtype(name)
            if kind == "rows":
                a = np.fromfile(self._file(path, name), dtype=dt,
                                count=(sel.stop - sel.start) * m,
                                offset=sel.start * m * dt.itemsize)
                out[name] = a if m == 1 else a.reshape(-1, m)
            else:  # strided and fancy: through a memory map
                mm = self._memmap(path, name)
                out[name] = np.array(mm[sel])
                del mm
        return out


class Colfile(Peer):
    name = "colfile"

    def load(self) -> None:
        from colfile import _ffi

        _ffi.lib()

    def _wopen(self, path: str) -> Any:
        import colfile

        return colfile.File(path, "w")

    def write(self, path, data):
        with self._wopen(path) as f:
            for name, arr in data.items():
                f.create(name, data=arr)

    def _ropen(self, path: str) -> Any:
        import colfile

        return colfile.File(path)

    def read(self, path):
        with self._ropen(path) as f:
            return {name: f[name][:] for name, _, _ in COLUMNS}

    def read_into(self, path, out):
        with self._ropen(path) as f:
            for name, arr in out.items():
                f[name].read(out=arr)

    def read_sel(self, path, kind, sel):
        with self._ropen(path) as f:
            return {name: f[name][sel] for name, _, _ in COLUMNS}

    def md_create(self, path, names):
        with self._wopen(path) as f:
            for i, name in enumerate(names):
                c = f.create(name, data=small_rows(i))
                c.attrs["index"] = i
                c.close()

    def md_read(self, path):
        import colfile

        with colfile.File(path) as f:
            if not hasattr(f, "column_attrs"):  # a colfile before the bulk call
                names = f.columns
                return names, [int(f[n].attrs["index"]) for n in names]
            attrs = f.column_attrs()
            return list(attrs), [int(a["index"]) for a in attrs.values()]


class ColfilePerColumn(Colfile):
    """colfile's metadata reads column by column: ``f.columns``, then
    ``f[name].attrs["index"]`` for each (a Column and its attribute manager
    per column), as a program that does not use ``File.column_attrs``
    reads them: a diagnostic row, to tell what the one-call path buys.
    Its files are written as colfile's."""

    name = "colfile-percolumn"
    phases = ["md_read_warm", "md_read_cold"]

    def md_read(self, path):
        import colfile

        with colfile.File(path) as f:
            names = f.columns
            return names, [int(f[n].attrs["index"]) for n in names]


class ColfileNoDurable(Colfile):
    """colfile writing with commits that are not fsynced: a diagnostic row,
    to tell the cost of colfile's durable commits (the default) from the
    rest.  ``File(..., durable=False)`` where the API has it, else the
    ``CF_OPEN_NODURABLE`` flag added to a private mode of
    ``colfile.file.MODES``.  Its reads are colfile's (not run again)."""

    name = "colfile-nodurable"
    phases = SNAP_WRITE + ["md_create"]

    def version(self) -> str:
        self._mode()
        return super().version()

    def load(self) -> None:
        super().load()
        self._mode()

    def _mode(self) -> tuple[str, dict[str, Any]]:
        import inspect

        import colfile
        from colfile import _ffi, file

        if "durable" in inspect.signature(colfile.File).parameters:
            return "w", {"durable": False}
        flag = getattr(_ffi.lib(), "CF_OPEN_NODURABLE", None)
        modes = getattr(file, "MODES", None)
        if flag is None or not isinstance(modes, dict) or "w" not in modes:
            raise NotSupported("this colfile cannot open without durable commits")
        modes.setdefault("w-nodurable", modes["w"] | int(flag))
        return "w-nodurable", {}

    def _wopen(self, path: str) -> Any:
        import colfile

        mode, kw = self._mode()
        return colfile.File(path, mode, **kw)


class ColfileDeferred(Colfile):
    """colfile creating the metadata workload's columns with commits in the
    background (``File(..., durable=False, deferred=True)``): one thread
    commits closed columns while the caller makes the next ones."""

    name = "colfile-deferred"
    phases = ["md_create"]

    def load(self) -> None:
        import inspect

        import colfile

        super().load()
        if "deferred" not in inspect.signature(colfile.File).parameters:
            raise NotSupported("this colfile has no deferred commits")

    def _wopen(self, path: str) -> Any:
        import colfile

        return colfile.File(path, "w", durable=False, deferred=True)


class ColfileDeferredDurable(ColfileDeferred):
    """colfile writing the snapshot with durable commits in the background
    (``File(..., deferred=True)``): a column's commit, whose fsync waits for
    the disk to take the column's last bytes, runs while the caller copies
    the next column; ``File.close`` returns when every commit is durable."""

    name = "colfile-deferred-durable"
    phases = ["write_fsync"]

    def _wopen(self, path: str) -> Any:
        import colfile

        return colfile.File(path, "w", deferred=True)


class ColfileVerify(Colfile):
    """colfile reading with ``File(..., verify=True)``: the CRC32C of every
    blob a read covers whole is checked (off by default): a diagnostic row,
    to tell what verifying reads costs.  Its writes are colfile's (not run
    again)."""

    name = "colfile-verify"
    phases = ["read_warm", "read_cold", "read_out", *["rows", "stride", "fancy_sorted",
                                                       "fancy_unsorted"]]

    def version(self) -> str:
        self._check()
        return super().version()

    def load(self) -> None:
        super().load()
        self._check()

    def _check(self) -> None:
        import inspect

        import colfile

        if "verify" not in inspect.signature(colfile.File).parameters:
            raise NotSupported("this colfile has no File(verify=)")

    def _ropen(self, path: str) -> Any:
        import colfile

        return colfile.File(path, verify=True)


class H5py(Peer):
    name = "h5py"

    @staticmethod
    def _file(path: str) -> str:
        return os.path.join(path, "snap.h5")

    def write(self, path, data):
        import h5py

        os.makedirs(path, exist_ok=True)
        with h5py.File(self._file(path), "w") as f:
            for name, arr in data.items():
                f.create_dataset(name, data=arr)  # contiguous: no chunks, no filters

    def read(self, path):
        import h5py

        with h5py.File(self._file(path), "r") as f:
            return {name: f[name][()] for name, _, _ in COLUMNS}

    def read_into(self, path, out):
        import h5py

        with h5py.File(self._file(path), "r") as f:
            for name, arr in out.items():
                f[name].read_direct(arr)

    def read_sel(self, path, kind, sel):
        import h5py

        if kind == "fancy_unsorted":
            raise NotSupported("h5py needs increasing indices")
        with h5py.File(self._file(path), "r") as f:
            return {name: f[name][sel] for name, _, _ in COLUMNS}

    def md_create(self, path, names):
        import h5py

        os.makedirs(path, exist_ok=True)
        with h5py.File(self._file(path), "w") as f:
            for i, name in enumerate(names):
                ds = f.create_dataset(name, data=small_rows(i))
                ds.attrs["index"] = i

    def md_read(self, path):
        import h5py

        with h5py.File(self._file(path), "r") as f:
            names = list(f.keys())
            return names, [int(f[n].attrs["index"]) for n in names]


class Zarr(Peer):
    name = "zarr"
    chunk_rows = 1 << 20

    def write(self, path, data):
        import zarr

        root = zarr.open_group(path, mode="w")
        for name, arr in data.items():
            chunks = (min(self.chunk_rows, len(arr)),) + arr.shape[1:]
            root.create_array(name, data=arr, chunks=chunks, compressors=None, filters=None)

    def read(self, path):
        import zarr

        root = zarr.open_group(path, mode="r")
        return {name: root[name][...] for name, _, _ in COLUMNS}

    def read_sel(self, path, kind, sel):
        import zarr

        root = zarr.open_group(path, mode="r")
        out = {}
        for name, _, m in COLUMNS:
            a = root[name]
            if kind.startswith("fancy"):
                key = (sel,) + ((slice(None),) if m > 1 else ())
                out[name] = a.get_orthogonal_selection(key)
            else:
                out[name] = a[sel]
        return out

    def md_create(self, path, names):
        import zarr

        root = zarr.open_group(path, mode="w")
        for i, name in enumerate(names):
            root.create_array(name, data=small_rows(i), attributes={"index": i},
                              compressors=None, filters=None)

    def md_read(self, path):
        import zarr

        root = zarr.open_group(path, mode="r")
        names = sorted(root.array_keys())
        return names, [int(root[n].attrs["index"]) for n in names]


class Adios2(Peer):
    name = "adios2"

    @staticmethod
    def _file(path: str) -> str:
        return os.path.join(path, "snap.bp")

    def _io(self, what: str) -> Any:
        import adios2

        if not hasattr(self, "_adios"):
            self._adios = adios2.Adios()
            self._n = 0
        self._n += 1
        io = self._adios.declare_io(f"{what}{self._n}")
        io.set_engine("BP5")
        return io

    def _stream(self, path: str, mode: str) -> Any:
        import adios2

        return adios2.Stream(self._io(mode), self._file(path), mode)

    def write(self, path, data):
        os.makedirs(path, exist_ok=True)
        with self._stream(path, "w") as s:
            s.begin_step()
            for name, arr in data.items():
                s.write(name, arr)
            s.end_step()

    def read(self, path):
        with self._stream(path, "rra") as r:
            return {name: r.read(name) for name, _, _ in COLUMNS}

    def read_into(self, path, out):
        with self._stream(path, "rra") as r:
            for name, arr in out.items():
                r.read_in_buffer(name, arr, start=[0] * arr.ndim, count=list(arr.shape))

    def read_sel(self, path, kind, sel):
        if kind != "rows":
            raise NotSupported("adios2 selects boxes, not strides or lists of rows")
        with self._stream(path, "rra") as r:
            out = {}
            for name, _, m in COLUMNS:
                start = [sel.start] + ([0] if m > 1 else [])
                count = [sel.stop - sel.start] + ([m] if m > 1 else [])
                out[name] = r.read(name, start=start, count=count)
            return out

    def md_create(self, path, names):
        os.makedirs(path, exist_ok=True)
        with self._stream(path, "w") as s:
            s.begin_step()
            for i, name in enumerate(names):
                s.write(name, small_rows(i))
                s.write_attribute("index", i, variable_name=name)
            s.end_step()

    def md_read(self, path):
        with self._stream(path, "rra") as r:
            names = sorted(r.available_variables())
            vals = [int(np.asarray(r.read_attribute("index", variable_name=n)).reshape(-1)[0])
                    for n in names]
            return names, vals


class Bigfile(Peer):
    name = "bigfile"

    def write(self, path, data):
        import bigfile

        f = bigfile.File(path, create=True)
        for name, arr in data.items():
            c = f.create(name, np.dtype((arr.dtype, arr.shape[1:])), size=len(arr), Nfile=1)
            c.write(0, arr)
            c.close()
        f.close()

    def read(self, path):
        import bigfile

        f = bigfile.File(path)
        out = {}
        for name, _, _ in COLUMNS:
            c = f.open(name)
            out[name] = c.read(0, c.size)
            c.close()
        f.close()
        return out

    def read_into(self, path, out):
        import bigfile

        f = bigfile.File(path)
        for name, arr in out.items():
            c = f.open(name)
            c.read(0, len(arr), out=arr)
            c.close()
        f.close()

    def read_sel(self, path, kind, sel):
        import bigfile

        if kind != "rows":
            raise NotSupported("bigfile reads contiguous ranges only")
        f = bigfile.File(path)
        out = {}
        for name, _, _ in COLUMNS:
            c = f.open(name)
            out[name] = c.read(sel.start, sel.stop - sel.start)
            c.close()
        f.close()
        return out

    def md_create(self, path, names):
        import bigfile

        # the low-level API: bigfile.File.create would list every block after
        # every create (quadratic)
        f = bigfile.File(path, create=True)
        for i, name in enumerate(names):
            c = bigfile.Column()
            c.create(f, name, "i8", 4, 1)
            c.write(0, small_rows(i))
            c.attrs["index"] = i
            c.close()
        f.close()

    def md_read(self, path):
        import bigfile

        f = bigfile.File(path)
        names = sorted(f.list_blocks())
        vals = []
        for n in names:
            c = bigfile.Column()
            c.open(f, n)
            vals.append(int(np.asarray(c.attrs["index"]).reshape(-1)[0]))
            c.close()
        f.close()
        return names, vals


class FsFloor(Peer):
    """Not a library: the least any File in bigfile's layout can cost.  For
    each column it makes the directory and writes the three files bigfile
    itself writes (``header``, ``attr-v2``, blob ``000000``) with bare
    ``os`` calls, in bigfile's exact bytes; its reads list the root and
    parse each ``attr-v2``.  Its create time against bigfile's shows how
    much of the metadata workload is the file system making inodes, which
    no library keeping this layout can avoid."""

    name = "fs-floor"
    phases = META

    def version(self) -> str:
        return "os"

    def load(self) -> None:
        pass

    @staticmethod
    def _put(path: str, data: bytes) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def _files(self, d: str, i: int) -> None:
        """Write column i's files into directory d."""
        blob = small_rows(i).tobytes()
        s, fold = bigfile_sums(blob)
        self._put(os.path.join(d, "000000"), blob)
        self._put(os.path.join(d, "header"),
                  f"DTYPE: <i8\nNMEMB: 1\nNFILE: 1\n000000: 4 : {s} : {fold}\n".encode())
        self._put(os.path.join(d, "attr-v2"),
                  f"index <i8 1 {np.int64(i).tobytes().hex().upper()} "
                  f"#HUMANE [ {i} ]\n".encode())

    def md_create(self, path, names):
        os.makedirs(path, exist_ok=True)
        for i, name in enumerate(names):
            d = os.path.join(path, name)
            os.mkdir(d)
            self._files(d, i)

    def md_read(self, path):
        names = sorted(n for n in os.listdir(path) if not n.startswith("."))
        vals = []
        for n in names:
            with open(os.path.join(path, n, "attr-v2"), "rb") as fh:
                hexval = fh.read().split(b" ", 4)[3]
            vals.append(int(np.frombuffer(bytes.fromhex(hexval.decode()), "<i8")[0]))
        return names, vals


class FsFloorExt(FsFloor):
    """Not a library: ``fs-floor`` plus, per column, the file in which
    colfile keeps what bigfile's layout has no place for (``colfile-v1``:
    each blob's CRC32C, then per-chunk statistics), of the size colfile
    writes for these columns.  The floor of any File in bigfile's layout
    that keeps checksums and statistics in a file bigfile ignores."""

    name = "fs-floor-ext"

    def _files(self, d: str, i: int) -> None:
        super()._files(d, i)
        self._put(os.path.join(d, "colfile-v1"),
                  f"COLFILE-EXT: 1\nDTYPE: <i8\nNMEMB: 1\nNFILE: 1\n000000: 4 : {4 * i + 6} : "
                  f"crc32c=00000000\n"
                  f"COLFILE-STATS: 1\nDTYPE: <i8\nNMEMB: 1\nNFILE: 1\nCHUNK: 1048576\n"
                  f"000000: 4 : {4 * i + 6}\n"
                  f"0 0 count=4 nan=0 min={i} max={i + 3} sum={4 * i + 6}\n".encode())


class FsFloorCommit(FsFloorExt):
    """Not a library: ``fs-floor-ext`` made the way colfile commits a new
    column (docs/format.md 8.3), with bare ``os`` calls: a one-byte lock in
    the directory's writer-lock file (opened per column, made once, removed
    at the end), the files written into a hidden staging directory, which
    is then renamed to the column's name.  The floor of colfile's own
    protocol: what its creates cost before any library code."""

    name = "fs-floor-commit"

    def md_create(self, path, names):
        import fcntl
        import zlib

        os.makedirs(path, exist_ok=True)
        pid = os.getpid()
        lock = os.path.join(path, ".colfile-lock")
        for i, name in enumerate(names):
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                # a POSIX record lock of one byte: the same system call as
                # colfile's open file description lock
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, zlib.crc32(name.encode()))
                stage = os.path.join(path, f".colfile-stage.{name}.{pid}.{i:08x}")
                os.mkdir(stage)
                self._files(stage, i)
                os.rename(stage, os.path.join(path, name))
            finally:
                os.close(fd)
        os.unlink(lock)


class FsFloorRead(NumpyRaw):
    """Not a library: the least a self-describing File in bigfile's layout
    can cost for a partial read.  Its files are bigfile's, made with bare
    ``os`` calls (per column a directory with ``header``, an empty
    ``attr-v2`` and one blob ``000000``); to read rows it opens, reads and
    closes each column's ``header``, takes DTYPE and NMEMB from it, then
    reads the rows exactly as the numpy raw row does (``np.fromfile`` with
    ``offset=``).  Against numpy raw, whose reader is told every dtype, it
    shows what learning each column's layout from the File costs."""

    name = "fs-floor-read"
    phases = ["rows"]

    def version(self) -> str:
        return "os"

    def load(self) -> None:
        pass

    @staticmethod
    def _file(path: str, name: str) -> str:
        return os.path.join(path, name, "000000")

    def write(self, path, data):
        os.makedirs(path, exist_ok=True)
        for name, arr in data.items():
            d = os.path.join(path, name)
            os.mkdir(d)
            arr.tofile(os.path.join(d, "000000"))
            total, fold = bigfile_sums(np.ascontiguousarray(arr))
            nmemb = 1 if arr.ndim == 1 else arr.shape[1]
            FsFloor._put(os.path.join(d, "header"),
                         f"DTYPE: {arr.dtype.str}\nNMEMB: {nmemb}\nNFILE: 1\n"
                         f"000000: {len(arr)} : {total} : {fold}\n".encode())
            FsFloor._put(os.path.join(d, "attr-v2"), b"")

    @staticmethod
    def _described(path: str, name: str) -> tuple[np.dtype, int]:
        """(dtype, nmemb) from the column's header."""
        fd = os.open(os.path.join(path, name, "header"), os.O_RDONLY)
        try:
            text = os.read(fd, 65536)
        finally:
            os.close(fd)
        keys = dict(line.split(b":", 1) for line in text.split(b"\n")[:2])
        return np.dtype(keys[b"DTYPE"].strip().decode()), int(keys[b"NMEMB"])

    def read_sel(self, path, kind, sel):
        if kind != "rows":
            raise NotSupported("a floor of the 1% read only")
        out = {}
        for name, _, _ in COLUMNS:
            dt, m = self._described(path, name)
            a = np.fromfile(self._file(path, name), dtype=dt, count=(sel.stop - sel.start) * m,
                            offset=sel.start * m * dt.itemsize)
            out[name] = a if m == 1 else a.reshape(-1, m)
        return out


class FsFloorFsync(NumpyRaw):
    """Not a library: the snapshot written durably the fastest way we know,
    with bare system calls into numpy raw's files (read back as numpy's).
    Per column: reserve the file's blocks (``fallocate`` keeping the size,
    as ``tofile`` does), ``pwrite`` 2 MiB pieces and ask the kernel to start
    writing back every 16 MiB (``sync_file_range``), so that the disk works
    while the rest is copied; the phase's ``fsync`` then waits for the
    tail.  colfile's durable writes do the same.  Its write + fsync time is
    the disk's pace for these bytes in this run: a target against another
    system's write + fsync that this floor misses by more than the spread
    between repeats is out of the disk's reach, for any library."""

    name = "fs-floor-fsync"
    phases = ["write_fsync"]
    piece = 2 << 20
    kick = 16 << 20
    #: fsync each column's file before writing the next (FsFloorFsyncPerColumn)
    per_column = False

    def version(self) -> str:
        return "os"

    def load(self) -> None:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if not (sys.platform.startswith("linux") and hasattr(libc, "sync_file_range")
                and hasattr(libc, "fallocate")):
            raise NotSupported("needs Linux's fallocate and sync_file_range")
        libc.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64,
                                         ctypes.c_uint]
        libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
        self.libc = libc

    def write(self, path, data):
        keep_size, start_writeback = 1, 2  # FALLOC_FL_KEEP_SIZE, SYNC_FILE_RANGE_WRITE
        os.makedirs(path, exist_ok=True)
        for name, arr in data.items():
            view = memoryview(np.ascontiguousarray(arr)).cast("B")
            fd = os.open(self._file(path, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            try:
                self.libc.fallocate(fd, keep_size, 0, len(view))
                done = kicked = 0
                while done < len(view):
                    end = min(done + self.piece, len(view))
                    while done < end:
                        done += os.pwrite(fd, view[done:end], done)
                    if done - kicked >= self.kick or done == len(view):
                        self.libc.sync_file_range(fd, kicked, done - kicked, start_writeback)
                        kicked = done
                if self.per_column:
                    os.fsync(fd)
            finally:
                os.close(fd)


class FsFloorFsyncPerColumn(FsFloorFsync):
    """``fs-floor-fsync`` with each column made durable before the next is
    written (``fsync`` of its file once its last piece is handed over), as
    colfile's durable commits make a column durable when it is closed: the
    disk's pace for that promise.  Each wait for a column's tail leaves the
    disk without the next column's bytes to write, which the plain floor,
    waiting once at the end, never does."""

    name = "fs-floor-fsync-percolumn"
    per_column = True


PEERS: dict[str, type[Peer]] = {p.name: p for p in
                                 (NumpyRaw, Colfile, ColfileNoDurable, ColfileDeferred,
                                  ColfileDeferredDurable,
                                  ColfileVerify, ColfilePerColumn, H5py, Zarr, Adios2, Bigfile,
                                  FsFloor, FsFloorExt, FsFloorCommit, FsFloorRead,
                                  FsFloorFsync, FsFloorFsyncPerColumn)}


# ---------------------------------------------------------------------------
# one measurement, in a child process


def equal(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> bool:
    return set(got) == set(want) and all(
        np.array_equal(np.asarray(got[k]), want[k]) and np.asarray(got[k]).dtype == want[k].dtype
        for k in want)


PRIME_BYTES = 0  # set by child() from the spec: see the module docstring


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any, int, int]:
    """(seconds, cpu seconds, result, rss before, peak rss) of ``fn()``,
    after priming PRIME_BYTES of memory."""
    prime_memory(PRIME_BYTES)
    gc.collect()
    reset_peak()
    base = rss_now()
    c0 = cpu_seconds()
    t0 = time.perf_counter()
    result = fn()
    t = time.perf_counter() - t0
    c = cpu_seconds() - c0
    return t, c, result, base, rss_peak()


def child(spec: dict[str, Any]) -> dict[str, Any]:
    global PRIME_BYTES
    system, phase, n, seed = spec["system"], spec["phase"], spec["rows"], spec["seed"]
    PRIME_BYTES = spec.get("prime", 0)
    path = spec["path"]
    res: dict[str, Any] = {"system": system, "phase": phase}
    if phase == "probe":
        versions = {}
        for s in spec["systems"]:
            try:
                if s == "colfile":
                    import colfile
                    from colfile import _ffi

                    versions[s] = {"version": colfile.__version__,
                                   "where": os.path.dirname(colfile.__file__),
                                   "library": _ffi.library_path()}
                else:
                    versions[s] = {"version": PEERS[s]().version()}
            except Exception as exc:  # noqa: BLE001 - any import failure means "skip"
                versions[s] = {"error": f"{type(exc).__name__}: {exc}"}
        res["versions"] = versions
        res["verified"] = True
        return res

    if phase == "copyto":
        data = make_data(n, seed)
        out = {k: np.empty_like(v) for k, v in data.items()}
        for v in out.values():
            v.fill(0)
        t, c, _, base, peak = timed(lambda: [np.copyto(out[k], data[k]) for k in data])
        if not equal(out, data):
            raise Failed("np.copyto result differs")
        res.update(seconds=t, cpu=c, bytes=snapshot_bytes(n), extra_rss=peak - base,
                   verified=True)
        return res

    Zarr.chunk_rows = spec["zarr_chunk_rows"]
    peer = PEERS[system]()
    peer.load()
    if not phase.startswith("setup"):
        warm_up(peer, phase, path + "-warmup", seed)
    nbytes = snapshot_bytes(n)

    if phase == "setup_snap":
        data = make_data(n, seed)
        remove(path)
        peer.write(path, data)
        if not equal(peer.read(path), data):
            raise Failed("snapshot written for the reads does not read back")
        fsync_tree(path)
        res["verified"] = True
        return res

    if phase == "setup_md":
        names = md_names(spec["md_columns"])
        remove(path)
        peer.md_create(path, names)
        check_md(peer.md_read(path), names)
        fsync_tree(path)
        res["verified"] = True
        return res

    if phase in SNAP_WRITE:
        remove(path)
        os.sync()
        data = make_data(n, seed)

        def write() -> None:
            peer.write(path, data)
            if phase == "write_fsync":
                fsync_tree(path)

        t, c, _, base, peak = timed(write)
        ok = equal(peer.read(path), data)
        remove(path)
        if not ok:
            raise Failed("data written does not read back")
        res.update(seconds=t, cpu=c, bytes=nbytes, extra_rss=peak - base, verified=True)
        return res

    if phase in ("read_warm", "read_cold", "read_out"):
        out = None
        if phase == "read_out":
            out = {name: np.empty((n, m) if m > 1 else (n,), dt) for name, dt, m in COLUMNS}
            for v in out.values():
                v.fill(0)  # touched: np.zeros would map pages only when first written
            if not hasattr(peer, "read_into") or type(peer).read_into is Peer.read_into:
                raise NotSupported("no read into a caller's buffer")
        if phase == "read_cold":
            drop_cache(path, spec["cold_method"])
        else:
            warm_tree(path, anew=True)
        if out is not None:
            t, c, _, base, peak = timed(lambda: peer.read_into(path, out))
            got = out
            returned = 0
        else:
            t, c, got, base, peak = timed(lambda: peer.read(path))
            returned = sum(np.asarray(v).nbytes for v in got.values())
        data = make_data(n, seed)
        if not equal(got, data):
            raise Failed("data read differs from the data written")
        res.update(seconds=t, cpu=c, bytes=nbytes, extra_rss=peak - base - returned,
                   verified=True)
        return res

    if phase in PARTIAL:
        sel = selections(n, seed, spec["stride"], spec["fancy"])[phase]
        if type(peer).read_sel is Peer.read_sel:
            raise NotSupported("no partial reads")
        warm_tree(path, anew=True)
        t, c, got, base, peak = timed(lambda: peer.read_sel(path, phase, sel))
        data = make_data(n, seed)
        want = {k: v[sel] for k, v in data.items()}
        if not equal(got, want):
            raise Failed(f"{phase} read differs from the data written")
        returned = sum(np.asarray(v).nbytes for v in got.values())
        res.update(seconds=t, cpu=c, bytes=returned, extra_rss=peak - base - returned,
                   verified=True)
        return res

    if phase in META:
        names = md_names(spec["md_columns"])
        if type(peer).md_create is Peer.md_create:
            raise NotSupported("raw files have no attributes")
        if phase == "md_create":
            remove(path)
            os.sync()
            t, c, _, base, peak = timed(lambda: peer.md_create(path, names))
            got = peer.md_read(path)
            # left in place: removing 10,000 directories takes a minute here and
            # would disturb the next measurements; the driver removes it at the end
        else:
            if phase == "md_read_cold":
                drop_cache(path, spec["cold_method"])
            else:
                warm_tree(path)
            t, c, got, base, peak = timed(lambda: peer.md_read(path))
        check_md(got, names)
        res.update(seconds=t, cpu=c, extra_rss=peak - base, verified=True)
        return res

    raise ValueError(f"unknown phase {phase!r}")


def warm_up(peer: Peer, phase: str, path: str, seed: int) -> None:
    """Do the same kind of operation once on a tiny File of its own, so that
    imports, library loading and first-call costs are not timed."""
    try:
        if phase in META:
            if type(peer).md_create is Peer.md_create:
                return
            names = md_names(3)
            peer.md_create(path, names)
            check_md(peer.md_read(path), names)
            return
        tiny = make_data(32, seed)
        peer.write(path, tiny)
        if phase in SNAP_WRITE:
            return
        if not equal(peer.read(path), tiny):
            raise Failed("warm-up read differs")
        if phase == "read_out" and type(peer).read_into is not Peer.read_into:
            out = {k: np.zeros_like(v) for k, v in tiny.items()}
            peer.read_into(path, out)
        if phase in PARTIAL and type(peer).read_sel is not Peer.read_sel:
            sel = {"rows": slice(8, 16), "stride": slice(None, None, 3),
                   "fancy_sorted": np.array([1, 5, 30]), "fancy_unsorted": np.array([30, 1, 5])
                   }[phase]
            try:
                peer.read_sel(path, phase, sel)
            except NotSupported:
                pass
    finally:
        remove(path)


def check_md(got: tuple[list[str], list[int]], names: list[str]) -> None:
    listed, vals = got
    if list(listed) != names:
        raise Failed(f"listed {len(listed)} columns, not the {len(names)} created")
    if vals != list(range(len(names))):
        raise Failed("attributes read differ from those written")


def set_priority(nice: int) -> str | None:
    """Give this process (a session of its own) the scheduling priority
    ``nice``: its autogroup's nice value where the kernel groups sessions
    (``/proc/self/autogroup``; per-process nice values then only count within
    the session), and the process's own.  None, or why it failed."""
    why = None
    try:
        with open("/proc/self/autogroup", "w") as fh:
            fh.write(str(nice))
    except OSError as exc:
        why = f"autogroup: {exc.strerror}"
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    except OSError as exc:
        why = (why + "; " if why else "") + f"setpriority: {exc.strerror}"
    return why


def child_main(arg: str) -> int:
    spec = json.loads(arg)
    why = set_priority(spec["nice"]) if spec.get("nice") else None
    try:
        res = child(spec)
    except NotSupported as exc:
        res = {"system": spec["system"], "phase": spec["phase"], "unsupported": str(exc)}
    except Failed as exc:
        res = {"system": spec["system"], "phase": spec["phase"], "verified": False,
               "error": f"VERIFICATION FAILED: {exc}"}
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        traceback.print_exc()
        res = {"system": spec["system"], "phase": spec["phase"], "verified": False,
               "error": f"{type(exc).__name__}: {exc}"}
    if why:
        res["priority_error"] = why
    print("@@result " + json.dumps(res), flush=True)
    return 0


# ---------------------------------------------------------------------------
# the driver


def run_child(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    try:
        # with a priority, in a session (and so a scheduler autogroup) of its own
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             start_new_session=bool(spec.get("nice")))
    except subprocess.TimeoutExpired:
        return {"system": spec["system"], "phase": spec["phase"], "timeout": timeout,
                "verified": False, "error": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("@@result ")]
    if not lines:
        return {"system": spec["system"], "phase": spec["phase"], "verified": False,
                "error": f"exit status {out.returncode}: {out.stderr.strip()[-2000:]}"}
    res = json.loads(lines[-1][len("@@result "):])
    if res.get("error") and out.stderr.strip():
        res["stderr"] = out.stderr.strip()[-2000:]
    return res


def command_line(argv: list[str]) -> str:
    """How this run was started: the environment that chooses colfile, the
    interpreter (relative to the checkout when inside it) and the arguments."""
    def rel(p: str) -> str:
        try:
            return os.path.relpath(p, ROOT) if Path(p).resolve().is_relative_to(ROOT) else p
        except (OSError, ValueError):
            return p
    env = [f"{k}={shlex.quote(rel(os.environ[k]))}" for k in ("COLFILE_LIBRARY", "PYTHONPATH")
           if os.environ.get(k)]
    return " ".join([*env, rel(sys.executable), "bench/peers.py", *map(shlex.quote, argv)])


def git_commit() -> str:
    """The commit of the checkout, and whether (and which) uncommitted
    changes to tracked files it has."""
    import hashlib

    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        diff = subprocess.run(["git", "-C", str(ROOT), "diff", "HEAD"],
                              capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    if not diff:
        return rev
    return (f"{rev} with uncommitted changes (sha1 of `git diff HEAD`: "
            f"{hashlib.sha1(diff).hexdigest()[:12]})")


def run(args: argparse.Namespace, argv: list[str]) -> int:
    wanted = [s.strip() for s in args.systems.split(",") if s.strip()]
    for s in wanted:
        if s not in PEERS:
            print(f"unknown system {s!r} (known: {', '.join(SYSTEMS)})", file=sys.stderr)
            return 2
    phases = PHASES if args.phases == "all" else [p.strip() for p in args.phases.split(",")]
    for p in phases:
        if p not in PHASES:
            print(f"unknown phase {p!r} (known: {', '.join(PHASES)})", file=sys.stderr)
            return 2
    if args.cold_method == "auto":
        cold = "drop_caches" if can_drop_caches() else "fadvise"
    elif args.cold_method == "drop_caches" and not can_drop_caches():
        print("cannot write /proc/sys/vm/drop_caches (not root?): use --cold-method fadvise",
              file=sys.stderr)
        return 2
    else:
        cold = args.cold_method
    t_start = time.perf_counter()
    os.makedirs(args.tmpdir, exist_ok=True) if args.tmpdir else None
    workdir = tempfile.mkdtemp(prefix="colfile-peers-", dir=args.tmpdir)
    base_spec = {"rows": args.rows, "seed": args.seed, "stride": args.stride,
                 "fancy": args.fancy, "md_columns": args.md_columns, "cold_method": cold,
                 "zarr_chunk_rows": args.zarr_chunk_rows, "nice": args.nice,
                 "prime": args.prime}

    probe = run_child({**base_spec, "system": "-", "phase": "probe", "path": "",
                       "systems": wanted}, args.timeout)
    versions = probe.get("versions", {})
    if probe.get("priority_error"):
        print(f"note: cannot set the priority {args.nice}: {probe['priority_error']}",
              flush=True)
    systems = []
    for s in wanted:
        v = versions.get(s, {"error": probe.get("error", "probe failed")})
        if "error" in v:
            print(f"note: skipping {s}: not importable ({v['error']})", flush=True)
        else:
            systems.append(s)
    if "numpy" not in systems:
        print("note: numpy raw is not among the systems: no ratios vs numpy", flush=True)
    listed = ", ".join(f"{s} {versions[s]['version']}" for s in systems)
    print(f"systems: {listed}; "
          f"{args.rows} rows ({snapshot_bytes(args.rows) / 1e9:.3f} GB); "
          f"cold reads by {cold}; data in {workdir}", flush=True)
    if "colfile" in versions and "library" in versions["colfile"]:
        print(f"colfile from {versions['colfile']['where']}, libcolfile "
              f"{versions['colfile']['library']}", flush=True)

    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    failures: list[dict[str, Any]] = []
    skip: dict[tuple[str, str], str] = {}

    def paths(system: str) -> dict[str, str]:
        d = os.path.join(workdir, system)
        return {"snap": os.path.join(d, "snap"), "md": os.path.join(d, "md"),
                "w": os.path.join(d, "w")}

    def one(system: str, phase: str, path: str, label: str) -> dict[str, Any]:
        res = run_child({**base_spec, "system": system, "phase": phase, "path": path},
                        args.timeout)
        if "unsupported" in res:
            print(f"  {label}: n/a ({res['unsupported']})", flush=True)
        elif not res.get("verified"):
            print(f"  {label}: FAILED: {res.get('error')}", flush=True)
            if res.get("stderr"):
                print("    " + res["stderr"].replace("\n", "\n    "), flush=True)
            failures.append(res)
        else:
            extra = ""
            if "seconds" in res:
                gbs = (f", {res['bytes'] / res['seconds'] / 1e9:.2f} GB/s"
                       if res.get("bytes") and phase not in PARTIAL else "")
                extra = (f" {res['seconds']:.4f} s{gbs}, cpu {res['cpu']:.2f} s, "
                         f"peak extra RSS {res['extra_rss'] / 2**20:.0f} MiB")
            print(f"  {label}: verified{extra}", flush=True)
        return res

    try:
        need_snap = any(p in phases for p in SNAP_READ + PARTIAL)
        need_md = any(p in phases for p in ("md_read_warm", "md_read_cold"))
        print("\nsetup: writing the files the reads read", flush=True)
        for s in systems:
            if need_snap and (s not in VARIANTS
                              or any(p in PEERS[s].phases for p in SNAP_READ + PARTIAL)):
                r = one(s, "setup_snap", paths(s)["snap"], f"{s} snapshot")
                if not r.get("verified"):
                    for p in SNAP_READ + PARTIAL:
                        skip[(s, p)] = "setup failed"
            if need_md and (s not in VARIANTS or any(p in PEERS[s].phases
                                                     for p in ("md_read_warm", "md_read_cold"))):
                r = one(s, "setup_md", paths(s)["md"], f"{s} metadata")
                if "unsupported" in r:
                    for p in META:
                        skip[(s, p)] = r["unsupported"]
                elif not r.get("verified"):
                    for p in META:
                        skip[(s, p)] = "setup failed"

        for rep in range(args.repeats):
            print(f"\nrepeat {rep + 1} of {args.repeats}", flush=True)
            order = systems[rep % len(systems):] + systems[:rep % len(systems)] if systems else []
            for phase in phases:
                if phase == "copyto":
                    res = one("-", "copyto", "", "np.copyto copyto")
                    if res.get("verified"):
                        runs.setdefault(("memcpy", "copyto"), []).append(res)
                    continue
                for s in order:
                    if s in VARIANTS and phase not in PEERS[s].phases:
                        # a colfile option that does not matter here; a floor of
                        # other phases
                        skip[(s, phase)] = "as colfile" if s.startswith("colfile") else "n/a"
                    if (s, phase) in skip:
                        continue
                    p = paths(s)
                    path = {"write": p["w"], "write_fsync": p["w"],
                            "md_create": f"{p['w']}-md{rep}",
                            "md_read_warm": p["md"], "md_read_cold": p["md"]}.get(phase,
                                                                                  p["snap"])
                    res = one(s, phase, path, f"{s} {phase}")
                    if "unsupported" in res:
                        skip[(s, phase)] = res["unsupported"]
                    elif res.get("verified"):
                        runs.setdefault((s, phase), []).append(res)
                    else:
                        skip[(s, phase)] = "FAILED" if "timeout" not in res else \
                            f"timed out ({res['timeout']:.0f} s)"
    except BaseException:
        cleanup(workdir, args.keep)
        raise

    results = {
        "systems": systems, "versions": versions, "cold_method": cold, "phases": phases,
        "args": vars(args), "argv": argv, "commit": git_commit(), "command": command_line(argv),
        "elapsed": time.perf_counter() - t_start,
        "best": {f"{s}/{p}": min(v, key=lambda r: r["seconds"]) for (s, p), v in runs.items()},
        "runs": {f"{s}/{p}": v for (s, p), v in runs.items()},
        "skipped": {f"{s}/{p}": why for (s, p), why in skip.items()},
        "failures": failures,
    }
    section = markdown(results)
    print()
    print(section)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
        print(f"\nwrote {args.json}")
    if args.markdown:
        update_markdown(Path(args.markdown), section)
        print(f"\nupdated {args.markdown}")
    cleanup(workdir, args.keep)
    if failures:
        print(f"\n{len(failures)} measurement(s) FAILED", file=sys.stderr)
        return 1
    print("\nevery measurement verified")
    return 0


def cleanup(workdir: str, keep: bool) -> None:
    if keep:
        print(f"kept {workdir}")
        return
    print(f"removing {workdir}", flush=True)
    shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------------------
# tables


def markdown(r: dict[str, Any]) -> str:
    best, skipped, systems = r["best"], r["skipped"], r["systems"]
    args = r["args"]
    n = args["rows"]
    versions = r["versions"]

    def get(s: str, p: str) -> dict[str, Any] | None:
        return best.get(f"{s}/{p}")

    def na(s: str, p: str) -> str:
        why = skipped.get(f"{s}/{p}")
        if why and (why == "FAILED" or why.startswith("timed out")):
            return f"**{why}**"
        return "(as colfile)" if why == "as colfile" else "n/a"

    def gbs(x: dict[str, Any]) -> float:
        return x["bytes"] / x["seconds"] / 1e9

    def vs(s: str, p: str, ref: str = "numpy") -> str:
        a, b = get(s, p), get(ref, p)
        return "" if a is None or b is None else f" ({b['seconds'] / a['seconds']:.2f}x)"

    def shown(ps: list[str]) -> list[str]:
        """The systems with a row in a table of phases ``ps``."""
        return [s for s in systems if s not in VARIANTS or any(p in PEERS[s].phases for p in ps)]

    command = r["command"]
    lines = [
        BEGIN,
        f"Command: `{command}` on commit {r['commit']} (best of {args['repeats']}, every "
        f"measurement in a fresh process, systems interleaved within each repeat; "
        f"{r['elapsed'] / 60:.0f} min in all"
        + (f"; each measurement in a session of its own at scheduling priority "
           f"{args['nice']} (autogroup nice), as the machine is shared with other work"
           if args.get("nice") else "")
        + (f"; {args['prime'] / 1e6:.0f} MB of memory touched and freed before each "
           f"timed part (memory priming: bench/prime.py)" if args.get("prime") else "")
        + "). Cold reads: "
        + ("`sync; echo 3 > /proc/sys/vm/drop_caches` (root)." if r["cold_method"] ==
           "drop_caches" else
           "`fsync` + `posix_fadvise(POSIX_FADV_DONTNEED)` on every file (not root; "
           "dentries and inodes stay cached)."),
        f"Machine: {describe_machine()}. Versions: "
        + ", ".join(f"{s} {versions[s]['version']}" for s in systems
                    if s not in VARIANTS) + ".",
        "",
        f"Snapshot: {n} rows of Position f8x3, Velocity f4x3, ID i8, Mass f4 "
        f"({snapshot_bytes(n) / 1e9:.3f} GB). GB/s are decimal; in brackets the speed "
        "relative to numpy raw in the same run (numpy's time / the system's time).",
        "",
        "| system | write (page cache) | write + fsync | read warm | read cold |",
        "|---|---|---|---|---|",
    ]
    for s in shown(["write", "write_fsync", "read_warm", "read_cold"]):
        cells = []
        for p in ["write", "write_fsync", "read_warm", "read_cold"]:
            x = get(s, p)
            cells.append(na(s, p) if x is None else f"{gbs(x):.2f}{vs(s, p)}")
        lines.append(f"| {LABELS[s]} | " + " | ".join(cells) + " |")

    copy = get("memcpy", "copyto")
    lines += [
        "",
        "Reading into caller-owned buffers, allocated and touched beforehand, warm "
        "(colfile `read(out=)`, numpy `readinto`, h5py `read_direct`, adios2 "
        "`read_in_buffer`, bigfile `read(out=)`), against `np.copyto` of the same bytes "
        "from memory into the same kind of buffers:",
        "",
        "| system | GB/s | vs np.copyto | read warm into new arrays, GB/s |",
        "|---|---|---|---|",
    ]
    if copy:
        lines.append(f"| np.copyto (memcpy) | {gbs(copy):.2f} | 1.00x | |")
    for s in shown(["read_out", "read_warm"]):
        x, w = get(s, "read_out"), get(s, "read_warm")
        ratio = "" if x is None or copy is None else f"{copy['seconds'] / x['seconds']:.2f}x"
        lines.append(f"| {LABELS[s]} | {na(s, 'read_out') if x is None else f'{gbs(x):.2f}'} "
                     f"| {ratio} | {'' if w is None else f'{gbs(w):.2f}'} |")

    sel = selections(n, args["seed"], args["stride"], args["fancy"])
    m = sel["rows"].stop - sel["rows"].start
    k = len(sel["fancy_sorted"])
    lines += [
        "",
        f"Partial reads of all four columns, warm, in milliseconds: {m} rows (1%) from the "
        f"middle; every {args['stride']}th row (`[::{args['stride']}]`); {k} random distinct "
        "rows, ascending and in random order. In brackets: speed relative to the fastest "
        "peer (the fastest system other than colfile and the floors) in the same run.",
        "",
        f"| system | 1% from the middle | `[::{args['stride']}]` | {k} rows, sorted | "
        f"{k} rows, unsorted |",
        "|---|---|---|---|---|",
    ]

    def best_peer(s: str, p: str) -> dict[str, Any] | None:
        others = [get(o, p) for o in systems
                  if o != s and not o.startswith(("colfile", "fs-floor")) and get(o, p)]
        return min(others, key=lambda x: x["seconds"]) if others else None

    for s in shown(PARTIAL):
        cells = []
        for p in PARTIAL:
            x = get(s, p)
            if x is None:
                cells.append(na(s, p))
                continue
            bp = best_peer(s, p)
            rel = "" if bp is None else f" ({bp['seconds'] / x['seconds']:.2f}x)"
            cells.append(f"{x['seconds'] * 1e3:.1f}{rel}")
        lines.append(f"| {LABELS[s]} | " + " | ".join(cells) + " |")

    nmd = args["md_columns"]
    lines += [
        "",
        f"Metadata: {nmd} columns of 4 i8 rows, each with one integer attribute; create "
        "them (and write their rows); then open the File, list the columns and read the "
        "attribute of each, warm and cold. Seconds; bigfile through its low-level API "
        "(`bigfile.Column().create(f, ...)`: `bigfile.File.create` lists every block after "
        "each create); colfile through its public API (`File.create`, `Column.attrs`).",
        "",
        "| system | create | open + list + read attribute, warm | ... cold |",
        "|---|---|---|---|",
    ]
    for s in shown(META):
        cells = []
        for p in META:
            x = get(s, p)
            cells.append(na(s, p) if x is None else f"{x['seconds']:.3f}"
                         + (vs(s, p, "bigfile") if s != "bigfile" and p == "md_create"
                            and get("bigfile", p) else ""))
        lines.append(f"| {LABELS[s]} | " + " | ".join(cells) + " |")
    if get("bigfile", "md_create"):
        lines.append("")
        lines.append("(In brackets, for create: speed relative to bigfile's low-level API.)")

    lines += [
        "",
        "Peak RSS of each measurement above what the process held before it (MiB; for "
        "reads into new arrays, less the arrays returned; the data to write is held "
        "before), and the CPU time of the process during the measurement (user + system, "
        "s) against its wall time:",
        "",
        "| system | write: extra RSS | write: CPU / wall | read warm: extra RSS | "
        "read warm: CPU / wall | read out=: extra RSS | read cold: CPU / wall |",
        "|---|---|---|---|---|---|---|",
    ]

    def mem(s: str, p: str) -> str:
        x = get(s, p)
        return na(s, p) if x is None else f"{max(x['extra_rss'], 0) / 2**20:.0f}"

    def cpu(s: str, p: str) -> str:
        x = get(s, p)
        return na(s, p) if x is None else f"{x['cpu']:.2f} / {x['seconds']:.2f}"

    for s in shown(["write", "read_warm", "read_out", "read_cold"]):
        lines.append(f"| {LABELS[s]} | {mem(s, 'write')} | {cpu(s, 'write')} | "
                     f"{mem(s, 'read_warm')} | {cpu(s, 'read_warm')} | {mem(s, 'read_out')} "
                     f"| {cpu(s, 'read_cold')} |")

    if "colfile" in systems:
        lines += ["", *targets(r, get, best_peer)]
    lines.append(END)
    return "\n".join(lines)


def lower_quartile(runs: list[dict[str, Any]]) -> float | None:
    """Seconds of the lower quartile of a measurement's verified repeats:
    the (n // 4 + 1)-th fastest of n, for n >= 4 (None below: too few to
    tell a quartile from the best)."""
    times = sorted(x["seconds"] for x in runs if x.get("verified"))
    return times[len(times) // 4] if len(times) >= 4 else None


def targets(r: dict[str, Any], get: Callable[[str, str], Any],
            best_peer: Callable[[str, str], Any]) -> list[str]:
    """The #6 targets colfile is held to, with what this run measured: each
    judged on the best repeats, as the issue asks, and shown next to the
    same figure from the lower quartiles, which says how much of a miss or
    a margin is the spread between repeats."""
    rows = []
    runs = r.get("runs", {})

    def q(s: str, p: str) -> float | None:
        return lower_quartile(runs.get(f"{s}/{p}", []))

    def ratio(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else a / b

    def speed(p: str, ref: str, who: str = "colfile") -> float | None:
        a, b = get(who, p), get(ref, p)
        return None if a is None or b is None else b["seconds"] / a["seconds"]

    def qspeed(p: str, ref: str, who: str = "colfile") -> float | None:
        # speed() from the lower quartiles
        return ratio(q(ref, p), q(who, p))

    def row(what: str, value: float | None, goal: float, fmt: str = "{:.2f}x",
            higher: bool = True, variants: tuple[tuple[str, float | None], ...] = (),
            quartile: float | None = None) -> None:
        if value is None:
            rows.append(f"| {what} | not measured | | | |")
            return
        ok = value >= goal if higher else value <= goal
        alt = "".join(f" ({name}: {fmt.format(v)})" for name, v in variants if v is not None)
        qs = "" if quartile is None else fmt.format(quartile)
        rows.append(f"| {what} | {fmt.format(value)}{alt} | {qs} | {'≥' if higher else '≤'} "
                    f"{fmt.format(goal)} | {'yes' if ok else '**no**'} |")

    def bound(what: str, value: float | None, quartile: float | None, why: str) -> None:
        # a reference row (a floor): no goal, not judged; left out when unmeasured
        if value is not None:
            qs = "" if quartile is None else f"{quartile:.2f}x"
            rows.append(f"| {what} | {value:.2f}x | {qs} | ({why}) | |")

    # The page-cache write is judged on colfile's page-cache mode
    # (durable=False), as the peers do not fsync either; write + fsync on
    # its default, durable commits (then fsynced again like every peer).
    nd = "colfile-nodurable"
    for ref, goal in (("numpy", 0.95), ("h5py", 1.3), ("bigfile", 2.5)):
        row(f"write (page cache, durable=False) vs {ref}", speed("write", ref, nd), goal,
            variants=(("durable commits", speed("write", ref)),),
            quartile=qspeed("write", ref, nd))
        row(f"write + fsync (durable commits) vs {ref}", speed("write_fsync", ref), goal,
            variants=(("durable=False", speed("write_fsync", ref, nd)),
                      ("deferred=True", speed("write_fsync", ref, "colfile-deferred-durable"))),
            quartile=qspeed("write_fsync", ref))
    # The disk's pace: what any write + fsync target against bigfile can
    # reach here, with one fsync at the end and with each column fsynced
    # before the next (colfile's promise that a closed column is durable),
    # and how near colfile comes to each.
    floors_fsync = (
        ("fs-floor-fsync", "the floor of a durable write (bare os calls: pwrite, write-back "
         "started every 16 MiB, fsync)",
         "the disk's pace in this run: a goal well above it is out of the disk's reach",
         "colfile's write + fsync vs that floor", "how near colfile comes to the disk's pace"),
        ("fs-floor-fsync-percolumn", "the floor of a write durable column by column (each "
         "column fsynced before the next)", "the disk's pace for durable commits, colfile's default",
         "colfile's write + fsync vs the column-by-column floor", "how near colfile comes to it"))
    for fl, what, why, vs, why_vs in floors_fsync:
        bound(f"{what}, write + fsync vs bigfile", speed("write_fsync", "bigfile", fl),
              qspeed("write_fsync", "bigfile", fl), why)
        bound(vs, speed("write_fsync", fl), qspeed("write_fsync", fl), why_vs)
    vf = "colfile-verify"
    for p, what in (("read_warm", "read warm"), ("read_cold", "read cold")):
        row(f"{what} vs numpy raw", speed(p, "numpy"), 0.95,
            variants=(("verify=True", speed(p, "numpy", vf)),),
            quartile=qspeed(p, "numpy"))
    c, o, o2 = get("memcpy", "copyto"), get("colfile", "read_out"), get(vf, "read_out")
    row("read into a caller's buffer (`out=`) vs np.copyto",
        None if c is None or o is None else c["seconds"] / o["seconds"], 0.8,
        variants=(("verify=True", None if c is None or o2 is None else c["seconds"] / o2["seconds"]),),
        quartile=ratio(q("memcpy", "copyto"), q("colfile", "read_out")))
    names = {"rows": "1% of rows from the middle", "stride": "strided slice",
             "fancy_sorted": "fancy indices, sorted", "fancy_unsorted": "fancy indices, unsorted"}
    for p in PARTIAL:
        x, bp = get("colfile", p), best_peer("colfile", p)
        # the quartile of the same peer, the fastest by its best
        row(f"{names[p]} vs the fastest peer",
            None if x is None or bp is None else bp["seconds"] / x["seconds"], 1.0,
            quartile=None if bp is None else qspeed(p, bp["system"]))
        if p == "rows" and bp is not None:
            # what learning each column's layout from the File costs with
            # bare calls, against the fastest peer's read
            fr = "fs-floor-read"
            bound("... the floor of a self-describing read (bare os calls: each header, then "
                  "np.fromfile), vs the fastest peer", speed(p, bp["system"], fr),
                  qspeed(p, bp["system"], fr), "the same read, its layout learnt from the File")
    a, b = get(nd, "md_create"), get("bigfile", "md_create")
    a2 = get("colfile", "md_create")
    row("metadata create (page cache, durable=False, like bigfile), time vs bigfile's "
        "low-level API",
        None if a is None or b is None else a["seconds"] / b["seconds"], 0.5, higher=False,
        variants=(("durable commits", None if a2 is None or b is None else a2["seconds"] / b["seconds"]),),
        quartile=ratio(q(nd, "md_create"), q("bigfile", "md_create")))
    a3 = get("colfile-deferred", "md_create")
    row("... with deferred commits (durable=False, deferred=True), time vs bigfile's "
        "low-level API",
        None if a3 is None or b is None else a3["seconds"] / b["seconds"], 0.5, higher=False,
        quartile=ratio(q("colfile-deferred", "md_create"), q("bigfile", "md_create")))
    floors = (("fs-floor", "the file-system floor of bigfile's layout (bare `os` calls making "
                           "the same directories and files)",
               "a bound: no library keeping the layout goes below it"),
              ("fs-floor-ext", "... that floor plus the file of checksums and statistics",
               "a bound for any File in the layout that keeps them in a file bigfile ignores"),
              ("fs-floor-commit", "... made as colfile commits (writer lock byte, staging "
                                  "directory and rename)", "the floor of colfile's protocol"))
    for fname, what, why in floors:
        # times, not speeds: the reciprocal of speed()
        fl = speed("md_create", fname, "bigfile")
        bound(f"{what}, time vs bigfile's low-level API", fl,
              qspeed("md_create", fname, "bigfile"), why)
    w = get("colfile", "md_read_warm")
    row("open + list + read an attribute of each, warm (s)",
        None if w is None else w["seconds"], 0.05, "{:.3f}", higher=False,
        quartile=q("colfile", "md_read_warm"))
    cd = get("colfile", "md_read_cold")
    row("... cold (s)", None if cd is None else cd["seconds"], 0.3, "{:.3f}", higher=False,
        quartile=q("colfile", "md_read_cold"))
    nbytes = snapshot_bytes(r["args"]["rows"])
    for p, what in (("write", "write"), ("read_warm", "read warm (beyond the arrays returned)"),
                    ("read_out", "read into `out=`")):
        x = get("colfile", p)
        row(f"peak extra RSS, {what}, share of the data",
            None if x is None else max(x["extra_rss"], 0) / nbytes, 0.1, "{:.1%}",
            higher=False)
    head = ["Targets for colfile, as measured in this run (speeds as ratios: "
            "the other system's time / colfile's time; memory: no whole-column temporaries, "
            "taken here as peak extra RSS ≤ 10% of the snapshot). Each is judged on the best "
            "repeats; the lower quartiles are the same figure from each system's lower-quartile "
            "time (the (n // 4 + 1)-th fastest of n repeats, given 4 or more), to tell a "
            "difference from the spread between repeats:",
            "",
            "| target | measured (best) | lower quartiles | goal | met |",
            "|---|---|---|---|---|"]
    return head + rows


SECTION_HEAD = """## Peers: snapshot and metadata workloads

`bench/peers.py` runs colfile and its peers (numpy raw files, h5py, zarr 3,
adios2 BP5, bigfile 0.1.52; `pip install .[bench]`) on the snapshot
workload (write into the page cache, write + fsync, read warm and
cold, into caller buffers, partial reads) and on a metadata workload (10,000
small columns with an attribute each), in fresh processes, systems
interleaved, best of several repeats, every read verified against the data
written. Two more colfile rows change one default each: `File(...,
durable=False)` for the writes (commits not fsynced: colfile's page-cache
mode, which the page-cache targets are judged on, since no peer fsyncs there)
and `File(..., verify=True)` for the reads (the CRC32C of every blob a read
covers whole is checked). See the script's docstring for what each phase
does.

"""


def update_markdown(path: Path, section: str) -> None:
    replace_section(path, section, BEGIN, END, SECTION_HEAD, new_file="# Performance\n")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        return child_main(argv[1])
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="See the module docstring (bench/peers.py) for details.")
    p.add_argument("--rows", type=int, default=None, help="rows of the snapshot (2**24)")
    p.add_argument("--repeats", type=int, default=None,
                   help="timed runs per measurement, the best kept (3; 1 with --quick)")
    p.add_argument("--systems", default=",".join(SYSTEMS),
                   help=f"comma-separated ({','.join(SYSTEMS)})")
    p.add_argument("--phases", default="all", help=f"comma-separated subset of "
                   f"{','.join(PHASES)} (all)")
    p.add_argument("--tmpdir", default=None, help="where to write (default $TMPDIR)")
    p.add_argument("--cold-method", choices=["auto", "drop_caches", "fadvise"], default="auto",
                   help="how to empty the page cache for cold reads (auto: drop_caches "
                        "when /proc/sys/vm/drop_caches is writable, else fadvise)")
    p.add_argument("--stride", type=int, default=16, help="step of the strided read (16)")
    p.add_argument("--fancy", type=int, default=None,
                   help="random rows of the fancy-index reads (10**6)")
    p.add_argument("--md-columns", type=int, default=None,
                   help="columns of the metadata workload (10000)")
    p.add_argument("--zarr-chunk-rows", type=int, default=1 << 20,
                   help="rows per zarr chunk (1048576)")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="seconds one measurement may take (900)")
    p.add_argument("--nice", type=int, default=0,
                   help="run each measurement in a session of its own at this scheduling "
                        "priority (e.g. -20, needs root): on a machine shared with other "
                        "work, a negative value keeps the others from taking most of its "
                        "CPU time (default 0: unchanged)")
    p.add_argument("--prime", type=int, default=None,
                   help="bytes of memory to touch and free before each timed part "
                        "(default: 1.25x the snapshot; 0: off; see the docstring)")
    p.add_argument("--seed", type=int, default=6)
    p.add_argument("--markdown", help="file whose peers section to replace")
    p.add_argument("--json", help="write every run's figures to this file")
    p.add_argument("--keep", action="store_true", help="keep the files written")
    p.add_argument("--quick", action="store_true",
                   help="small sizes, one repeat: a smoke test (figures meaningless)")
    args = p.parse_args(argv)
    if args.rows is None:
        args.rows = 1 << 16 if args.quick else 1 << 24
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    if args.fancy is None:
        args.fancy = min(10**6, args.rows // 8) if args.quick else 10**6
    if args.prime is None:
        args.prime = snapshot_bytes(args.rows) * 5 // 4
    if args.md_columns is None:
        args.md_columns = 100 if args.quick else 10000
    if min(args.rows, args.repeats, args.stride, args.fancy, args.md_columns,
           args.zarr_chunk_rows) < 1:
        p.error("sizes and counts must be positive")
    return run(args, argv)


if __name__ == "__main__":
    sys.exit(main())
