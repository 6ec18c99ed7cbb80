"""colfile.h is written for users; colfile_binding.h for the layers built
on the core.  The user's header stays small enough to read as a manual,
and plumbing does not drift back into it."""

from __future__ import annotations

import re
from pathlib import Path

INCLUDE = Path(__file__).resolve().parents[2] / "include"

# colfile.h (with its error list) is the manual of a C program that reads
# and writes Files.  Every function in it is one more thing that reader
# must read past; 94 functions, a third of them binding plumbing, buried
# the ones a simulation code calls.  The count below is what such a
# program needs today (65: renaming a column, beside removing one, is a
# user's call: a code writes a snapshot under a scratch name and renames
# it when done; 66: cf_file_catalog_stale, the C reader's twin of Python's
# CatalogWarning, tells it to rebuild with cf_file_catalog_update).  Raise
# it only for a call that user makes; what only the MPI layer or a
# language binding calls goes to colfile_binding.h.
USER_FUNCTIONS_MAX = 66

# Names that are plumbing by their nature: moving a handle between
# processes, fork helpers, deferred commits, the parallel plan.
PLUMBING = re.compile(r"^cf_(committer_\w+|plan_\w+|column_(pending_\w+|export_meta|open_meta|"
                      r"describe|forget|discard|close_many|row_offset)|file_forget_locks)$")


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def exported(header: str) -> list[str]:
    """The names of the functions a header exports (CF_API or, in the
    error list, CF__ERRORS_API)."""
    text = _strip_comments((INCLUDE / header).read_text())
    return re.findall(r"^\s*CF_{1,2}\w*API\b[^;(]*?\b(cf_\w+)\s*\(", text, re.M)


def test_parser_counts_declarations() -> None:
    names = exported("colfile.h")
    assert "cf_file_open" in names and "cf_column_read" in names
    assert exported("colfile_errors.h") == ["cf_error_name", "cf_error_text"]
    text = _strip_comments((INCLUDE / "colfile.h").read_text())
    assert len(names) == len(re.findall(r"^\s*CF_API\b", text, re.M)) == len(set(names))


def test_user_header_is_small() -> None:
    names = exported("colfile.h") + exported("colfile_errors.h")
    assert len(names) <= USER_FUNCTIONS_MAX, (
        f"colfile.h declares {len(names)} functions, more than {USER_FUNCTIONS_MAX}: "
        "does a C program writing a simulation call the new one?  If not, it belongs "
        "in colfile_binding.h; if so, raise USER_FUNCTIONS_MAX and say why")


def test_plumbing_is_in_the_binding_header() -> None:
    user = exported("colfile.h")
    binding = exported("colfile_binding.h")
    assert not [n for n in user if PLUMBING.match(n)], "plumbing in colfile.h"
    assert not set(user) & set(binding), "declared in both headers"
    assert len(binding) > 20 and all(PLUMBING.match(n) for n in
                                     ("cf_committer_hold", "cf_plan_share", "cf_column_open_meta"))
    assert "cf_committer_hold" in binding and "cf_column_pending_export" in binding


def test_headers_say_who_they_are_for() -> None:
    binding = (INCLUDE / "colfile_binding.h").read_text()
    top = binding.split("*/", 1)[0]
    assert "Not for programs that read and write Files" in top
    assert "MPI layer" in top and "binding" in top
    # the user's header does not pull the plumbing in; the MPI layer's does
    assert '#include "colfile_binding.h"' not in (INCLUDE / "colfile.h").read_text()
    assert '#include "colfile_binding.h"' in (INCLUDE / "colfile_mpi.h").read_text()


def test_both_headers_are_installed() -> None:
    cmake = (INCLUDE.parent / "CMakeLists.txt").read_text()
    line = next(ln for ln in cmake.splitlines() if "install(FILES include/colfile.h" in ln)
    for header in ("colfile.h", "colfile_errors.h", "colfile_binding.h", "colfile_stream.h"):
        assert f"include/{header}" in line, header


def test_streams_have_a_header_of_their_own() -> None:
    """Task-local streams are a concept of their own, for the programs that
    write them: colfile_stream.h (over colfile.h), not more functions in
    the user's manual; the MPI layer's header brings it with it."""
    stream = exported("colfile_stream.h")
    assert "cf_stream_append" in stream and "cf_stream_open" in stream
    assert not set(stream) & set(exported("colfile.h") + exported("colfile_binding.h"))
    assert not [n for n in exported("colfile.h") if n.startswith("cf_stream")]
    assert '#include "colfile_stream.h"' not in (INCLUDE / "colfile.h").read_text()
    assert '#include "colfile_stream.h"' in (INCLUDE / "colfile_mpi.h").read_text()


def _declarations(header: str) -> list[tuple[str, str, str]]:
    """(return type, name, parameters) of each exported function."""
    text = _strip_comments((INCLUDE / header).read_text())
    return [(r.strip(), n, p) for r, n, p in re.findall(
        r"^\s*CF_{1,2}\w*API\s+([\w\s\*]+?)\s*\b(cf_\w+)\s*\(([^)]*)\)", text, re.M)]


def test_errors_are_never_sizes() -> None:
    """A function that takes an error record returns a CF_E* code (int),
    never a size that a negative code would hide in; one that cannot fail
    takes no error record.  (Arrays of records, `cf_error *errs`, are
    results, not the caller's error record.)"""
    checked = 0
    for header in ("colfile.h", "colfile_binding.h"):
        for ret, name, params in _declarations(header):
            takes_err = bool(re.search(r"\bcf_error\s*\*\s*err\b(?!s)", params))
            if takes_err:
                assert ret == "int", f"{header}: {name} takes `err` but returns {ret}"
            if ret == "void":
                assert not takes_err, f"{header}: {name} cannot fail but takes `err`"
            checked += 1
    assert checked == len(exported("colfile.h")) + len(exported("colfile_binding.h"))
    names = {n for _, n, _ in _declarations("colfile.h")}
    assert {"cf_dtype_itemsize", "cf_column_blob_rows_held", "cf_column_set_verify"} <= names
