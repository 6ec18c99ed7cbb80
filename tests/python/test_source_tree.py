"""The rules of the C tree: no source file or header in src/ is longer than
MAX_LINES (a file that long holds two concepts), and every source file has
a test of its own: TESTED_BY names, for each .c file in src/, the test files
that exercise it, and each of them either calls one of the file's functions
(cf_* or cf__*) by name, runs the program it builds, or is named after it.
A new source file fails here until it gets a test.  A folder's
<name>_impl.h is for that folder alone.  The checkers are tested on small
trees of their own, so they cannot pass by accident.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 800

# The test files that exercise each source file.
TESTED_BY: dict[str, list[str]] = {
    "src/catalog/catalog.c": ["tests/c/test_catalog.c"],
    "src/catalog/catalog_build.c": ["tests/c/test_catalog_build.c"],
    "src/catalog/catalog_shard.c": ["tests/python/test_catalog_shard.py", "tests/c/test_catalog.c"],
    "src/catalog/catalog_sweep.c": ["tests/python/test_catalog_crash.py"],
    "src/catalog/catalog_lookup.c": ["tests/c/test_catalog.c", "tests/c/test_file_attrs.c",
                                     "tests/python/test_catalog_stale.py"],
    "src/catalog/generation.c": ["tests/c/test_catalog.c", "tests/python/test_catalog_generation.py"],
    "src/catalog/names.c": ["tests/c/test_names.c"],
    "src/column/attr_values.c": ["tests/c/test_attr_values.c"],
    "src/column/column.c": ["tests/c/test_column.c"],
    "src/column/column_attrs.c": ["tests/c/test_attr_values.c", "tests/python/test_attrs.py"],
    "src/column/column_stage.c": ["tests/c/test_column_stage.c"],
    "src/column/column_create.c": ["tests/c/test_create_semantics.c"],
    "src/column/column_index.c": ["tests/c/test_index.c"],
    "src/column/column_index_fine.c": ["tests/c/test_column_index_fine.c", "tests/python/test_query_fine.py"],
    "src/column/column_meta.c": ["tests/c/test_catalog.c", "tests/c/test_ext.c"],
    "src/column/column_open.c": ["tests/c/test_reader_version.c"],
    "src/column/column_pending.c": ["tests/c/test_pending.c", "tests/c/test_replica_update.c"],
    "src/column/column_owners.c": ["tests/c/test_column_owners.c", "tests/mpi/test_mpi_owners.c"],
    "src/column/pending_split.c": ["tests/c/test_pending_split.c", "tests/c/test_pending_owners.c"],
    "src/column/column_read.c": ["tests/c/test_column.c", "tests/c/test_readsplit.c"],
    "src/column/column_stats.c": ["tests/c/test_column_stats.c"],
    "src/column/column_sync.c": ["tests/c/test_column_sync.c"],
    "src/column/column_verify.c": ["tests/c/test_column.c", "tests/c/test_column_stats.c"],
    "src/column/column_version.c": ["tests/c/test_column_version.c"],
    "src/column/column_write.c": ["tests/c/test_column.c"],
    "src/column/digest.c": ["tests/c/test_digest.c"],
    "src/column/file.c": ["tests/c/test_column.c", "tests/python/test_file.py"],
    "src/column/placement.c": ["tests/python/test_digest_placement.py",
                               "tests/python/mpi/test_digest_placement_mpi.py"],
    "src/column/file_attrs.c": ["tests/c/test_file_attrs.c"],
    "src/column/remove.c": ["tests/c/test_remove.c"],
    "src/column/rename.c": ["tests/c/test_rename.c"],
    "src/commit/cleanup.c": ["tests/c/test_locking.c"],
    "src/commit/column_commit.c": ["tests/c/test_column.c", "tests/c/test_create_semantics.c"],
    "src/commit/committer.c": ["tests/c/test_committer.c"],
    "src/commit/repair.c": ["tests/c/test_repair.c"],
    "src/common/checksum.c": ["tests/c/test_checksum.c"],
    "src/common/error.c": ["tests/c/test_error.c"],
    "src/common/fsutil.c": ["tests/c/test_fsutil.c"],
    "src/common/hstamp.c": ["tests/c/test_ext.c"],
    "src/common/mountinfo.c": ["tests/c/test_mountinfo.c"],
    "src/common/owner.c": ["tests/c/test_owner.c"],
    "src/common/platform.c": ["tests/c/test_platform.c"],
    "src/common/wire.c": ["tests/c/test_wire.c"],
    "src/format/attrs.c": ["tests/c/test_attrs.c"],
    "src/format/dtype.c": ["tests/c/test_dtype.c", "tests/c/test_dtype_hint.c"],
    "src/format/dtype_convert.c": ["tests/c/test_dtype.c"],
    "src/format/ext.c": ["tests/c/test_ext.c"],
    "src/format/header.c": ["tests/c/test_header.c"],
    "src/io/readmap.c": ["tests/python/test_readmap.py"],
    "src/io/readsplit.c": ["tests/c/test_readsplit.c"],
    "src/lock/writer_lock.c": ["tests/c/test_writer_lock.c"],
    "src/mpi/iosim.c": ["tests/python/mpi/test_mpi_layer.py"],
    "src/mpi/mpi_agree.c": ["tests/mpi/test_mpi_errors.c"],
    "src/mpi/mpi_close.c": ["tests/mpi/test_mpi_collectives.c", "tests/mpi/test_mpi_grow.c"],
    "src/mpi/mpi_owners.c": ["tests/mpi/test_mpi_owners.c", "tests/mpi/test_mpi_collectives.c"],
    "src/mpi/mpi_column.c": ["tests/mpi/test_mpi_collectives.c"],
    "src/mpi/mpi_io.c": ["tests/mpi/test_mpi_io.c", "tests/mpi/test_mpi_overlap.c"],
    "src/mpi/mpi_many.c": ["tests/mpi/test_mpi_collectives.c"],
    "src/mpi/mpi_node.c": ["tests/python/mpi/test_digest_placement_mpi.py"],
    "src/mpi/mpi_stream.c": ["tests/mpi/test_mpi_stream.c"],
    "src/plan/chunk_owner.c": ["tests/c/test_chunk_owner.c"],
    "src/plan/plan.c": ["tests/c/test_plan.c"],
    "src/column/column_dir.c": ["tests/c/test_column_dir.c"],
    "src/stats/stats_accum.c": ["tests/c/test_stats.c"],
    "src/stats/stindex.c": ["tests/c/test_stindex.c"],
    "src/stats/stindex_part.c": ["tests/c/test_index_parts.c"],
    "src/stats/stats_kernels.c": ["tests/c/test_stats_kernels.c"],
    "src/stats/stats_layout.c": ["tests/c/test_stats.c"],
    "src/stats/stats_rows.c": ["tests/c/test_stats_kernels.c"],
    "src/stats/stats_fine.c": ["tests/c/test_stats_fine.c", "tests/python/test_query_fine.py"],
    "src/stats/stindex_fine.c": ["tests/c/test_stats_fine.c", "tests/python/test_query_fine.py"],
    "src/stats/stats_text.c": ["tests/c/test_stats.c"],
    "src/stats/stats_fsum.c": ["tests/c/test_xsum.c"],
    "src/stats/stats_xsum.c": ["tests/c/test_xsum.c"],
    "src/stream/stream_layout.c": ["tests/c/test_stream_layout.c"],
    "src/stream/stream_append.c": ["tests/c/test_stream_append.c"],
    "src/stream/stream_part.c": ["tests/c/test_stream_parts.c"],
    "src/stream/stream_read.c": ["tests/c/test_stream_read.c"],
    "src/stream/stream_slice.c": ["tests/c/test_stream_slice.c"],
    "src/stream/stream_read_slice.c": ["tests/c/test_stream_read_slice.c"],
    "src/stream/stream_stats.c": ["tests/c/test_stream_stats.c", "tests/python/test_stream_stats.py"],
    "src/stream/stream_table.c": ["tests/c/test_stream_layout.c"],
    "src/stream/stream_write.c": ["tests/c/test_stream_write.c"],
}

# The programs a source file builds (its main), as the tests run them.
PROGRAMS = {"src/mpi/iosim.c": "colfile-iosim"}

# A function a source file defines for other files: cf_* or cf__*, not static.
DEFINED = re.compile(r"^(?!static\b)(?:CF_API\s+)?[A-Za-z_][\w \t]*?[\s*](cf_\w+|cf__\w+)\s*\([^;{]*$", re.MULTILINE)


def oversized(src: Path, limit: int = MAX_LINES) -> list[str]:
    """Every C source or header under `src` longer than `limit` lines."""
    found = []
    for f in sorted(src.rglob("*")):
        if f.suffix in (".c", ".h") and f.is_file():
            n = len(f.read_text(errors="replace").splitlines())
            if n > limit:
                found.append(f"{f}: {n} lines (at most {limit}: split it by concept)")
    return found


def defined_functions(text: str) -> set[str]:
    return set(DEFINED.findall(text))


def untested(root: Path, tested_by: dict[str, list[str]], programs: dict[str, str]) -> list[str]:
    """Every way the sources under root/src break the one-test-per-file rule."""
    problems = []
    sources = {str(p.relative_to(root)) for p in (root / "src").rglob("*.c")}
    for s in sorted(sources - tested_by.keys()):
        problems.append(f"{s}: no test listed in TESTED_BY (add a test that exercises it)")
    for s in sorted(tested_by.keys() - sources):
        problems.append(f"{s}: listed in TESTED_BY but not a source file")
    for s in sorted(sources & tested_by.keys()):
        names = defined_functions((root / s).read_text(errors="replace"))
        stem = Path(s).stem
        ok = False
        for t in tested_by[s]:
            path = root / t
            if not path.is_file():
                problems.append(f"{s}: its test {t} does not exist")
                continue
            text = path.read_text(errors="replace")
            if (Path(t).stem == f"test_{stem}"
                    or any(re.search(rf"\b{re.escape(n)}\b", text) for n in names)
                    or (s in programs and programs[s] in text)):
                ok = True
        if not ok:
            problems.append(f"{s}: none of {tested_by[s]} calls its functions, runs it or is named after it")
    return problems


def test_no_source_file_is_too_long() -> None:
    assert oversized(ROOT / "src") == []


def test_every_source_file_has_a_test() -> None:
    assert untested(ROOT, TESTED_BY, PROGRAMS) == []


def repeated_keys(text: str, name: str) -> list[str]:
    """The keys written more than once in the dict literal assigned to
    `name` in Python source `text` (the later one silently wins)."""
    seen: dict[str, int] = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                for k in node.value.keys:
                    if isinstance(k, ast.Constant):
                        seen[k.value] = seen.get(k.value, 0) + 1
    return sorted(k for k, n in seen.items() if n > 1)


def test_each_source_file_is_listed_once() -> None:
    # a second entry for a file would drop the tests the first one lists
    assert repeated_keys(Path(__file__).read_text(), "TESTED_BY") == []


def test_repeat_checker_catches_a_second_entry() -> None:
    text = 'X: dict = {"a.c": ["t1"], "b.c": ["t2"], "a.c": ["t3"]}\nY = {"b.c": 1}\n'
    assert repeated_keys(text, "X") == ["a.c"]
    assert repeated_keys(text, "Y") == []


def foreign_impl_includes(src: Path) -> list[str]:
    """Includes of a folder's <name>_impl.h from another folder of src."""
    found = []
    impl = {h.name: h.parent for h in src.rglob("*_impl.h")}
    for f in sorted(src.rglob("*")):
        if f.suffix not in (".c", ".h"):
            continue
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read_text(errors="replace"), re.MULTILINE):
            if inc in impl and impl[inc] != f.parent:
                found.append(f"{f}: includes {inc}, which only {impl[inc].name}/ shares")
    return found


def test_impl_headers_stay_in_their_folder() -> None:
    assert foreign_impl_includes(ROOT / "src") == []


def test_impl_checker_catches_a_foreign_include(tmp_path: Path) -> None:
    root = make_tree(tmp_path, {"src/a/a_impl.h": "\n", "src/a/x.c": '#include "a_impl.h"\n',
                                "src/b/y.c": '#include "a_impl.h"\n'})
    found = foreign_impl_includes(root / "src")
    assert len(found) == 1 and "b/y.c: includes a_impl.h" in found[0], found


def test_the_c_tests_are_built() -> None:
    # tests/c/test_*.c are picked up by CMake's glob, tests/mpi/test_mpi_*.c
    # by tests/mpi's: a listed C test outside those would never run.
    for tests in TESTED_BY.values():
        for t in tests:
            if t.endswith(".c"):
                assert re.fullmatch(r"tests/c/test_\w+\.c|tests/mpi/test_mpi_\w+\.c", t), t


def make_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_size_checker_catches_a_long_file(tmp_path: Path) -> None:
    root = make_tree(tmp_path, {"src/a/ok.c": "x\n" * MAX_LINES, "src/a/long.h": "x\n" * (MAX_LINES + 1)})
    found = oversized(root / "src")
    assert len(found) == 1 and f"long.h: {MAX_LINES + 1} lines" in found[0], found


@pytest.mark.parametrize("tested_by, what", [
    ({}, "no test listed"),
    ({"src/a/f.c": ["tests/c/test_missing.c"]}, "does not exist"),
    ({"src/a/f.c": ["tests/c/test_other.c"]}, "none of"),
    ({"src/a/f.c": ["tests/c/test_f.c"], "src/a/gone.c": ["tests/c/test_f.c"]}, "not a source file"),
])
def test_mapping_checker_catches_an_untested_file(tmp_path: Path, tested_by: dict[str, list[str]],
                                                  what: str) -> None:
    root = make_tree(tmp_path, {
        "src/a/f.c": "static int helper(void) { return 1; }\nint cf__f_count(int x)\n{\n    return x;\n}\n",
        "tests/c/test_f.c": "int main(void) { return 0; }\n",
        "tests/c/test_other.c": "/* helper cf__f_counter */\n",
    })
    found = untested(root, tested_by, {})
    assert any(what in p for p in found), found


def test_mapping_checker_accepts_a_call_by_name_or_a_program(tmp_path: Path) -> None:
    root = make_tree(tmp_path, {
        "src/a/f.c": "int cf__f_count(int x)\n{\n    return x;\n}\n",
        "src/a/prog.c": "int main(void)\n{\n    return 0;\n}\n",
        "tests/c/test_calls.c": "int main(void) { return cf__f_count(0); }\n",
        "tests/python/test_runs.py": "run(['prog-name', '--help'])\n",
    })
    tested_by = {"src/a/f.c": ["tests/c/test_calls.c"], "src/a/prog.c": ["tests/python/test_runs.py"]}
    assert untested(root, tested_by, {"src/a/prog.c": "prog-name"}) == []
    assert defined_functions((root / "src/a/f.c").read_text()) == {"cf__f_count"}
