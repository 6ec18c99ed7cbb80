"""Files written by bigfile 0.1.52 read back exactly (../shared fixtures).

Every fixture set (a directory under ../shared/fixtures holding a
``manifest.json``) is walked; adding a set needs no code change.  Skipped
only when no set is beside the repository, which CI never allows.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any

import numpy as np
import pytest

from pathlib import Path

import colfile

SHARED = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
SETS = sorted(p.parent for p in SHARED.glob("*/manifest.json"))
if os.environ.get("CI") and not SETS:
    raise RuntimeError(f"CI needs the fixture sets in {SHARED}")

pytestmark = pytest.mark.skipif(not SETS, reason="bigfile fixtures not found")

MANIFESTS = {s: json.loads((s / "manifest.json").read_text()) for s in SETS}

TREES = [(s, tree) for s in SETS for tree in sorted(MANIFESTS[s]["bigfiles"])]
BLOCKS = [(s / tree, name, info) for s in SETS for tree, t in MANIFESTS[s]["bigfiles"].items()
          for name, info in t["blocks"].items()]


@pytest.mark.parametrize("fixture_set, tree", TREES, ids=[f"{s.name}:{t}" for s, t in TREES])
def test_listing(fixture_set: Path, tree: str, lib: Any) -> None:
    with colfile.File(fixture_set / tree) as f:
        assert f.columns == MANIFESTS[fixture_set]["bigfiles"][tree]["list_blocks"]


def le_bytes(arr: np.ndarray) -> bytes:
    dt = arr.dtype
    if dt.kind in "iufc" and dt.itemsize > 1:
        arr = arr.astype(dt.newbyteorder("<"))
    return np.ascontiguousarray(arr).tobytes()


def json_scalar(v: Any, dt: np.dtype[Any]) -> Any:
    if dt.kind == "c":
        return [json_scalar(v.real, np.dtype("f8")), json_scalar(v.imag, np.dtype("f8"))]
    if dt.kind == "f":
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    if dt.kind == "S":
        return bytes(v).ljust(dt.itemsize, b"\0").hex()
    if dt.kind == "b":
        return bool(v)
    return int(v)


@pytest.mark.parametrize("tree, name, info", BLOCKS,
                         ids=[f"{t.parent.name}:{t.name}:{n}" for t, n, _ in BLOCKS])
def test_block(tree: Path, name: str, info: dict[str, Any], lib: Any) -> None:
    with colfile.File(tree) as f:
        col = f[name]
        if info["kind"] == "attrs_only":
            assert col.kind == "attrs-only"
        else:
            assert col.kind == {"column": "data", "header_only": "header-only"}[info["kind"]]
            assert col.dtype.str == info["dtype"]
            assert col.nmemb == info["nmemb"] and col.size == info["size"]
            assert col.blob_rows == info["fsize"]
            sums = [[b["sum"], b["fold"]] for b in col.checksums()]
            assert sums == info["checksums"]
            if info["kind"] == "column":
                data = col[:]
                assert hashlib.sha256(le_bytes(data)).hexdigest() == info["sha256_le"]
                first = [json_scalar(r, col.dtype) if col.nmemb == 1 else
                         [json_scalar(x, col.dtype) for x in r] for r in data[:3]]
                assert first == info["first3"]
                status = set().union(*(col.verify_blob(i) for i in range(col.nfile))) or {"OK"}
                if info["checksum_matches_content"]:
                    assert status <= {"OK", "CRC_UNKNOWN"}
                else:
                    assert "SUM_MISMATCH" in status
        attrs = col.attrs
        assert sorted(attrs) == sorted(info["attrs"])
        for aname, a in info["attrs"].items():
            tok, nmemb, raw = attrs.raw(aname)
            assert (tok, nmemb, raw.hex().upper()) == (a["dtype"], a["nmemb"], a["hex"])
            value = attrs[aname]
            kind = a["dtype"][1]
            if kind == "a":
                assert value == ("" if a["value"] == "\0" else a["value"])
            elif kind == "S":
                assert value == [v.rstrip("\0") for v in a["value"]]
            else:
                dt = np.dtype(a["dtype"])
                vals = np.atleast_1d(value)
                assert [json_scalar(v, dt) for v in vals] == a["value"]
