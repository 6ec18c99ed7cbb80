"""The File's generation (docs/format.md 8.5): every writer that adds,
removes or replaces a column or group appends ``+`` to
``.colfile-catalog/generation`` before the change and ``-`` once it is in
place, a catalog records the generation it was
built at, and a reader uses a catalog only while the generation is still
that one -- whatever the directory timestamps say (on Lustre and GPFS they
may not show another node's change; file sizes do)."""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

import colfile
from test_golden import CANONICAL, _copy, _lstat_stamp, parse_catalog, write_catalog


def _generation(root: Path) -> int:
    p = root / ".colfile-catalog" / "generation"
    return p.stat().st_size if p.exists() else 0


def _recorded(root: Path) -> int:
    buf = (root / ".colfile-catalog" / "colfile-catalog-index").read_bytes()
    assert buf[:8] == b"CFIDX4\n\0"
    return int(struct.unpack_from("<Q", buf, 8)[0])


def test_writers_bump_the_generation(tmp_path: Path, lib: Any) -> None:
    root = tmp_path / "F"
    with colfile.File(root, "w") as f:
        f.create("a", data=np.arange(3))
    assert _generation(root) == 2  # a published
    with colfile.File(root, "a") as f:
        f.create("g/b", data=np.arange(4))
        f.attrs["t"] = 1.0  # attributes change no listing
        f["a"][0] = 7  # nor an in-place update
    assert _generation(root) == 4
    with colfile.File(root, "a") as f:
        f.create("a", data=np.arange(5), overwrite=True)  # a new version swapped in
        assert _generation(root) == 6
        del f["a"]
        assert _generation(root) == 8
        del f["g/"]
        assert _generation(root) == 10
        f.create("c", data=np.arange(2))
    assert _generation(root) == 12
    colfile.File(root, "a").close()
    # the catalog a writer's close leaves records the generation it saw
    assert _recorded(root) == 12
    with colfile.File(root) as f:
        assert sorted(f.keys()) == ["c"]
    from colfile.cli import main
    assert main(["mv", str(root), "c", "h/d"]) == 0  # a rename
    assert _generation(root) == 14
    # each change marked before and after it
    assert (root / ".colfile-catalog" / "generation").read_bytes() == b"+-" * 7


def test_a_new_generation_retires_the_catalog(tmp_path: Path, lib: Any) -> None:
    """The golden File with a catalog whose header of crc/check is false
    (four rows instead of nine): a reader sees it while the generation and
    the stamps hold, and the files once a writer has bumped the generation,
    though no stamp changed."""
    golden = _copy(tmp_path)
    cat = parse_catalog(CANONICAL.read_bytes())
    assert cat["generation"] == 0
    i = [c["name"] for c in cat["cols"]].index(b"crc/check")
    state, st, data = cat["cols"][i]["files"][0]
    cat["cols"][i]["files"][0] = (state, st, data.replace(b"9 : 477 : 477", b"4 : 202 : 202"))
    (golden / ".colfile-catalog").mkdir()  # before the stamps: it changes the root's
    target = golden / ".colfile-catalog" / "colfile-catalog-v1"

    def install() -> None:
        tmp = golden / ".colfile-catalog" / "new"
        tmp.write_bytes(write_catalog(cat, _lstat_stamp(golden)))
        os.rename(tmp, target)

    install()
    with colfile.File(str(golden)) as f:
        assert f["crc/check"].size == 4  # the catalog's (false) header
    with open(golden / ".colfile-catalog" / "generation", "ab") as fh:
        fh.write(b"\n")  # what a writer on another node does after its change
    with colfile.File(str(golden)) as f:
        assert f["crc/check"].size == 9  # the files'
        assert "crc/check" in f.keys()
    # a catalog of the current generation is used again
    cat["generation"] = 1
    install()
    with colfile.File(str(golden)) as f:
        assert f["crc/check"].size == 4
    # a generation that is not a regular file proves nothing
    (golden / ".colfile-catalog" / "generation").unlink()
    os.symlink("elsewhere", golden / ".colfile-catalog" / "generation")
    with colfile.File(str(golden)) as f:
        assert f["crc/check"].size == 9
