"""Hypothesis profile for the property tests: derandomized (the same examples on every run, so CI is
reproducible), no example database written into the checkout, no per-example deadline (CI machines are
slow and shared).  ``DPFAIR_HYPOTHESIS_RANDOM=1`` explores fresh random examples instead."""

import os

from hypothesis import settings

settings.register_profile("dpfair-ci", derandomize=True, database=None, deadline=None)
settings.register_profile("dpfair-explore", derandomize=False, database=None, deadline=None)
settings.load_profile("dpfair-explore" if os.environ.get("DPFAIR_HYPOTHESIS_RANDOM") == "1" else "dpfair-ci")
