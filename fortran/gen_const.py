#!/usr/bin/env python3
"""The integer parameters of the Fortran modules (COLFILE_ENOENT,
COLFILE_OPEN_WRITE, COLFILE_BLOB_SHORT, ...), written by gen_rw.py into
<module>_const.inc (and by tools/gen_ffi.py, the one command to run after a
header change) from the enums of the C headers, as tools/gen_ffi.py
reads them: each is its C namesake CF_* renamed, with the C value, so a
code or flag added to a header reaches Fortran by running gen_rw.py."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import gen_ffi  # noqa: E402  (tools/gen_ffi.py: the header parser)

# module -> [(C enum, Fortran integer kind, members left out)]; the flags
# left out are not offered to Fortran programs.
CONSTANTS = {
    "colfile_c": [("cf_error_code", "integer", ())],
    "colfile": [("cf_open_flags", "integer",
                 ("CF_OPEN_NOCHECK", "CF_OPEN_DIGEST_INLINE", "CF_OPEN_DIGEST_HELPER"))],
    "colfile_integrity": [("cf_blob_status", "integer", ()), ("cf_ext_state", "integer", ()),
                          ("cf_repair_bits", "integer", ())],
    "colfile_mpi": [("cf_io_mode", "integer(c_int)", ())],
}


def enums(cdef, wanted):
    """C enum name -> [(member, value)] of the `wanted` enums of the
    declarations, valued as C does: a member without `=` is the one before
    plus 1, and an expression may name members before it."""
    found, known = {}, {}
    for m in re.finditer(r"\benum\s+(\w+)\s*\{(.*?)\}", cdef, re.S):
        if m.group(1) not in wanted:
            continue
        members, value = [], -1
        for item in (i.strip() for i in m.group(2).split(",")):
            if not item:
                continue
            name, _, expr = (s.strip() for s in item.partition("="))
            if expr:
                expr = re.sub(r"\bCF_\w+\b", lambda r: str(known.get(r.group(0), r.group(0))), expr)
                value = gen_ffi._int_expr(expr)
                if value is None:
                    raise gen_ffi.HeaderError(f"enum {m.group(1)}: {item!r} has no integer value")
            else:
                value += 1
            known[name] = value
            members.append((name, value))
        found[m.group(1)] = members
    return found


def declaration(kind, pairs):
    """`kind, parameter, public :: A = 1, B = 2, &` wrapped near 110 columns."""
    lines, line = [], f"  {kind}, parameter, public ::"
    for i, (name, value) in enumerate(pairs):
        item = f" {name} = {value}" + ("," if i < len(pairs) - 1 else "")
        if len(line) + len(item) > 108:
            lines.append(line + " &")
            line = "   "
        line += item
    return "\n".join(lines + [line])


def const_files(header, include=None):
    cdef, _, _ = gen_ffi.parse_headers(*([include] if include else []))
    found = enums(cdef, {e for wanted in CONSTANTS.values() for e, _, _ in wanted})
    files = {}
    for module, wanted in CONSTANTS.items():
        blocks = []
        for enum, kind, omit in wanted:
            pairs = [("COLFILE_" + n[len("CF_"):], v) for n, v in found[enum] if n not in omit]
            blocks.append(f"  ! enum {enum}\n" + declaration(kind, pairs))
        files[f"{module}_const.inc"] = (header + "! The enums of include/colfile*.h: change a header, then run gen_rw.py.\n"
                                        + "\n".join(blocks) + "\n")
    return files
