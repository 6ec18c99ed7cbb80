"""A column's attributes, the checksums and checks of its blobs, and its
per-chunk statistics.  Completes :class:`ColumnBase`, all of
:class:`~colfile.Column` that does not build on queries, dask or the
File (what :mod:`colfile.query` and the modules below it know a column
as).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from . import mpi as _mpi
from ._core import column as _c
from ._core import column_attrs as _cattrs
from ._core import integrity as _integrity
from ._core.integrity import CHUNK_STATS_DTYPE
from ._core.constants import BLOB_STATUS, EXT_STATES, REPAIR_BITS
from .errors import RangeError
from ._column_handle import fold
from ._column_rows import ColumnRows

if TYPE_CHECKING:
    from .file import File

__all__ = ["ColumnBase"]


class ColumnBase(ColumnRows):
    """A column without its query and dask entry points (see
    :class:`~colfile.Column`, which is one)."""

    # ------------------------------------------------------------------
    # attributes (used by attrs.AttributeManager)

    def _attr_get(self, name: str) -> tuple[str, int, bytes]:
        with self._lock:
            return _cattrs.get(self._handle(), name)

    def _attr_set(self, name: str, tok: str, nmemb: int, data: bytes) -> None:
        # Under MPI every rank calls: rank 0's handle writes the files, the
        # replicas keep the value in memory; failures are agreed on.
        def call() -> None:
            self._call(_cattrs.set, name, tok, nmemb, data)

        if self._comm.serial:
            call()
        else:
            self._enter("attrs[name] = value")
            _mpi.agree(self._comm, call)

    def _attr_delete(self, name: str) -> None:
        if not self._comm.serial:
            self._enter("del attrs[name]")
        _mpi.agree(self._comm, lambda: self._call(_cattrs.delete, name))

    def _attr_names(self) -> list[str]:
        return list(self._call(_cattrs.names))

    # ------------------------------------------------------------------
    # blobs, checksums

    def blob_info(self, i: int) -> dict[str, Any]:
        """What the metadata says about blob ``i``.

        Returns
        -------
        dict
            ``rows``; ``sum`` (bigfile's running byte sum) and ``fold`` (its
            SysV fold, as in the header); ``crc32c`` (int, or None when no
            current CRC32C is recorded).
        """
        with self._lock:
            h = self._handle()
            rows = _c.blob_rows(h, i)
            if rows < 0 or i < 0:
                raise RangeError(f"{self._what()}: no blob {i} "
                                 f"(nfile is {_c.nfile(h)})")
            s, crc = _integrity.blob_sums(h, i)
        return {"rows": rows, "sum": s, "fold": fold(s), "crc32c": crc}

    def checksums(self) -> list[dict[str, Any]]:
        """:meth:`blob_info` of every blob."""
        return [self.blob_info(i) for i in range(self.nfile)]

    def verify_blob(self, i: int) -> set[str]:
        """Read blob ``i`` and compare it with the metadata.

        Returns
        -------
        set of str
            ``{"OK"}``, or some of ``MISSING``, ``SHORT``, ``LONG``,
            ``SUM_MISMATCH``, ``CRC_MISMATCH``, ``CRC_UNKNOWN``,
            ``STATS_MISMATCH`` (recorded statistics disagree with the data),
            ``STATS_DAMAGED`` (recorded statistics are inconsistent in
            themselves, e.g. a minimum above the maximum).
        """
        bits = self._call(_integrity.verify_blob, i)
        found = {name for bit, name in BLOB_STATUS if bits & bit}
        return found or {"OK"}

    @property
    def ext_state(self) -> str:
        """Whether the CRC32C values and statistics recorded for the column
        apply to its data (``cf_column_ext_state``; docs/format.md 8.1):
        ``"current"`` (they do, and reads, checks and queries use them), or,
        all of them being unknown then, ``"absent"`` (none recorded),
        ``"unbound"`` (recorded by an older colfile), ``"stale"`` (the header
        changed since: another tool wrote the column, or a copy did not keep
        modification times; ``colfile index`` recomputes them),
        ``"damaged"`` (the file fails its checksum; ``colfile repair``),
        ``"updating"`` (another process is updating rows in place) or
        ``"torn"`` (such an update was interrupted).  Under MPI, a column
        opened collectively gets rank 0's CRC32C and statistics (what rank 0
        trusts): only rank 0 tells the state of the files."""
        return EXT_STATES[self._call(_integrity.ext_state)]

    @property
    def torn(self) -> bool:
        """True if the column was marked torn when opened (an in-place
        update was interrupted; possible only with ``File(...,
        torn='warn')``)."""
        with self._lock:
            return _c.torn(self._handle())

    def repair(self) -> set[str]:
        """Make the column consistent with the data its blobs hold, and
        commit (``cf_column_repair``): recompute byte sums, CRC32C and
        statistics, cut bytes past each blob's rows, remove blobs numbered
        beyond NFILE, clear the torn mark.  The rows are not changed.

        Returns
        -------
        set of str
            What was fixed: some of ``sums``, ``crc``, ``truncated``,
            ``stray``, ``torn``.

        Raises
        ------
        FormatError
            A blob is missing or short: its rows cannot be recovered.
        BusyError
            Another writer holds the column.
        """
        bits = self._call(_integrity.repair)
        return {name for bit, name in REPAIR_BITS if bits & bit}

    # ------------------------------------------------------------------
    # data characteristics (per-chunk statistics) and queries

    @property
    def chunk_rows(self) -> int:
        """Rows per statistics chunk (``cf_column_chunk_rows``; 0 for
        columns without data).  Chunks restart at every blob."""
        with self._lock:
            return _integrity.chunk_rows(self._handle())

    def chunk_stats(self, component: int | None = None) -> np.ndarray:
        """The per-chunk statistics of the column (``cf_column_chunk_stats``).

        Parameters
        ----------
        component : int, optional
            The vector component (negative counts from the end).  By default
            all of them: the result then has shape ``(nchunks, nmemb)`` for
            vector columns.

        Returns
        -------
        numpy.ndarray
            A structured array of records in row order with the fields of
            ``cf_chunk_stats``: ``blob``, ``first_row``, ``rows``, ``valid``
            (False: unknown or stale -- never trust the other numbers then),
            ``ordered``, ``count``, ``nan_count``, ``min``, ``max`` (doubles
            rounded outward), ``sum``.  A blob whose statistics are known
            has one record per chunk; a blob whose statistics are unknown
            has one record (``valid`` False) covering all its rows, so the
            result grows with the statistics that exist, never with the
            rows a header claims.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> c = f.create("c", "f8", size=6, chunk_rows=4)
        >>> c[:] = [3.0, 1.0, np.nan, 2.0, 7.0, 5.0]
        >>> c.flush()
        >>> s = c.chunk_stats()
        >>> s["first_row"], s["rows"], s["nan_count"], s["min"], s["max"]
        (array([0, 4]), array([4, 2]), array([1, 0]), array([1., 5.]), array([3., 7.]))
        >>> f.close()
        """
        nmemb = max(self._nmemb, 1)
        if component is None:
            comps = list(range(nmemb))
        else:
            j = int(component)
            if not -nmemb <= j < nmemb:
                raise IndexError(f"{self._what()}: component {component} is out of range "
                                 f"for {nmemb} component(s)")
            comps = [j % nmemb]
        recs: list[list[tuple[Any, ...]]] = []
        with self._lock:
            h = self._handle()
            get = _integrity.chunk_stats_reader(h)
            crows = _integrity.chunk_rows(h) if self._kind == 0 else 0
            k = 0  # the blob's first chunk, in the numbering of cf_column_chunk_stats
            for b in range(_c.nfile(h) if crows > 0 else 0):
                rows = _c.blob_rows(h, b)
                nc = -(-rows // crows) if rows > 0 else 0
                if nc == 0:
                    continue
                # validity is the blob's: unknown statistics come as one record
                first = get(k, comps[0])
                if not first[3]:
                    rec = (b, first[1], rows, False, first[4], 0, 0, np.nan, np.nan, 0.0)
                    recs.append([rec] * len(comps))
                else:
                    for kk in range(k, k + nc):
                        recs.append([first if kk == k and i == 0 else get(kk, j)
                                     for i, j in enumerate(comps)])
                k += nc
        out = np.zeros((len(recs), len(comps)), CHUNK_STATS_DTYPE)
        for r, row in enumerate(recs):
            for i, rec in enumerate(row):
                out[r, i] = rec
        if component is not None or self._nmemb <= 1:
            return out[:, 0]
        return out

    def index_blobs(self, blobs: Any = None) -> None:
        """Recompute the CRC32C and statistics of blobs from their data
        (``cf_column_index_blob``), for columns written by other tools or
        with stale statistics, and for ``f4`` and ``f8`` columns the chunk
        index's fine level (which writes never compute); committed by the
        next :meth:`flush` or :meth:`close`.  ``blobs``: blob numbers
        (default all)."""
        todo = range(self.nfile) if blobs is None else [int(b) for b in blobs]
        # pending state to commit, like a write's: under MPI a column opened
        # by one rank alone hands it to the File's collective close
        self._wrote = True
        for b in todo:
            self._call(_integrity.index_blob, b)
