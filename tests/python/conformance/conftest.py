"""Hypothesis profiles of the differential conformance suite.

``HYPOTHESIS_PROFILE`` chooses one (docs/testing.md):

* ``ci`` (the default): few examples per property, so that the suite stays
  within the CI budget, derandomized so that a CI failure reproduces;
* ``dev``: hypothesis's defaults (100 examples per property), random,
  failures remembered (in ``$TMPDIR/colfile-hypothesis-<uid>``, or
  ``$HYPOTHESIS_STORAGE_DIRECTORY``) and replayed first;
* ``long``: thousands of examples per property and longer stateful runs,
  for a search before a release (``HYPOTHESIS_PROFILE=long pytest
  tests/python/conformance``).

Every profile prints the failing example as code (``print_blob``) so that it
can be kept as an explicit regression test.
"""

from __future__ import annotations

import os
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

# hypothesis's caches and example database live outside the checkout (which
# may be read-only, or shared by runs at once)
set_hypothesis_home_dir(os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY") or
                        os.path.join(tempfile.gettempdir(), f"colfile-hypothesis-{os.getuid()}"))

_COMMON = dict(deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])

# no example database in CI: nothing is written into the checkout
settings.register_profile("ci", max_examples=40, derandomize=True, database=None,
                          stateful_step_count=25, **_COMMON)
settings.register_profile("dev", max_examples=100, **_COMMON)
settings.register_profile("long", max_examples=3000, stateful_step_count=60, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
