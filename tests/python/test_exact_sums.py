"""Chunk sums are exact (docs/format.md 8.4): the sum recorded for a chunk
is its values' sum correctly rounded to a double -- math.fsum's answer --
whatever the writes that brought the values, so Files written with other
splits of the same rows are the same bytes."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

import colfile

CHUNK = 257


def _wide(rng: np.random.Generator, n: int, emax: int = 300) -> np.ndarray:
    """Doubles of both signs over exponents [-emax, emax] (partial sums stay finite)."""
    x = np.ldexp(rng.random(n), rng.integers(-emax, emax + 1, n))
    return np.where(rng.random(n) < 0.5, -x, x)


def _want(values: np.ndarray) -> float:
    """The correctly rounded sum of the values that are not NaN."""
    v = values[~np.isnan(values)].astype("f8")
    pos, neg = bool(np.any(v == np.inf)), bool(np.any(v == -np.inf))
    if pos and neg:
        return math.nan
    if pos or neg:
        return math.inf if pos else -math.inf
    return math.fsum(v.tolist()) + 0.0


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or np.float64(a).tobytes() == np.float64(b).tobytes()


def _write(path: str, data: np.ndarray, cuts: list[int], order: list[int]) -> None:
    """Write data as the pieces between the cuts, in the given order."""
    dtype = data.dtype if data.ndim == 1 else np.dtype((data.dtype, data.shape[1]))
    with colfile.File(path, "w") as f:
        c = f.create("c", dtype, size=len(data), chunk_rows=CHUNK, nfile=2)
        for i in order:
            lo, hi = cuts[i], cuts[i + 1]
            c[lo:hi] = data[lo:hi]
        c.close()


def _check_sums(path: str, data: np.ndarray) -> None:
    with colfile.File(path, "r") as f:
        c = f["c"]
        stats = c.chunk_stats()
    stats = stats.reshape(len(stats), -1)
    cols = data.reshape(len(data), -1)
    for rec in stats:
        for j, r in enumerate(rec):
            assert r["valid"]
            lo, hi = int(r["first_row"]), int(r["first_row"] + r["rows"])
            want = _want(cols[lo:hi, j])
            assert _same(float(r["sum"]), want), (lo, hi, j, float(r["sum"]), want)


def _tree(path: str) -> dict[str, bytes]:
    """The File's files but the catalog (it stamps times: docs/format.md 8.5)."""
    root = Path(path)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".colfile-catalog" not in p.parts}


@pytest.mark.parametrize("kind", ["f8", "f8x3", "f4", "f8-special"])
def test_sums_are_fsum_whatever_the_split(tmp_path: Path, kind: str) -> None:
    rng = np.random.default_rng(sum(map(ord, kind)))
    n = 3001
    if kind == "f8x3":
        data = _wide(rng, 3 * n).reshape(n, 3)
    elif kind == "f4":
        data = _wide(rng, n, 60).astype("f4")
    else:
        data = _wide(rng, n)
        if kind == "f8-special":
            data[rng.random(n) < 0.02] = np.nan
            data[rng.random(n) < 0.002] = np.inf
            data[rng.random(n) < 0.001] = -np.inf
    trees = []
    for trial in range(4):
        k = 1 if trial == 0 else int(rng.integers(2, 40))
        cuts = [0, *sorted(int(v) for v in rng.integers(0, n + 1, k - 1)), n]
        order = list(range(k)) if trial < 2 else [int(i) for i in rng.permutation(k)]
        p = os.fspath(tmp_path / f"t{trial}")
        _write(p, data, cuts, order)
        _check_sums(p, data)
        trees.append(_tree(p))
    # the same bytes in every File
    for t in trees[1:]:
        assert t.keys() == trees[0].keys()
        for name in t:
            assert t[name] == trees[0][name], name


def test_integer_sums_beyond_2_53_are_exact(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    data = rng.integers(-(2**63), 2**63 - 1, 2000, dtype="i8")
    p = os.fspath(tmp_path / "i")
    cuts = [0, *range(37, 2000, 37), 2000]
    _write(p, data, cuts, [int(i) for i in rng.permutation(len(cuts) - 1)])
    with colfile.File(p, "r") as f:
        stats = f["c"].chunk_stats()
    for r in stats:
        lo, hi = int(r["first_row"]), int(r["first_row"] + r["rows"])
        exact = sum(int(v) for v in data[lo:hi])
        assert float(r["sum"]) == float(exact)  # Python rounds int -> float correctly
