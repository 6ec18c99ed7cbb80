"""Run the MPI cases on one rank (``mpiexec -n N python run_rank.py OUT``).

Each rank writes its pytest output to ``OUT/out-<rank>.txt`` and a JUnit
report to ``OUT/report-<rank>.xml``; extra arguments go to pytest."""

import os
import sys

from mpi4py import MPI

import pytest

here = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1]
rank = MPI.COMM_WORLD.rank
log = open(os.path.join(out, f"out-{rank}.txt"), "w")
os.dup2(log.fileno(), 1)
os.dup2(log.fileno(), 2)
# where a case past its deadline prints its stack (conftest.py): pytest
# captures fd 2 while a case runs
os.environ["COLFILE_MPI_CASE_FD"] = str(os.dup(log.fileno()))
code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-rfE",
                    "--rootdir", here, "--confcutdir", here,
                    "-o", "python_files=cases_*.py", "-o", "testpaths=",
                    f"--junitxml={os.path.join(out, f'report-{rank}.xml')}",
                    *sys.argv[2:], here])
sys.stdout.flush()
sys.exit(int(code))
