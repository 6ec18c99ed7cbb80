"""colfile writes what bigfile 0.1.52 writes, byte for byte, and the original reads it.

For every fixture set under ../shared/fixtures (each a directory with a
``manifest.json``; a new set needs no code change), every block is written
again with colfile from what colfile reads out of the fixture: the same
dtype, the same rows per blob, the same data and the same attributes (set
from their stored bytes).  Then:

* every file the manifest lists (header, attr-v2, blobs) must be
  byte-identical to the original's, ``#HUMANE`` comments included.  Two
  documented exceptions: a header whose sums the original double-counted
  (``checksum_matches_content`` false) must match in everything but the
  sums, and a block that carried a legacy ``attr`` file gets its merged
  attributes in ``attr-v2`` only;
* the original library, through the fixture generator's own ``verify``
  command, opens the new tree and finds the data, shapes, splits and
  attributes the manifest states.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile

SHARED = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
SETS = sorted(p.parent for p in SHARED.glob("*/manifest.json"))

if os.environ.get("CI") and not SETS:
    raise RuntimeError(f"CI needs the fixture sets in {SHARED}")

pytestmark = pytest.mark.skipif(not SETS, reason="no fixture sets beside the repository")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rewrite_set(src: Path, dst: Path) -> dict[str, Any]:
    """Write every block of the set at src again, with colfile, under dst."""
    manifest = json.loads((src / "manifest.json").read_text())
    for tree, tinfo in manifest["bigfiles"].items():
        # colfile makes no column below a column (no listing would show it):
        # such a block of the set (fixture shadow/) is written at a name of
        # its own and moved into place after the File is closed
        blocks_of = {n for n, i in tinfo["blocks"].items() if i["kind"] != "attrs_only"}
        moves: list[tuple[str, str]] = []
        with colfile.File(src / tree) as old, colfile.File(dst / tree, "w") as new:
            # Attribute-only blocks last: creating a column empties its
            # directory's attr-v2, which is also a group's attribute file.
            blocks = sorted(tinfo["blocks"].items(), key=lambda kv: kv[1]["kind"] == "attrs_only")
            for name, info in blocks:
                source = old[name] if info["kind"] != "attrs_only" else None
                made = name
                if any(name.startswith(b + "/") for b in blocks_of):
                    made = f"shadowed-{len(moves)}"
                    moves.append((made, name))
                if info["kind"] == "column":
                    col = new.create(made, (info["header_dtype"], info["nmemb"]) if info["nmemb"] > 1
                                     else info["header_dtype"], blob_rows=info["fsize"])
                    if info["size"]:
                        col[:] = source[:]
                elif info["kind"] == "header_only":
                    col = new.create(made, None)
                else:
                    col = None
                attrs = col.attrs if col is not None else (new.attrs if name == "." else
                                                           new.require_group(name[:-2]).attrs)
                for aname, a in info["attrs"].items():
                    attrs.set_raw(aname, a["dtype"], a["nmemb"], bytes.fromhex(a["hex"]))
                if col is not None:
                    col.close()
        for made, name in moves:
            (dst / tree / name).parent.mkdir(parents=True, exist_ok=True)
            os.rename(dst / tree / made, dst / tree / name)
    return manifest


def header_without_sums(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        parts = line.split(" : ")
        out.append(parts[0] if len(parts) == 3 else line)
    return out


@pytest.mark.parametrize("fixture_set", SETS, ids=[p.name for p in SETS])
def test_rewritten_files_are_byte_identical(fixture_set: Path, tmp_path: Path) -> None:
    manifest = rewrite_set(fixture_set, tmp_path)
    compared = 0
    for tree, tinfo in manifest["bigfiles"].items():
        for name, info in tinfo["blocks"].items():
            directory = tmp_path / tree / ("" if name == "." else name[:-2] if name.endswith("/.") else name)
            legacy = "attr" in info["files_sha256"]
            for fname, digest in info["files_sha256"].items():
                ours = directory / fname
                where = f"{tree}/{name}/{fname}"
                if fname == "attr":
                    assert not ours.exists(), f"{where}: colfile never writes legacy attr files"
                    continue
                if fname == "attr-v2" and legacy:
                    continue
                assert ours.exists(), f"{where} missing"
                if fname == "header" and not info.get("checksum_matches_content", True):
                    theirs = (fixture_set / info["path"] / "header").read_text()
                    assert header_without_sums(ours.read_text()) == header_without_sums(theirs), where
                else:
                    assert sha256(ours) == digest, f"{where} differs from the original's bytes"
                compared += 1
    assert compared > 100


@pytest.mark.parametrize("fixture_set", SETS, ids=[p.name for p in SETS])
def test_original_library_reads_what_colfile_wrote(fixture_set: Path, tmp_path: Path) -> None:
    pytest.importorskip("bigfile") if not os.environ.get("CI") else __import__("bigfile")
    rewrite_set(fixture_set, tmp_path)
    generator = fixture_set.parent / "make_bigfile_fixtures.py"
    run = subprocess.run([sys.executable, str(generator), "verify", str(tmp_path),
                          "--manifest", str(fixture_set / "manifest.json")],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr


def test_values_written_from_numpy_match_the_original(tmp_path: Path) -> None:
    """Not only stored bytes: typical values (casts included) round-trip."""
    bigfile = pytest.importorskip("bigfile") if not os.environ.get("CI") else __import__("bigfile")
    rng = np.random.default_rng(5)
    with colfile.File(tmp_path / "f", "w") as f:
        f.create("pos", ("f4", 3), size=100, nfile=3)[:] = rng.normal(size=(100, 3))  # f8 -> f4
        f.create("id", ">i8", size=100, nfile=2)[:] = np.arange(100, dtype="i4")
        f.create("z", ">c16", size=4)[:] = np.array([1 + 2j, -3j, 4, 0.5 + 0.25j])
        f.attrs["BoxSize"] = 250.0
        f.attrs["Label"] = "run 42"
        f.attrs["Names"] = ["a", "bb"]
    g = bigfile.File(str(tmp_path / "f"))
    np.testing.assert_array_equal(g["id"][:], np.arange(100))
    assert g["pos"][:].shape == (100, 3)
    assert g["pos"].Nfile == 3
    # The original reads big-endian complex without converting: numpy's layout.
    np.testing.assert_array_equal(g["z"][:], np.array([1 + 2j, -3j, 4, 0.5 + 0.25j]))
    with g["."] as b:
        assert b.attrs["BoxSize"][0] == 250.0
        assert b.attrs["Label"] == "run 42"
        assert list(b.attrs["Names"]) == ["a", "bb"]
