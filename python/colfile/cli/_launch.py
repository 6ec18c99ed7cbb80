"""Whether a command runs under MPI: a launcher's environment, ``--mpi``,
and the communicator then used (shared by ``check``, ``index`` and
``iosim``)."""

from __future__ import annotations

import os
from typing import Any

from ._common import CliError

__all__ = ["MPI_ENV", "want_mpi", "launched_size", "communicator"]

#: what launchers set in the environment of the processes they start
MPI_ENV = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE")


def want_mpi(flag: bool, environ: Any = None) -> bool:
    """True if MPI is to be used: ``--mpi``, or a launcher's variables."""
    env = os.environ if environ is None else environ
    return flag or any(env.get(k) for k in MPI_ENV)


def launched_size(environ: Any = None) -> int:
    """The number of processes a launcher says it started (0: unknown)."""
    env = os.environ if environ is None else environ
    for key in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        try:
            return int(env.get(key, ""))
        except ValueError:
            continue
    return 0


def communicator(flag: bool) -> Any:
    """MPI.COMM_WORLD under a launcher (or --mpi), else None (serial)."""
    if not want_mpi(flag):
        return None
    try:
        from mpi4py import MPI
    except ImportError as exc:
        # one process under a launcher may go on alone; more may not
        if flag or launched_size() > 1:
            raise CliError(f"running under MPI needs mpi4py, which cannot be "
                           f"imported: {exc}") from None
        return None
    return MPI.COMM_WORLD
