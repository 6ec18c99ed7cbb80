"""dtype errors of File.create name the column; spellings numpy takes but
colfile cannot store, or that neither takes, get the core's message for the
text as given (the C API's message), with a hint for type names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import colfile


@pytest.mark.parametrize("spec,why", [
    ("f3", "unreasonable dtype 'f3': kind 'f' has no width 3 (allowed: 2, 4 or 8)"),
    (("f3", 2), "unreasonable dtype 'f3': kind 'f' has no width 3 (allowed: 2, 4 or 8)"),
    ("f16", "unreasonable dtype 'f16': kind 'f' has no width 16 (allowed: 2, 4 or 8)"),
    ("U4", "unreasonable dtype 'U4': unsupported kind 'U' (colfile stores i u f c b S)"),
    ("floot", "unreasonable dtype 'floot': width 'loot' is not a decimal number"),
    ("<double", "unreasonable dtype '<double': unsupported kind 'd' (colfile stores i u f c b S); "
                "did you mean '<f8'?"),
])
def test_create_names_the_column(tmp_path: Path, spec: object, why: str) -> None:
    with colfile.File(tmp_path / "f", "w") as f:
        with pytest.raises(colfile.DTypeError) as info:
            f.create("g/x", spec, size=3)
        assert str(info.value) == f"{tmp_path / 'f'}/g/x: {why}"
        assert info.value.code == colfile.errors.CF_EDTYPE
        assert f.columns == []


def test_numpy_spellings_still_work(tmp_path: Path) -> None:
    with colfile.File(tmp_path / "f", "w") as f:
        assert f.create("a", "float64", size=2).dtype == np.float64
        assert f.create("b", np.dtype(">i4"), size=2).dtype == np.dtype(">i4")
        assert f.create("c", ("float32", 3), size=2).shape == (2, 3)
