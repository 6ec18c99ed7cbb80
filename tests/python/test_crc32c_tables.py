"""src/common/crc32c_tables.h is what tools/gen_crc32c_tables.py writes:
the header says "do not edit", and the generator checks the linearity and
the period the header's compact spelling relies on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_crc32c_tables_header_is_the_generators_output() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_crc32c_tables.py")],
                         capture_output=True, text=True, check=True).stdout
    assert out == (ROOT / "src" / "common" / "crc32c_tables.h").read_text()
