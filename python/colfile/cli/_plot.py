"""What the subcommands' --plot options share: drawing a figure of
:mod:`colfile.plots` into a file, with one-line errors."""

from __future__ import annotations

import os
from typing import Any, Callable

from colfile import plots

from ._common import CliError


def check_target(path: str) -> None:
    """Refuse, before any work, a picture that cannot be written there."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CliError(f"{path}: cannot write the picture: the directory {parent} "
                       "does not exist")
    if os.path.isdir(path):
        raise CliError(f"{path}: cannot write the picture: a directory")


def draw(path: str, make: Callable[[], Any]) -> None:
    """``make()`` a figure and save it to ``path``."""
    try:
        fig = make()
    except ImportError as exc:
        raise CliError(f"{path}: {exc}") from None
    try:
        plots.save(fig, path)
    except (OSError, ValueError) as exc:  # ValueError: a suffix matplotlib cannot write
        raise CliError(f"{path}: cannot write the picture: {exc}") from None
