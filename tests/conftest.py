"""Shared test configuration.

An opt-in log of each test's CPU time, for deciding which tests to mark ``slow`` on a machine whose load
makes wall times meaningless: ``DPFAIR_TEST_CPU_LOG=/tmp/cpu.tsv pytest ...`` appends one line per test,
``cpu_s  children_cpu_s  wall_s  nodeid`` (``children`` is the CPU of the processes the test started and
waited for).  A test over ~2 s of CPU (or one that starts real processes and takes over ~2 s of wall time
on an idle machine) gets ``@pytest.mark.slow``; ``pytest -m "not slow"`` is the quick run.
"""

from __future__ import annotations

import os
import time

import pytest

_CPU_LOG = os.environ.get("DPFAIR_TEST_CPU_LOG")

if _CPU_LOG:

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
        """Time setup, call and teardown of ``item`` together, in CPU seconds of this process and its children."""
        before, wall = os.times(), time.perf_counter()
        yield
        after = os.times()
        cpu = (after.user - before.user) + (after.system - before.system)
        children = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        with open(_CPU_LOG, "a", encoding="utf-8") as log:
            log.write(f"{cpu:.3f}\t{children:.3f}\t{time.perf_counter() - wall:.3f}\t{item.nodeid}\n")
