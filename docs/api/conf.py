"""Sphinx configuration of colfile's API reference (docs/api).

Build it from the project root (the docs extra installs Sphinx):

    pip install .[docs]
    sphinx-build -W --keep-going -b html docs/api build/api-html

The Python reference comes from the package's numpydoc docstrings
(autodoc + napoleon, importing python/colfile from this tree), the C
reference from the comments of include/colfile.h and include/colfile_mpi.h
(cheader.py beside this file).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

project = "colfile"
author = "the colfile authors"
release = version = "0.1.0"

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "cheader"]

# numpydoc-style sections (Parameters, Returns, Raises, Examples)
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"show-inheritance": True}
# mpi4py is optional: the MPI module documents without it
autodoc_mock_imports = ["mpi4py"]

cheader_root = ROOT

html_theme = "alabaster"
html_title = "colfile API reference"
html_static_path: list[str] = []
templates_path: list[str] = []
exclude_patterns = ["_build"]
