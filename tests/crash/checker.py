"""The independent checker of the crash harness.

It never uses libcolfile: pure Python and numpy read the File as the format
(docs/format.md) describes it, and bigfile 0.1.52, when installed, confirms
that every committed column reads back.  Given the plan and the writer's
log it knows which versions of each column are acceptable:

* an operation logged ``done`` (or ``assume-done``) is committed: its
  column must be exactly its new version;
* the operation in flight at the crash (``begin`` without ``done``), or one
  that failed with a clean error (``fail``), leaves its column as the
  previous version (absent for a new column) or the new one; an in-place
  update (``update``) may instead leave the column marked torn
  (``colfile-torn`` in its directory); an interrupted ``rm`` leaves its
  column absent or whole, an interrupted truncation (mode ``"w"``) each
  column absent or whole and each attribute block empty or whole, an
  interrupted ``repair`` changes no version;
* nothing else may show: no column the plan never made, no mix of two
  versions, no rows of zeros or missing bytes presented as data, no torn
  metadata file.

A version matches when the header is byte for byte what colfile writes for
it (rows, bigfile byte sums and folds included), every blob holds at least
its rows and their bytes are the generated ones, ``attr-v2`` (with
``colfile-attrs``) holds exactly its attributes, ``colfile-v1`` (if present
and current) has the right CRC32C, and the statistics (the tail of
``colfile-v1``, or ``colfile-stats-v1`` from older writers; if present and
current) have the right counts, minima and maxima.  Hidden names (starting
with ``.``: temporaries, staging directories, locks) and bytes beyond a
blob's rows are allowed.

    python checker.py FILE PLAN LOG [--no-bigfile] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import crashplan  # noqa: E402
from crashplan import Model, Version  # noqa: E402

TORN_NAME = "colfile-torn"


# ---------------------------------------------------------------------------
# the log

@dataclass
class LogState:
    ready: bool = False
    end: bool = False
    done: set[int] = field(default_factory=set)
    begun: list[int] = field(default_factory=list)       # begun, not done (in order)
    failed: dict[int, str] = field(default_factory=dict)  # idx -> "CF_CODE message"
    pyfail: list[str] = field(default_factory=list)
    cleanup: list[str] = field(default_factory=list)
    open_failed: str | None = None

    @property
    def in_flight(self) -> list[int]:
        return [i for i in self.begun if i not in self.done]


def parse_log(path: str | os.PathLike[str]) -> LogState:
    st = LogState()
    try:
        text = Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return st
    for line in text.splitlines():
        parts = line.split(" ", 3)
        if not parts or not parts[0]:
            continue
        kind = parts[0]
        if kind == "ready":
            st.ready = True
        elif kind == "end":
            st.end = True
        elif kind == "begin":
            idx = int(parts[1])
            if idx not in st.begun:
                st.begun.append(idx)
            st.done.discard(idx)
        elif kind in ("done", "assume-done"):
            idx = int(parts[1])
            st.done.add(idx)
            if idx not in st.begun:
                st.begun.append(idx)
        elif kind == "assume-undone":
            idx = int(parts[1])
            if idx in st.begun:
                st.begun.remove(idx)
            st.failed.pop(idx, None)
        elif kind == "fail":
            idx = int(parts[1])
            if idx < 0:
                st.open_failed = " ".join(parts[2:])
            else:
                st.failed[idx] = " ".join(parts[2:])
        elif kind == "pyfail":
            st.pyfail.append(line)
        elif kind == "cleanup":
            st.cleanup.append(line)
    return st


# ---------------------------------------------------------------------------
# reading the File (format rules only)

def list_columns(root: Path) -> list[str]:
    """docs/format.md 2.3: depth first, skip names starting with '.', a
    directory holding ``header`` is a column and is not entered."""
    out: list[str] = []

    def walk(d: Path, prefix: str) -> None:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            return
        for n in names:
            if n.startswith("."):
                continue
            p = d / n
            if not p.is_dir() or p.is_symlink():
                continue
            if os.path.lexists(p / "header"):
                out.append(prefix + n)
            else:
                walk(p, prefix + n + "/")

    walk(root, "")
    return sorted(out, key=lambda s: s.encode())


def parse_attr_text(text: bytes) -> dict[str, tuple[str, int, bytes]]:
    """attr-v2 / colfile-attrs lines: name token nmemb HEX #HUMANE [ ... ]."""
    out: dict[str, tuple[str, int, bytes]] = {}
    for n, raw in enumerate(text.split(b"\n"), 1):
        line = raw.rstrip(b"\r")
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) < 3:
            raise ValueError(f"line {n}: too few fields: {line[:80]!r}")
        name = fields[0].decode("utf-8", "surrogateescape")
        token = fields[1].decode()
        nmemb = int(fields[2])
        hexs = fields[3].decode() if len(fields) > 3 and not fields[3].startswith(b"#") else ""
        width = int(token[2:]) if token[0] in "<>|=" else int(token[1:])
        if len(hexs) != 2 * nmemb * width:
            raise ValueError(f"line {n}: {len(hexs)} hex digits for {nmemb} x {token}")
        out[name] = (token if token[0] in "<>" else "<" + token.lstrip("|="), nmemb, bytes.fromhex(hexs))
    return out


def read_attrs(d: Path) -> dict[str, tuple[str, int, bytes]]:
    attrs: dict[str, tuple[str, int, bytes]] = {}
    for name in ("attr-v2", "colfile-attrs"):
        p = d / name
        if p.exists():
            attrs.update(parse_attr_text(p.read_bytes()))
    return attrs


def parse_header(text: bytes) -> dict[str, Any]:
    lines = text.decode("ascii", "replace").split("\n")
    h: dict[str, Any] = {}
    if len(lines) < 3 or not lines[0].startswith("DTYPE:"):
        raise ValueError("no DTYPE line")
    h["dtype"] = lines[0].split(":", 1)[1].strip()
    h["nmemb"] = int(lines[1].split(":", 1)[1])
    h["nfile"] = int(lines[2].split(":", 1)[1])
    rows, sums = [], []
    for i in range(h["nfile"]):
        parts = [x.strip() for x in lines[3 + i].split(":")]
        if int(parts[0], 16) != i:
            raise ValueError(f"blob line {i} has id {parts[0]}")
        rows.append(int(parts[1]))
        sums.append(int(parts[2]))
    h["rows"], h["sums"] = rows, sums
    return h


def describe_header(text: bytes) -> str:
    try:
        h = parse_header(text)
    except (ValueError, IndexError) as exc:
        return f"unreadable header ({exc}; {len(text)} bytes: {text[:60]!r})"
    return f"{h['dtype']} x{h['nmemb']}, rows {h['rows']}, sums {h['sums']}"


def describe_version(v: Version) -> str:
    if not v.exists:
        return "absent"
    if v.entity == "." or v.entity.endswith("/."):
        return f"v{v.number} (attrs {sorted(v.attrs)})"
    made = f", made by op {v.made_by}" if v.made_by >= 0 else ""
    return f"v{v.number} ({v.token} x{v.nmemb}, rows {v.blob_rows}{made})"


# ---------------------------------------------------------------------------
# extension files

def check_ext(path: Path, header: dict[str, Any], v: Version, header_text: bytes) -> list[str]:
    """colfile-v1: when current, every known CRC32C must be right."""
    p = path / "colfile-v1"
    if not p.exists():
        return []
    lines = p.read_bytes().decode("ascii", "replace").split("\n")
    if not lines or lines[0] != "COLFILE-EXT: 1":
        return [f"colfile-v1 is damaged (first line {lines[0][:40] if lines else ''!r})"]
    try:
        dtype = lines[1].split(":", 1)[1].strip()
        nmemb = int(lines[2].split(":", 1)[1])
        nfile = int(lines[3].split(":", 1)[1])
        if (dtype, nmemb, nfile) != (header["dtype"], header["nmemb"], header["nfile"]):
            return []  # stale as a whole: every CRC unknown
        probs = []
        for i in range(nfile):
            parts = [x.strip() for x in lines[4 + i].split(":")]
            rows, rawsum, crc = int(parts[1]), int(parts[2]), parts[3]
            if int(parts[0], 16) != i or not crc.startswith("crc32c="):
                return [f"colfile-v1 is damaged at blob line {i}"]
            if (rows, rawsum) != (header["rows"][i], header["sums"][i]):
                continue  # stale: unknown
            value = crc[7:]
            if value == "-":
                continue
            want = crashplan.crc32c(v.blob_bytes(i))
            if int(value, 16) != want:
                probs.append(f"colfile-v1 says blob {i:06X} has CRC32C {value}, its data has {want:08x}")
        return probs
    except (IndexError, ValueError) as exc:
        return [f"colfile-v1 is damaged ({exc})"]


def _column_values(v: Version) -> np.ndarray:
    """The rows of v as a numpy array (rows, nmemb) of comparable values."""
    kind = v.token[1]
    raw = v.data()
    if kind == "b":
        arr = (np.frombuffer(raw, dtype=np.uint8) != 0).astype(np.int64)
    elif kind in "iuf":
        arr = np.frombuffer(raw, dtype=np.dtype(v.token))
    else:
        arr = np.zeros(len(raw) // v.width, dtype=np.int64)
    return arr.reshape(v.size, v.nmemb)


def statistics_text(path: Path) -> tuple[str, str] | None:
    """Where the column's statistics are and their text: the section of
    colfile-v1 from its first line that begins ``COLFILE-STATS:``, else,
    from older writers, the file colfile-stats-v1; None if neither."""
    ext = path / "colfile-v1"
    if ext.exists():
        text = ext.read_bytes().decode("ascii", "replace")
        at = text.find("\nCOLFILE-STATS:")
        if at >= 0:
            return "colfile-v1 statistics", text[at + 1:]
    old = path / "colfile-stats-v1"
    if old.exists():
        return "colfile-stats-v1", old.read_bytes().decode("ascii", "replace")
    return None


def check_stats(path: Path, header: dict[str, Any], v: Version) -> list[str]:
    """The statistics: current blobs must have right count/nan/min/max/sum."""
    found = statistics_text(path)
    if found is None:
        return []
    where, text = found
    if "\n" in text:
        text = text[:text.rindex("\n")]  # text after the last LF: ignored
    lines = [ln.rstrip("\r") for ln in text.split("\n")]
    try:
        if lines[0] != "COLFILE-STATS: 1":
            return [f"{where} is damaged (first line {lines[0][:40]!r})"]
        dtype = lines[1].split(":", 1)[1].strip()
        nmemb = int(lines[2].split(":", 1)[1])
        chunk = int(lines[4].split(":", 1)[1])
    except (IndexError, ValueError) as exc:
        return [f"{where} is damaged ({exc})"]
    if dtype != header["dtype"] or nmemb != header["nmemb"] or chunk < 1:
        return []
    blocks: dict[int, tuple[int, int, list[str]]] = {}
    cur: list[str] | None = None
    for ln in lines[5:]:
        head = ln.split(":", 1)[0]
        if ":" in ln and head and all(c in "0123456789abcdefABCDEF" for c in head):
            parts = [x.strip() for x in ln.split(":")]
            try:
                blob = int(parts[0], 16)
                cur = []
                blocks[blob] = (int(parts[1]), int(parts[2]), cur)
            except (IndexError, ValueError):
                return [f"{where}: bad blob line {ln[:60]!r}"]
        elif ln[:1].isdigit() and cur is not None:
            cur.append(ln)
    probs: list[str] = []
    kind = v.token[1]
    ordered = kind in "iufb"
    values = _column_values(v) if ordered else None
    first = 0
    for i, rows in enumerate(v.blob_rows):
        b = blocks.get(i)
        if b is None or (b[0], b[1]) != (header["rows"][i], header["sums"][i]):
            first += rows
            continue
        nchunks = -(-rows // chunk)
        if len(b[2]) != nchunks * nmemb:
            probs.append(f"{where}: blob {i:06X} has {len(b[2])} chunk lines, "
                         f"expected {nchunks * nmemb}")
            first += rows
            continue
        for ln in b[2]:
            f = ln.split()
            k, j = int(f[0]), int(f[1])
            kv = dict(x.split("=", 1) for x in f[2:] if "=" in x)
            r0 = first + k * chunk
            r1 = first + min((k + 1) * chunk, rows)
            if int(kv.get("count", -1)) != r1 - r0 or int(kv.get("nan", -1)) != 0:
                probs.append(f"{where}: blob {i:06X} chunk {k} component {j}: "
                             f"count/nan {kv.get('count')}/{kv.get('nan')}, expected {r1 - r0}/0")
                continue
            if not ordered:
                continue
            assert values is not None
            col = values[r0:r1, j]
            if kind in "iub":
                lo, hi = int(col.min()), int(col.max())
                got_lo, got_hi = int(kv["min"]), int(kv["max"])
                total = float(col.astype(np.float64).sum())
            else:
                lo, hi = float(col.min()), float(col.max())
                got_lo, got_hi = float(kv["min"]), float(kv["max"])  # type: ignore[assignment]
                total = float(col.astype(np.float64).sum())
            if (got_lo, got_hi) != (lo, hi):
                probs.append(f"{where}: blob {i:06X} chunk {k} component {j}: "
                             f"min/max {kv['min']}/{kv['max']}, data has {lo}/{hi}")
            got_sum = float(kv.get("sum", "nan"))
            scale = float(np.abs(col.astype(np.float64)).sum()) if len(col) else 0.0
            if not (math.isfinite(got_sum) and abs(got_sum - total) <= 1e-9 * max(1.0, scale)):
                probs.append(f"{where}: blob {i:06X} chunk {k} component {j}: "
                             f"sum {kv.get('sum')}, data sums to {total!r}")
        first += rows
    return probs[:5]


# ---------------------------------------------------------------------------
# matching a column against its acceptable versions

def blob_name(i: int) -> str:
    return f"{i:06X}"


def column_problems(path: Path, v: Version, header_text: bytes) -> tuple[bool, list[str]]:
    """Why the column at path is not version v (empty: it is).  The flag
    says whether the header at least describes v's layout (dtype, nmemb,
    rows per blob): then the problems are about v's data."""
    try:
        header = parse_header(header_text)
    except (ValueError, IndexError) as exc:
        return False, [f"header unreadable ({exc}): {header_text[:80]!r}"]
    if (header["dtype"], header["nmemb"], header["rows"]) != (v.token, v.nmemb, v.blob_rows):
        return False, [f"header describes {describe_header(header_text)}, not {describe_version(v)}"]
    probs: list[str] = []
    if header_text != v.header_bytes():
        if header["sums"] != v.sums:
            zero = all(s == 0 for s in header["sums"]) and any(v.sums)
            probs.append(f"header byte sums {header['sums']}, the rows' bytes sum to {v.sums}"
                         + (" (all 0: the header was committed before the data)" if zero else ""))
        else:
            probs.append(f"header bytes differ from what colfile writes: {header_text[:200]!r}")
    rb = v.rowbytes
    for i, rows in enumerate(v.blob_rows):
        need = rows * rb
        if need == 0:
            continue
        p = path / blob_name(i)
        try:
            with open(p, "rb") as fh:
                got = fh.read(need)
        except FileNotFoundError:
            probs.append(f"blob {blob_name(i)} ({rows} rows) is missing")
            continue
        if len(got) < need:
            probs.append(f"blob {blob_name(i)} holds {len(got)} bytes, its {rows} rows need {need}")
            continue
        exp = v.blob_bytes(i)
        if got != exp:
            a = np.frombuffer(got, dtype=np.uint8)
            b = np.frombuffer(exp, dtype=np.uint8)
            bad = np.nonzero(a != b)[0]
            zeros = bool(np.all(a[bad] == 0))
            probs.append(f"blob {blob_name(i)}: {len(bad)} of {need} bytes differ, first at byte "
                         f"{int(bad[0])} (row {int(bad[0]) // rb} of the blob)"
                         + ("; the differing bytes are all zero" if zeros else ""))
    try:
        attrs = read_attrs(path)
    except (ValueError, OSError) as exc:
        probs.append(f"attribute file damaged: {exc}")
        attrs = None
    if attrs is not None and attrs != v.attrs:
        probs.append(f"attributes {sorted(attrs)} differ from {describe_version(v)}'s {sorted(v.attrs)}"
                     + ("" if sorted(attrs) != sorted(v.attrs) else " (values)"))
    if not probs:
        probs += check_ext(path, header, v, header_text)
        probs += check_stats(path, header, v)
    return True, probs


def classify(probs: list[str]) -> str:
    """The violation category of a structurally matching version's problems."""
    text = " ".join(probs)
    if "missing" in text or " holds " in text or "all zero" in text or "all 0" in text:
        return "missing-data"
    if "bytes differ" in text:
        return "mix"
    if "byte sums" in text:
        return "sums"
    if all(p.startswith("colfile-") for p in probs):
        return "extension"
    if all(p.startswith("attr") for p in probs):
        return "attrs"
    return "mix"


@dataclass
class Report:
    violations: list[str] = field(default_factory=list)
    matched: dict[str, str] = field(default_factory=dict)   # entity -> "v3", "absent", "torn"
    notes: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)

    def add(self, category: str, text: str) -> None:
        self.violations.append(f"[{category}] {text}")


def candidates(model: Model, log: LogState) -> tuple[dict[str, list[Version]], dict[str, bool], list[str]]:
    """Acceptable versions of every entity, whether torn is allowed, and
    problems of the log itself."""
    cands: dict[str, list[Version]] = {}
    torn_ok: dict[str, bool] = {}
    problems: list[str] = []
    inflight = set(log.in_flight) | set(log.failed)
    for entity, hist in model.versions.items():
        settled = hist[0]
        extra: list[Version] = []
        allow_torn = False
        for op in model.ops:
            # most ops change their target; a truncation every entity, a
            # repair none (no version changes)
            effects = [e for e in getattr(model, "op_effects", {}).get(
                op.idx, [model.op_versions[op.idx]] if op.target == entity else []) if e[0] == entity]
            if not effects:
                continue
            _, before, after = effects[0]
            if op.idx in log.done:
                if extra:
                    problems.append(f"op {op.idx} on {entity} is done but an earlier op was in flight")
                settled = hist[after]
            elif op.idx in inflight:
                if hist[before] is not settled:
                    problems.append(f"op {op.idx} on {entity} in flight without its predecessor")
                extra.append(hist[after])
                if op.kind == "update":
                    allow_torn = True
        cands[entity] = [settled] + extra
        torn_ok[entity] = allow_torn
    return cands, torn_ok, problems


def _bigfile_value(val: Any, token: str) -> bytes:
    if isinstance(val, str):
        return val.encode()
    return np.asarray(val).astype(token).tobytes()


def check_bigfile(root: Path, matched: dict[str, Version], rep: Report) -> None:
    """bigfile 0.1.52 must list the columns and read each committed one."""
    try:
        import bigfile
    except ImportError:
        rep.notes.append("bigfile not installed: readability by bigfile not checked")
        return
    import warnings
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    try:
        bf = bigfile.File(str(root))
        listed = sorted(bf.blocks, key=lambda s: s.encode())
    except Exception as exc:  # bigfile raises its own classes
        rep.add("bigfile", f"bigfile cannot open the File: {exc}")
        return
    ours = list_columns(root)
    if listed != ours:
        rep.add("bigfile", f"bigfile lists {listed}, the format listing is {ours}")
    for entity, v in matched.items():
        if not v.exists or not v.token:
            continue
        try:
            blk = bf.open(entity)
            data = blk[:] if v.size else None
            if v.size:
                got = np.ascontiguousarray(data).tobytes()
                if got != v.data():
                    rep.add("bigfile", f"{entity}: bigfile reads other bytes than {describe_version(v)}")
            for name, (token, nmemb, raw) in v.attrs.items():
                if _bigfile_value(blk.attrs[name], token) != raw:
                    rep.add("bigfile", f"{entity}: bigfile reads attribute {name} differently")
        except Exception as exc:
            rep.add("bigfile", f"{entity}: bigfile cannot read {describe_version(v)}: {exc}")


def check(root: str | os.PathLike[str], model: Model, log: LogState, *, use_bigfile: bool = True) -> Report:
    rep = Report()
    root = Path(root)
    cands, torn_ok, problems = candidates(model, log)
    for p in problems:
        rep.add("harness", p)
    for line in log.pyfail:
        rep.add("unclean-error", f"the Python writer raised something that is not a colfile.Error: {line}")
    for idx, msg in log.failed.items():
        if "<no message>" in msg or len(msg.split(" ", 1)) < 2 or not msg.split(" ", 1)[1].strip():
            rep.add("unclean-error", f"op {idx} failed without a message: {msg!r}")
    listing = list_columns(root)
    known = set(cands)
    for name in listing:
        if name not in known:
            rep.add("unexpected", f"{name}: a column the plan never made is visible")
    matched: dict[str, Version] = {}
    for entity in sorted(cands):
        vs = cands[entity]
        is_block = model.is_block(entity)
        if is_block:
            d = root if entity == "." else root / entity[:-2]
            try:
                attrs = read_attrs(d) if d.is_dir() else {}
            except (ValueError, OSError) as exc:
                rep.add("attrs", f"{entity}: attribute file damaged: {exc}")
                continue
            hit = [v for v in vs if v.attrs == attrs]
            if hit:
                rep.matched[entity] = f"v{hit[-1].number}"
            else:
                rep.add("attrs", f"{entity}: attributes {sorted(attrs)} match none of "
                        f"{', '.join(describe_version(v) for v in vs)}")
            continue
        path = root / entity
        visible = entity in listing
        if not visible:
            if any(not v.exists for v in vs):
                rep.matched[entity] = "absent"
            else:
                rep.add("lost", f"{entity}: committed column is not there "
                        f"(expected {' or '.join(describe_version(v) for v in vs)})")
            continue
        if (path / TORN_NAME).exists():
            if torn_ok[entity]:
                rep.matched[entity] = "torn"
            else:
                rep.add("torn", f"{entity}: marked torn, but no in-place update of it was in flight "
                        f"(expected {' or '.join(describe_version(v) for v in vs)})")
            continue
        try:
            header_text = (path / "header").read_bytes()
        except OSError as exc:
            rep.add("header", f"{entity}: cannot read header: {exc}")
            continue
        best: tuple[Version, bool, list[str]] | None = None
        for v in reversed(vs):
            if not v.exists:
                continue
            layout, probs = column_problems(path, v, header_text)
            if not probs:
                best = (v, True, [])
                break
            if best is None or (layout, -len(probs)) > (best[1], -len(best[2])):
                best = (v, layout, probs)
        if best is None:
            rep.add("unexpected", f"{entity}: exists, expected absent")
        elif best[2]:
            alts = " or ".join(describe_version(v) for v in vs)
            cat = classify(best[2]) if best[1] else "header"
            rep.add(cat, f"{entity}: matches none of {alts}; against {describe_version(best[0])}: "
                    + "; ".join(best[2][:4]))
        else:
            matched[entity] = best[0]
            rep.matched[entity] = f"v{best[0].number}"
    # hidden leftovers are allowed; note them
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            if n.startswith("."):
                rep.hidden.append(os.path.relpath(os.path.join(dirpath, n), root))
    if use_bigfile and not rep.violations:
        check_bigfile(root, matched, rep)
    return rep


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("plan")
    ap.add_argument("log")
    ap.add_argument("--no-bigfile", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    seed, ops = crashplan.read_plan(a.plan)
    model = Model(seed, ops)
    rep = check(a.file, model, parse_log(a.log), use_bigfile=not a.no_bigfile)
    if a.json:
        print(json.dumps({"violations": rep.violations, "matched": rep.matched, "notes": rep.notes,
                          "hidden": rep.hidden}, indent=1))
    else:
        for k, v in sorted(rep.matched.items()):
            print(f"  {k}: {v}")
        for n in rep.notes:
            print(f"note: {n}")
        if rep.hidden:
            print(f"hidden leftovers: {len(rep.hidden)}")
        for v in rep.violations:
            print(f"VIOLATION {v}")
        print("OK" if not rep.violations else f"{len(rep.violations)} violation(s)")
    return 1 if rep.violations else 0


if __name__ == "__main__":
    sys.exit(main())
