"""Writing a benchmark's section into a markdown file: the text between
its begin and end markers is replaced, or the section is appended."""

from __future__ import annotations

from pathlib import Path


def replace_section(path: Path, section: str, begin: str, end: str, head: str = "",
                    notes: tuple[str, str] | None = None, new_file: str = "") -> None:
    """Put ``section`` (which starts with ``begin`` and ends with ``end``)
    into the markdown file ``path``: in place of the text between the
    markers if the file has them, else at its end after ``head``.  A file
    that does not exist starts as ``new_file``.  With ``notes`` (a begin
    and an end marker), hand-written notes inside the old section are kept
    at the end of the new one."""
    text = path.read_text() if path.exists() else new_file
    if begin in text and end in text and text.index(begin) < text.index(end):
        old = text[text.index(begin):text.index(end)]
        if notes and notes[0] in old and notes[1] in old:
            kept = old[old.index(notes[0]):old.index(notes[1]) + len(notes[1])]
            section = section[:-len(end)].rstrip("\n") + "\n\n" + kept + "\n" + end
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + head + section + "\n"
    path.write_text(text)
