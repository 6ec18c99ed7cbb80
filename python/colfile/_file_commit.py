"""Committing and releasing what a File holds: the collective commit of
the columns every rank opened or wrote under MPI, the catalog update, and
releasing the File's handles.  Part of :class:`~colfile.File`.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from ._core import column as _c
from ._core import file as _cf
from .column import Column
from .errors import Error

if TYPE_CHECKING:
    from .file import File

__all__ = ["FileCommit"]


class _FirstFailure:
    """The first failure of steps that must each run though others fail
    (a column's open, repair, export or merge on the way to a commit that
    every rank makes)."""

    def __init__(self) -> None:
        self.exc: BaseException | None = None

    @contextmanager
    def kept(self, kind: type[BaseException] = Exception) -> Iterator[None]:
        """Run the ``with`` body as one step: an exception of ``kind`` ends
        the step, not the caller, and is kept if it is the first."""
        try:
            yield
        except kind as exc:
            self.exc = self.exc or exc


class FileCommit:
    """The commit and release steps of :meth:`File.close
    <colfile.File.close>` and :meth:`File.flush <colfile.File.flush>` (see
    :class:`~colfile.File`, which is one)."""

    def _collective_live(self) -> list[Column]:
        """Under MPI: the writable columns open on any rank (or written
        through a handle some rank opened alone and closed), open on every
        rank (ranks that have not opened one open it now), in name order,
        ready for a collective commit: the write state saved by the
        handles closed alone is merged into rank 0's handle."""
        comm = self._comm
        with self._lock:
            live = [c for c in self._live() if c._writable]
        mine = sorted({c.name for c in live})
        wrote = sorted({c.name for c in live if c._wrote} | set(self._saved))
        held = comm.allgather((mine, wrote))
        union: set[str] = set()
        written: set[str] = set()
        for names, w in held:
            union.update(names)
            written.update(w)
        union |= written
        missing = {n for n in union if any(n not in names for names, _ in held)}
        failed = _FirstFailure()
        repaired: list[str] = []
        # Rank 0 opens what it lacks, then hands its handle's snapshot to
        # the other ranks that lack it (as a collective open does): their
        # own open could find the marker of the in-place writes of the
        # ranks that had it.
        metas: dict[str, bytes | None] = {}
        if comm.rank == 0:
            for name in sorted(missing - set(mine)):
                with failed.kept():
                    self._open_column(name)
            # A handle opened over a marker its File did not make (torn=
            # 'warn'): recompute the column's checksums from its blobs, and
            # commit (the others' write state is then dropped).  Over the
            # marker of this File's own ranks' writes (see _ours) rank 0's
            # handle adopted their update at open (cf_column_adopt_update):
            # not torn, their states merge below like any others.
            for name in sorted(written):
                col = self._cols.get(name)
                with failed.kept():
                    if col is not None and not col.closed and col._kind == 0 and col.torn:
                        col.repair()
                        repaired.append(name)
            for name in sorted(missing):
                col = self._cols.get(name)
                metas[name] = None
                with failed.kept():
                    if col is not None and not col.closed:
                        metas[name] = _c.export_meta(col._handle())
        metas, repaired = comm.bcast((metas, repaired), root=0)
        if comm.rank != 0:
            for name in sorted(missing - set(mine)):
                meta = metas.get(name)
                if meta is None:
                    continue  # rank 0's error is raised
                with failed.kept():
                    col = Column(_c.open_meta(self._h, meta), self, name=name)
                    col._independent = True
                    self._cols[name] = col
        for name in repaired:
            # rank 0's repair holds these rows' checksums: drop the others'
            self._saved.pop(name, None)
            col = self._cols.get(name)
            if comm.rank != 0 and col is not None and not col.closed and col._kind == 0:
                with failed.kept(Error):
                    col._pending_export()
        saved = [(n, st) for n, sts in sorted(self._saved.items()) for st in sts]
        self._saved = {}
        gathered = comm.gather(saved, root=0)
        if comm.rank == 0 and gathered is not None:
            for items in gathered:
                for name, st in items:
                    col = self._cols.get(name)
                    if col is None or col.closed:
                        continue  # its open failed: that error is raised
                    with failed.kept():
                        col._pending_merge(st)
        with self._lock:
            cols = {c.name: c for c in self._live() if c._writable}
        # a column some rank could not open (another process removed it...)
        # is left out on every rank, and its error raised on every rank
        # (by agree, after the columns every rank has are committed)
        everywhere = set(cols)
        for names in comm.allgather(sorted(cols)):
            everywhere.intersection_update(names)
        self._close_failure = failed.exc
        return [cols[n] for n in sorted(everywhere)]

    def _save_state(self, name: str, state: bytes) -> None:
        """Under MPI: keep the write state of a column this rank opened
        alone, wrote and closed, for the File's next collective commit."""
        with self._lock:
            self._saved.setdefault(name, []).append(state)

    def _release_handle(self) -> None:
        """Release the cf_file handle (and under MPI the File's duplicate
        communicator, unless it is out of step: freeing is collective)."""
        with self._lock:
            h, self._h = self._h, None
            if self._finalizer is not None:
                self._finalizer.detach()
            for extra in (self._aux, self._torn_fh, self._torn_rd):
                if extra is not None:
                    _cf.close(extra)
            self._aux = self._torn_fh = self._torn_rd = None
            _cf.close(h)
        if self._comm.owned and self._comm.broken is None:
            self._comm.free()

    def _release_readers(self) -> None:
        """Close the handles of independent attribute reads (read-only)."""
        with self._lock:
            readers = list(self._attr_read.values())
            self._attr_read.clear()
        for col in readers:
            col._close_local()

    def _abandon(self) -> None:
        """Under MPI, once the ranks are out of step (a collective made by
        only some of them): release every handle on this rank without
        committing anything, and close the File."""
        with self._lock:
            cols = list(self._cols.values()) + list(self._attr_cols.values())
            self._cols.clear()
            self._attr_cols.clear()
        for col in cols:
            col._abandon()
        self._release_readers()
        self._release_handle()

    def _update_catalog(self) -> None:
        """Rebuild the File's catalog after this writer's commits
        (``cf_file_catalog_update``; rank 0 under MPI).  The catalog is a
        cache: a failure to write it (a read-only directory, ...) leaves
        readers on the per-column files and is not an error of the close."""
        h = self._h

        def run() -> None:
            _cf.catalog_update(h)

        self._on_root(run)
