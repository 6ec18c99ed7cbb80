"""Damage the tests do to a File's files on purpose."""
from __future__ import annotations

import os


def flip_bits(path: str | os.PathLike[str], offset: int, mask: int) -> None:
    """XOR ``mask`` into the byte at ``offset`` of the file ``path``, in place."""
    with open(path, "r+b") as fh:
        fh.seek(offset)
        b = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([b[0] ^ mask]))
