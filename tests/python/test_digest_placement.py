"""Where a write digests its bytes (byte sums, CRC32C, statistics): on the
writing thread ("inline") or on a helper thread ("helper"), chosen from the
machine ("auto") or by the caller.  The placement changes no byte."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import colfile
from colfile._constants import (
    CF_EARG,
    CF_OPEN_CREATE,
    CF_OPEN_DIGEST_HELPER,
    CF_OPEN_DIGEST_INLINE,
    CF_OPEN_WRITE,
)
from colfile._core import file as _cf


def tree(root: Path) -> dict[str, bytes]:
    """Every file below root but the File catalog (its stamps hold inode numbers)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".colfile-catalog" not in p.relative_to(root).parts}


@pytest.mark.parametrize(("own", "node", "ranks", "expected"), [
    (1, 1, 1, "inline"),      # one CPU: the helper would share the writer's core
    (2, 2, 1, "helper"),      # serial on two CPUs: one for the helper
    (2, 2, 2, "inline"),      # two ranks on two CPUs: a full node
    (1, 2, 2, "inline"),      # ranks pinned one per core
    (2, 4, 2, "helper"),      # two ranks, two CPUs each
    (4, 4, 2, "helper"),      # two ranks sharing four CPUs
    (4, 4, 3, "inline"),      # three ranks on four CPUs: no core per helper
    (64, 64, 32, "helper"),
    (64, 64, 33, "inline"),
    (0, 0, 0, "inline"),      # counts below 1 count as 1
    (2**62, 2**63 - 1, 2**62 - 1, "helper"),  # no overflow
])
def test_auto_choice(own: int, node: int, ranks: int, expected: str) -> None:
    """cf_digest_choose, the pure function behind digest='auto'."""
    assert _cf.digest_choose(own, node, ranks) == expected


def write_columns(path: Path, digest: str, rng_seed: int) -> str:
    """Write the same columns (with writes of random sizes, some large
    enough for a helper thread) and return the placement used."""
    rng = np.random.default_rng(rng_seed)
    vec = rng.standard_normal((600_000, 3))  # 14.4 MB: one write above the helper's 8 MiB
    vec[rng.integers(0, len(vec), 50), 1] = np.nan
    ints = rng.integers(-2**40, 2**40, 2_500_000, dtype=np.int64)
    with colfile.File(path, "w", durable=False, digest=digest) as f:
        used = f.digest_placement  # cf_file_digest_placement
        f.create("vec", ("f8", 3), size=len(vec))[:] = vec
        col = f.create("ints", "i8", size=len(ints), nfile=3)
        start = 0
        while start < len(ints):  # pieces of random size, some above 8 MiB
            n = int(rng.choice([1, 7, 4096, 1_100_000, 1_300_000]))
            col[start:start + n] = ints[start:start + n]
            start += n
        col.close()
        small = f.create("small", "f4", size=1000)
        small[:] = rng.standard_normal(1000).astype("f4")
        small.close()
    return used


def test_inline_and_helper_write_the_same_bytes(tmp_path: Path) -> None:
    trees = {}
    for digest in ("inline", "helper", "auto"):
        used = write_columns(tmp_path / digest, digest, 1234)
        if digest != "auto":
            assert used == digest
        trees[digest] = tree(tmp_path / digest)
    assert "vec/000000" in trees["inline"] and "ints/000002" in trees["inline"]
    assert any(name.endswith("colfile-v1") for name in trees["inline"])
    assert trees["inline"] == trees["helper"] == trees["auto"]
    # and the data reads back, checked against the CRC32C the writes recorded
    rng = np.random.default_rng(1234)
    vec = rng.standard_normal((600_000, 3))
    with colfile.File(tmp_path / "helper", verify=True) as f:
        got = f["vec"][:]
        assert got.shape == vec.shape
        assert np.count_nonzero(np.isnan(got)) > 0
        np.testing.assert_array_equal(got[~np.isnan(got).any(axis=1)], vec[~np.isnan(got).any(axis=1)])
        assert len(f["ints"][:]) == 2_500_000


def test_bad_placement_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="digest='fast'"):
        colfile.File(tmp_path / "f", "w", digest="fast")
    with pytest.raises(colfile.Error) as info:
        _cf.open(str(tmp_path / "g"),
                 CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_DIGEST_INLINE | CF_OPEN_DIGEST_HELPER)
    assert info.value.code == CF_EARG
    assert str(tmp_path / "g") in str(info.value) and "DIGEST_INLINE" in str(info.value)


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    here = str(Path(colfile.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return {k: v for k, v in env.items() if not k.startswith(("PMI_", "OMPI_", "HYDRA_"))}


def iosim_under(cpus: str, *args: str) -> dict[str, object]:
    taskset = shutil.which("taskset")
    if taskset is None:
        pytest.skip("no taskset")
    proc = subprocess.run([taskset, "-c", cpus, sys.executable, "-m", "colfile.cli", "iosim",
                           "--rows", "1000", "--json", *args],
                          env=child_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_auto_is_inline_on_one_cpu() -> None:
    """A process pinned to one CPU has no core for a helper."""
    report = iosim_under("0")
    assert report["digest"] == "auto" and report["digest_used"] == "inline"
    # an explicit choice wins over the machine
    assert iosim_under("0", "--digest", "helper")["digest_used"] == "helper"


def test_auto_is_helper_with_a_free_cpu() -> None:
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs CPUs 0 and 1")
    report = iosim_under("0,1")
    assert report["digest_used"] == "helper"
    assert iosim_under("0,1", "--digest", "inline")["digest_used"] == "inline"
