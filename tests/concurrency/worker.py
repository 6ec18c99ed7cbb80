"""One process of the concurrency harness: random mutations and reads of
one File through colfile's Python API and CLI, each logged with
CLOCK_MONOTONIC times (shared by every process of the machine) so that the
checker (conccheck.py) knows when each could have taken effect.

    python worker.py FILE LOG --wid K --seed S --duration SECONDS [--ops N]

Log lines (one ``write`` each, ``t`` in nanoseconds):

``B t op kind target k=v..``  an operation begins
``L t op``                    its writer lock is held (after its first change)
``X t op layout=.. base=..``  what the writer's own handle reads under its
                              lock: the blob layout of the new version and
                              the digest of the rows it did not write
``C t op``                    it is about to close (the lock is let go)
``D t op``                    done (committed)
``F t op Class message``      failed with an exception of that class
``R t op result [at=O,N]``    what a read or query got: ``absent``, ``torn``,
                              ``replaced``, ``d:<digest>`` (read),
                              ``q:<digest>`` (query), ``err:Class message``;
                              the rows read (or the query's row numbers,
                              int64) are at offset O (N bytes) of LOG.data
``K t op column kinds``       ``colfile check`` reported damage of a column
``Q t op rc text``            ``colfile repair``'s status and output

A mutation refused because the file system cannot lock (the error says to
open the File with ``locking=False``) fails with class ``LockingRefused``.

Every element written is a function of (seed, gen) (tests/crash/crashplan.py):
``gen = wid * 10**6 + op``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "crash"))
import crashplan  # noqa: E402

#: signed numeric dtypes, so that "leaf < 0" selects about half the rows
DTYPES = ["<f8", ">f8", "<f4", "<i4", ">i4", "<i8"]
NAMES = ["a", "g/b", "g/c", "h/d"]
GROUPS = ["g", "h"]


def gen_of(wid: int, op: int) -> int:
    return wid * 1_000_000 + op


def digest(token: str, nmemb: int, layout: list[int], raw: bytes, tag: str = "d") -> str:
    h = hashlib.sha256(f"{tag}|{token}|{nmemb}|{','.join(map(str, layout))}|".encode())
    h.update(raw)
    return h.hexdigest()[:20]


def rows_digest(rows: Any) -> str:
    return hashlib.sha256(np.asarray(rows, dtype=np.int64).tobytes()).hexdigest()[:20]


def outside_digest(token: str, nmemb: int, layout: list[int], raw: bytes, start: int, count: int) -> str:
    """The digest of the rows an update did not write (its window cut out)."""
    rb = crashplan.dtype_width(token) * nmemb
    return digest(token, nmemb, layout, raw[:start * rb] + raw[(start + count) * rb:], tag="o")


def query_threshold(token: str, low: bool) -> str:
    """The query's bound: 0 (about half the rows), or one that only about
    2 % of the values fall below, so that the statistics of most chunks
    decide the query (and stale statistics would change its answer)."""
    if not low:
        return "0"
    if token[1] == "f":
        return "-240000.0"
    return str(-int(0.96 * (1 << (8 * crashplan.dtype_width(token) - 1))))


def stored(arr: Any, token: str) -> bytes:
    return np.ascontiguousarray(np.asarray(arr).astype(token, copy=False)).tobytes()


def data_for(token: str, key: int, row0: int, n: int) -> np.ndarray:
    raw = crashplan.element_bytes(token, key, row0, n)
    return np.frombuffer(raw, dtype=token) if n else np.zeros(0, dtype=token)


class Worker:
    def __init__(self, path: str, log: str, wid: int, seed: int, has_rmr: bool) -> None:
        import colfile
        self.cf = colfile
        self.path = path
        self.fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        self.data = os.open(log + ".data", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        self.wid = wid
        self.seed = seed
        self.rng = random.Random(seed * 1000 + wid)
        self.has_rmr = has_rmr
        self.without: set[str] = set()
        self.kw: dict[str, Any] = {}     # File(..., locking=False) with --locking off
        self.op = 0
        self.replaced = getattr(colfile, "ReplacedError", None)

    def log(self, kind: str, *parts: Any) -> None:
        text = " ".join([kind, str(time.monotonic_ns()), str(self.op)] + [str(p) for p in parts])
        os.write(self.fd, (text.replace("\n", " ") + "\n").encode("utf-8", "replace"))

    def fail(self, exc: BaseException) -> None:
        cls = "LockingRefused" if "locking=False" in str(exc) else type(exc).__name__
        self.log("F", cls, str(exc)[:300])

    # -- mutations --------------------------------------------------------

    def key(self) -> int:
        return crashplan.gen_key(self.seed, gen_of(self.wid, self.op))

    def create(self, name: str) -> None:
        r = self.rng
        token = r.choice(DTYPES)
        size = r.choice([0, 1, 7, 100, r.randrange(1, 2000), r.randrange(40, 400)])
        nfile = r.choice([1, 1, 2, 3, 40]) if size >= 40 else r.choice([1, 2])
        chunk = r.choice([None, 16, 100])
        self.log("B", "create", name, f"token={token}", f"size={size}", f"nfile={nfile}")
        with self.cf.File(self.path, "a", **self.kw) as f:
            col = f.create(name, token, size=size, nfile=nfile, chunk_rows=chunk, overwrite=True)
            self.log("L")
            piece = max(1, r.choice([size, 97, 500]))
            for s in range(0, size, piece):
                n = min(piece, size - s)
                col.write(s, data_for(token, self.key(), s, n))
            self.log("X", "layout=" + ",".join(map(str, col.blob_rows)))
            self.hold()
            self.log("C")
            col.close()
        self.log("D")

    def append(self, name: str) -> None:
        r = self.rng
        rows = r.choice([1, 50, r.randrange(1, 1500)])
        nfile = r.choice([1, 1, 2])
        self.log("B", "append", name, f"rows={rows}", f"nfile={nfile}")
        with self.cf.File(self.path, "a", **self.kw) as f:
            col = f[name]
            token, nmemb = col._token, max(col.nmemb, 1)
            old, old_layout = col.size, list(col.blob_rows)
            col.append(data_for(token, self.key(), old, rows), nfile=nfile)
            self.log("L")
            raw = stored(col.read(0, old), token) if old else b""
            self.log("X", "layout=" + ",".join(map(str, col.blob_rows)), f"old={old}",
                     "base=" + digest(token, nmemb, old_layout, raw))
            self.hold()
            self.log("C")
            col.close()
        self.log("D")

    def update(self, name: str) -> None:
        r = self.rng
        self.log("B", "update", name)
        with self.cf.File(self.path, "a", **self.kw) as f:
            col = f[name]
            size = col.size
            if size == 0:
                col.close()
                self.log("F", "Skipped", "no rows")
                return
            token, nmemb = col._token, max(col.nmemb, 1)
            start = r.randrange(0, size)
            count = r.randrange(1, size - start + 1)
            piece = max(1, r.choice([count, count // 2 + 1, 64]))
            first = True
            for s in range(start, start + count, piece):
                n = min(piece, start + count - s)
                col.write(s, data_for(token, self.key(), s, n))
                if first:
                    self.log("L")
                    first = False
                    if r.random() < 0.5:
                        time.sleep(r.uniform(0, 0.03))  # keep the update live a while
            layout = list(col.blob_rows)
            raw = stored(col.read(), token)
            self.log("X", "layout=" + ",".join(map(str, layout)), f"start={start}", f"count={count}",
                     "base=" + outside_digest(token, nmemb, layout, raw, start, count))
            self.hold()
            self.log("C")
            col.close()
        self.log("D")

    def hold(self) -> None:
        """Sometimes keep the writer lock a while (others try to act meanwhile)."""
        if self.rng.random() < 0.3:
            time.sleep(self.rng.uniform(0.005, 0.05))

    def attr(self, name: str) -> None:
        aname = self.rng.choice(["A0", "A1"])
        self.log("B", "attr", name, f"name={aname}")
        with self.cf.File(self.path, "a", **self.kw) as f:
            col = f[name]
            # no "L": setting an attribute need not take the writer lock
            # before the close commits it
            col.attrs[aname] = np.float64(gen_of(self.wid, self.op) + 0.5)
            self.log("C")
            col.close()
        self.log("D")

    def rm(self, name: str) -> None:
        # the CLI's rm has no --no-locking: without locks, the API
        if self.rng.random() < 0.5 or self.kw.get("locking") is False:
            self.log("B", "rm", name, "via=api")
            with self.cf.File(self.path, "a", **self.kw) as f:
                del f[name]
            self.log("D")
        else:
            self.log("B", "rm", name, "via=cli")
            self.cli(["rm", self.path, name])

    def rmr(self, group: str) -> None:
        """Remove a group and everything below it: ``colfile rm -r``, or
        the Python form ``del f["group/"]`` where colfile accepts it (a
        name error there: the CLI instead)."""
        if self.rng.random() < 0.5 or self.kw.get("locking") is False:
            self.log("B", "rmr", group + "/", "via=api")
            try:
                with self.cf.File(self.path, "a", **self.kw) as f:
                    del f[group + "/"]
                self.log("D")
                return
            except (self.cf.InvalidNameError, self.cf.ColumnKindError, TypeError) as exc:
                self.log("F", "Skipped", f"no Python form of group removal: {exc}"[:200])
                self.op += 1
        self.log("B", "rmr", group + "/", "via=cli")
        self.cli(["rm", "-r", self.path, group])

    def truncate(self) -> None:
        self.log("B", "truncate", ".")
        self.cf.File(self.path, "w", **self.kw).close()
        self.log("D")

    def cli(self, argv: list[str]) -> tuple[int, str]:
        from colfile.cli import main
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 2
        text = (out.getvalue() + err.getvalue()).strip()
        if argv[0] in ("rm", "truncate"):
            if rc == 0:
                self.log("D")
            else:
                low = text.lower()
                cls = "LockingRefused" if "locking=false" in low else \
                    "BusyError" if any(w in low for w in ("busy", "in use", "lock", "another writer")) else \
                    "NotFound" if any(w in low for w in ("no column", "no group", "no such", "not a column")) \
                    else "CliError"
                self.log("F", cls, f"rc={rc} {text[-300:]}")
        return rc or 0, text

    def repair(self) -> None:
        self.log("B", "repair", ".")
        off = ["--no-locking"] if self.kw.get("locking") is False else []
        rc, text = self.cli(["repair"] + off + [self.path])
        self.log("Q", rc, text[-600:])
        self.log("D")

    def check(self) -> None:
        import json
        self.log("B", "check", ".")
        rc, text = self.cli(["check", "--json", "--no-progress", self.path])
        try:
            rep = json.loads(text[text.index("{"):])
        except ValueError:
            self.log("K", ".", "unparsable", text[-300:])
            self.log("D")
            return
        kinds: dict[str, set[str]] = {}
        for p in rep.get("problems", []):
            col = p.get("column", "?")
            for q in p.get("problems", []):
                kinds.setdefault(col, set()).add(q.get("kind", "?").replace(" ", "_"))
            kinds.setdefault(col, set()).update(s.lower() for s in p.get("status", []))
        for col in rep.get("damaged_columns", []):
            kinds.setdefault(col, set()).add("damaged")
        for col, k in sorted(kinds.items()):
            self.log("K", col, ",".join(sorted(k)))
        # what check said, for whoever reads the log (the checker ignores M)
        for p in rep.get("problems", []):
            for q in p.get("problems", []):
                self.log("M", p.get("column", "?"), " ".join(str(q.get("message", "")).split())[:400])
        self.log("D")

    # -- reads --------------------------------------------------------------

    def read(self, name: str, slow: bool) -> None:
        verify = self.rng.random() < 0.5
        self.log("B", "read", name, f"verify={int(verify)}", f"slow={int(slow)}")
        try:
            with self.cf.File(self.path, "r", verify=verify) as f:
                col = f[name]
                token, nmemb, layout = col._token, max(col.nmemb, 1), list(col.blob_rows)
                if slow:
                    time.sleep(self.rng.uniform(0.005, 0.06))
                    half = col.size // 2
                    a = stored(col.read(0, half), token) if half else b""
                    time.sleep(self.rng.uniform(0.0, 0.03))
                    b = stored(col.read(half, col.size), token) if col.size > half else b""
                    raw = a + b
                else:
                    raw = stored(col.read(), token) if col.size else b""
                self.log("R", "d:" + digest(token, nmemb, layout, raw), self.keep(raw))
        except BaseException as exc:
            self.observe_error(exc)
        self.log("D")

    def query(self, name: str) -> None:
        verify = self.rng.random() < 0.5
        leaf = name.rsplit("/", 1)[-1]
        low = self.rng.random() < 0.5
        self.log("B", "query", name, f"verify={int(verify)}", f"low={int(low)}")
        try:
            with self.cf.File(self.path, "r", verify=verify) as f:
                col = f[name]
                rows = col.where(f"{leaf} < {query_threshold(col._token, low)}").rows
                self.log("R", "q:" + rows_digest(rows), self.keep(np.asarray(rows, dtype="<i8").tobytes()))
        except BaseException as exc:
            self.observe_error(exc)
        self.log("D")

    def keep(self, raw: bytes) -> str:
        """Store what a read or query got in the data file (a read during a
        live in-place update may hold old and new rows: the checker then
        looks at them row by row); the log names where."""
        at = os.lseek(self.data, 0, os.SEEK_END)
        os.write(self.data, raw)
        return f"at={at},{len(raw)}"

    def observe_error(self, exc: BaseException) -> None:
        cf = self.cf
        if isinstance(exc, KeyError) and not isinstance(exc, cf.AttributeNotFoundError):
            self.log("R", "absent")
        elif isinstance(exc, cf.TornError):
            self.log("R", "torn")
        elif self.replaced is not None and isinstance(exc, self.replaced):
            self.log("R", "replaced")
        elif isinstance(exc, cf.BusyError):
            self.log("R", "busy")
        else:
            self.log("R", f"err:{type(exc).__name__}", str(exc)[:300])

    # -- the loop -------------------------------------------------------------

    def step(self) -> None:
        r = self.rng
        kinds = ["create", "append", "update", "attr", "rm", "rmr", "truncate", "repair", "check",
                 "read", "slowread", "query"]
        weights = [3, 3, 3, 1, 1.5, 0.5 if self.has_rmr else 0, 0.25, 0.7, 0.7, 3, 1.5, 2]
        weights = [0 if k in self.without else w for k, w in zip(kinds, weights)]
        kind = "create" if self.op == 0 and "create" not in self.without else r.choices(kinds, weights)[0]
        name = r.choice(NAMES)
        try:
            if kind in ("create", "append", "update", "attr", "rm"):
                getattr(self, kind)(name)
            elif kind == "rmr":
                self.rmr(r.choice(GROUPS))
            elif kind == "truncate":
                self.truncate()
            elif kind in ("repair", "check"):
                getattr(self, kind)()
            elif kind == "query":
                self.query(name)
            else:
                self.read(name, kind == "slowread")
        except self.cf.Error as exc:
            self.fail(exc)
        except Exception as exc:  # not a clean colfile error: the checker reports it
            self.log("F", "Unclean." + type(exc).__name__, str(exc)[:300])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("log")
    ap.add_argument("--wid", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--ops", type=int, default=10**9)
    ap.add_argument("--rmr", action="store_true", help="colfile rm -r exists: use it")
    ap.add_argument("--without", default="", help="operation kinds not to run (comma list)")
    ap.add_argument("--start-at", type=int, default=0, help="CLOCK_MONOTONIC ns to start at")
    ap.add_argument("--locking", choices=["on", "off"], default="on", help="off: File(..., locking=False)")
    a = ap.parse_args()
    if os.environ.get("COLFILE_LIBRARY"):
        import ctypes.util
        ctypes.util.find_library = lambda name: None  # no ldconfig/gcc at import
    w = Worker(os.path.abspath(a.file), a.log, a.wid, a.seed, a.rmr)
    w.without = {k for k in a.without.split(",") if k}
    if a.locking == "off":
        w.kw["locking"] = False
    while time.monotonic_ns() < a.start_at:
        time.sleep(0.001)
    t_end = time.monotonic() + a.duration
    while w.op < a.ops and time.monotonic() < t_end:
        w.step()
        w.op += 1
    w.log("E")
    return 0


if __name__ == "__main__":
    sys.exit(main())
