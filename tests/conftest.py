"""Shared test configuration.

An opt-in log of each test's CPU time, for deciding which tests to mark ``slow`` on a machine whose load
makes wall times meaningless: ``DPFAIR_TEST_CPU_LOG=/tmp/cpu.tsv pytest ...`` appends one line per test,
``cpu_s  children_cpu_s  wall_s  nodeid`` (``children`` is the CPU of the processes the test started and
waited for).  A test over ~2 s of CPU (or one that starts real processes and takes over ~2 s of wall time
on an idle machine) gets ``@pytest.mark.slow``; ``pytest -m "not slow"`` is the quick run.

``make test`` runs the suite in two calls: ``-n 2 -m "not serial"`` (pytest-xdist), then ``-m serial`` alone.
A test that starts real Flower or Ray processes (``processes`` under ``tests/federated/``) must be marked
``serial`` -- its checks watch process trees, CPU use and round-trip pace, which a neighbour on the other
worker would disturb -- and a ``serial`` test must be ``slow`` (the quick run is one parallel call).
:func:`pytest_collection_modifyitems` refuses a collection that breaks either rule.
"""

from __future__ import annotations

import os
import time

import pytest

_CPU_LOG = os.environ.get("DPFAIR_TEST_CPU_LOG")
_FLOWER_TESTS = "tests/federated/"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse markers that would put a process-watching test beside another one, or out of the serial call."""
    problems = []
    for item in items:
        marks = {mark.name for mark in item.iter_markers()}
        if "processes" in marks and item.nodeid.startswith(_FLOWER_TESTS) and "serial" not in marks:
            problems.append(f"{item.nodeid}: starts Flower/Ray processes: add @pytest.mark.serial")
        if "serial" in marks and "slow" not in marks:
            problems.append(f"{item.nodeid}: marked serial: add @pytest.mark.slow (the quick run is one parallel call)")
    if problems:
        raise pytest.UsageError("test markers (tests/conftest.py):\n" + "\n".join(problems))

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
