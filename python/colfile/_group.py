"""Groups: the columns below a directory of a File (``file["grp/"]``).
:class:`~colfile.File` is the group of its top directory."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from . import _html
from ._core import file as _cf
from .attrs import AttributeManager
from .column import Column
from .errors import AlreadyExistsError, ColumnKindError, ColumnNotFoundError

if TYPE_CHECKING:
    from .file import File

__all__ = ["Group"]

_name_check = _cf.name_check


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


class Group:
    """The columns below a directory of a File: ``file["grp/"]``.

    A group is a view: it holds no handle of its own.  Names given to a group
    are relative to it (``g["x"]`` is ``file["grp/x"]``).  ``g.attrs`` are the
    attributes of the directory (block ``"grp/."`` in bigfile terms).

    Listing (:attr:`columns`, ``iter``, ``len``, ``keys``) gives the column
    names below the group at any depth, sorted, as bigfile lists them (a
    header-only block hides whatever lies below it).
    """

    _prefix: str

    def __init__(self, file: File, prefix: str) -> None:
        self._file_obj = file
        self._prefix = prefix

    @property
    def _file(self) -> File:
        return self._file_obj

    # -- description ---------------------------------------------------

    @property
    def file(self) -> File:
        """The File this group belongs to."""
        return self._file

    @property
    def name(self) -> str:
        """The group's name relative to the File (``""`` for the File)."""
        return self._prefix.rstrip("/")

    @property
    def path(self) -> str:
        """The group's directory on disk."""
        if not self._prefix:
            return self._file.path
        return os.path.join(self._file.path, self._prefix.rstrip("/"))

    @property
    def attrs(self) -> AttributeManager:
        """The attributes of this group (of the File for a File)."""
        full = self._prefix + "."
        f = self._file
        if f._comm.serial:
            return AttributeManager(lambda create: f._attr_column(full, create), self.path)
        if f._coll_meta:
            return AttributeManager(lambda create: f._attr_column(full, create, reading=True),
                                    self.path,
                                    writer=lambda create: f._attr_column(full, create))
        # under MPI reads are independent, changes collective
        return AttributeManager(lambda create: f._attr_reader(full), self.path,
                                writer=lambda create: f._attr_column(full, create))

    def __repr__(self) -> str:
        f = self._file
        if f.closed:
            return f"<colfile.Group {self.name!r} (closed file)>"
        # counting the columns waits for deferred commits; a failed one is
        # left for the File's next call to raise, not raised (and so lost) here
        if f._commits is not None and f._commits.wait():
            return f"<colfile.Group {self.name!r} in {f.path!r} (a deferred commit failed)>"
        return f"<colfile.Group {self.name!r} in {f.path!r} ({len(self)} columns)>"

    def _repr_html_(self) -> str:
        return _html.group(self)

    def _ipython_key_completions_(self) -> list[str]:
        return _html.key_completions(self)

    # -- names -----------------------------------------------------------

    def _full(self, name: str) -> str:
        if not isinstance(name, str):
            raise TypeError(f"column names are str, not {type(name).__name__}")
        if not name:
            _name_check(name, self._file.path)  # the core's InvalidNameError: never the group itself
        return self._prefix + name

    @property
    def columns(self) -> list[str]:
        """Sorted names of the columns below this group (relative to it)."""
        n = len(self._prefix)
        return [c[n:] for c in self._file._list() if c.startswith(self._prefix)]

    def keys(self) -> list[str]:
        """Same as :attr:`columns`."""
        return self.columns

    def values(self) -> list[Column]:
        """The columns, opened."""
        return [self[k] for k in self.columns]

    def items(self) -> list[tuple[str, Column]]:
        """``(name, column)`` pairs."""
        return [(k, self[k]) for k in self.columns]

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def __bool__(self) -> bool:
        # as h5py: an open File or group is true, even with no columns
        return not self._file.closed

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name.endswith("/"):
            try:
                return self._file._group_exists(self._full(name))
            except ValueError:  # an invalid name: no such group can exist
                return False
        try:
            self._file._open_column(self._full(name))
        except (ColumnNotFoundError, ValueError):
            return False
        return True

    def get(self, name: str, default: Any = None) -> Any:
        """``self[name]``, or ``default`` if there is no such column."""
        try:
            return self[name]
        except KeyError:
            return default

    # -- access ----------------------------------------------------------

    def __getitem__(self, name: str) -> Any:
        """``g["col"]`` opens a column; ``g["sub/"]`` (trailing slash) gives
        the group of an existing directory that is not a column."""
        full = self._full(name)
        if full.endswith("/"):
            if not self._file._group_exists(full):
                raise ColumnNotFoundError(
                    f"{os.path.join(self._file.path, full)}: no such group")
            return Group(self._file, full)
        return self._file._open_column(full)

    def __delitem__(self, name: str) -> None:
        """``del g["col"]`` removes a column (its header, attributes and
        blobs); ``del g["sub/"]`` (trailing slash, as for ``g["sub/"]``)
        removes the group ``sub`` and everything below it.

        The column's writer lock is taken first (every column's below a
        group): :class:`~colfile.BusyError`, with nothing removed, while
        another handle or process writes one.  What is removed disappears
        in one rename before it is deleted, so a crash leaves it whole or
        absent (``colfile repair`` removes the hidden leftover)."""
        self._file._remove(self._full(name))

    def move(self, source: str, dest: str) -> None:
        """Rename column ``source`` to ``dest`` (both relative to this
        group; ``dest`` may lie in another group, made if missing), in one
        rename of its directory (``cf_file_rename``).

        Refused, with nothing renamed: :class:`~colfile.AlreadyExistsError`
        if ``dest`` exists, :class:`~colfile.BusyError` while another
        handle or process writes either name,
        :class:`~colfile.InvalidNameError` for names such as ``../x``,
        :class:`~colfile.ColumnKindError` for a group or a column with
        columns below it, :class:`~colfile.ColumnNotFoundError` for no
        such column.  Under MPI collective (rank 0 renames)."""
        self._file._move(self._full(source), self._full(dest))

    def create(self, name: str, dtype: Any = _UNSET, size: int | None = None,
               nfile: int | None = None, *, blob_rows: Sequence[int] | None = None,
               data: Any = None, align_blobs_to_ranks: bool = False, mode: str = "auto",
               concurrency: int | None = None, chunk_rows: int | None = None,
               overwrite: bool = False) -> Column:
        """Create a column and return it open for writing.

        Under ``comm=`` this is collective: every rank passes the same
        arguments, except that ``data`` holds *this rank's* rows (any number,
        zero included): the column gets the sum of all ranks' rows, stored in
        rank order, written with one collective :meth:`Column.write_all
        <colfile.Column.write_all>` (``mode``, ``concurrency``).  Without
        ``data`` every rank states the same global ``size``.

        Parameters
        ----------
        name : str
            Column name, relative to this group; ``/`` makes sub-directories.
        dtype : dtype spec or None
            The element dtype: kinds i u f c b (bool) and S, either byte
            order.  A sub-array dtype such as ``("f8", 3)`` makes a vector
            column with ``nmemb`` 3.  ``None`` makes a header-only block
            (metadata, no data).  Optional when ``data`` is given.
        size : int, optional
            Rows (default 0, or the rows of ``data``: under ``comm=`` the
            sum over the ranks).
        nfile : int, optional
            Blob files to spread the rows over (bigfile's split rule).  By
            default one per 256 MiB of data, at most one per rank
            (``cf_plan_nfile``): 1 when serial.
        blob_rows : sequence of int, optional
            The rows of each blob explicitly (overrides ``nfile``).
        data : array_like, optional
            Rows to write right away (h5py style); its dtype is the default
            ``dtype`` and a 2-d array makes a vector column.  Under
            ``comm=``: this rank's rows (ranks holding no rows do not decide
            the default dtype).
        align_blobs_to_ranks : bool
            Cut the blobs on rank boundaries (``cf_plan_blobs_by_rank``:
            consecutive ranks share a blob, no rank writes two), instead of
            splitting the rows evenly.  Needs ``nfile`` <= the number of
            ranks.
        mode, concurrency
            How ``data`` is written: see :meth:`Column.write_all
            <colfile.Column.write_all>`.
        chunk_rows : int, optional
            Rows per statistics chunk (``cf_column_set_chunk_rows``): every
            write records min, max, count, NaN count and sum per chunk and
            component, which queries (:mod:`colfile.query`) use to skip
            data.  Smaller chunks skip more precisely and cost more
            metadata.  Default: the core's choice from the column's size
            at create (a power of two: at least 512 KiB per component,
            coarser only while the column keeps 2**15 chunks, at most
            2**20 rows and 8 MiB per chunk; docs/query.md, "Default
            chunks"), kept when the column grows.
        overwrite : bool
            Replace a column of that name (its rows and attributes are
            gone once the new one is committed).  By default a column that
            exists raises :class:`~colfile.ColumnExistsError` (a
            ``FileExistsError`` and a ``ValueError``) naming it, and nothing
            changes, as in h5py.  Files opened with mode ``"w"`` start
            empty, so this is needed only to replace what a File already
            held.

        Notes
        -----
        A column cannot be made below a column (``"P/sub"`` when ``P`` is
        one: nothing lists columns inside a column's directory), nor where
        a group holds columns (``"g"`` when ``"g/x"`` exists), even with
        ``overwrite=True``: both raise :class:`~colfile.ColumnExistsError`.

        The rows hold no data until written.  Rows skipped before a written
        row of the same blob read as zeros; rows after the last one written
        in their blob raise :class:`~colfile.IncompleteError` when read
        (they look like a blob cut short), and closing the column warns
        about them (:class:`~colfile.IncompleteWarning`); docs/writing.md.

        Sizes and counts must be whole numbers (``int`` or a numpy
        integer): anything else raises :class:`TypeError` naming the
        argument.  Numbers the format cannot hold raise
        :class:`~colfile.InvalidArgumentError` (a :class:`ValueError`)
        naming the limit: more than 2**24 blobs, or rows whose bytes exceed
        2**63-1.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> v = f.create("v", ("f8", 3), size=10, blob_rows=[4, 0, 6])
        >>> v[:] = 1.0; v.shape
        (10, 3)
        >>> try:
        ...     f.create("v", "i4", size=1)
        ... except colfile.ColumnExistsError:
        ...     print("exists")
        exists
        >>> f.create("v", data=np.arange(3), overwrite=True).shape
        (3,)
        >>> f.create("meta", None).kind
        'header-only'
        >>> f.create("s", data=["ab", "c"])[:]
        array([b'ab', b'c'], dtype='|S2')
        >>> f.close()
        """
        return self._file._create(self._full(name), dtype, size, nfile, blob_rows, data,
                                  align_blobs_to_ranks, mode, concurrency, chunk_rows,
                                  bool(overwrite))

    def create_group(self, name: str) -> Group:
        """Create directory ``name`` (with an empty attribute file) and return
        its group; :class:`~colfile.AlreadyExistsError` if it exists."""
        full = self._full(name).rstrip("/") + "/"
        f = self._file

        def taken() -> str | None:
            if f._group_exists(full):
                return "group exists"
            # read here, not through _column_named: under MPI this runs on
            # rank 0 alone (h5py: a ValueError too)
            if f._is_column(f._check_open(), full[:-1]):
                return "a column of that name exists"
            return None

        if not f._comm.serial:
            f._enter("create_group()")
            # rank 0 decides, so that every rank raises or none does
            why = taken() if f._coll_meta else f._on_root(taken)
        else:
            why = taken()
        if why is not None:
            raise AlreadyExistsError(f"{os.path.join(f.path, full[:-1])}: {why}")
        return self.require_group(name)

    def _query_resolver(self) -> Any:
        """How a query on this group finds the names it uses: its columns."""
        return self.__getitem__

    def _column_named(self, full: str) -> bool:
        """True if column ``full`` exists (every rank agrees under MPI)."""
        f = self._file
        h = f._check_open()
        f._settle()
        return bool(f._on_root(lambda: f._is_column(h, full)))

    def require_group(self, name: str) -> Group:
        """The group ``name``, created if it does not exist;
        :class:`~colfile.ColumnKindError` (a ``TypeError``, as in h5py) if
        ``name`` is a column."""
        full = self._full(name).rstrip("/") + "/"
        if not self._file._comm.serial:
            self._file._enter("require_group()")
        if self._column_named(full[:-1]):
            raise ColumnKindError(f"{os.path.join(self._file.path, full[:-1])}: a column, "
                                  "not a group")
        self._file._attr_column(full + ".", True)
        return Group(self._file, full)
