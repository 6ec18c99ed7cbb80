"""Reading the JUnit XML report of a pytest run the tests started."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path


def junit(path: Path, qualified: bool = False) -> dict[str, list[str]]:
    """{'passed'|'failed'|'skipped': [test ids]} of a JUnit report; an id
    is the test's name, or ``classname::name`` when ``qualified``."""
    result: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": []}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "?")
        if qualified:
            name = f"{case.get('classname', '')}::{name}"
        if case.find("failure") is not None or case.find("error") is not None:
            result["failed"].append(name)
        elif case.find("skipped") is not None:
            result["skipped"].append(name)
        else:
            result["passed"].append(name)
    return result
