"""``colfile sample``: every k-th row, or a reproducible random fraction of
the rows, of a File's columns."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import colfile.tools

from ._common import (UsageError, add_src_dst_columns, add_tool_output, command_parser,
                      positive_int, run_tool, tool_columns)

HELP = "every k-th or a random fraction of the rows to a new File"

DESCRIPTION = """\
Write to the new File DST rows of the COLUMNs of SRC (columns, groups or
patterns; default all): with --every K rows 0, K, 2K, ...; with --fraction
P a random fraction P of the rows, reproducible: row i is kept when the
i-th number of numpy.random.default_rng(SEED).random() is below P, so
columns of one length keep the same rows and the same --seed gives the same
sample.  Attributes are copied; each column gets --nfile blobs (default as
many as in SRC).  Written, verified and renamed into place as 'colfile cp'
does; DST must not exist unless --overwrite is given."""

EPILOG = """\
examples:
  colfile sample snapshot thin --every 100
  colfile sample snapshot tenth --fraction 0.1 --seed 42 1/Position 1/ID"""


def _fraction(text: str) -> float:
    try:
        p = float(text)
    except ValueError:
        p = -1.0
    if not 0.0 <= p <= 1.0:
        raise argparse.ArgumentTypeError(f"not a fraction between 0 and 1: {text!r}")
    return p


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "sample", HELP, DESCRIPTION, EPILOG)
    add_src_dst_columns(p, "sample")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--every", type=positive_int, metavar="K", help="keep rows 0, K, 2K, ...")
    how.add_argument("--fraction", type=_fraction, metavar="P",
                     help="keep a random fraction P of the rows (needs --seed)")
    p.add_argument("--seed", type=int, help="seed of the random choice")
    p.add_argument("--nfile", type=positive_int, metavar="N", help="blobs of each column")
    p.add_argument("-v", "--verbose", action="store_true", help="print each column sampled")
    add_tool_output(p)
    return p


def run(args: Any) -> int:
    hint = "try 'colfile sample --help'"
    if args.every is None and args.fraction is None:
        raise UsageError("give --every K or --fraction P", hint=hint)
    if args.fraction is not None and args.seed is None:
        raise UsageError("--fraction needs --seed (the sample must be reproducible)", hint=hint)
    if args.chunk_mb <= 0:
        raise UsageError("--chunk-mb must be positive", hint=hint)
    cols = tool_columns(args.src, args.columns)
    done = run_tool(colfile.tools.sample, args.src, args.dst, cols, every=args.every,
                    fraction=args.fraction, seed=args.seed, nfile=args.nfile,
                    overwrite=args.overwrite, chunk_bytes=int(args.chunk_mb * (1 << 20)))
    if args.verbose:
        for name in done:
            print(f"sampled {name}", file=sys.stdout)
    return 0
