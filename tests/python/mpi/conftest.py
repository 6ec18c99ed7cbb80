"""The MPI tests: the modules here run in the ordinary (serial) pytest
session and launch ``mpiexec``; the case modules in ``cases/`` run on every
rank under ``mpiexec`` and are never collected by the serial session."""

collect_ignore = ["cases", "write_pattern.py"]
