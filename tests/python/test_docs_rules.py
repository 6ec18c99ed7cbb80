"""The user documentation stays documentation: ratchets on README.md and
docs/ that pass today and fail when a development journal creeps back in.

Docs describe what is, for users: no issue numbers, no work-session
diaries, no dates and no commit hashes (git history keeps those), and
docs/performance.md stays a short reference rather than a log.  The
"Command:" and "Machine:" lines of a generated benchmark block say when
and where the numbers were measured, so dates are allowed there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The longest docs/performance.md may get (lines): about 400, what is
#: measured, how, the tables against peers and the design choices.
PERFORMANCE_MAX_LINES = 420


def _docs() -> list[Path]:
    files = [ROOT / "README.md"]
    files += sorted(p for p in (ROOT / "docs").rglob("*")
                    if p.suffix in (".md", ".rst") and "_build" not in p.parts)
    return files


def _ids(files: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in files]


DOCS = _docs()

_MONTHS = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|"
           r"Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")

#: (what, pattern) pairs searched in every line.
RULES = [
    ("an issue number", re.compile(r"(?<![\w.\-/&])#\d+\b|\b(?:issue|pr|pull request)s? #?\d+\b", re.I)),
    ("a work-session journal", re.compile(r"\bsession \d+\b|\bwork[- ]period\b|\bday \d+ of\b", re.I)),
    ("a date", re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b")),
    # month names capitalised: "a writer may 2048 ..." is no date
    ("a date", re.compile(r"\b(?:\d{1,2} )?" + _MONTHS + r"\.? (?:\d{1,2}, )?(?:19|20)\d\d\b")),
    ("a commit hash", re.compile(r"\bcommit(?:s|ted)?(?: at| in)? `?[0-9a-f]{7,40}\b", re.I)),
]

#: Lines of generated benchmark blocks that may carry dates and paths.
MEASUREMENT_LINE = re.compile(r"^\s*(?:Command|Machine):")

#: A token that looks like an abbreviated or full commit hash.
HEXWORD = re.compile(r"(?<![\w.=-])[0-9a-f]{7,40}(?![\w.=-])")


def _prose(line: str) -> str:
    """``line`` without its code spans (format values such as CRCs live in
    code, commit hashes would not)."""
    return re.sub(r"`[^`]*`", "", line)


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def _violations(path: Path) -> list[str]:
    found = []
    in_code = False
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if MEASUREMENT_LINE.match(line):
            continue
        for what, pattern in RULES:
            m = pattern.search(line)
            if m:
                found.append(f"{_name(path)}:{no}: {what}: {m.group(0)!r}")
        if in_code or line.startswith("    "):
            continue
        for m in HEXWORD.finditer(_prose(line)):
            word = m.group(0)
            if re.search(r"\d", word) and re.search(r"[a-f]", word):
                found.append(f"{_name(path)}:{no}: a commit hash in prose: {word!r}")
    return found


@pytest.mark.parametrize("path", DOCS, ids=_ids(DOCS))
def test_docs_have_no_journal(path: Path) -> None:
    """No issue numbers, session journals, dates or commit hashes."""
    assert _violations(path) == []


def test_rules_catch_journal_lines(tmp_path: Path) -> None:
    """Each rule fires on the kind of line it exists for, and spares
    format values and measurement lines."""
    doc = tmp_path / "probe.md"
    bad = {
        "Fixed in #12 after review.": "an issue number",
        "See issue 31 for the plan.": "an issue number",
        "## Session 3: the write path": "a work-session journal",
        "Measured on 2026-11-27 at noon.": "a date",
        "Rewritten in November 2026.": "a date",
        "Measured on Nov 27, 2026.": "a date",
        "The fix landed in commit 49de853.": "a commit hash",
        "Since 3b14731 reads are faster.": "a commit hash in prose",
    }
    good = [
        "`123456789` gives `e3069283`, stored as `crc32c=08eca2d0`.",
        "Command: `bench/peers.py` run 2026-11-27 13:16 UTC",
        "Machine: AMD EPYC, 2 cores",
        "See [8.3](format.md#83-temporary-files) and `#HUMANE`.",
        "16777216 rows, 0 … 4294967295",
        "a writer may 2048 times retry",
    ]
    for line, what in bad.items():
        doc.write_text(line + "\n", encoding="utf-8")
        found = _violations(doc)
        assert len(found) == 1 and what in found[0], (line, found)
    doc.write_text("\n".join(good) + "\n", encoding="utf-8")
    assert _violations(doc) == []


def test_performance_doc_is_short() -> None:
    """docs/performance.md is a reference (what is measured, how, the
    current tables), not a log: it stays under the limit."""
    lines = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8").count("\n")
    assert lines < PERFORMANCE_MAX_LINES, f"docs/performance.md has {lines} lines"
