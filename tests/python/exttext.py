"""colfile-v1 texts in the tests (docs/format.md 8.1): sealed again after
a test edits one."""

from __future__ import annotations


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC32C (Castagnoli), as format.md 8.1 defines it."""
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def reseal(text: bytes) -> bytes:
    """``text`` with its checksum line replaced by the right one for what
    precedes it."""
    lines = text.splitlines(keepends=True)
    if lines and lines[-1].startswith(b"CRC32C: "):
        lines.pop()
    body = b"".join(lines)
    return body + b"CRC32C: %08x\n" % crc32c(body)
