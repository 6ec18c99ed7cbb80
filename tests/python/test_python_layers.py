"""The Python package is layered: one binding tier (colfile/_core/) is the
only code that touches cffi; no module imports a colfile module inside a
function (the way import cycles get hidden); the CLI and the compat layer
build on colfile's public Python API (compat with the exceptions listed in
COMPAT_PRIVATE); CLI subcommands share helpers through
cli/_*.py modules, never by importing each other; and no source file grows
past MAX_LINES.  The checker runs on the package and, so that it cannot
pass by accident, on small trees that break each rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "colfile"

MAX_LINES = 900

#: The loader and generated declarations of the binding: what the tier wraps.
BINDING = {"_ffi.py", "_ffi_abi.py", "_cdef.py"}
#: The modules whose import means "talking to C".
CFFI_MODULES = {"cffi", "_cffi_backend", "colfile._ffi", "colfile._ffi_abi", "colfile._cdef"}

#: Private modules colfile.compat.bigfile still imports, and why: bigfile's
#: semantics have no public Python spelling (blocks written by several
#: handles sharing the writer lock, CF_OPEN_NOLOCK; a block created and
#: committed at once; column handles without a File).  The list is exact:
#: a new private import fails, and so does one that is gone (shorten it).
COMPAT_PRIVATE = {
    "compat/bigfile.py": {"colfile._constants", "colfile._core.column", "colfile._core.file",
                          "colfile._ints"},
    "compat/_base.py": {"colfile._constants", "colfile._core.column", "colfile._core.file"},
    "compat/_column.py": {"colfile._constants", "colfile._core.file", "colfile._ints"},
}


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["colfile", *parts])


def _resolve(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    """The absolute module an ``from ... import`` names."""
    if not node.level:
        return node.module or ""
    base = here.split(".")
    if not is_package:
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(tree: ast.Module, here: str, is_package: bool) -> list[tuple[ast.AST, list[str]]]:
    """Every import statement with the modules (or module.name) it brings in."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.append((node, [a.name for a in node.names]))
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(node, here, is_package)
            found.append((node, [f"{mod}.{a.name}" for a in node.names] + [mod]))
    return found


def _function_local(tree: ast.Module) -> set[int]:
    """The ids of import nodes inside a function body."""
    inner: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    inner.add(id(sub))
    return inner


def _private(name: str) -> bool:
    """A name with a private part (``colfile._ints``, ``colfile.file._x``);
    dunder names (``colfile.__version__``) are public."""
    return any(part.startswith("_") and not part.endswith("__")
               for part in name.split(".")[1:])


def _is_module(name: str, root: Path) -> bool:
    parts = name.split(".")[1:]
    return bool(parts) and ((root.joinpath(*parts).with_suffix(".py")).exists()
                            or (root.joinpath(*parts) / "__init__.py").exists())


def violations(root: Path, compat_private: dict[str, set[str]] | None = None) -> list[str]:
    """Every way the package under ``root`` (a ``colfile`` directory) breaks
    the rules above."""
    allowed = COMPAT_PRIVATE if compat_private is None else compat_private
    problems = []
    for path in sorted(root.rglob("*.py")):
        rel = _rel(path, root)
        text = path.read_text()
        lines = text.count("\n") + (not text.endswith("\n"))
        if lines > MAX_LINES:
            problems.append(f"{rel}: {lines} lines (at most {MAX_LINES})")
        here = _module_name(path, root)
        tree = ast.parse(text, rel)
        local = _function_local(tree)
        in_tier = rel.startswith("_core/") or rel in BINDING
        in_cli = rel.startswith("cli/")
        in_compat = rel.startswith("compat/")
        subcommand = in_cli and not Path(rel).name.startswith("_")
        private_seen: set[str] = set()
        for node, names in _imports(tree, here, path.name == "__init__.py"):
            where = f"{rel}:{node.lineno}"  # type: ignore[attr-defined]
            ours = [n for n in names if n == "colfile" or n.startswith("colfile.")]
            if not in_tier and any(n in CFFI_MODULES or n.split(".")[0] == "cffi"
                                   for n in names):
                problems.append(f"{where}: imports cffi or the binding outside colfile/_core")
            if ours and id(node) in local:
                problems.append(f"{where}: imports {ours[-1]} inside a function")
            if in_cli or in_compat:
                for n in ours[:-1] if isinstance(node, ast.ImportFrom) else ours:
                    own = "colfile.cli" if in_cli else "colfile.compat"
                    if n == own or n.startswith(own + "."):
                        continue
                    if _private(n):
                        # the module used: the one imported, or the one a
                        # name is imported from
                        private_seen.add(n if isinstance(node, ast.Import) or _is_module(n, root)
                                         else n.rsplit(".", 1)[0])
            if subcommand and isinstance(node, ast.ImportFrom):
                for n in names:
                    parts = n.split(".")
                    if (len(parts) >= 3 and parts[:2] == ["colfile", "cli"]
                            and not parts[2].startswith("_") and parts[2] != here.split(".")[-1]
                            and (root / "cli" / f"{parts[2]}.py").exists()):
                        problems.append(f"{where}: subcommand imports subcommand {parts[2]}")
                        break
        if in_cli or in_compat:
            for node in ast.walk(tree):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id == "colfile" and _private(f"colfile.{node.attr}")):
                    private_seen.add(f"colfile.{node.attr}")
            expected = allowed.get(rel, set())
            if private_seen != expected:
                extra = sorted(private_seen - expected)
                gone = sorted(expected - private_seen)
                if extra:
                    problems.append(f"{rel}: uses private parts of colfile: {extra}")
                if gone:
                    problems.append(f"{rel}: no longer uses {gone}: shorten COMPAT_PRIVATE")
    return problems


def test_package_follows_the_layers() -> None:
    assert violations(PACKAGE) == []


def test_the_tier_is_the_only_cffi_user() -> None:
    """The tier exists and holds the calls: every lib.cf_* call is in it."""
    users = sorted(_rel(p, PACKAGE) for p in PACKAGE.rglob("*.py")
                   if "lib()." in p.read_text() or ".cf_" in p.read_text().replace("``cf_", ""))
    assert users and all(u.startswith("_core/") or u in BINDING for u in users), users


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "colfile"
    for rel, text in {"__init__.py": "", "_core/__init__.py": "", "cli/__init__.py": "",
                      "compat/__init__.py": "", **files}.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


@pytest.mark.parametrize("files, expected", [
    ({"column.py": "from ._ffi import lib\n"}, "imports cffi or the binding outside"),
    ({"column.py": "import cffi\n"}, "imports cffi or the binding outside"),
    ({"cli/ls.py": "from colfile import _ffi\n"}, "imports cffi or the binding outside"),
    ({"column.py": "def f():\n    from .file import File\n"}, "inside a function"),
    ({"cli/ls.py": "def f():\n    import colfile\n"}, "inside a function"),
    ({"compat/x.py": "from .._ints import whole\n"}, "uses private parts"),
    ({"cli/ls.py": "from ..file import _open_flags\n"}, "uses private parts"),
    ({"cli/ls.py": "import colfile\ncolfile._ffi.lib()\n"}, "uses private parts"),
    ({"cli/ls.py": "from .cat import formatter\n", "cli/cat.py": ""}, "imports subcommand cat"),
    ({"cli/ls.py": "from . import cat\n", "cli/cat.py": ""}, "imports subcommand cat"),
    ({"big.py": "x = 1\n" * (MAX_LINES + 1)}, "lines (at most"),
])
def test_checker_finds_each_break(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    found = violations(_tree(tmp_path, files), compat_private={})
    assert any(expected in p for p in found), found


def test_checker_accepts_what_the_rules_allow(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "_core/column.py": "from .._ffi import lib\ndef f():\n    import os\n",
        "column.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from .file import File\nfrom ._core import column\n",
        "cli/ls.py": "import colfile\nfrom colfile import mpi\nfrom ._common import x\n"
                     "def f():\n    from mpi4py import MPI\n",
        "cli/_common.py": "x = 1\n",
        "cli/__init__.py": "from . import ls\n",
        "ok.py": "x = 1\n" * MAX_LINES,
    })
    assert violations(root, compat_private={}) == []


def test_compat_allowance_is_exact(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"compat/x.py": "from .._ints import whole\n"})
    assert violations(root, compat_private={"compat/x.py": {"colfile._ints"}}) == []
    found = violations(root, compat_private={"compat/x.py": {"colfile._ints", "colfile._core"}})
    assert any("shorten COMPAT_PRIVATE" in p for p in found), found
