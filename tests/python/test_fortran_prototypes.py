"""The bind(c) interfaces through which the Fortran modules call C are
written from the prototypes in fortran/gen_bind.py, a hand spelling of C
signatures: each must name a function that include/colfile*.h (or the
Fortran MPI shims of fortran/colfile_mpi_f.c) declares, with as many
arguments, each of a C type that the Fortran one passes correctly (an
int64_t by value as i64, a pointer to a pointer as ptr*, ...).  A
mismatch there is not a compile error but a wrong call at run time.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Fortran argument type of gen_bind.py -> a test of the C parameter's
#: type (without its name).
ARG_TYPES = {
    "ptr": lambda t: t.count("*") >= 1,
    "ptr*": lambda t: t.count("*") >= 2,
    "ptr&": lambda t: t.count("*") >= 2,
    "str": lambda t: re.fullmatch(r"const char \*", t) is not None,
    "dt16*": lambda t: re.fullmatch(r"char \[16\]", t) is not None,
    "int": lambda t: t in ("int", "unsigned", "MPI_Fint"),
    "int*": lambda t: t in ("int *", "unsigned *"),
    "i64": lambda t: t == "int64_t",
    "i64*": lambda t: t == "int64_t *",
    "size*": lambda t: t == "size_t *",
    "err": lambda t: t == "cf_error *",
    "layout": lambda t: t == "const cf_stream_layout *",  # intent(in): by reference
    "layout*": lambda t: t == "cf_stream_layout *",
    "stats*": lambda t: re.fullmatch(r"cf_\w*stats \*", t) is not None,
}
RESULT_TYPES = {
    "int": lambda t: t == "int",
    "i64": lambda t: t == "int64_t",
    "ptr": lambda t: t.endswith("*"),
    "size": lambda t: t == "size_t",
    "void": lambda t: t == "void",
}


def _strip(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*|^\s*#[^\n]*", " ", text, flags=re.M)


def _type_of(param: str) -> str:
    """A C parameter without its name, spaces normalised: "const char *",
    "int64_t", "char [16]", "cf_error *"."""
    param = " ".join(param.replace("*", " * ").split())
    param = re.sub(r"\s*\[\s*(\w+)\s*\]", r" [\1]", param)
    m = re.fullmatch(r"(.*?)\s*\b\w+(\s*\[\w+\])?", param)
    assert m, param
    base = m.group(1).strip()
    base = re.sub(r"\s*\*\s*", " *", base).replace(" * *", " **").replace("* *", "**")
    base = re.sub(r"\*\s+\*", "**", base)
    return (base + (" " + m.group(2).strip() if m.group(2) else "")).strip()


def c_declarations(texts: list[str]) -> dict[str, tuple[str, list[str]]]:
    """cf_* function name -> (result type, [parameter types]) of C text."""
    found = {}
    # array sizes spelled by a macro (char dtype[CF_DTYPE_MAX])
    sizes = dict(re.findall(r"^\s*#\s*define\s+(CF_\w+)\s+(\d+)\s*$", "\n".join(texts), re.M))
    texts = [re.sub(r"\[(CF_\w+)\]", lambda m: f"[{sizes.get(m.group(1), m.group(1))}]", t) for t in texts]
    for text in texts:
        for m in re.finditer(r"(?:^|(?<=[;}]))\s*(?:CF_\w*API\s+)?(?!return\b)((?:const\s+)?\w+[\s\*]+)"
                             r"(cf_\w+)\s*\(([^;{)]*)\)(?=\s*[;{])", _strip(text), re.M):
            params = [p.strip() for p in m.group(3).split(",")]
            if params == ["void"]:
                params = []
            result = re.sub(r"\s*\*", " *", " ".join(m.group(1).split())).replace("* *", "**")
            found[m.group(2)] = (result.strip(), [_type_of(p) for p in params])
    return found


def mismatches(prototypes: dict[str, list[str]], c: dict[str, tuple[str, list[str]]]) -> list[str]:
    problems = []
    for module, protos in prototypes.items():
        for proto in protos:
            if proto.startswith("# "):
                continue
            m = re.fullmatch(r"(\w+) (\w+)(?:=(\w+))?\((.*)\)", proto)
            assert m, proto
            result, name, cname, args = m.groups()
            cname = cname or name
            if not cname.startswith("cf_"):
                continue  # libc (strlen)
            if cname not in c:
                problems.append(f"{module}: {cname}: no C declaration")
                continue
            cresult, cparams = c[cname]
            fargs = [a.split()[0] for a in args.split(", ")] if args else []
            if len(fargs) != len(cparams):
                problems.append(f"{module}: {cname}: {len(fargs)} arguments, C has {len(cparams)}")
                continue
            if not RESULT_TYPES[result](cresult):
                problems.append(f"{module}: {cname}: result {result}, C returns {cresult}")
            for i, (f, t) in enumerate(zip(fargs, cparams)):
                if not ARG_TYPES[f](t):
                    problems.append(f"{module}: {cname}: argument {i + 1} is {f}, C has {t}")
    return problems


def _prototypes() -> dict[str, list[str]]:
    sys.path.insert(0, str(ROOT / "fortran"))
    try:
        import gen_bind
    finally:
        sys.path.remove(str(ROOT / "fortran"))
    return gen_bind.PROTOTYPES


def test_fortran_prototypes_match_the_c_declarations() -> None:
    texts = [p.read_text() for p in sorted((ROOT / "include").glob("colfile*.h"))]
    texts.append((ROOT / "fortran" / "colfile_mpi_f.c").read_text())
    c = c_declarations(texts)
    assert c["cf_column_read"] == ("int", ["cf_column *", "int64_t", "int64_t", "void *", "const char *",
                                           "int64_t", "int64_t", "cf_error *"])
    assert c["cf_dtype_normalize"][1][1] == "char [16]"
    assert c["cf_file_open"][1][0] == "cf_file **"
    assert c["cf_f_mpi_file_open"][1][1] == "MPI_Fint"
    prototypes = _prototypes()
    assert sum(len(p) for p in prototypes.values()) > 60
    assert mismatches(prototypes, c) == []


def test_checker_catches_each_kind_of_mismatch() -> None:
    c = c_declarations([
        "CF_API int cf_a(cf_file **out, const char *name, int64_t n, cf_error *err);\n"
        "/* doc */ CF_API int64_t cf_b(const cf_column *c);\n"
        "int cf_c(char out[16], unsigned *bits)\n{\n    return 0;\n}\n"])
    assert c == {"cf_a": ("int", ["cf_file **", "const char *", "int64_t", "cf_error *"]),
                 "cf_b": ("int64_t", ["const cf_column *"]),
                 "cf_c": ("int", ["char [16]", "unsigned *"])}
    ok = {"m": ["int cf_a(ptr* out, str name, i64 n, err err)", "i64 cf_b(ptr c)",
                "int cf_c(dt16* out, int* bits)", "size c_strlen=strlen(ptr s)"]}
    assert mismatches(ok, c) == []
    bad = {"m": ["int cf_a(ptr* out, str name, int n, err err)", "int cf_b(ptr c)",
                 "int cf_c(dt16* out)", "int cf_gone(ptr p)"]}
    assert mismatches(bad, c) == [
        "m: cf_a: argument 3 is int, C has int64_t",
        "m: cf_b: result int, C returns int64_t",
        "m: cf_c: 1 arguments, C has 2",
        "m: cf_gone: no C declaration",
    ]
