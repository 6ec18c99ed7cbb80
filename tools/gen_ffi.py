#!/usr/bin/env python3
"""Generate the C-to-Python boundary files from the C headers.

    python3 tools/gen_ffi.py            write them
    python3 tools/gen_ffi.py --check    exit 1 if a committed one is stale

Three files of python/colfile/ are made from include/colfile_errors.h,
include/colfile.h, include/colfile_binding.h and include/colfile_stream.h
(not colfile_mpi.h: the Python MPI layer talks to MPI through mpi4py), and
committed:

``_cdef.py``
    the declarations cffi reads: the headers with comments, preprocessor
    lines and export macros removed, the error X-macro list expanded into
    its enum, integer ``#define``\\ s evaluated, and array sizes spelled as
    numbers (cffi's parser knows no macros).
``_ffi_abi.py``
    cffi's precompiled type tables of those declarations ("out-of-line ABI
    mode"): parsing C with pycparser takes about 100 ms at every
    ``import colfile``; these tables load in about a millisecond.  Nothing
    is compiled: the package still loads libcolfile with ``ffi.dlopen``.
``_constants.py``
    every enum value and integer ``#define`` of the headers under its C
    name (``CF_OPEN_WRITE``, ``CF_ENOENT``, ``CF_PLAN_BLOB_BYTES``), and
    the error codes' names and descriptions, for the Python modules that
    spell flags and codes (without cffi).

tests/python/test_ffi.py regenerates all three in memory and fails when a
committed file differs.

It also writes the Fortran modules' integer parameters,
``fortran/<module>_const.inc`` (fortran/gen_const.py, also run by
fortran/gen_rw.py), so that one command brings every binding in step
with a header change.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "include"
PACKAGE = ROOT / "python" / "colfile"
MODULE = "colfile._ffi_abi"

#: The headers the Python binding declares, in order.
HEADERS = ("colfile_errors.h", "colfile.h", "colfile_binding.h", "colfile_stream.h")

#: Macros that mark exported functions; cffi needs the bare declarations.
EXPORT_MACROS = ("CF_API", "CF__ERRORS_API")

#: Conditions of #if blocks that only a C compiler needs (C++ linkage, the
#: export attribute): their content is left out.
COMPILER_ONLY = ("__cplusplus", "__GNUC__")

_ERROR_ITEM = re.compile(r'X\(\s*(CF_\w+)\s*,\s*(-?\d+)\s*,\s*"((?:[^"\\]|\\.)*)"\s*\)')


class HeaderError(Exception):
    """A header construct this generator does not understand."""


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def error_list(text: str) -> list[tuple[str, int, str]]:
    """(name, value, description) of each X(...) item of CF_ERROR_LIST."""
    m = re.search(r"#define CF_ERROR_LIST\(X\)((?:[^\n]*\\\n)*[^\n]*)", text)
    if not m:
        raise HeaderError("colfile_errors.h: no #define CF_ERROR_LIST(X)")
    items = [(n, int(v), t) for n, v, t in _ERROR_ITEM.findall(m.group(1))]
    if not items:
        raise HeaderError("colfile_errors.h: CF_ERROR_LIST has no X(...) items")
    return items


def _int_expr(expr: str) -> int | None:
    """The value of a #define's integer constant expression ("64",
    "((int64_t)256 << 20)"), or None if it is not one."""
    expr = re.sub(r"\(\s*u?int(?:8|16|32|64)_t\s*\)", "", expr).strip()
    expr = re.sub(r"(?<=\d)[uUlL]+\b", "", expr)
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.LShift,
               ast.Mult, ast.Add, ast.Sub, ast.USub, ast.BitOr)
    if not all(isinstance(n, allowed) for n in ast.walk(tree)):
        return None
    if not all(isinstance(n.value, int) for n in ast.walk(tree) if isinstance(n, ast.Constant)):
        return None
    return int(eval(compile(tree, "define", "eval")))


def _declarations(name: str, text: str, defines: dict[str, int]) -> str:
    """The C declarations of one header, as cffi's parser takes them;
    fills `defines` with its integer #defines."""
    out: list[str] = []
    skipping: list[bool] = []  # one entry per open #if: drop its content?
    lines = strip_comments(text).split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        while line.endswith("\\") and i + 1 < len(lines):  # continued directive
            i += 1
            line = line[:-1] + " " + lines[i]
        i += 1
        s = line.strip()
        if s.startswith("#"):
            directive = s[1:].strip()
            word = directive.split(None, 1)[0] if directive else ""
            if word in ("if", "ifdef", "ifndef"):
                outer = bool(skipping and skipping[-1])
                skipping.append(outer or any(c in directive for c in COMPILER_ONLY))
            elif word in ("else", "elif"):
                if not skipping:
                    raise HeaderError(f"{name}: #{word} without #if")
            elif word == "endif":
                if not skipping:
                    raise HeaderError(f"{name}: #endif without #if")
                skipping.pop()
            elif word == "define" and not (skipping and skipping[-1]):
                m = re.fullmatch(r"define\s+(CF_[A-Z0-9_]+)\s+(.+)", directive)
                if m:
                    value = _int_expr(m.group(2))
                    if value is not None:
                        defines[m.group(1)] = value
            continue
        if skipping and skipping[-1]:
            continue
        out.append(line.rstrip())
    if skipping:
        raise HeaderError(f"{name}: #if without #endif")
    body = "\n".join(out)
    for macro in EXPORT_MACROS:
        body = re.sub(rf"\b{macro}\s+", "", body)
    if name == "colfile_errors.h":
        items = error_list(text)
        enum = "enum cf_error_code {\n" + ",\n".join(
            f"    {n} = {v}" for n, v, _ in items) + "\n};"
        body, n = re.subn(r"enum cf_error_code\s*\{.*?\};", enum, body, flags=re.S)
        if n != 1:
            raise HeaderError("colfile_errors.h: no enum cf_error_code")
    # array sizes: cffi knows no macros
    body = re.sub(r"\[(CF_[A-Z0-9_]+)\]",
                  lambda m: f"[{defines[m.group(1)]}]" if m.group(1) in defines else m.group(0),
                  body)
    body = "\n".join(line for line in body.split("\n") if line.strip())
    return re.sub(r"\s*\n\s*,", ",", body)


def parse_headers(include: Path = INCLUDE) -> tuple[str, dict[str, int], list[tuple[str, int, str]]]:
    """(cdef, integer #defines, error list) of the headers."""
    defines: dict[str, int] = {}
    parts = []
    for name in HEADERS:
        text = (include / name).read_text()
        parts.append(f"/* {name} */\n" + _declarations(name, text, defines))
    errors = error_list((include / "colfile_errors.h").read_text())
    # the #defines cffi can give (lib.CF_PLAN_BLOB_BYTES); include guards have no value
    consts = "\n".join(f"#define {k} {v}" for k, v in defines.items())
    cdef = "\n\n".join(parts) + "\n\n/* integer #defines */\n" + consts + "\n"
    return cdef, defines, errors


def render_cdef(cdef: str) -> str:
    return (
        '"""The C declarations of libcolfile\'s API, as cffi reads them.\n\n'
        "Generated by tools/gen_ffi.py from include/"
        + ", include/".join(HEADERS) + ": do not edit;\n"
        "change the headers and run ``python3 tools/gen_ffi.py``, which also\n"
        "writes ``_ffi_abi.py`` (these declarations as cffi's precompiled type\n"
        "tables, loaded at import) and ``_constants.py``.\n"
        '"""\n\n'
        "#: The declarations of the headers, without comments and macros.\n"
        f'CDEF = r"""\n{cdef}"""\n'
    )


def _enum_values(cdef: str) -> list[tuple[str, list[tuple[str, int]]]]:
    """(enum name, [(constant, value)]) of every enum of the cdef, as cffi
    evaluates them."""
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(cdef)
    found = []
    for enum in re.findall(r"\benum\s+(\w+)\s*\{", cdef):
        elements = ffi.typeof(f"enum {enum}").relements
        found.append((enum, sorted(elements.items(), key=lambda kv: (kv[1] < 0, abs(kv[1])))))
    return found


def render_constants(cdef: str, defines: dict[str, int],
                     errors: list[tuple[str, int, str]]) -> str:
    lines = [
        '"""The constants of libcolfile\'s C headers, under their C names.',
        "",
        "Generated by tools/gen_ffi.py from",
        "include/" + ", include/".join(HEADERS) + ":",
        "do not edit; change the headers and run ``python3 tools/gen_ffi.py``.",
        "Python spells flags and codes with these names only:",
        "``CF_OPEN_WRITE | CF_OPEN_CREATE``, ``err.code == CF_ENOENT``,",
        "``ERROR_NAMES[code]``.",
        '"""',
        "",
    ]
    names: list[str] = []
    for enum, elements in _enum_values(cdef):
        lines.append(f"# enum {enum}")
        for k, v in elements:
            lines.append(f"{k} = {v}")
            names.append(k)
        lines.append("")
    lines.append("# integer #defines")
    for k, v in defines.items():
        lines.append(f"{k} = {v}")
        names.append(k)
    lines.append("")
    lines.append("#: The symbolic name of each error code (what cf_error_name gives).")
    lines.append("ERROR_NAMES: dict[int, str] = {")
    lines += [f"    {v}: {n!r}," for n, v, _ in errors]
    lines.append("}")
    lines.append("")
    lines.append("#: The short description of each error code (what cf_error_text gives).")
    lines.append("ERROR_TEXTS: dict[int, str] = {")
    lines += [f"    {v}: {t!r}," for _, v, t in errors]
    lines.append("}")
    lines.append("")
    names += ["ERROR_NAMES", "ERROR_TEXTS"]
    lines.append("__all__ = [")
    lines += [f"    {n!r}," for n in names]
    lines.append("]")
    return "\n".join(lines) + "\n"


def render_abi(cdef: str) -> str:
    import cffi

    builder = cffi.FFI()
    builder.cdef(cdef)
    builder.set_source(MODULE, None)  # None: ABI mode, nothing to compile
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.py")
        with contextlib.redirect_stdout(io.StringIO()):  # cffi says "generating ..."
            builder.emit_python_code(out)
        body = Path(out).read_text()
    head = (
        "# Generated by tools/gen_ffi.py from include/" + ", include/".join(HEADERS)
        + ":\n# do not edit; change the headers and run `python3 tools/gen_ffi.py`.\n"
        f"# cffi {cffi.__version__}, out-of-line ABI mode.\n"
        "# mypy: ignore-errors\n"
    )
    return head + body


def render_all(include: Path = INCLUDE) -> dict[str, str]:
    """File name (in python/colfile/) -> the text it should hold."""
    cdef, defines, errors = parse_headers(include)
    return {
        "_cdef.py": render_cdef(cdef),
        "_ffi_abi.py": render_abi(cdef),
        "_constants.py": render_constants(cdef, defines, errors),
    }


def stale(package: Path = PACKAGE, include: Path = INCLUDE) -> list[str]:
    """The generated files whose committed text differs from what the
    headers give now."""
    wanted = render_all(include)
    return sorted(n for n, text in wanted.items()
                  if not (package / n).exists() or (package / n).read_text() != text)


def fortran_files(include: Path = INCLUDE) -> dict[Path, str]:
    """Path -> text of the Fortran parameter files the headers give."""
    sys.path.insert(0, str(ROOT / "fortran"))
    try:
        import gen_const
        from gen_rw import HEADER
    finally:
        sys.path.remove(str(ROOT / "fortran"))
    return {ROOT / "fortran" / n: t for n, t in gen_const.const_files(HEADER, include).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a generated file is stale")
    args = parser.parse_args(argv)
    fortran = fortran_files()
    if args.check:
        old = [f"python/colfile/{n}" for n in stale()]
        old += [str(p.relative_to(ROOT)) for p, t in fortran.items()
                if not p.exists() or p.read_text() != t]
        for n in old:
            print(f"stale: {n} (run python3 tools/gen_ffi.py)", file=sys.stderr)
        return 1 if old else 0
    for path, text in [*((PACKAGE / n, t) for n, t in render_all().items()), *fortran.items()]:
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)} ({len(text)} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
