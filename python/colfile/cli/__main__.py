"""``python -m colfile.cli``: the ``colfile`` command line tool."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
