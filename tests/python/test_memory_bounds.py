"""Memory follows what is on disk, never what a header claims.

A header is a few dozen bytes and may claim 2^62 rows.  Every command of
the CLI and every way of opening a column from Python must then stay small
(here: under 100 MB of peak resident memory: the child's own VmHWM, which
starts afresh at its exec, unlike ru_maxrss, which counts the memory of the
process that spawned it; from Python, above what importing numpy, colfile
and dask took, which depends on what else is installed) and end cleanly: exit status 0, 1 or 2 with a one-line
message naming the column or blob, never a traceback or the OOM killer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

import colfile

from childenv import child_env

LIMIT_MB = 100
# a child that misbehaves fails with MemoryError instead of taking the machine
AS_LIMIT = 3 << 30

CLAIMS = {"p46": 1 << 46, "p62": 1 << 62}
DTYPES = {"u1": ("<u1", 1), "f8": ("<f8", 1), "f4x3": ("<f4", 3)}
BLOBS = ("absent", "empty", "short")


def _header_text(dtype: str, nmemb: int, rows: list[int]) -> str:
    lines = [f"DTYPE: {dtype}", f"NMEMB: {nmemb}", f"NFILE: {len(rows)}"]
    lines += [f"{b:06X}: {r} : 0 : 0" for b, r in enumerate(rows)]
    return "\n".join(lines) + "\n"


def _claimed_rows(claim: int, dtype: str, nmemb: int) -> int:
    """The claim, cut to what a header may say (rows x row bytes < 2^63)."""
    width = np.dtype(dtype).itemsize
    return min(claim, (2**63 - 1) // (width * nmemb))


def _hostile(root: Path, claim: str, dt: str, blobs: str, ext: bool) -> tuple[Path, str]:
    """A File with a good column "good" (10 rows) and a column "x" whose
    header claims `claim` rows in blob 1 (blob 0: 4 real rows)."""
    dtype, nmemb = DTYPES[dt]
    path = root / f"f-{claim}-{dt}-{blobs}-{int(ext)}"
    shape = (4,) if nmemb == 1 else (4, nmemb)
    with colfile.File(str(path), "w") as f:
        f.create("good", data=np.arange(10, dtype=np.float64))
        f.create("x", data=np.arange(int(np.prod(shape))).reshape(shape).astype(dtype),
                 nfile=1)
    col = path / "x"
    big = _claimed_rows(CLAIMS[claim], dtype, nmemb) - 4
    # blob 0 keeps its line (and byte sum): its statistics stay current
    line0 = (col / "header").read_text().splitlines()[3]
    text = _header_text(dtype, nmemb, [4, big]).splitlines()
    text[3] = line0
    (col / "header").write_text("\n".join(text) + "\n")
    # colfile-v1 keeps vouching for blob 0: given the new header's mtime, as
    # if colfile had committed it (docs/format.md 8.1)
    hst = (col / "header").stat()
    os.utime(col / "colfile-v1", ns=(hst.st_atime_ns, hst.st_mtime_ns))
    blob1 = col / "000001"
    if blobs == "empty":
        blob1.write_bytes(b"")
    elif blobs == "short":
        blob1.write_bytes(bytes(3 * np.dtype(dtype).itemsize * nmemb + 1))
    if not ext:
        (col / "colfile-v1").unlink()
    return path, "x"


def _run_child(code: str) -> tuple[int, str, str, float]:
    """Run python code in a child: its exit status, output and peak RSS in
    MB (VmHWM of /proc/self/status, read by the child as it exits; the
    rusage a parent gets from wait4 would include the spawning process's
    own memory, vfork shares it), less the peak when the code called
    ``_mark()`` (after importing its libraries), if it did."""
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe, \
            tempfile.NamedTemporaryFile("r", suffix=".hwm") as fh:
        pre = textwrap.dedent(f"""\
            import atexit, resource
            resource.setrlimit(resource.RLIMIT_AS, ({AS_LIMIT}, {AS_LIMIT}))

            def _vmhwm():
                with open("/proc/self/status") as st:
                    return int(next(ln for ln in st if ln.startswith("VmHWM:")).split()[1])

            _BASE = 0

            def _mark():  # the peak so far is the libraries', not the work's
                global _BASE
                _BASE = _vmhwm()

            def _hwm():
                with open({fh.name!r}, "w") as out:
                    out.write(f"{{_vmhwm()}} {{_BASE}}")

            atexit.register(_hwm)
        """)
        proc = subprocess.Popen([sys.executable, "-c", pre + code], stdout=fo, stderr=fe,
                                text=True,
                                env=child_env(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1"))
        proc.wait()
        fo.seek(0)
        fe.seek(0)
        kib = fh.read().split()
        out, err = fo.read(), fe.read()
        assert kib, f"the child recorded no peak memory (exit {proc.returncode})\n{err[-2000:]}"
        return proc.returncode, out, err, (int(kib[0]) - int(kib[1])) / 1024.0


def _cli(args: list[str]) -> tuple[int, str, str, float]:
    code = textwrap.dedent(f"""\
        import sys
        from colfile.cli import main
        try:
            rc = main({args!r})
        except SystemExit as e:
            rc = e.code
        sys.exit(rc if isinstance(rc, int) else 0)
    """)
    return _run_child(code)


def _api(path: Path, body: str) -> tuple[int, str, str, float]:
    code = textwrap.dedent("""\
        import sys, json
        import numpy as np
        import colfile
        try:  # what to_dask imports: pandas and pyarrow too, where installed
            import dask.array
        except ImportError:
            pass
        _mark()
        path = {path!r}
        out = {{}}
        def attempt(name, fn):
            try:
                out[name] = ["ok", repr(fn())[:200]]
            except (colfile.Error, OSError, ValueError, KeyError, IndexError) as e:
                out[name] = ["error", type(e).__name__, str(e)[:300]]
        """).format(path=str(path)) + textwrap.dedent(body) + \
        "\nprint(json.dumps(out))\n"
    return _run_child(code)


def _clean(rc: int, out: str, err: str, what: str) -> None:
    assert rc in (0, 1, 2), f"{what}: exit status {rc}\n{err[-2000:]}"
    assert "Traceback" not in err, f"{what}: traceback\n{err[-3000:]}"
    assert "MemoryError" not in err, f"{what}: ran out of memory\n{err[-2000:]}"
    if rc != 0:
        # a message that names the blob whose rows are missing
        assert "000001" in out + err, f"{what}: no message naming the blob\n{out}\n{err}"


CASES = [(claim, dt, blobs, ext)
         for claim in CLAIMS for dt in DTYPES for blobs in BLOBS for ext in (True, False)
         # the full product for 2^46; for 2^62 one shape of each kind
         if claim == "p46" or (blobs == "absent") or (dt == "u1" and ext)]


def _ids(case: tuple[str, str, str, bool]) -> str:
    claim, dt, blobs, ext = case
    return f"{claim}-{dt}-{blobs}-{'v1' if ext else 'nov1'}"


# the CLI: every command on fewer shapes (each is a child process)
CLI_CASES = [c for c in CASES if c[2] == "absent" and c[3] or c[1] == "u1" and c[0] == "p46"]


@pytest.fixture(params=CLI_CASES, ids=_ids)
def hostile_cli(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str, str]:
    claim, dt, blobs, ext = request.param
    path, name = _hostile(tmp_path, claim, dt, blobs, ext)
    # the name as a query spells it: a component of a vector column
    return path, name + ("[0]" if DTYPES[dt][1] > 1 else ""), blobs


@pytest.fixture(params=CASES, ids=_ids)
def hostile(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str, str]:
    claim, dt, blobs, ext = request.param
    path, name = _hostile(tmp_path, claim, dt, blobs, ext)
    return path, name, blobs


CLI_COMMANDS = {
    "stats": lambda p, n: ["stats", p, n],
    "stats-json": lambda p, n: ["stats", "--json", p, n],
    "check": lambda p, n: ["check", p],
    "check-col": lambda p, n: ["check", p, n],
    "repair": lambda p, n: ["repair", p],
    "ls-l": lambda p, n: ["ls", "-l", p],
    "ls-json": lambda p, n: ["ls", "-l", "--json", p],
    "cat": lambda p, n: ["cat", p, "-c", n, "--count", "8"],
    "cat-tail": lambda p, n: ["cat", p, "-c", n, "--start", "2", "--count", "4"],
    "query": lambda p, n: ["query", p, f"{n} > 1", "-c", n.split("[")[0]],
    "index": lambda p, n: ["index", p],
    "attrs": lambda p, n: ["attrs", p, n],
}


@pytest.mark.parametrize("command", sorted(CLI_COMMANDS))
def test_cli_memory_bounded(hostile_cli: tuple[Path, str, str], command: str) -> None:
    path, field, blobs = hostile_cli
    name = field.split("[")[0]
    args = CLI_COMMANDS[command](str(path), field if command == "query" else name)
    rc, out, err, peak = _cli(args)
    _clean(rc, out, err, " ".join(args))
    assert peak < LIMIT_MB, f"{' '.join(args)}: peak RSS {peak:.0f} MB\n{err[-1000:]}"
    if command.startswith("check"):
        # the claimed rows are not there: damage, naming the blob
        assert rc == 1 and "000001" in out + err, (out, err)
    if command == "repair":
        assert rc == 1 and "000001" in out + err, (out, err)
    if command == "stats":
        assert rc == 0 and "UNKNOWN" in out, (out, err)
    if command in ("cat", "cat-tail", "query") and blobs != "short":
        # rows 0..3 are real; row 4 is the first one missing
        assert rc == 1 and "000001" in err, (out, err)


def test_api_memory_bounded(hostile: tuple[Path, str, str]) -> None:
    path, name, blobs = hostile
    body = f"""
    for mode in ("r", "r+"):
        def use(mode=mode):
            with colfile.File(path, mode) as f:
                c = f[{name!r}]
                return (c.size, c.nfile, c[:4].tolist(), c.chunk_rows)
        attempt("open-" + mode, use)
    with colfile.File(path, "r") as f:
        c = f[{name!r}]
        attempt("chunk_stats", lambda: len(c.chunk_stats()))
        attempt("chunk_stats0", lambda: c.chunk_stats(0)[["blob", "first_row", "valid"]].tolist())
        attempt("blob_rows", lambda: c.blob_rows)
        attempt("read-missing", lambda: c[3:6])
        attempt("where", lambda: colfile.where(f, {name!r} + ("[0]" if c.nmemb > 1 else "") + " > 1").count)
        attempt("where-field", lambda: colfile.where(f, c.field(0 if c.nmemb > 1 else None) < 1).count)
        attempt("histogram", lambda: colfile.histogram(c.field(0 if c.nmemb > 1 else None), bins=4, range=(0, 4)))
        attempt("histogram-auto", lambda: colfile.histogram(c.field(0 if c.nmemb > 1 else None), bins=4))
        attempt("to_dask", lambda: c.to_dask().shape)
        attempt("to_dask-head", lambda: c.to_dask()[:4].compute().tolist())
        attempt("verify", lambda: c.verify_blob(1) if hasattr(c, "verify_blob") else None)
        attempt("attrs", lambda: dict(c.attrs))
    with colfile.File(path, "r+") as f:
        c = f[{name!r}]
        attempt("index", lambda: c.index_blobs([1]))
        attempt("repair", lambda: c.repair())
        def write():
            c[1] = c[1]
            c.flush()
            return c.chunk_stats(0)["valid"][:2].tolist()
        attempt("write", write)
    """
    rc, out, err, peak = _api(path, body)
    assert rc == 0 and "Traceback" not in err, err[-3000:]
    assert peak < LIMIT_MB, f"peak RSS {peak:.0f} MB\n{out}"
    res = json.loads(out.strip().splitlines()[-1])
    # the real rows read back, the column opens in both modes
    for mode in ("r", "r+"):
        assert res["open-" + mode][0] == "ok", res
        assert "[0, 1, 2, 3]" in res["open-" + mode][1] or "[0.0, 1.0, 2.0, 3.0]" in \
            res["open-" + mode][1] or "[[0" in res["open-" + mode][1], res
    # one record per chunk of what is known, one per blob of what is not
    assert res["chunk_stats"][0] == "ok" and int(res["chunk_stats"][1]) <= 4, res
    # the missing rows are clean errors naming the blob
    assert res["to_dask-head"][0] == "ok", res
    for key in ("read-missing", "where", "where-field", "repair", "index"):
        if key == "read-missing" and blobs == "short":
            # the short blob holds rows 4 and 5
            assert res[key][0] == "ok", res
            continue
        assert res[key][0] == "error" and "000001" in res[key][2], (key, res[key])
    # a write to a real row commits, and that blob's statistics are current
    assert res["write"] == ["ok", "[True, False]"], res
    for key in ("histogram", "histogram-auto"):
        assert res[key][0] == "error" and "000001" in res[key][2], (key, res[key])


def test_good_column_beside_hostile_one(tmp_path: Path) -> None:
    """Real data next to a hostile column: its statistics, queries and
    checks are exact."""
    path, name = _hostile(tmp_path, "p62", "f8", "absent", True)
    with colfile.File(str(path), "r") as f:
        g = f["good"]
        st = g.chunk_stats()
        assert st["valid"].all() and st["count"].sum() == 10
        assert st["min"].min() == 0 and st["max"].max() == 9
        assert colfile.where(g, g.field() > 6.5).rows.tolist() == [7, 8, 9]
        x = f[name]
        st = x.chunk_stats()
        assert st["blob"].tolist() == [0, 1]
        assert st["valid"].tolist() == [True, False]
        assert st["first_row"].tolist() == [0, 4] and st["rows"][1] == (2**63 - 1) // 8 - 4
        assert st["count"][0] == 4 and st["max"][0] == 3
        assert x[:4].tolist() == [0, 1, 2, 3]
    rc, out, err, _ = _cli(["check", str(path), "good"])
    assert rc == 0, (out, err)

