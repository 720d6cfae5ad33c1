"""Shared test configuration.

An opt-in log of each test's CPU time, for deciding which tests to mark ``slow`` on a machine whose load
makes wall times meaningless: ``DPFAIR_TEST_CPU_LOG=/tmp/cpu.tsv pytest ...`` appends one line per test,
``cpu_s  children_cpu_s  wall_s  nodeid`` (``children`` is the CPU of the processes the test started and
waited for).  A test over ~2 s of CPU (or one that starts real processes and takes over ~2 s of wall time
on an idle machine) gets ``@pytest.mark.slow``; ``pytest -m "not slow"`` is the quick run.

``make test`` runs the suite in two calls: ``-n 2 -m "not serial"`` (pytest-xdist), then ``-m serial`` on
``tests/federated/`` (collecting the whole suite again there took ~10 s).
A test that starts real Flower or Ray processes (``processes`` under ``tests/federated/``) must be marked
``serial`` -- its checks watch process trees, CPU use and round-trip pace, which a neighbour on the other
worker would disturb -- a ``serial`` test must be ``slow`` (the quick run is one parallel call), and it must live
under ``tests/federated/`` (the serial call collects nothing else).  :func:`pytest_collection_modifyitems` refuses a
collection that breaks any of these rules (the parallel call collects the whole suite, so it checks them all).

The serial call (``-m serial``) runs on two workers, scheduled by :func:`pytest_xdist_make_scheduler`: every
``serial`` test on one worker, one at a time in file order, but for :data:`_BESIDE_THE_SERIAL_ONES`, one at a time on
the other worker: the deployment page's replay (stock Flower, which waits in 3 s polls for most of its minute at
about half a CPU, every limit from the measured pace), then the process-hygiene tests (the processes of a killed
owner gone within 15 s; a run that cannot finish in its 6 s).  Beside them run the first of the others: the demo on
its own files, the Ctrl-C tests, the idle federation (its own processes' CPU), the round trip and the Flower runs
compared with the simulator; the Ray tests (Ray's own 30 s start-up limit) come two minutes later in file order,
once the other worker is done.  (pytest-xdist's ``xdist_group`` marker cannot express this: with pytest 9 its
``--dist loadgroup`` groups nothing.)
"""

from __future__ import annotations

import os
import time

import pytest

_CPU_LOG = os.environ.get("DPFAIR_TEST_CPU_LOG")
_FLOWER_TESTS = "tests/federated/"
#: The serial tests that run beside the others in the serial call (test ID prefixes, as pytest-xdist sees them).
_BESIDE_THE_SERIAL_ONES = ("tests/federated/test_deployment_docs.py::", "tests/federated/test_process_hygiene.py::")


@pytest.hookimpl(tryfirst=True)  # before -m deselects anything
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse markers that would put a process-watching test beside another one, or out of the serial call."""
    problems = []
    for item in items:
        marks = {mark.name for mark in item.iter_markers()}
        if "processes" in marks and item.nodeid.startswith(_FLOWER_TESTS) and "serial" not in marks:
            problems.append(f"{item.nodeid}: starts Flower/Ray processes: add @pytest.mark.serial")
        if "serial" in marks and "slow" not in marks:
            problems.append(f"{item.nodeid}: marked serial: add @pytest.mark.slow (the quick run is one parallel call)")
        if "serial" in marks and not item.nodeid.startswith(_FLOWER_TESTS):
            problems.append(f"{item.nodeid}: marked serial: move it under {_FLOWER_TESTS} (the serial call runs only those)")
    if problems:
        raise pytest.UsageError("test markers (tests/conftest.py):\n" + "\n".join(problems))


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: unknown where pytest-xdist is not installed
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """With ``-m serial`` on workers: the ``serial`` tests in one work unit (one worker, one at a time, in file
    order), :data:`_BESIDE_THE_SERIAL_ONES` in another; any other run keeps pytest-xdist's own scheduler."""
    if config.getoption("markexpr") != "serial":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SerialScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "beside" if nodeid.startswith(_BESIDE_THE_SERIAL_ONES) else "serial"

        def remove_node(self, node: object) -> str | None:
            """pytest-xdist's, but the test that crashed its worker is not queued again (xdist reports it failed).

            The parent requeues the crashed unit whole, so the crashing test (a SIGKILL or Ray test) would crash
            each replacement worker in turn until the restart limit, and the rest of the unit would never run."""
            workload = self.assigned_work.pop(node)
            if not self._pending_of(workload):
                return None
            crashed = next(nodeid for unit in workload.values() for nodeid, done in unit.items() if not done)
            workload[self._split_scope(crashed)][crashed] = True  # marked done before anyone can take the unit
            self.workqueue.update((scope, unit) for scope, unit in workload.items() if not all(unit.values()))
            for other in self.assigned_work:
                self._reschedule(other)
            return crashed

    return SerialScheduling(config, log)


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
