"""The independent checker of the concurrency harness (pure Python + numpy,
never libcolfile).

It reads the workers' logs (worker.py) into operations with time intervals
and builds every version of every column those operations can have
committed: a create's rows come from (seed, gen) and the layout its handle
reported; an append's or an update's from the version its writer read under
its lock (found by digest) plus the rows it wrote.  It then judges, against
those versions and the times:

* each snapshot the observer (run_concurrency.py) took of a column, read
  straight from the files the way docs/format.md describes them: absent, a
  version byte for byte (header, blobs, CRC32C, statistics: the crash
  checker's ``column_problems``), or marked torn while an in-place update was
  live;
* each read and query result a worker got: exact for a version;
* each damage report of ``colfile check`` / ``colfile repair`` and each
  ``ChecksumError``: false unless the observer saw that column damaged;
* each rm / rm -r / truncation that succeeded while another process held a
  column's writer lock in its scope.

A state S seen during [t0, t1] is legal when an operation whose effect is S
began before t1 and no operation known to have committed began after it
ended and ended before t0 (it would have replaced S for the whole window).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
import sys  # noqa: E402
sys.path.insert(0, str(HERE.parent / "crash"))
sys.path.insert(0, str(HERE))
import checker  # noqa: E402
import crashplan  # noqa: E402
from worker import GROUPS, NAMES, digest, gen_of, outside_digest, query_threshold, rows_digest  # noqa: E402

INF = math.inf
#: failures that are part of the promise, not violations
ACCEPTED_FAIL = {"BusyError", "ColumnNotFoundError", "NotFound", "Skipped", "ReplacedError",
                 "AttributeNotFoundError"}
MUTATIONS = {"create", "append", "update", "rm", "rmr", "truncate"}
#: without RENAME_EXCHANGE (NFS) a replace moves the old version aside,
#: then renames the new one in: between the two the column is absent
#: (docs/reliability.md).  run_concurrency.py sets this under --fs noexchange.
ABSENT_WHILE_REPLACED = False
#: where no lock shows a live writer (locking off, node-local locks) colfile
#: check cannot tell an in-place update in progress from an interrupted
#: one: it reports the column torn and damaged (docs/reliability.md).  Set
#: by run_concurrency.py for those file-system models.
NO_LOCK_PROOF = False


@dataclass
class Op:
    wid: int
    n: int
    kind: str
    target: str
    args: dict[str, str]
    b: float
    lock: float | None = None
    close: float | None = None
    end: float = INF
    status: str = "live"      # live done fail
    fail_class: str = ""
    fail_msg: str = ""
    x: dict[str, str] = field(default_factory=dict)
    results: list[tuple[float, str, str]] = field(default_factory=list)   # R lines
    damage: list[tuple[str, str]] = field(default_factory=list)          # K lines
    repair: str = ""
    data_file: str = ""

    @property
    def key(self) -> str:
        return f"w{self.wid}#{self.n}"

    def scope(self) -> list[str]:
        """The columns whose data this operation changes."""
        if self.kind == "truncate":
            return list(NAMES)
        if self.kind == "rmr":
            g = self.target.rstrip("/") + "/"
            return [c for c in NAMES if c.startswith(g)]
        if self.kind in MUTATIONS:
            return [self.target]
        return []

    @property
    def committed(self) -> bool:
        return self.status == "done"

    @property
    def may_have_effect(self) -> bool:
        return self.status in ("done", "live") or (self.status == "fail" and self.fail_class not in ACCEPTED_FAIL)


def parse_logs(logs: list[Path]) -> dict[str, Op]:
    ops: dict[str, Op] = {}
    for path in logs:
        wid = int(path.name[3:]) if path.name[3:].isdigit() else 0
        cur: dict[int, Op] = {}
        for line in path.read_text(errors="replace").splitlines():
            parts = line.split(" ")
            if len(parts) < 3 or parts[0] == "E":
                continue
            kind, t, n = parts[0], float(parts[1]), int(parts[2])
            rest = parts[3:]
            if kind == "B":
                args = dict(p.split("=", 1) for p in rest[2:] if "=" in p)
                op = Op(wid, n, rest[0], rest[1], args, t)
                cur[n] = op
                ops[op.key] = op
                continue
            op = cur.get(n)
            if op is None:
                continue
            if kind == "L":
                op.lock = t
            elif kind == "X":
                op.x = dict(p.split("=", 1) for p in rest if "=" in p)
            elif kind == "C":
                op.close = t
            elif kind == "D":
                if op.status == "live":
                    op.status, op.end = "done", t
            elif kind == "F":
                op.status, op.end = "fail", t
                op.fail_class = rest[0] if rest else "?"
                op.fail_msg = " ".join(rest[1:])
            elif kind == "R":
                op.results.append((t, rest[0] if rest else "", " ".join(rest[1:])))
                op.data_file = str(path) + ".data"
            elif kind == "K":
                op.damage.append((rest[0] if rest else "?", " ".join(rest[1:])))
            elif kind == "Q":
                op.repair = " ".join(rest)
    return ops


@dataclass
class VersionInfo:
    op: Op
    v: crashplan.Version
    digest: str
    where: dict[str, str] = field(default_factory=dict)   # bound -> rows_digest of "leaf < bound"
    #: the header sums the version may carry: bigfile's sum of an in-place
    #: write adds the bytes written without taking off those replaced, and
    #: a repair (any time) recomputes every sum from the bytes
    sumsets: set[tuple[int, ...]] = field(default_factory=set)
    base: VersionInfo | None = None   # an update's: the version it wrote over
    #: an append's or update's: the version its writer found (the same
    #: directory, whose blobs this one shares); None for a create
    parent: VersionInfo | None = None


#: the header sums kept per version (see VersionInfo.sumsets)
SUMSETS_MAX = 4096


def _bytesum(b: bytes) -> int:
    return int(np.frombuffer(b, dtype=np.uint8).sum(dtype=np.uint64)) & 0xFFFFFFFF if b else 0


def make_version(name: str, token: str, layout: list[int], segments: list[tuple[int, int, int]]) -> crashplan.Version:
    v = crashplan.Version(name, 0, exists=True, token=token, nmemb=1, blob_rows=list(layout),
                          segments=list(segments))
    v.sums = [_bytesum(v.blob_bytes(i)) for i in range(len(layout))]
    return v


def _below(v: crashplan.Version, bound: str) -> np.ndarray:
    vals = np.frombuffer(v.data(), dtype=v.token) if v.size else np.zeros(0, dtype=v.token)
    return vals < (float(bound) if "." in bound else int(bound))


class Judge:
    def __init__(self, seed: int, ops: dict[str, Op]) -> None:
        self.seed = seed
        self.ops = ops
        self.violations: list[tuple[str, str]] = []
        self._seen: set[tuple[str, str]] = set()
        self.versions: dict[str, list[VersionInfo]] = {c: [] for c in NAMES}
        self.damaged_seen: dict[str, float] = {}   # column -> first time the observer saw damage
        self.stats: dict[str, int] = {}
        self._content_done: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
        self._build_versions()

    def add(self, cat: str, text: str) -> None:
        if (cat, text) not in self._seen:   # a state seen many times is one violation
            self._seen.add((cat, text))
            self.violations.append((cat, text))

    def count(self, what: str) -> None:
        self.stats[what] = self.stats.get(what, 0) + 1

    def _build_versions(self) -> None:
        order = sorted((op for op in self.ops.values() if op.kind in ("create", "append", "update")),
                       key=lambda o: (o.lock if o.lock is not None else o.b))
        for op in order:
            if not op.may_have_effect or op.lock is None:
                continue
            c = op.target
            key = crashplan.gen_key(self.seed, gen_of(op.wid, op.n))
            if "layout" not in op.x:
                if op.status == "done":
                    self.add("harness", f"{op.key} {op.kind} {c} is done but logged no layout")
                continue
            layout = [int(x) for x in op.x["layout"].split(",") if x]
            base = None
            if op.kind == "create":
                v = make_version(c, op.args["token"], layout, [(0, int(op.args["size"]), key)]
                                 if int(op.args["size"]) else [])
            else:
                base = self._find_base(op, layout)
                if base is None:
                    self.add("writer-read", f"{op.key} {op.kind} {c}: what its own handle read under "
                             f"its lock (base {op.x.get('base')}) is no version of {c}")
                    continue
                if op.kind == "append":
                    old = int(op.x["old"])
                    rows = int(op.args["rows"])
                    v = make_version(c, base.v.token, layout, base.v.segments + [(old, old + rows, key)])
                else:
                    s, n = int(op.x["start"]), int(op.x["count"])
                    v = make_version(c, base.v.token, layout, base.v.segments + [(s, s + n, key)])
                    # bigfile's sums after an in-place write: the old sum plus
                    # the bytes written (the bytes replaced are not taken off)
                    rb = v.rowbytes
                    new = crashplan.element_bytes(v.token, key, s, n)
                    first = 0
                    for i, rows in enumerate(layout):
                        lo, hi = max(first, s), min(first + rows, s + n)
                        v.sums[i] = base.v.sums[i]
                        if lo < hi:
                            v.sums[i] = (v.sums[i] + _bytesum(new[(lo - s) * rb:(hi - s) * rb])) & 0xFFFFFFFF
                        first += rows
            vi = VersionInfo(op, v, digest(v.token, 1, v.blob_rows, v.data()),
                             base=base if op.kind == "update" else None, parent=base)
            vi.sumsets = {tuple(_bytesum(v.blob_bytes(i)) for i in range(len(layout)))}
            if op.kind == "append":
                nold = len(layout) - (len(layout) - len(base.v.blob_rows))
                for ss in base.sumsets:
                    vi.sumsets.add(tuple(ss[:nold]) + tuple(_bytesum(v.blob_bytes(i))
                                                          for i in range(nold, len(layout))))
            elif op.kind == "update":
                for ss in base.sumsets:
                    vi.sumsets.add(tuple((a - b + c) & 0xFFFFFFFF
                                         for a, b, c in zip(v.sums, base.v.sums, ss)))
            # (a few hundred at most: each update adds one per sumset of its
            # base, and _find_base keeps only the bases the time rule allows)
            if len(vi.sumsets) > SUMSETS_MAX:
                vi.sumsets = set(sorted(vi.sumsets)[:SUMSETS_MAX - 1]) | {tuple(v.sums)}
            self.versions[c].append(vi)

    def _find_base(self, op: Op, layout: list[int]) -> VersionInfo | None:
        """The version the writer's handle read under its lock.  An update
        that rewrote every row leaves no rows to tell its base by: every
        version of that layout fits, so their possible sums are merged into
        the one returned (their data is the same once the rows are written)."""
        want = op.x.get("base", "")
        hits = []
        for vi in self.versions[op.target]:
            v = vi.v
            if op.kind == "append":
                if vi.digest == want:
                    return vi
            elif v.blob_rows == layout and outside_digest(
                    v.token, 1, v.blob_rows, v.data(), int(op.x["start"]), int(op.x["count"])) == want:
                hits.append(vi)
        if not hits:
            return None
        if len(hits) > 1:
            # Not a base: a version another committed over before this
            # writer took its lock (the other began after it had ended and
            # had ended before the lock: it committed while this writer did
            # not hold the lock yet, since it needs the lock to commit).
            later = [o for o in self.versions[op.target] if o.op.committed and op.lock is not None]
            alive = [h for h in hits if not any(o is not h and o.op.b > h.op.end and o.op.end < op.lock
                                                for o in later)]
            hits = alive or hits
        if len(hits) == 1:
            return hits[0]
        merged = VersionInfo(hits[-1].op, hits[-1].v, hits[-1].digest, parent=hits[-1].parent)
        for h in hits:
            merged.sumsets |= h.sumsets
        return merged

    # -- the time rule -------------------------------------------------------

    def _superseded(self, c: str, eff_end: float, t0: float, by_not: Op | None = None) -> Op | None:
        for p in self.ops.values():
            if p is by_not or not p.committed or c not in p.scope():
                continue
            if p.b > eff_end and p.end < t0:
                return p
        return None

    def legal_version(self, c: str, pred: Any, t0: float, t1: float) -> VersionInfo | None:
        for vi in self.versions[c]:
            if vi.op.b <= t1 and pred(vi) and self._superseded(c, vi.op.end, t0, vi.op) is None:
                return vi
        return None

    def legal_absent(self, c: str, t0: float, t1: float) -> bool:
        if self._superseded(c, -INF, t0) is None:
            return True   # the initial state: nothing committed for sure yet
        for r in self.ops.values():
            if r.kind in ("rm", "rmr", "truncate") and c in r.scope() and r.may_have_effect \
                    and r.b <= t1 and self._superseded(c, r.end, t0, r) is None:
                return True
        if ABSENT_WHILE_REPLACED and any(
                r.kind == "create" and r.target == c and r.b <= t1 and (r.end >= t0 or r.status == "fail")
                for r in self.ops.values()):
            self.count("absent while replaced (no RENAME_EXCHANGE)")
            return True
        return False

    def legal_torn(self, c: str, t0: float, t1: float) -> bool:
        return any(u.kind == "update" and u.target == c and u.b <= t1 and (u.end >= t0 or u.status == "fail")
                   for u in self.ops.values())

    def describe_candidates(self, c: str, t0: float, t1: float) -> str:
        vs = [vi.op.key for vi in self.versions[c] if vi.op.b <= t1]
        return f"{len(vs)} versions of {c} begun by then"

    # -- judging ---------------------------------------------------------------

    def judge_snapshot(self, c: str, t0: float, t1: float, snap: dict[str, Any], scratch: Path) -> None:
        self.count("snapshots")
        state = snap["state"]
        if state == "unstable":
            self.count("snapshots unstable")
            return
        if state == "absent":
            if not self.legal_absent(c, t0, t1):
                self.add("lost", f"{c}: absent at t={t0:.0f}, but a committed version must be there")
            return
        if state == "torn":
            if not self.legal_torn(c, t0, t1):
                self.add("torn", f"{c}: marked torn at t={t0:.0f} with no in-place update live")
            return
        files: dict[str, bytes] = snap["files"]
        if state == "bad":
            self.damaged_seen.setdefault(c, t0)
            self.add(snap["category"], f"{c}: {snap['why']}")
            return
        dg = snap["digest"]
        vi = self.legal_version(c, lambda vi: vi.digest == dg, t0, t1)
        if vi is None:
            self.damaged_seen.setdefault(c, t0)
            known = [x for x in self.versions[c] if x.digest == dg]
            if known:
                self.add("stale", f"{c}: holds {known[0].op.key}'s version, which a later committed "
                         f"operation had replaced before t={t0:.0f}")
            else:
                self.add("mix", f"{c}: header {checker.describe_header(files['header'])} with data that is "
                         f"no version ({self.describe_candidates(c, t0, t1)})")
            return
        # byte for byte: header, CRC32C, statistics, attribute values (once
        # per distinct content)
        ck = (c, snap["hash"], vi.op.key)
        if ck in self._content_done:
            for cat, text in self._content_done[ck]:
                self.add(cat, text)
                self.damaged_seen.setdefault(c, t0)
            return
        before = len(self.violations)
        self._judge_content(c, t1, snap, vi, files, scratch)
        self._content_done[ck] = self.violations[before:]
        if self.violations[before:]:
            self.damaged_seen.setdefault(c, t0)

    def _judge_content(self, c: str, t1: float, snap: dict[str, Any], vi: VersionInfo,
                       files: dict[str, bytes], scratch: Path) -> None:
        d = scratch / "snap"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        for name, data in files.items():
            (d / name).write_bytes(data)
        try:
            attrs = checker.read_attrs(d)
        except (ValueError, OSError) as exc:
            self.add("attrs", f"{c}: attribute file damaged: {exc}")
            return
        sums = vi.v.sums
        try:
            hs = tuple(checker.parse_header(files["header"])["sums"])
            if hs in vi.sumsets:
                sums = list(hs)
        except (ValueError, IndexError):
            pass
        v = crashplan.Version(c, 0, exists=True, token=vi.v.token, nmemb=1, blob_rows=vi.v.blob_rows,
                              segments=vi.v.segments, sums=sums, attrs=attrs)
        v._data = vi.v.data()
        _, probs = checker.column_problems(d, v, files["header"])
        if probs:
            self.add(checker.classify(probs), f"{c} ({vi.op.key}'s version): " + "; ".join(probs[:3]))
        for name, (token, nmemb, raw) in attrs.items():
            ok = False
            if token == "<f8" and nmemb == 1:
                g = int(np.frombuffer(raw, "<f8")[0] - 0.5)
                a = self.ops.get(f"w{g // 1_000_000}#{g % 1_000_000}")
                ok = a is not None and a.kind == "attr" and a.target == c and a.b <= t1
            if not ok:
                self.add("attrs", f"{c}: attribute {name} = {raw.hex()} was never set on it")

    def lost_to_a_removal(self, op: Op) -> bool:
        """A writer that fails because its files went away with a truncation
        or a group removal running at the same time: the limit
        docs/reliability.md states (a removal locks the directories there
        when it starts; a create that makes a directory in them meanwhile
        may lose its staging directory, and fails).  Its column's state is
        judged as for any other failed writer."""
        gone = op.fail_class == "NoSuchFileError" or "No such file or directory" in op.fail_msg
        if op.kind not in ("create", "append", "update", "attr") or not gone:
            return False
        return any(o.kind in ("truncate", "rmr") and op.target in o.scope() and o.b < op.end and op.b < o.end
                   for o in self.ops.values() if o is not op)

    def judge_ops(self) -> None:
        for op in sorted(self.ops.values(), key=lambda o: o.b):
            if op.status == "fail":
                if op.fail_class.startswith("Unclean."):
                    self.add("unclean-error", f"{op.key} {op.kind} {op.target}: {op.fail_class[8:]} {op.fail_msg}")
                elif op.fail_class == "ChecksumError":
                    self.add("false-checksum", f"{op.key} {op.kind} {op.target}: {op.fail_msg}")
                elif op.fail_class not in ACCEPTED_FAIL and not self.lost_to_a_removal(op):
                    self.add(f"op-error", f"{op.key} {op.kind} {op.target} failed with {op.fail_class}: "
                             f"{op.fail_msg[:200]}")
                else:
                    self.count(f"fail {op.fail_class}")
            if op.status == "done":
                self.count(f"done {op.kind}")
            for t, res, msg in op.results:
                self.judge_result(op, t, res, msg)
            for col, kinds in op.damage:
                self.judge_damage(op, col, kinds)
            if op.kind == "repair" and op.repair:
                low = op.repair.lower()
                if re.search(r"\b(missing|short|lost|cannot be repaired)\b", low):
                    cols = [c for c in NAMES if f"/{c}:" in op.repair or f"/{c} " in op.repair] or ["?"]
                    for c in cols:
                        real = c in self.damaged_seen and self.damaged_seen[c] <= op.end
                        if not real:
                            self.add("false-damage", f"{op.key} colfile repair reports loss on {c}, which was "
                                     f"never seen damaged: {op.repair[:200]}")
            if op.kind in ("rm", "rmr", "truncate") and op.committed:
                self.judge_lock(op)

    def judge_result(self, op: Op, t: float, res: str, msg: str) -> None:
        c = op.target
        self.count(f"{op.kind} results")
        if res == "absent":
            if not self.legal_absent(c, op.b, t):
                self.add("read-lost", f"{op.key} {op.kind} {c}: not found, but a committed version must be there")
        elif res == "torn":
            if not self.legal_torn(c, op.b, t):
                self.add("read-torn", f"{op.key} {op.kind} {c}: TornError with no in-place update live")
        elif res in ("replaced", "busy"):
            self.count(f"read {res}")
        elif res.startswith("d:"):
            if self.legal_version(c, lambda vi: vi.digest == res[2:], op.b, t) is None \
                    and not self.during_update(op, t, msg, rows=False):
                known = any(vi.digest == res[2:] for vi in self.versions[c])
                self.add("read-mix" if not known else "read-stale",
                         f"{op.key} {op.kind} {c} (verify={op.args.get('verify')}, slow={op.args.get('slow')}): "
                         + ("got data that is no version of the column" if not known
                            else "got a version replaced before the read began") + self._seen_damaged(c, t))
        elif res.startswith("q:"):
            low = op.args.get("low") == "1"

            def pred(vi: VersionInfo) -> bool:
                bound = query_threshold(vi.v.token, low)
                if bound not in vi.where:
                    vi.where[bound] = rows_digest(np.nonzero(_below(vi.v, bound))[0])
                return vi.where[bound] == res[2:]
            if self.legal_version(c, pred, op.b, t) is None and not self.during_update(op, t, msg, rows=True):
                self.add("query", f"{op.key} query '{c.rsplit('/', 1)[-1]} < bound' (low={op.args.get('low')}) on {c} "
                         f"(verify={op.args.get('verify')}): the rows are exact for no version"
                         + self._seen_damaged(c, t))
        elif res.startswith("err:"):
            cls = res[4:]
            if cls == "ChecksumError":
                real = c in self.damaged_seen and self.damaged_seen[c] <= t
                if not real:
                    self.add("false-checksum", f"{op.key} {op.kind} {c}: ChecksumError on data committed "
                             f"intact: {msg[:200]}")
            elif cls.startswith(("Unclean", "ValueError", "TypeError", "AttributeError", "IndexError")):
                self.add("unclean-error", f"{op.key} {op.kind} {c}: {cls} {msg[:200]}")
            else:
                self.add("read-error", f"{op.key} {op.kind} {c}: {cls}: {msg[:200]}")

    def during_update(self, op: Op, t: float, msg: str, rows: bool) -> bool:
        """An in-place update is not atomic: a read while one is live (its
        writer holds the lock) may see each of its rows old or new.  True
        if such an update overlapped [op.b, t] and what the read got (the
        rows, or a query's row numbers) fits: every row that of a version
        of the column's directory during the read -- the update's, its
        base's, and back to the one committed when the read began (updates
        that committed meanwhile wrote their rows in place too) -- or the
        query's rows between those where all of them select and those
        where any does.  The reader's handle may hold a shorter version
        than the update's base: one the base descends from by appends (and
        in-place updates), legal when the read began; its blobs are the
        base's first ones, which the updates write in place: then its rows
        are the first rows of those versions."""
        m = re.search(r"at=(\d+),(\d+)", msg)
        if not m or not op.data_file:
            return False
        with open(op.data_file, "rb") as fh:
            fh.seek(int(m.group(1)))
            got = fh.read(int(m.group(2)))
        for vi in self.versions[op.target]:
            u = vi.op
            if u.kind != "update" or vi.base is None or u.lock is None or not (u.b <= t and u.end >= op.b):
                continue
            new = vi.v
            if new.blob_rows != vi.base.v.blob_rows:
                continue
            # the versions of the directory during the read: this update's,
            # its base, and back to the one committed before the read began
            # (updates that committed meanwhile wrote their rows in place too)
            during = [new]
            p = vi.base
            while p is not None:
                during.append(p.v)
                if p.op.end < op.b:
                    break
                p = p.parent
            rb = new.rowbytes
            for n in self._handle_sizes(op, t, vi.base):
                vs = [v for v in during if v.size >= n and v.token == new.token]
                if rows:
                    bound = query_threshold(new.token, op.args.get("low") == "1")
                    below = [_below(v, bound)[:n] for v in vs]
                    sel = np.zeros(n, bool)
                    idx = np.frombuffer(got, dtype="<i8")
                    if len(idx) and (idx.min() < 0 or idx.max() >= n):
                        continue
                    sel[idx] = True
                    if np.all(sel >= np.logical_and.reduce(below)) and np.all(sel <= np.logical_or.reduce(below)):
                        self.count("results during a live update")
                        return True
                else:
                    if len(got) != n * rb:
                        continue
                    if not rb:
                        return True
                    g = np.frombuffer(got, np.uint8).reshape(n, rb)
                    ok = np.zeros(n, bool)
                    for v in vs:
                        ok |= np.all(g == np.frombuffer(v.data()[:n * rb], np.uint8).reshape(n, rb), axis=1)
                    if np.all(ok):
                        self.count("results during a live update")
                        return True
        return False

    def _handle_sizes(self, op: Op, t: float, base: VersionInfo) -> list[int]:
        """The row counts a read handle may have had while an update of
        ``base`` was live: the base's, and that of every version legal
        during [op.b, t] that the base descends from by appends and
        in-place updates (the same directory: a handle of it reads the
        blobs they share, which those updates wrote in place)."""
        sizes = [base.v.size]
        seen = set()
        p = base.parent
        while p is not None and id(p) not in seen:
            seen.add(id(p))
            v = p.v
            if v.size < base.v.size and v.size not in sizes \
                    and v.blob_rows == base.v.blob_rows[:len(v.blob_rows)] \
                    and self.legal_version(op.target, lambda w, p=p: w is p, op.b, t) is not None:
                sizes.append(v.size)
            p = p.parent
        return sizes

    def _seen_damaged(self, c: str, t: float) -> str:
        """A note for a result on a column the observer had seen damaged
        (the wrong result may follow from that damage)."""
        return " (the observer had seen this column damaged)" if self.damaged_seen.get(c, INF) <= t else ""

    def judge_damage(self, op: Op, col: str, kinds: str) -> None:
        ks = set(kinds.split(","))
        if col == ".":
            self.add("check-output", f"{op.key} colfile check printed no report: {kinds[:200]}")
            return
        if ks <= {"torn", "in_progress", "update_in_progress"} or any("progress" in k for k in ks):
            if not self.legal_torn(col, op.b, op.end):
                self.add("check-torn", f"{op.key} colfile check reports {col} torn ({kinds}) with no "
                         f"in-place update live")
            return
        real = col in self.damaged_seen and self.damaged_seen[col] <= op.end
        if not real and NO_LOCK_PROOF and "torn" in ks and self.legal_torn(col, op.b, op.end):
            self.count("damage reported during an update no lock showed")
            return
        if not real:
            self.add("false-damage", f"{op.key} colfile check reports {col} damaged ({kinds}); "
                     f"it was committed intact")

    def judge_lock(self, r: Op) -> None:
        scope = set(r.scope())
        for w in self.ops.values():
            if w is r or w.lock is None or w.target not in scope:
                continue
            t_unlock = w.close if w.close is not None else w.end
            if w.lock < r.b and r.end < t_unlock:
                self.add("lock-ignored", f"{r.key} {r.kind} {r.target} succeeded while {w.key} "
                         f"({w.kind} {w.target}) held the column's writer lock"
                         + (f"; that writer then failed: {w.fail_class} {w.fail_msg[:120]}"
                            if w.status == "fail" else ""))


def read_snapshot(root: Path, c: str, tries: int = 30) -> tuple[float, float, dict[str, Any]]:
    """One consistent look at column c, by the format alone: through a
    descriptor of its directory, the header first, then its blobs and
    metadata files; the look counts only if the directory and the header
    are still the same files afterwards (else another commit happened
    meanwhile, and it is taken again)."""
    import time
    path = root / c
    t0 = time.monotonic_ns()
    for _ in range(tries):
        t0 = time.monotonic_ns()
        try:
            dst = os.lstat(path)
        except FileNotFoundError:
            return t0, time.monotonic_ns(), {"state": "absent"}
        try:
            dfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except (FileNotFoundError, NotADirectoryError):
            continue
        try:
            if os.fstat(dfd).st_ino != dst.st_ino:
                continue
            try:
                hfd = os.open("header", os.O_RDONLY, dir_fd=dfd)
            except FileNotFoundError:
                if _same(path, dst):
                    return t0, time.monotonic_ns(), {"state": "absent"}
                continue
            with os.fdopen(hfd, "rb") as fh:
                hst = os.fstat(fh.fileno())
                htext = fh.read()
            torn = _exists(dfd, checker.TORN_NAME)
            files: dict[str, bytes] = {"header": htext}
            missing: list[str] = []
            try:
                h = checker.parse_header(htext)
            except (ValueError, IndexError):
                h = None
            if h is not None:
                rb = crashplan.dtype_width(h["dtype"]) * h["nmemb"] if h["dtype"][1:2] in "iufcbS" else 0
                for i, rows in enumerate(h["rows"]):
                    if rows * rb == 0:
                        continue
                    name = checker.blob_name(i)
                    try:
                        bfd = os.open(name, os.O_RDONLY, dir_fd=dfd)
                    except FileNotFoundError:
                        missing.append(f"blob {name} ({rows} rows) is missing")
                        continue
                    with os.fdopen(bfd, "rb") as fh:
                        data = fh.read(rows * rb)
                    files[name] = data
                    if len(data) < rows * rb:
                        missing.append(f"blob {name} holds {len(data)} bytes, its {rows} rows need {rows * rb}")
            for meta in ("colfile-v1", "attr-v2", "colfile-attrs", "colfile-stats-v1"):
                try:
                    mfd = os.open(meta, os.O_RDONLY, dir_fd=dfd)
                except FileNotFoundError:
                    continue
                with os.fdopen(mfd, "rb") as fh:
                    files[meta] = fh.read()
            torn = torn or _exists(dfd, checker.TORN_NAME)
            try:
                h2 = os.stat("header", dir_fd=dfd)
            except FileNotFoundError:
                continue
            if (h2.st_ino, h2.st_mtime_ns) != (hst.st_ino, hst.st_mtime_ns) or not _same(path, dst):
                continue
        finally:
            os.close(dfd)
        t1 = time.monotonic_ns()
        if torn:
            return t0, t1, {"state": "torn"}
        if h is None:
            return t0, t1, {"state": "bad", "category": "header", "files": files,
                            "why": f"header unreadable: {htext[:80]!r}"}
        if missing:
            return t0, t1, {"state": "bad", "category": "missing-data", "files": files,
                            "why": f"header {checker.describe_header(htext)}; " + "; ".join(missing[:4])
                            + (f" (and {len(missing) - 4} more)" if len(missing) > 4 else "")}
        raw = b"".join(files.get(checker.blob_name(i), b"") for i in range(len(h["rows"])))
        hsh = hashlib.sha256(b"".join(k.encode() + b"\0" + v + b"\0" for k, v in sorted(files.items())))
        return t0, t1, {"state": "version", "files": files, "hash": hsh.hexdigest(),
                        "digest": digest(h["dtype"], h["nmemb"], h["rows"], raw)}
    return t0, time.monotonic_ns(), {"state": "unstable"}


def _exists(dfd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dfd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False


def _same(path: Path, st: os.stat_result) -> bool:
    try:
        return os.lstat(path).st_ino == st.st_ino
    except FileNotFoundError:
        return False


def judge_round(seed: int, logs: list[Path], snapshots: list[tuple[str, float, float, dict[str, Any]]]) -> Judge:
    j = Judge(seed, parse_logs(logs))
    with tempfile.TemporaryDirectory(prefix="conccheck-") as scratch:
        for c, t0, t1, snap in sorted(snapshots, key=lambda s: s[1]):
            j.judge_snapshot(c, t0, t1, snap, Path(scratch))
    j.judge_ops()
    return j


__all__ = ["judge_round", "read_snapshot", "parse_logs", "Judge", "GROUPS", "NAMES"]
