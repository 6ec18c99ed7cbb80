"""colfile query --out copies the attributes of the File and of the groups
above the copied columns, not only the columns' own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def test_out_copies_file_and_group_attributes(tmp_path: Path, cli: Any) -> None:
    import colfile

    src, dst = str(tmp_path / "snap"), str(tmp_path / "slab")
    with colfile.File(src, "w") as f:
        f.create("1/ID", data=np.arange(20, dtype="i8"), nfile=2)
        f.create("1/sub/Mass", data=np.linspace(0, 1, 20))
        f.create("2/Other", data=np.arange(20.0))
        f.attrs["BoxSize"] = 1000.0
        f.attrs["Time"] = np.float32(0.5)
        f.attrs["Label"] = "run 7"
        f["1/"].attrs["MassTable"] = np.arange(6.0)
        f["1/sub/"].attrs["Unit"] = "Msun/h"
        f["2/"].attrs["Skip"] = 1  # no column of group 2 is copied
        f["1/ID"].attrs["Kind"] = "dm"
    status, out, err = cli("query", src, "-g", "1", "ID < 5", "-c", "ID,sub/Mass", "--out", dst)
    assert status == 0, err
    assert out.startswith("wrote 5 rows of 2 columns")
    with colfile.File(src) as f, colfile.File(dst) as g:
        assert sorted(g.columns) == ["1/ID", "1/sub/Mass"]
        for am_src, am_dst in [(f.attrs, g.attrs), (f["1/"].attrs, g["1/"].attrs),
                               (f["1/sub/"].attrs, g["1/sub/"].attrs),
                               (f["1/ID"].attrs, g["1/ID"].attrs)]:
            assert sorted(am_dst) == sorted(am_src)
            for name in am_src:
                assert am_dst.raw(name) == am_src.raw(name)
        assert g.attrs["BoxSize"] == 1000.0 and g.attrs["Time"].dtype == np.float32
        assert g["1/"].attrs["MassTable"].tolist() == list(range(6))
        assert g.get("2/") is None
        assert g["1/ID"][:].tolist() == list(range(5))
