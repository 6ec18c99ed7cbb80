"""The cffi declarations match the public C headers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from colfile import _cdef, _ffi, _ffi_abi

INCLUDE = Path(__file__).parents[2] / "include"


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _count_params(params: str) -> int:
    params = params.strip()
    if params in ("", "void"):
        return 0
    depth, count = 0, 1
    for ch in params:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            count += 1
    return count


def _functions(text: str, marker: str | None) -> dict[str, int]:
    """name -> parameter count of the ``cf_*`` function declarations in C
    text (with ``marker``: only those declared after that macro)."""
    found = {}
    for stmt in _strip_comments(text).split(";"):
        if marker:
            if marker not in stmt:
                continue
            stmt = stmt.split(marker)[-1]
        else:
            stmt = re.split(r"[{}]", stmt)[-1]
            stmt = "\n".join(line for line in stmt.splitlines()
                             if not line.strip().startswith("#"))
        m = re.fullmatch(r"\s*[A-Za-z_][\w\s\*]*?[\s\*](cf_\w+)\s*\((.*)\)\s*", stmt, re.S)
        if m:
            found[m.group(1)] = _count_params(m.group(2))
    return found


def header_functions() -> dict[str, int]:
    found = _functions((INCLUDE / "colfile.h").read_text(), "CF_API")
    found.update(_functions((INCLUDE / "colfile_binding.h").read_text(), "CF_API"))
    found.update(_functions((INCLUDE / "colfile_stream.h").read_text(), "CF_API"))
    found.update(_functions((INCLUDE / "colfile_errors.h").read_text(), "CF__ERRORS_API"))
    return found


def test_parser_sees_the_api() -> None:
    funcs = header_functions()
    # a few anchors, so a broken regex cannot pass vacuously
    assert funcs["cf_version"] == 0
    assert funcs["cf_column_read"] == 8
    assert funcs["cf_file_open"] == 4
    assert funcs["cf_error_name"] == 1
    declared = sum(len(re.findall(r"^\s*CF_API\b", _strip_comments(
        (INCLUDE / h).read_text()), re.M)) for h in ("colfile.h", "colfile_binding.h", "colfile_stream.h"))
    assert len(funcs) == declared + 2  # + cf_error_name, cf_error_text


def test_cdef_declares_every_api_function() -> None:
    header = header_functions()
    cdef = _functions(_cdef.CDEF, None)
    missing = sorted(set(header) - set(cdef))
    extra = sorted(set(cdef) - set(header))
    assert not missing, f"functions of include/*.h missing from _cdef.CDEF: {missing}"
    assert not extra, f"functions in _cdef.CDEF that the headers do not declare: {extra}"
    wrong = {n: (header[n], cdef[n]) for n in header if header[n] != cdef[n]}
    assert not wrong, f"parameter counts differ (header, cdef): {wrong}"


def _gen_ffi() -> Any:
    import importlib.util

    path = Path(__file__).parents[2] / "tools" / "gen_ffi.py"
    spec = importlib.util.spec_from_file_location("gen_ffi", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_files_are_current() -> None:
    """_cdef.py, _ffi_abi.py and _constants.py are what tools/gen_ffi.py
    makes from the headers as they are now."""
    gen = _gen_ffi()
    package = Path(_cdef.__file__).parent
    wanted = gen.render_all(INCLUDE)
    assert sorted(wanted) == ["_cdef.py", "_constants.py", "_ffi_abi.py"]
    stale = [n for n, text in wanted.items() if (package / n).read_text() != text]
    assert not stale, f"{stale} differ from the headers: run python3 tools/gen_ffi.py"


def test_staleness_check_sees_a_header_change(tmp_path: Path) -> None:
    """The check above fails for a header edited after generation: a new
    open flag and a new error code land in every generated file."""
    import shutil

    gen = _gen_ffi()
    include = tmp_path / "include"
    shutil.copytree(INCLUDE, include)
    before = gen.render_all(include)
    h = include / "colfile.h"
    h.write_text(h.read_text().replace("enum cf_open_flags {",
                                       "enum cf_open_flags {\n    CF_OPEN_TESTONLY = 0x40000000,"))
    e = include / "colfile_errors.h"
    e.write_text(e.read_text().replace('X(CF_OK,        0,  "success")',
                                       'X(CF_OK, 0, "success") X(CF_ETESTONLY, -99, "test only")'))
    after = gen.render_all(include)
    assert [n for n in before if before[n] != after[n]] == list(before)
    assert "CF_OPEN_TESTONLY = 1073741824" in after["_constants.py"]
    assert "-99: 'CF_ETESTONLY'" in after["_constants.py"]
    assert "CF_ETESTONLY = -99" in after["_cdef.py"]


def test_cdef_is_the_headers_without_comments() -> None:
    """Nothing a C compiler alone needs (comments, export macros, C++
    guards, the X-macro) reaches the declarations cffi reads."""
    for token in ("/*", "CF_API", "CF__ERRORS_API", "extern", "#if", "#include",
                  "CF_ERROR_LIST", "__cplusplus"):
        body = re.sub(r"/\* (colfile\w*\.h|integer #defines) \*/", "", _cdef.CDEF)
        assert token not in body, token


def test_constants_module_matches_the_library(lib: Any) -> None:
    from colfile import _constants

    for code, name in _constants.ERROR_NAMES.items():
        assert getattr(_constants, name) == code
        assert _ffi.ffi.string(lib.cf_error_name(code)).decode() == name
        assert _ffi.ffi.string(lib.cf_error_text(code)).decode() == _constants.ERROR_TEXTS[code]
    assert len(_constants.ERROR_NAMES) == len(re.findall(
        r"X\(CF_", (INCLUDE / "colfile_errors.h").read_text()))
    seen = 0
    for enum in re.findall(r"\benum\s+(\w+)\s*\{", _cdef.CDEF):
        for name, value in _ffi.ffi.typeof(f"enum {enum}").relements.items():
            assert getattr(_constants, name) == value, name
            assert name in _constants.__all__
            seen += 1
    assert seen > 50
    for name in ("CF_PLAN_BLOB_BYTES", "CF_PLAN_CONCURRENCY", "CF_ERROR_MESSAGE_MAX"):
        assert getattr(_constants, name) == getattr(lib, name), name
    assert _constants.CF_OPEN_WRITE == 1 and _constants.CF_ENOENT == -2


def test_generated_tables_give_what_parsing_the_cdef_gives(lib: Any) -> None:
    """Every function, struct and enum has the same C type through the
    committed tables as through cffi's parse of CDEF now."""
    import cffi

    parsed = cffi.FFI()
    parsed.cdef(_cdef.CDEF)
    plib = parsed.dlopen(_ffi.library_path())
    names = sorted(_functions(_cdef.CDEF, None))
    assert len(names) > 50

    def spelled(ctype: Any) -> str:
        # the tables name a typedef'd struct by its tag ("struct cf_error"),
        # the parse by its typedef ("cf_error"); both are one type here
        return re.sub(r"\bstruct\s+", "", ctype.cname)

    for name in names:
        assert spelled(_ffi.ffi.typeof(getattr(lib, name))) == \
            spelled(parsed.typeof(getattr(plib, name))), name
    structs = sorted(set(re.findall(r"\b(?:struct|enum)\s+\w+|\bcf_\w+_t\b|\bcf_error\b",
                                    _strip_comments(_cdef.CDEF))))
    assert "cf_error" in structs and "enum cf_error_code" in structs
    for t in structs:
        mine, theirs = _ffi.ffi.typeof(t), parsed.typeof(t)
        assert spelled(mine) == spelled(theirs), t
        if mine.kind == "struct":
            try:
                size = parsed.sizeof(theirs)
            except (cffi.FFIError, ValueError):  # opaque (cf_file, cf_column): no size
                with pytest.raises((_ffi.ffi.error, ValueError)):
                    _ffi.ffi.sizeof(mine)
                continue
            assert _ffi.ffi.sizeof(mine) == size, t
            assert [(n, spelled(f.type), f.offset) for n, f in mine.fields] == \
                [(n, spelled(f.type), f.offset) for n, f in theirs.fields], t
        elif mine.kind == "enum":
            assert mine.relements == theirs.relements, t


def test_cdef_constants_match_headers() -> None:
    text = _strip_comments((INCLUDE / "colfile.h").read_text()
                           + (INCLUDE / "colfile_binding.h").read_text()
                           + (INCLUDE / "colfile_errors.h").read_text())
    consts = {m.group(1): int(m.group(2), 0)
              for m in re.finditer(r"\b(CF_(?:OPEN|KIND|BLOB)_\w+)\s*=\s*(0x[0-9a-fA-F]+|\d+)", text)}
    consts.update({m.group(1): int(m.group(2))
                   for m in re.finditer(r"X\((CF_E?\w+),\s*(-?\d+)", text)})
    assert len(consts) > 25
    declared = {}
    for enum in ("cf_error_code", "cf_open_flags", "cf_column_kind", "cf_blob_status"):
        declared.update(_ffi.ffi.typeof(f"enum {enum}").relements)
    for name, value in consts.items():
        assert declared.get(name) == value, name
    size = int(re.search(r"#define CF_ERROR_MESSAGE_MAX (\d+)", text).group(1))
    fields = dict(_ffi.ffi.typeof("cf_error").fields)
    assert _ffi.ffi.sizeof(fields["message"].type) == size


def test_error_codes_in_python_match_headers() -> None:
    from colfile import errors

    text = (INCLUDE / "colfile_errors.h").read_text()
    for name, value in re.findall(r"X\((CF_E?\w+),\s*(-?\d+)", text):
        assert getattr(errors, name) == int(value)
        assert errors.CODE_NAMES[int(value)] == name


def test_loaded_library_has_the_declared_signatures(lib: Any) -> None:
    for name, nparams in header_functions().items():
        fn = getattr(lib, name)  # raises if the symbol is not exported
        assert len(_ffi.ffi.typeof(fn).args) == nparams, name


def test_library_version(lib: Any) -> None:
    import colfile

    text = (INCLUDE / "colfile.h").read_text()
    major, minor, patch = (int(re.search(rf"#define CF_VERSION_{k} (\d+)", text).group(1))
                           for k in ("MAJOR", "MINOR", "PATCH"))
    assert colfile.library_version() == f"{major}.{minor}.{patch}"


def test_error_names_agree_with_library(lib: Any) -> None:
    from colfile import errors

    for code, name in errors.CODE_NAMES.items():
        assert _ffi.ffi.string(lib.cf_error_name(code)).decode() == name


def test_missing_library_message(tmp_path: Path) -> None:
    import glob
    import os
    import subprocess
    import sys

    import colfile

    pkg = Path(colfile.__file__).parent
    if glob.glob(str(pkg / "_lib" / "libcolfile*")):
        return  # an installed wheel carries its own library: nothing to miss
    env = dict(os.environ, COLFILE_LIBRARY=str(tmp_path / "nope.so"),
               PYTHONPATH=str(pkg.parent), LD_LIBRARY_PATH="")
    code = ("import colfile\n"
            "try:\n    colfile.File('x')\n"
            "except ImportError as e:\n    print('IMPORTERROR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, cwd=tmp_path, timeout=60).stdout
    if "IMPORTERROR" not in out:  # a system-wide libcolfile was found instead
        return
    assert "COLFILE_LIBRARY" in out and "nope.so" in out


def test_cdef_plan_constants_match_header(lib: Any) -> None:
    """The defaults of the parallel planning (#define CF_PLAN_*) and the I/O
    modes (enum cf_io_mode) that colfile.mpi reads through the cdef."""
    import ast

    text = _strip_comments((INCLUDE / "colfile_binding.h").read_text())
    defines = dict(re.findall(r"#define (CF_PLAN_\w+)\s+(.+)", text))
    assert set(defines) == {"CF_PLAN_BLOB_BYTES", "CF_PLAN_GROUP_BYTES",
                            "CF_PLAN_SMALL_BYTES", "CF_PLAN_CONCURRENCY"}
    for name, expr in defines.items():
        expr = expr.replace("(int64_t)", "").strip()
        tree = ast.parse(expr, mode="eval")
        allowed = (ast.Expression, ast.BinOp, ast.Constant, ast.LShift, ast.Mult)
        assert all(isinstance(n, allowed) for n in ast.walk(tree)), expr
        assert getattr(lib, name) == eval(compile(tree, name, "eval")), name
    modes = {m.group(1): int(m.group(2)) for m in
             re.finditer(r"\b(CF_IO_\w+)\s*=\s*(\d+)", text)}
    assert modes == dict(_ffi.ffi.typeof("enum cf_io_mode").relements)
    from colfile import mpi

    assert {k.upper(): v for k, v in mpi.IO_MODES.items()} == {
        k[len("CF_IO_"):]: v for k, v in modes.items()}


def test_import_parses_no_c_and_runs_no_library_search(tmp_path: Path) -> None:
    """Importing colfile and loading a library named by COLFILE_LIBRARY
    neither parses C (pycparser) nor searches the system (ctypes.util runs
    ldconfig and gcc), nor reads package metadata until __version__ is
    asked for."""
    import os
    import subprocess
    import sys

    import colfile

    code = ("import sys, colfile\n"
            "from colfile import _ffi\n"
            "_ffi.lib()\n"
            "print(sorted(m for m in ('pycparser', 'ctypes.util', 'importlib.metadata')"
            " if m in sys.modules))\n"
            "v = colfile.__version__\n"
            "print(v == colfile.__version__, 'importlib.metadata' in sys.modules)\n")
    env = dict(os.environ, COLFILE_LIBRARY=_ffi.library_path(),
               PYTHONPATH=str(Path(colfile.__file__).parent.parent))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=tmp_path, timeout=60, check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "True True"
    assert isinstance(colfile.__version__, str) and colfile.__version__[0].isdigit()


def test_generator_picks_up_new_declarations(tmp_path: Path) -> None:
    """A function, a struct and a constant that another header change adds
    reach the cdef and cffi's tables with no edit to the generator, and
    their doc comments and export macro do not."""
    import shutil

    import cffi

    gen = _gen_ffi()
    include = tmp_path / "include"
    shutil.copytree(INCLUDE, include)
    h = include / "colfile_stream.h"
    text = h.read_text()
    at = text.rindex("#ifdef __cplusplus")
    h.write_text(text[:at] + (
        "/* A probe the test adds: its rows\n * (spelled over two comment lines). */\n"
        "#define CF_TESTONLY_MAX ((int64_t)3 << 10)\n"
        "typedef struct cf_testonly { int64_t rows[CF_TESTONLY_MAX]; const char *name; } cf_testonly;\n"
        "CF_API int cf_testonly_probe(cf_stream_reader *r, cf_testonly *out,\n"
        "                             int64_t n, cf_error *err);\n\n") + text[at:])
    files = gen.render_all(include)
    ns: dict[str, Any] = {}
    exec(compile(files["_cdef.py"], "_cdef.py", "exec"), ns)
    cdef = ns["CDEF"]
    assert _functions(cdef, None)["cf_testonly_probe"] == 4
    assert "int64_t rows[3072];" in cdef and "A probe" not in cdef and "CF_API" not in cdef
    assert "CF_TESTONLY_MAX = 3072" in files["_constants.py"]
    assert "cf_testonly_probe" in files["_ffi_abi.py"]
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    assert ffi.sizeof("cf_testonly") == 3072 * 8 + ffi.sizeof("char *")
    assert len(ffi.typeof("int(*)(cf_stream_reader *, cf_testonly *, int64_t, cf_error *)").args) == 4
