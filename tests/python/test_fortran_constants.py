"""The Fortran modules spell libcolfile's codes and flags as integer
parameters (COLFILE_ENOENT, COLFILE_OPEN_WRITE, COLFILE_BLOB_SHORT, ...),
which fortran/gen_const.py writes from the headers' enums: each must have
the value of its C namesake (CF_ENOENT, ...), every error code of the C
list must have one, so that a Fortran program can name each stat it gets,
and a code added to a header must reach them.  The values compared with
come from colfile._constants, which tools/gen_ffi.py derives from the
headers (test_ffi checks that).
"""

from __future__ import annotations

import re
from pathlib import Path

from colfile import _constants

ROOT = Path(__file__).resolve().parents[2]

# `integer[(kind)], parameter[, public] :: A = 1, B = 2, &` (continued lines)
_PARAMETERS = re.compile(r"^\s*integer(?:\([\w=]+\))?\s*,\s*parameter\b[^:]*::(.*?)(?<!&)\n",
                         re.I | re.M | re.S)


def fortran_parameters(sources: list[Path]) -> dict[str, tuple[int, str]]:
    """COLFILE_* integer parameter -> (value, where) in Fortran sources."""
    found: dict[str, tuple[int, str]] = {}
    for path in sources:
        text = re.sub(r"[ \t]*!.*|[ \t]+$", "", path.read_text(), flags=re.M)
        for m in _PARAMETERS.finditer(text):
            body = m.group(1).replace("&", " ")
            for name, value in re.findall(r"\b(COLFILE_\w+)\s*=\s*(-?\d+)", body):
                found[name.upper()] = (int(value), path.name)
    return found


def mismatches(params: dict[str, tuple[int, str]], consts: dict[str, int],
               errors: dict[int, str]) -> list[str]:
    """Every Fortran parameter whose value is not its C namesake's, or that
    has none, and every C error code without a Fortran parameter."""
    problems = []
    for name, (value, where) in sorted(params.items()):
        c_name = "CF_" + name[len("COLFILE_"):]
        if c_name not in consts:
            problems.append(f"{where}: {name} has no C namesake {c_name}")
        elif consts[c_name] != value:
            problems.append(f"{where}: {name} = {value}, but {c_name} = {consts[c_name]}")
    for code, c_name in sorted(errors.items()):
        if "COLFILE_" + c_name[len("CF_"):] not in params:
            problems.append(f"error code {c_name} ({code}) has no Fortran parameter")
    return problems


def _c_constants() -> dict[str, int]:
    return {k: v for k, v in vars(_constants).items() if k.startswith("CF_") and isinstance(v, int)}


def test_fortran_parameters_are_the_c_values() -> None:
    sources = sorted((ROOT / "fortran").glob("*.f90")) + sorted((ROOT / "fortran").glob("*.inc"))
    params = fortran_parameters(sources)
    # anchors, so that a parser that finds nothing cannot pass
    assert params["COLFILE_ENOENT"][0] == -2
    assert params["COLFILE_OPEN_CREATE"][0] == 2
    assert params["COLFILE_IO_AGGREGATED"][0] == 2
    assert len(params) > 40
    assert mismatches(params, _c_constants(), _constants.ERROR_NAMES) == []


def test_checker_catches_a_wrong_value_a_stray_name_and_a_missing_code(tmp_path: Path) -> None:
    f = tmp_path / "m.f90"
    f.write_text("module m\n"
                 "  integer, parameter, public :: COLFILE_OK = 0, COLFILE_EIO = -1, & ! codes\n"
                 "    COLFILE_ENOENT = -3\n"
                 "  integer(c_int), parameter :: COLFILE_NOSUCH = 7\n"
                 "  integer :: COLFILE_EEXIST = -3  ! a variable, not a parameter\n"
                 "end module m\n")
    params = fortran_parameters([f])
    assert {k: v for k, (v, _) in params.items()} == {
        "COLFILE_OK": 0, "COLFILE_EIO": -1, "COLFILE_ENOENT": -3, "COLFILE_NOSUCH": 7}
    consts = {"CF_OK": 0, "CF_EIO": -1, "CF_ENOENT": -2, "CF_EEXIST": -3}
    errors = {0: "CF_OK", -1: "CF_EIO", -2: "CF_ENOENT", -3: "CF_EEXIST"}
    assert mismatches(params, consts, errors) == [
        "m.f90: COLFILE_ENOENT = -3, but CF_ENOENT = -2",
        "m.f90: COLFILE_NOSUCH has no C namesake CF_NOSUCH",
        "error code CF_EEXIST (-3) has no Fortran parameter",
    ]


def test_a_new_error_code_reaches_the_fortran_parameters(tmp_path: Path) -> None:
    import shutil
    import sys

    sys.path.insert(0, str(ROOT / "fortran"))
    try:
        import gen_const
    finally:
        sys.path.remove(str(ROOT / "fortran"))
    include = tmp_path / "include"
    shutil.copytree(ROOT / "include", include)
    e = include / "colfile_errors.h"
    e.write_text(e.read_text().replace('X(CF_OK,        0,  "success")',
                                       'X(CF_OK, 0, "success") X(CF_ETESTONLY, -99, "test only")'))
    files = gen_const.const_files("! header\n", include)
    inc = tmp_path / "colfile_c_const.inc"
    inc.write_text(files["colfile_c_const.inc"])
    params = fortran_parameters([inc])
    assert params["COLFILE_ETESTONLY"][0] == -99
    assert params["COLFILE_ENOENT"][0] == -2
    assert files == gen_const.const_files("! header\n", include)  # same text each run
    committed = {n: (ROOT / "fortran" / n).read_text() for n in files}
    assert committed == gen_const.const_files(gen_const_header(), None)


def gen_const_header() -> str:
    """The first line gen_rw.py gives every file it writes."""
    return (ROOT / "fortran" / "colfile_c_const.inc").read_text().split("\n", 1)[0] + "\n"


def test_gen_ffi_brings_the_fortran_parameters_in_step(tmp_path: Path) -> None:
    """tools/gen_ffi.py, the one command run after a header change, writes
    the Fortran parameter files too (and --check sees them stale)."""
    import importlib.util
    import shutil

    spec = importlib.util.spec_from_file_location("gen_ffi_for_test", ROOT / "tools" / "gen_ffi.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    current = gen.fortran_files()
    assert {p.name for p in current} == {"colfile_c_const.inc", "colfile_const.inc",
                                         "colfile_integrity_const.inc", "colfile_mpi_const.inc"}
    assert all(p.read_text() == t for p, t in current.items())
    include = tmp_path / "include"
    shutil.copytree(ROOT / "include", include)
    h = include / "colfile_binding.h"
    h.write_text(h.read_text().replace("enum cf_io_mode {", "enum cf_io_mode {\n    CF_IO_TESTONLY = 7,"))
    changed = {p.name: t for p, t in gen.fortran_files(include).items() if current[p] != t}
    assert list(changed) == ["colfile_mpi_const.inc"]
    assert "COLFILE_IO_TESTONLY = 7" in changed["colfile_mpi_const.inc"]


def test_enum_values_as_c_gives_them() -> None:
    """Members without `=` count on from the one before, expressions may
    name earlier members, and an enum Fortran does not mirror is not read
    (its members may be anything cffi takes)."""
    import sys

    sys.path.insert(0, str(ROOT / "fortran"))
    try:
        import gen_const
    finally:
        sys.path.remove(str(ROOT / "fortran"))
    cdef = "enum a { CF_A = 0x4, CF_B, CF_C = CF_A | 1 << 4, CF_D };\nenum b { CF_Z = sizeof(int) };\n"
    assert gen_const.enums(cdef, {"a"}) == {"a": [("CF_A", 4), ("CF_B", 5), ("CF_C", 20), ("CF_D", 21)]}
