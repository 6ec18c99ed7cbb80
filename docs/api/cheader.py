"""cheader.py - a Sphinx directive that renders a C header as reference.

    .. c-header:: include/colfile.h

colfile's public headers are their own manual: a comment above each
declaration states its contract, and banner comments divide them into
sections.  The directive keeps that text as written (a preformatted block
under each declaration, so no comment can break the markup) and declares
each function, macro, enum, struct and type in Sphinx's C domain, which
indexes them and lets other pages refer to them (:c:func:`cf_file_open`).
No Doxygen is needed: the headers follow one layout, which this reads.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

#: Lines that carry no declaration of their own.
SKIP = re.compile(r"^\s*(#\s*(if|ifdef|ifndef|else|elif|endif|include)\b|extern\s+\"C\"\s*\{|\}\s*$)")
BANNER = re.compile(r"^-{10,}$")


@dataclass
class Item:
    kind: str  # "section", "text", "function", "macro", "enum", "struct", "type", "code"
    name: str = ""
    decl: str = ""
    doc: list[str] = field(default_factory=list)
    more: list[str] = field(default_factory=list)  # further signatures


def _comment_lines(text: str) -> list[str]:
    """The lines of a /* ... */ comment without its frame."""
    body = text.strip()[2:-2]
    out = []
    for line in body.split("\n"):
        s = line.rstrip()
        m = re.match(r"^\s*\* ?(.*)$", s)
        out.append(m.group(1) if m else s.strip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def _declaration(lines: list[str], i: int) -> tuple[str, int]:
    """The declaration starting at line i and the line after it: a
    #define (with continuations) or text up to a ';' outside braces."""
    if lines[i].lstrip().startswith("#"):
        text = lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + lines[i]
        return text, i + 1
    text, depth = "", 0
    while i < len(lines):
        line = lines[i]
        text += line + "\n"
        code = re.sub(r"/\*.*?\*/", "", line)
        depth += code.count("{") - code.count("}")
        i += 1
        if depth <= 0 and code.rstrip().endswith(";"):
            break
    return text.rstrip("\n"), i


def parse(source: str) -> tuple[list[str], list[Item]]:
    """(the header's opening comment, its items in order)."""
    lines = source.split("\n")
    intro: list[str] = []
    items: list[Item] = []
    pending: list[str] = []
    i = 0
    first = True
    last_end = -1  # the line after the last declaration
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("/*"):
            j = i
            while "*/" not in lines[j]:
                j += 1
            comment = "\n".join(lines[i:j + 1])
            after = lines[j].split("*/", 1)[1].strip()
            i = j + 1
            body = _comment_lines(comment)
            if first:
                intro, first = body, False
                continue
            if after:  # a comment that starts a line of code: keep it with it
                pending = body
                lines.insert(i, after)
                continue
            if len(body) == 1 and BANNER.match(body[0].strip()):
                # /* ---- */ /* Title */ /* ---- */
                title_line = lines[i].strip()
                if title_line.startswith("/*") and title_line.endswith("*/"):
                    title = _comment_lines(title_line)[0].strip()
                    i += 1
                    if i < len(lines) and BANNER.match(lines[i].strip()[2:-2].strip() or "x"):
                        i += 1
                    items.append(Item("section", name=title))
                    pending = []
                    continue
            m = re.match(r"^-{2,}\s*(.*?)\s*-*$", body[0]) if body else None
            if m and m.group(1):  # /* ---- A subsection ------ \n text */
                items.append(Item("text", name=m.group(1), doc=body[1:]))
                pending = []
                continue
            if pending:
                items.append(Item("text", doc=pending))
            pending = body
            continue
        if not stripped:  # a comment not right above code is text
            if pending:
                items.append(Item("text", doc=pending))
                pending = []
            i += 1
            continue
        if SKIP.match(line) or re.match(r"^\s*#\s*define\s+(CF_API|COLFILE\w*_H)\b", line):
            i += 1
            continue
        start = i
        decl, i = _declaration(lines, i)
        item = _classify(decl, pending)
        if (not pending and item.kind == "function" and items and items[-1].kind == "function"
                and last_end == start):
            items[-1].more.append(item.name)  # one comment above several
            items[-1].decl += "\n" + decl
        else:
            items.append(item)
        last_end = i
        pending = []
    if pending:
        items.append(Item("text", doc=pending))
    return intro, items


def _classify(decl: str, doc: list[str]) -> Item:
    flat = " ".join(re.sub(r"/\*.*?\*/", "", decl, flags=re.S).split())
    m = re.match(r"^#\s*define\s+(\w+)(\(([^)]*)\))?", flat)
    if m:
        return Item("macro", name=m.group(1) + (m.group(2) or ""), decl=decl, doc=doc)
    if flat.startswith("CF_API "):
        sig = flat[len("CF_API "):].rstrip(";").strip()
        return Item("function", name=sig, decl=decl, doc=doc)
    m = re.match(r"^enum\s+(\w+)\s*\{", flat)
    if m:
        return Item("enum", name=m.group(1), decl=decl, doc=doc)
    m = re.match(r"^typedef\s+struct\s+(\w+)\s*\{.*\}\s*(\w+)\s*;$", flat)
    if m:
        return Item("struct", name=m.group(2), decl=decl, doc=doc)
    m = re.match(r"^typedef\s+.*?(\w+)\s*;$", flat)
    if m:
        return Item("type", name=m.group(1), decl=decl, doc=doc)
    return Item("code", decl=decl, doc=doc)


def _block(lines: list[str], indent: str) -> list[str]:
    if not lines:
        return []
    out = [f"{indent}.. code-block:: text", ""]
    out += [f"{indent}   {line}" if line.strip() else "" for line in lines]
    return out + [""]


def render(path: str, source: str) -> list[str]:
    """reStructuredText for the header at path."""
    intro, items = parse(source)
    name = os.path.basename(path)
    out = [name, "-" * len(name), "", f"``#include <{name}>``", ""]
    out += _block(intro, "")
    directive = {"function": "c:function", "macro": "c:macro", "enum": "c:enum",
                 "struct": "c:struct", "type": "c:type"}
    # C keeps enum and struct tags apart from functions, Sphinx does not:
    # a tag named like a function (enum cf_column_kind) is shown, not declared
    functions = {m.group(1) for it in items if it.kind == "function"
                 for sig in [it.name, *it.more] for m in [re.search(r"(\w+)\s*\(", sig)] if m}
    for it in items:
        if it.kind in ("enum", "struct") and it.name in functions:
            out += [f".. rubric:: {it.kind} {it.name}", ""]
            out += _block(it.doc + [""] + it.decl.split("\n"), "")
            continue
        if it.kind == "section":
            out += [it.name, "~" * len(it.name), ""]
        elif it.kind == "text":
            if it.name:
                out += [f"**{it.name}**", ""]
            out += _block(it.doc, "")
        elif it.kind == "code":
            out += _block(it.doc + [""] + it.decl.split("\n"), "")
        else:
            head = f".. {directive[it.kind]}:: "
            out += [head + it.name] + [" " * len(head) + sig for sig in it.more] + [""]
            body = list(it.doc)
            if it.kind in ("enum", "struct", "macro") or "/*" in it.decl:
                body += ([""] if body else []) + it.decl.split("\n")
            out += _block(body, "   ")
    return out


class CHeader(SphinxDirective):
    """``.. c-header:: path`` (relative to the project root, set as
    ``cheader_root`` in conf.py)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        root = self.config.cheader_root
        path = os.path.join(root, self.arguments[0])
        self.env.note_dependency(path)
        with open(path, encoding="utf-8") as fh:
            text = render(self.arguments[0], fh.read())
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(text, source=path), node)
        return node.children


def setup(app: Sphinx) -> dict[str, object]:
    app.add_config_value("cheader_root", "", "env")
    app.add_directive("c-header", CHeader)
    return {"version": "1", "parallel_read_safe": True}
