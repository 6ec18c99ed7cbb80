"""Random sequences of writes split over the ranks, against numpy.

Hypothesis draws a column (every dtype kind, both byte orders, 1-3
components, 0-24 rows, uneven blobs) and a sequence of operations: each
rank's independent writes ``col[sel] = v`` (slices of any step with
negative or out-of-range bounds, integers, unsorted integer arrays, boolean
masks, one component or a slice of them), collective ``write_all`` of
consecutive or scattered ranges, collective flushes and closes, and reads
by every rank of random rows.  The same operations update a numpy array on
every rank; every read and the File after its close must equal it.

Every rank draws the same examples: hypothesis runs derandomized (no
example database) and each example's outcome is agreed by all ranks
before it returns, so that they shrink a failure alike.  Within one
epoch (between collective commits) no two ranks write the same row
(the checksums of several writers are merged at the commit, as each
rank's writes to rows of its own).

COLFILE_MPI_EXAMPLES sets the number of examples (default 12: the CI
run); e.g. COLFILE_MPI_EXAMPLES=500 for a long run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colfile

EXAMPLES = int(os.environ.get("COLFILE_MPI_EXAMPLES", "12"))

DTYPES = ["<i4", ">i8", "<u2", ">u4", "<f4", ">f8", "<c8", ">c16", "|b1", "|S3", "|i1"]

ROWS = 24


def index_strategy(nmemb: int) -> st.SearchStrategy[Any]:
    """A row selection, optionally with a component selection."""
    bound = st.one_of(st.none(), st.integers(-ROWS - 4, ROWS + 4))
    step = st.one_of(st.none(), st.integers(-5, 5).filter(lambda x: x != 0))
    rows = st.one_of(
        st.builds(lambda a, b, c: ("slice", a, b, c), bound, bound, step),
        st.builds(lambda i: ("int", i), st.integers(-ROWS, ROWS - 1)),
        st.builds(lambda xs: ("array", xs),
                  st.lists(st.integers(-ROWS, ROWS - 1), max_size=8)),
        st.builds(lambda seed: ("mask", seed), st.integers(0, 2**31)),
        st.just(("all",)))
    comp = st.none() if nmemb == 1 else st.one_of(
        st.none(), st.integers(-nmemb, nmemb - 1).map(lambda j: ("int", j)),
        st.builds(lambda a, b: ("slice", a, b), st.integers(0, nmemb), st.integers(0, nmemb)))
    return st.tuples(rows, comp)


@st.composite
def scenarios(draw: Any) -> dict[str, Any]:
    dtype = draw(st.sampled_from(DTYPES))
    nmemb = draw(st.integers(1, 3))
    size = draw(st.integers(0, ROWS))
    nblobs = draw(st.integers(0 if size == 0 else 1, 5))
    cuts = sorted(draw(st.lists(st.integers(0, size), min_size=max(nblobs - 1, 0),
                                max_size=max(nblobs - 1, 0))))
    blob_rows = [b - a for a, b in zip([0] + cuts, cuts + [size])] if nblobs else []
    ops = draw(st.lists(st.one_of(
        st.builds(lambda r, ix: ("set", r, ix), st.integers(0, 3), index_strategy(nmemb)),
        st.builds(lambda r, ix: ("read", r, ix), st.integers(0, 3), index_strategy(nmemb)),
        st.builds(lambda a, w: ("write_all", a, w), st.integers(0, size),
                  st.lists(st.integers(0, 4), min_size=4, max_size=4)),
        st.just(("flush",)), st.just(("close",))), max_size=10))
    return {"dtype": dtype, "nmemb": nmemb, "size": size, "blob_rows": blob_rows,
            "ops": ops, "seed": draw(st.integers(0, 2**31))}


def resolve(ix: Any, size: int, nmemb: int) -> Any:
    """The numpy index of a drawn selection (None: not a valid one)."""
    rows, comp = ix
    if rows[0] == "slice":
        r: Any = slice(rows[1], rows[2], rows[3])
    elif rows[0] == "int":
        if not -size <= rows[1] < size:
            return None
        r = rows[1]
    elif rows[0] == "array":
        xs = [x for x in rows[1] if -size <= x < size]
        # distinct rows (numpy leaves repeated writes to its buffer order)
        seen: dict[int, int] = {}
        for x in xs:
            seen.setdefault(x % size if size else 0, x)
        r = np.array(list(seen.values()), dtype=np.int64)
    elif rows[0] == "mask":
        r = np.random.default_rng(rows[1]).integers(0, 2, size).astype(bool)
    else:
        r = slice(None)
    if comp is None or nmemb == 1:
        return r
    c = comp[1] if comp[0] == "int" else slice(comp[1], comp[2])
    return (r, c)


def values(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if dtype.kind == "S":
        letters = np.frombuffer(b"abcxyz", "S1")
        return np.array([b"".join(rng.choice(letters, rng.integers(0, 4)))
                         for _ in range(int(np.prod(shape)))], dtype).reshape(shape)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.integers(-9, 9, shape) + 1j * rng.integers(-9, 9, shape)).astype(dtype)
    return rng.integers(0, 100, shape).astype(dtype)


def touched(index: Any, size: int) -> set[int]:
    rows = index[0] if isinstance(index, tuple) else index
    return set(np.arange(size)[rows].reshape(-1).tolist())


def agreed(comm: Any, failure: str | None) -> None:
    """Raise the same AssertionError on every rank if any rank failed."""
    failures = [f for f in comm.allgather(failure) if f]
    if failures:
        raise AssertionError("; ".join(failures))


@pytest.fixture(scope="module")
def counter() -> list[int]:
    return [0]


# Failing examples hypothesis found, kept as explicit cases.
REGRESSIONS = [
    # rank 1 rewrites a row through a handle it opened alone and closes it;
    # reopening the column (before the File commits) found it marked torn
    {"dtype": "<i4", "nmemb": 2, "size": 1, "blob_rows": [1],
     "ops": [("set", 0, (("all",), None)), ("close",), ("set", 1, (("int", 0), None)),
             ("close",)], "seed": 0},
]


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck), print_blob=False)
@given(sc=scenarios())
def test_write_sequences_split_over_ranks(comm: Any, shared: Path, counter: list[int],
                                          sc: dict[str, Any]) -> None:
    run_sequence(comm, shared, counter, sc)


@pytest.mark.parametrize("sc", REGRESSIONS)
def test_found_write_sequences(comm: Any, shared: Path, counter: list[int],
                               sc: dict[str, Any]) -> None:
    run_sequence(comm, shared, counter, sc)


def run_sequence(comm: Any, shared: Path, counter: list[int], sc: dict[str, Any]) -> None:
    counter[0] += 1
    path = shared / f"f{counter[0]}"
    size, nmemb = sc["size"], sc["nmemb"]
    dt = np.dtype(sc["dtype"])
    shape = (size,) if nmemb == 1 else (size, nmemb)
    rng = np.random.default_rng(sc["seed"])  # the same draws on every rank
    oracle = values(dt, shape, rng)
    me, n = comm.rank, comm.size
    # every rank's share of the first write, rank order
    share = [len(range(size)[r::n]) for r in range(n)]
    first = sum(share[:me])
    failure: str | None = None
    f = colfile.File(path, "w", comm=comm)
    try:
        col = f.create("x", dt if nmemb == 1 else (dt, nmemb), size=size,
                       blob_rows=sc["blob_rows"])
        col.write_all(oracle[first:first + share[me]])
        owner: dict[int, int] = {}
        for k, op in enumerate(sc["ops"]):
            kind = op[0]
            if kind in ("set", "read"):
                index = resolve(op[2], size, nmemb)
                if index is None:
                    continue
                rank = op[1] % n
                if kind == "set":
                    rows = touched(index, size)
                    owners = {owner[r] for r in rows if r in owner}
                    if len(owners) > 1 or (owners and owners != {rank}):
                        if len(owners) == 1:
                            rank = owners.pop()  # that rank's rows this epoch
                        else:
                            f.flush()  # a new epoch
                            owner = {}
                    for r in rows:
                        owner[r] = rank
                    target = oracle[index]
                    v = values(dt, np.shape(target), rng)
                    oracle[index] = v
                    if me == rank:
                        try:
                            col[index] = v
                        except Exception as exc:  # noqa: BLE001 - agreed below
                            failure = f"rank {me}: op {k} {op}: {type(exc).__name__}: {exc}"
                else:
                    # the op's rank reads its selection, every rank a random one
                    sel = index if me == rank else resolve(
                        (("mask", int(sc["seed"]) + k + me), None), size, nmemb)
                    try:
                        got = col[sel]
                        if not np.array_equal(got, oracle[sel]):
                            failure = f"rank {me}: op {k} {op}: read {got!r}, numpy {oracle[sel]!r}"
                    except Exception as exc:  # noqa: BLE001 - agreed below
                        failure = f"rank {me}: op {k} {op}: {type(exc).__name__}: {exc}"
            elif kind == "write_all":
                start, weights = op[1], op[2]
                total = size - start
                w = [weights[r % 4] for r in range(n)]
                counts = [total * x // max(sum(w), 1) for x in w]
                starts = [start + sum(counts[:r]) for r in range(n)]
                f.flush()  # write_all's rows may be written by another rank
                owner = {}
                v = values(dt, (sum(counts),) + shape[1:], rng)
                oracle[start:start + sum(counts)] = v
                col.write_all(v[starts[me] - start:starts[me] - start + counts[me]],
                              starts[me])
                f.flush()
            elif kind == "flush":
                f.flush()
                owner = {}
            elif kind == "close":
                col.close()
                col = f["x"]
                owner = {}
            comm.barrier()  # the next operation sees this one's rows
            agreed(comm, failure)
        f.close()
    finally:
        if not f.closed:
            f._abandon()
    with colfile.File(path, comm=comm) as f:
        col = f["x"]
        got = col[:]
        if not np.array_equal(got, oracle):
            failure = f"rank {me}: after close read {got!r}, numpy {oracle!r}"
        elif me == 0:
            for i in range(col.nfile):
                status = col.verify_blob(i)
                if not status <= {"OK", "SUM_MISMATCH"}:
                    failure = f"blob {i}: {status}"
    agreed(comm, failure)
