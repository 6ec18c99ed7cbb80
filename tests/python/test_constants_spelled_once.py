"""libcolfile's flags and codes are spelled once in Python: in
colfile/_constants.py, which tools/gen_ffi.py derives from the C headers.
No other module of the package binds a C constant's name (CF_*) to a
number, or pairs a number with a C name in a table (``{-2: "CF_ENOENT"}``):
those are hand copies that drift when a header changes.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "colfile"

#: The generated files, where the values are meant to be.
GENERATED = {"_constants.py", "_cdef.py", "_ffi_abi.py"}


def _number(node: ast.AST | None) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _c_name(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("CF_")


def hand_copies(root: Path) -> list[str]:
    """Every place under root that spells a C constant's value by hand."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in GENERATED:
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id.startswith("CF_") and _number(node.value):
                        found.append(f"{rel}:{node.lineno}: {t.id} = a number")
            elif isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values):
                    if (_number(k) and _c_name(v)) or (_c_name(k) and _number(v)):
                        found.append(f"{rel}:{node.lineno}: a table of C names and numbers")
                        break
    return found


def test_the_package_spells_c_constants_once() -> None:
    assert (PACKAGE / "_constants.py").read_text().count("CF_ENOENT") >= 2
    assert hand_copies(PACKAGE) == []


def test_checker_catches_each_kind_of_copy(tmp_path: Path) -> None:
    (tmp_path / "_constants.py").write_text("CF_ENOENT = -2\n")
    (tmp_path / "a.py").write_text("CF_OPEN_WRITE = 1\nCF_ENOENT: int = -2\nOPEN = CF_OPEN_WRITE\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text(
        "NAMES = {-2: 'CF_ENOENT'}\nBY = {'CF_EIO': -1}\nOK = {1: 'one', 'CF_X': 'y'}\n")
    assert hand_copies(tmp_path) == [
        "a.py:1: CF_OPEN_WRITE = a number",
        "a.py:2: CF_ENOENT = a number",
        "sub/b.py:1: a table of C names and numbers",
        "sub/b.py:2: a table of C names and numbers",
    ]
