"""The oracle of the catalog's adversarial tests (test_catalog_adversary,
test_catalog_races, test_catalog_crash): what a File lists through colfile
(File.keys(), `colfile ls --json`) must be what its directories hold, by
docs/format.md 2.3 read here without colfile: every directory (not hidden,
not a link) holding an entry named `header` (whatever it is) is a column.
And the Files these tests start from (padded_file)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import colfile

from childenv import child_env

CAT = ".colfile-catalog"


def scan(root: Path) -> list[str]:
    out: list[str] = []

    def walk(d: str, rel: str) -> None:
        for e in os.scandir(d):
            if e.name.startswith(".") or not e.is_dir(follow_symlinks=False):
                continue
            if os.path.lexists(os.path.join(e.path, "header")):
                out.append(rel + e.name)
            else:
                walk(e.path, rel + e.name + "/")
    walk(str(root), "")
    return sorted(out)


def keys(root: Path) -> list[str]:
    with colfile.File(root) as f:
        return list(f.keys())


def read_listing(root: Path) -> tuple[list[str], list[str], bool]:
    """A read-only File's listing (sorted), the messages of the
    CatalogWarnings its open and listing gave, and File.catalog_stale."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with colfile.File(root) as f:
            names = sorted(f.keys())
            stale = f.catalog_stale
    return names, [str(w.message) for w in caught if issubclass(w.category, colfile.CatalogWarning)], stale


def ls_names(root: Path) -> list[str]:
    """The names `colfile ls --json` lists (a column it cannot open too)."""
    r = subprocess.run([sys.executable, "-m", "colfile.cli", "ls", "--json", str(root)], env=child_env(),
                       capture_output=True, text=True, timeout=120)
    return sorted(c["name"] for c in json.loads(r.stdout)["columns"])


def assert_lists_as_scanned(root: Path, cli: bool = False) -> list[str]:
    expect = scan(root)
    assert keys(root) == expect
    if cli:
        assert ls_names(root) == expect
    return expect


def _stamp(p: Path) -> tuple[int, ...]:
    st = os.lstat(p)
    return (st.st_ino, st.st_size, st.st_mode, st.st_mtime_ns // 10**9, st.st_mtime_ns % 10**9,
            st.st_ctime_ns // 10**9, st.st_ctime_ns % 10**9)


def catalog_current(root: Path) -> bool:
    """Whether the catalog on disk is one a reader may list from: its
    index's generation is the File's and every stamp it records holds."""
    import catalog_shards as cs

    try:
        cat = cs.read_catalog(root)
        gen = root / CAT / "generation"
        if cat["generation"] != (gen.stat().st_size if gen.exists() else 0):
            return False
        return all(_stamp(root / d.decode() if d else root) == st for d, st in cat["dirs"])
    except (OSError, AssertionError):
        return False


def catalog_leftovers(root: Path) -> list[str]:
    """Files of the catalog directory that no reader uses: not the
    generation, the index or a shard the index names."""
    import catalog_shards as cs

    keep = {"generation", cs.INDEX}
    if (root / CAT / cs.INDEX).exists():
        keep |= {s["file"] for s in cs.read_index(root)["shards"]}
    return sorted(set(os.listdir(root / CAT)) - keep) if (root / CAT).exists() else []


def padded_file(root: Path, columns: dict[str, Any], pad: int, last: tuple[str, Any]) -> None:
    """A File of ``columns`` (name: data), each with an attribute "pad" of
    ``pad`` bytes (so that shards, more than an index keeps, 48 KiB, are
    files of their own), then column ``last`` (name, data) without; closed
    once more, so that a writer after it starts from a current catalog."""
    with colfile.File(root, "w") as f:
        for name, data in columns.items():
            f.create(name, data=data)
            f[name].attrs["pad"] = "x" * pad
        f.create(last[0], data=last[1])
    with colfile.File(root, "a"):
        pass
