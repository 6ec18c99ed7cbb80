"""bigfile 0.1.52's own test module, run against colfile.compat.bigfile.

The original test module ships inside the installed ``bigfile`` package
(``bigfile/tests/test_bigfile.py``).  At test time it is read from there, its
import lines -- and nothing else -- are rewritten to import
``colfile.compat.bigfile`` instead, and pytest runs the result in a
subprocess; every test must pass.  Nothing of bigfile is copied into this
repository.

The original marks its tests with pytest-mpi's ``mpi`` marker;
``test_mpi_badfilenames`` has ``min_size=2``.  A small conftest written next
to the transformed module gives the marker pytest-mpi's meaning (skip a test
when the communicator is smaller than ``min_size``), so that test is skipped
in the serial run and runs in the ``mpiexec -n 2`` run, where every test
must pass on every rank.

A test the original itself fails in this environment is expected to fail
here too, the same way (``ORIGINAL_FAILS``): with numpy 2, bigfile's
``test_dataset`` compares a ``(128,)`` column read with the ``(128, 1)``
field bigfile's own Dataset gives, and fails; colfile.compat.bigfile gives
the same field shapes as the original.  The original module is run on the
original library for those tests, and must fail them as well: should a
numpy or bigfile version make the original pass, colfile must pass too.

bigfile is always installed where these tests run (``pip install
.[test]``): if it cannot be found the tests fail, they are not skipped.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from junitreport import junit


#: Generous: the original's test_create_odd writes 94 million floats.
TIMEOUT = 1500

CONFTEST = '''\
"""Gives the ``mpi`` marker pytest-mpi's meaning (written by colfile's
tests/python/compat/test_original_suite.py)."""
import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "mpi(min_size=1): needs MPI ranks")


def pytest_collection_modifyitems(config, items):
    from mpi4py import MPI
    size = MPI.COMM_WORLD.size
    for item in items:
        mark = item.get_closest_marker("mpi")
        if mark is not None and mark.kwargs.get("min_size", 1) > size:
            item.add_marker(pytest.mark.skip(
                reason=f"needs {mark.kwargs['min_size']} MPI ranks, have {size}"))
'''

RUNNER = '''\
"""Runs pytest on one MPI rank, with a JUnit report per rank."""
import sys
from mpi4py import MPI
import pytest

rank = MPI.COMM_WORLD.rank
code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                    "--junitxml=report-%d.xml" % rank, "test_bigfile_compat.py"])
sys.exit(int(code))
'''


#: tests of the original module that the original library fails with the
#: installed numpy (checked by test_original_fails_the_same), and why
ORIGINAL_FAILS = {
    "test_dataset": "numpy 2: Dataset fields of scalar columns are (n, 1) sub-arrays, "
                    "which the test compares with the (n,) column",
}


def original_test_module() -> Path:
    """The test module inside the installed bigfile package."""
    spec = importlib.util.find_spec("bigfile")
    assert spec is not None and spec.origin, (
        "bigfile (0.1.52) must be installed for this test: pip install bigfile==0.1.52")
    path = Path(spec.origin).parent / "tests" / "test_bigfile.py"
    assert path.is_file(), f"{path} is missing from the installed bigfile"
    return path


_FROM = re.compile(r"^(\s*)from\s+bigfile(\s+import\s+)", re.M)
_IMPORT = re.compile(r"^(\s*)import\s+bigfile\s*$", re.M)


def transform(source: str) -> str:
    """Rewrite only the import lines of the original module."""
    out = _FROM.sub(r"\1from colfile.compat.bigfile\2", source)
    out = _IMPORT.sub(r"\1import colfile.compat.bigfile as bigfile", out)
    return out


def expected_count(source: str) -> int:
    """Test functions times their parametrisations (the module's own
    ``parametrize`` lists, read from its syntax tree)."""
    tree = ast.parse(source)
    total = 0
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test"):
            continue
        n = 1
        for dec in node.decorator_list:
            if (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)
                    and dec.func.attr == "parametrize" and len(dec.args) >= 2
                    and isinstance(dec.args[1], (ast.List, ast.Tuple))):
                n *= len(dec.args[1].elts)
        total += n
    return total


def min_size_tests(source: str) -> set[str]:
    """Names of tests marked ``mpi(min_size=k)`` with k > 1."""
    tree = ast.parse(source)
    found = set()
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            if isinstance(dec, ast.Call) and getattr(dec.func, "attr", "") == "mpi":
                for kw in dec.keywords:
                    if kw.arg == "min_size" and ast.literal_eval(kw.value) > 1:
                        found.add(node.name)
    return found


def child_env() -> dict[str, str]:
    """The environment of the subprocesses: they import colfile from where
    this process did (the installed wheel, or the source tree)."""
    import colfile

    here = str(Path(colfile.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [here] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory, lib: object) -> tuple[Path, str]:
    source = original_test_module().read_text()
    new = transform(source)
    assert "from bigfile" not in new and not re.search(r"^\s*import bigfile\b", new, re.M)
    # only import lines changed
    changed = [(a, b) for a, b in zip(source.splitlines(), new.splitlines()) if a != b]
    assert changed and all("bigfile" in a and "import" in a for a, _ in changed)
    assert len(source.splitlines()) == len(new.splitlines())
    d = tmp_path_factory.mktemp("bigfile_suite")
    (d / "test_bigfile_compat.py").write_text(new)
    (d / "conftest.py").write_text(CONFTEST)
    (d / "run_rank.py").write_text(RUNNER)
    return d, source


def test_transform_rewrites_imports_only() -> None:
    src = "from bigfile import BigFile\nimport bigfile\n    import bigfile\nx = 'bigfile'\n"
    assert transform(src) == ("from colfile.compat.bigfile import BigFile\n"
                              "import colfile.compat.bigfile as bigfile\n"
                              "    import colfile.compat.bigfile as bigfile\n"
                              "x = 'bigfile'\n")


def test_original_suite_serial(suite: tuple[Path, str]) -> None:
    d, source = suite
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--junitxml=report-serial.xml", "test_bigfile_compat.py"],
        cwd=d, env=child_env(), capture_output=True, text=True, timeout=TIMEOUT)
    report = d / "report-serial.xml"
    assert report.exists(), proc.stdout[-5000:] + proc.stderr[-5000:]
    res = junit(report)
    total = expected_count(source)
    skipped_ok = min_size_tests(source)
    failed = sorted({name.split("[")[0] for name in res["failed"]})
    assert failed == sorted(ORIGINAL_FAILS), proc.stdout[-20000:]
    assert all(name.split("[")[0] in skipped_ok for name in res["skipped"]), res["skipped"]
    assert len(res["passed"]) + len(res["skipped"]) + len(res["failed"]) == total, (res, total)
    assert len(res["passed"]) == total - len(skipped_ok) - len(res["failed"])


def mpiexec() -> Path | None:
    exe = Path(sys.executable).parent / "mpiexec"
    if exe.exists():
        return exe
    found = shutil.which("mpiexec")
    return Path(found) if found else None


def test_original_suite_mpiexec_2(suite: tuple[Path, str]) -> None:
    exe = mpiexec()
    if exe is None:
        pytest.skip("no mpiexec next to the Python executable or on PATH")
    d, source = suite
    for old in d.glob("report-[0-9]*.xml"):
        old.unlink()
    proc = subprocess.run(
        [str(exe), "-n", "2", sys.executable, "run_rank.py"],
        cwd=d, env=child_env(), capture_output=True, text=True, timeout=TIMEOUT)
    total = expected_count(source)
    for rank in range(2):
        report = d / f"report-{rank}.xml"
        assert report.exists(), proc.stdout[-5000:] + proc.stderr[-5000:]
        res = junit(report)
        failed = sorted({name.split("[")[0] for name in res["failed"]})
        assert failed == sorted(ORIGINAL_FAILS), (rank, proc.stdout[-20000:])
        assert res["skipped"] == [], (rank, res["skipped"])
        assert len(res["passed"]) + len(res["failed"]) == total, (rank, res, total)


def test_original_fails_the_same(suite: tuple[Path, str]) -> None:
    """The tests in ORIGINAL_FAILS fail on the original library too (its
    untransformed module), at the same line as on colfile."""
    d, source = suite
    (d / "test_bigfile_orig.py").write_text(source)
    results = {}
    for module in ("test_bigfile_orig.py", "test_bigfile_compat.py"):
        report = d / f"report-{module}.xml"
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             f"--junitxml={report.name}", module, "-k", " or ".join(ORIGINAL_FAILS)],
            cwd=d, env=child_env(), capture_output=True, text=True, timeout=TIMEOUT)
        assert report.exists(), proc.stdout[-5000:] + proc.stderr[-5000:]
        res = junit(report)
        assert sorted({n.split("[")[0] for n in res["failed"]}) == sorted(ORIGINAL_FAILS), \
            (module, proc.stdout[-20000:])
        results[module] = re.findall(rf"{module}:(\d+): AssertionError", proc.stdout)
    assert results["test_bigfile_orig.py"] and \
        results["test_bigfile_orig.py"] == results["test_bigfile_compat.py"], results
