"""The C tree is the module graph: src/ holds one folder per layer, src/LAYERS
lists them lowest first, and a source file includes headers of its own layer
and of lower layers only.  An include that points upward fails here (the
checker is tested on a small tree of its own, so it cannot pass by accident).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The public headers: colfile.h, its error list and colfile_binding.h are below every layer;
# colfile_mpi.h is the mpi layer's own header.
PUBLIC = {"colfile.h": None, "colfile_errors.h": None, "colfile_binding.h": None, "colfile_stream.h": None,
          "colfile_mpi.h": "mpi"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def read_layers(src: Path) -> list[str]:
    lines = (src / "LAYERS").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def violations(src: Path) -> list[str]:
    """Every way the tree under `src` breaks its declared layering."""
    layers = read_layers(src)
    rank = {name: i for i, name in enumerate(layers)}
    problems = []
    if len(rank) != len(layers):
        problems.append(f"{src / 'LAYERS'}: a layer is listed twice")
    for p in sorted(src.iterdir()):
        if p.is_file() and p.suffix in (".c", ".h"):
            problems.append(f"{p}: a source file outside every layer folder")
        if p.is_dir() and p.name not in rank:
            problems.append(f"{p}: a folder src/LAYERS does not list")
    for name in layers:
        if not (src / name).is_dir():
            problems.append(f"{src / 'LAYERS'}: layer {name!r} has no folder")
    # Which layer each header belongs to; names are unique across layers
    # (the build puts every layer folder on the include path).
    home: dict[str, str] = {}
    for name in layers:
        folder = src / name
        for h in sorted(folder.rglob("*.h")) if folder.is_dir() else []:
            if h.name in home:
                problems.append(f"{h}: header name also in src/{home[h.name]}")
            home[h.name] = name
    for name in layers:
        folder = src / name
        if not folder.is_dir():
            continue
        for f in sorted(folder.rglob("*")):
            if f.suffix not in (".c", ".h"):
                continue
            for inc in INCLUDE.findall(f.read_text(errors="replace")):
                base = inc.rsplit("/", 1)[-1]
                if base != inc:
                    problems.append(f"{f}: includes {inc!r} by a path (name the header alone)")
                if base in PUBLIC:
                    target = PUBLIC[base]
                    if target is None:
                        continue
                elif base in home:
                    target = home[base]
                else:
                    problems.append(f"{f}: includes {inc!r}, which no layer holds")
                    continue
                if rank[target] > rank[name]:
                    problems.append(
                        f"{f}: layer {name!r} includes {base!r} of layer {target!r}, "
                        "which src/LAYERS puts above it")
    return problems


def test_tree_keeps_its_layers() -> None:
    assert violations(ROOT / "src") == []


def test_the_layers_the_readme_names() -> None:
    # src/README.md is where a newcomer learns the layers: it names each one.
    readme = (ROOT / "src" / "README.md").read_text()
    for name in read_layers(ROOT / "src"):
        assert f"`{name}/`" in readme, name


def make_tree(tmp_path: Path, files: dict[str, str], layers: str = "low\nmid\nhigh\n") -> Path:
    src = tmp_path / "src"
    src.mkdir(parents=True)
    (src / "LAYERS").write_text("# lowest first\n" + layers)
    for rel, text in files.items():
        p = src / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return src


GOOD = {
    "low/a.h": '#include "colfile.h"\n',
    "low/a.c": '#include "a.h"\n',
    "mid/b.h": '#include "a.h"\n',
    "mid/b.c": '#include "b.h"\n#include "a.h"\n#include <stdio.h>\n',
    "high/c.c": '#include "b.h"\n#include "a.h"\n',
}


def test_checker_accepts_downward_and_same_layer_includes(tmp_path: Path) -> None:
    assert violations(make_tree(tmp_path, GOOD)) == []


@pytest.mark.parametrize("rel, text, what", [
    ("low/a.c", '#include "a.h"\n#include "b.h"\n', "includes 'b.h' of layer 'mid'"),
    ("mid/b.h", '#include "c.h"\n', "includes 'c.h' of layer 'high'"),
    ("mid/b.c", '#  include "../high/c.h"\n', "by a path"),
    ("mid/b.c", '#include "nowhere.h"\n', "no layer holds"),
])
def test_checker_catches_an_upward_include(tmp_path: Path, rel: str, text: str, what: str) -> None:
    files = dict(GOOD, **{"high/c.h": "\n", rel: text})
    found = violations(make_tree(tmp_path, files))
    assert len(found) >= 1 and all(rel.split("/")[1] in p for p in found), found
    assert any(what in p for p in found), found


def test_checker_catches_files_outside_the_layers(tmp_path: Path) -> None:
    files = dict(GOOD, **{"flat.c": "\n", "extra/d.c": "\n"})
    found = violations(make_tree(tmp_path, files))
    assert any("flat.c: a source file outside every layer folder" in p for p in found), found
    assert any("extra: a folder src/LAYERS does not list" in p for p in found), found
    found = violations(make_tree(tmp_path / "again", GOOD, layers="low\nmid\nhigh\ngone\n"))
    assert found == [f"{tmp_path / 'again' / 'src' / 'LAYERS'}: layer 'gone' has no folder"]


def test_checker_catches_the_public_mpi_header_below_mpi(tmp_path: Path) -> None:
    files = dict(GOOD, **{"mpi/m.c": '#include "colfile_mpi.h"\n', "high/c.c": '#include "colfile_mpi.h"\n'})
    found = violations(make_tree(tmp_path, files, layers="low\nmid\nhigh\nmpi\n"))
    assert len(found) == 1 and "high/c.c: layer 'high' includes 'colfile_mpi.h'" in found[0], found
