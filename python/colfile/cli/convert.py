"""``colfile convert``: copy between an HDF5 file and a colfile File, and
from a zarr group into a colfile File."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from ._common import CliError, NotFoundError, command_parser
from ._launch import communicator

HELP = "convert between an HDF5 file and a colfile File, or a zarr group into a File"

DESCRIPTION = """\
Copy SRC into a new DST.  The direction follows from SRC: an HDF5 file
(recognized by its signature, not its name) is copied into a colfile File
DST; a zarr group (a directory holding zarr.json, or .zgroup for zarr
format 2) into a colfile File DST; a colfile File (another directory) into
an HDF5 file DST.

HDF5 groups become groups, 1-d datasets columns, 2-d datasets of n x k
vector columns of k components, and a compound dataset a group holding one
column per field (marked with the attribute hdf5:compound, so that the way
back gives the compound dataset again).  Attributes of the file, groups and
datasets are copied.  Variable-length strings, references, datasets of
more than 2 dimensions and names colfile cannot hold are refused before
anything is written.

Data is copied in batches (bounded memory).  DST is written under a hidden
name beside it, read back and compared with SRC (skip with --no-verify),
made durable and then renamed into place: a failure leaves no DST.  An
existing DST is refused unless --overwrite is given.  HDF5 needs h5py
(pip install colfile[hdf5]), zarr needs zarr (pip install colfile[zarr]).
See docs/hdf5.md and docs/zarr.md; zarr arrays map as HDF5 datasets do,
structured arrays as compound datasets.

Under mpiexec (or with --mpi) an HDF5 (or zarr) -> colfile copy is split
over the ranks: each reads its share of every dataset's rows and writes
them into the File, opened on all ranks, then checks its share.  A
colfile -> HDF5 copy runs on rank 0 (h5py writes serially)."""

EPILOG = """\
examples:
  colfile convert snapshot.h5 snapshot           HDF5 -> colfile
  colfile convert snapshot snapshot.h5           colfile -> HDF5
  colfile convert snapshot.zarr snapshot         zarr -> colfile
  colfile convert --nfile 8 --chunk-rows 65536 snapshot.h5 snapshot
  colfile convert --overwrite snapshot out.h5    replace out.h5
  mpiexec -n 8 colfile convert big.h5 big          the copy split over 8 ranks"""


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "convert", HELP, DESCRIPTION, EPILOG)
    p.add_argument("src", metavar="SRC", help="an HDF5 file, a zarr group or a colfile File")
    p.add_argument("dst", metavar="DST", help="the File or HDF5 file to make")
    p.add_argument("--nfile", type=_positive, metavar="N",
                   help="blob files per column written (HDF5/zarr -> colfile; default: "
                        "one per 256 MiB)")
    p.add_argument("--chunk-rows", type=_positive, metavar="N",
                   help="rows per statistics chunk of the columns written "
                        "(HDF5/zarr -> colfile)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing DST")
    p.add_argument("--no-verify", dest="verify", action="store_false",
                   help="do not read DST back and compare it with SRC")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print each column or dataset written")
    p.add_argument("--mpi", action="store_true",
                   help="use MPI (mpi4py) even without a launcher's environment")
    return p


def run(args: Any) -> int:
    if not os.path.lexists(args.src):
        raise NotFoundError(f"{args.src}: no such File or HDF5 file (nor zarr group)")
    conv = importlib.import_module("colfile.convert")
    kind = conv.source_kind(args.src)
    needs = {"zarr": ("zarr", "zarr")}.get(kind, ("h5py", "hdf5"))
    try:
        importlib.import_module(needs[0])
        if kind == "zarr":
            conv_zarr = importlib.import_module("colfile.convert_zarr")
    except ImportError as exc:
        raise CliError(f"{args.src}: converting {kind if kind != 'colfile' else 'to HDF5'} "
                       f"needs {needs[0]} ({exc}); pip install colfile[{needs[1]}]") from None
    comm = communicator(args.mpi)
    rank = comm.Get_rank() if comm is not None else 0
    if kind == "zarr":
        names = conv_zarr.from_zarr(args.src, args.dst, nfile=args.nfile,
                                    chunk_rows=args.chunk_rows, overwrite=args.overwrite,
                                    verify=args.verify, comm=comm)
    elif kind == "hdf5":
        names = conv.from_hdf5(args.src, args.dst, nfile=args.nfile,
                               chunk_rows=args.chunk_rows, overwrite=args.overwrite,
                               verify=args.verify, comm=comm)
    else:
        if args.nfile is not None or args.chunk_rows is not None:
            raise CliError(f"{args.src}: --nfile and --chunk-rows apply to a colfile "
                           "destination, and this converts a colfile File to HDF5")
        names = conv.to_hdf5(args.src, args.dst, overwrite=args.overwrite,
                             verify=args.verify, comm=comm)
    if args.verbose and rank == 0:
        for name in names:
            print(f"wrote {name}", file=sys.stdout)
    return 0
