"""The rows of 3 <f8 the MPI stream runners append (stream_open_slices,
stream_reopen_slices, stream_parts_count): row i of task t is
(t * 1e6 + i, -i / 2, wave(i)), with NaN in one component of every
``nan_every``-th row, so that chunk statistics count NaNs."""

from __future__ import annotations

from typing import Callable

import numpy as np


def rows(task: int, start: int, stop: int, wave: Callable[[np.ndarray], np.ndarray] = np.cos,
         nan_every: int = 89, nan_at: int = 4, nan_col: int = 1) -> np.ndarray:
    """Rows [start, stop) of task ``task``; NaN in component ``nan_col`` of
    the rows i with i % nan_every == nan_at."""
    i = np.arange(start, stop, dtype=np.float64)
    out = np.stack([task * 1e6 + i, -i * 0.5, wave(i)], axis=1)
    out[i % nan_every == nan_at, nan_col] = np.nan
    return out
