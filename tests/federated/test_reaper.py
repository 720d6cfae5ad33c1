"""The owner-death reaper and :meth:`LocalFederation.stop` signal only processes they started.

A process id is reused once its process is gone; a recorded number alone may name somebody else's process.  Each
test plants such a reuse -- a live process of the test's own whose id is recorded with another start time or
command line (what a reused id looks like) -- and shows it is never signalled, beside a process recorded as it
is, which is stopped.  A mutant that compares ids only is caught.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpfair.federated import _reaper
from dpfair.federated._reaper import ProcessIdentity, identity, reap, signal_if_same

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux /proc")

_SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def _start() -> tuple[subprocess.Popen, ProcessIdentity]:
    proc = subprocess.Popen(_SLEEP, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while (who := identity(proc.pid)) is None or b"time.sleep" not in who.cmdline:  # exec'd
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return proc, who


def _reused(who: ProcessIdentity, *, cmdline: bytes | None = None) -> ProcessIdentity:
    """The record of an earlier process that held *who*'s id: another start time, or another command line."""
    if cmdline is not None:
        return ProcessIdentity(who.pid, who.start_time, cmdline)
    return ProcessIdentity(who.pid, who.start_time - 1, who.cmdline)


def _stopped(proc: subprocess.Popen, timeout: float = 10.0) -> bool:
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


@pytest.fixture
def processes():
    started: list[subprocess.Popen] = []

    def start() -> tuple[subprocess.Popen, ProcessIdentity]:
        proc, who = _start()
        started.append(proc)
        return proc, who

    yield start
    for proc in started:  # the test's own children, by their Popen
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_identity_reads_the_start_time_and_the_command_line():
    me = identity(os.getpid())
    assert me is not None and me.pid == os.getpid() and me.start_time > 0
    assert me.cmdline.split(b"\0")[0] == os.fsencode(sys.executable) or b"python" in me.cmdline
    assert identity(os.getpid()) == me  # fixed for the life of the process
    assert identity(2**22 + 12345) is None  # above pid_max: no such process


def test_a_signal_reaches_only_the_recorded_process(processes):
    innocent, who = processes()
    for record in (_reused(who), _reused(who, cmdline=b"flower-supernode\0--insecure\0")):
        assert not signal_if_same(record, 15)
    assert innocent.poll() is None
    assert signal_if_same(who, 15) and _stopped(innocent) and innocent.returncode == -15


def test_a_planted_reused_pid_is_never_signalled_by_the_reaper_process(processes, tmp_path):
    """The real reaper (``python -m dpfair.federated._reaper``): its owner gone, it stops the group recorded as
    it is, leaves the planted one alive, removes the recorded folder and marks the recorded result as failed."""
    innocent, innocent_id = processes()
    ours, ours_id = processes()
    home, result = tmp_path / "home", tmp_path / "result.json"
    home.mkdir()
    result.write_text(json.dumps({"completed": False, "failed": None, "errors": [], "rounds_played": 7}))
    reaper = subprocess.Popen([sys.executable, "-m", "dpfair.federated._reaper", "0.5"], stdin=subprocess.PIPE,
                              text=True, start_new_session=True)
    reaper.stdin.write(f"pgid {innocent.pid} {innocent_id.start_time - 1}\n")  # a reused id
    reaper.stdin.write(f"pgid {ours.pid} {ours_id.start_time}\nhome {home}\nresult {result}\n")
    reaper.stdin.close()  # the owner is gone, without "done"
    assert reaper.wait(30) == 0
    assert _stopped(ours) and ours.returncode == -15
    assert innocent.poll() is None, "the reaper signalled a process it did not start"
    assert not home.exists()
    saved = json.loads(result.read_text())
    assert saved["status"] == "failed" and saved["rounds_played"] == 7
    assert "ended before the run did (killed or crashed)" in saved["failed"] and saved["failed"] in saved["errors"]


def test_a_reused_group_leader_id_protects_its_whole_group(processes):
    """In-process :func:`reap`: a group whose leader's id names another process (same start time, another command
    line; or another start time) is skipped; with the id-only mutant it would be killed (the check is what works)."""
    innocent, who = processes()
    reap({who.pid: _reused(who, cmdline=b"flwr-clientapp\0")}, [], grace=0.2)
    reap({who.pid: _reused(who)}, [], grace=0.2)
    assert innocent.poll() is None


def test_the_id_only_mutant_is_caught(processes, monkeypatch):
    innocent, who = processes()
    monkeypatch.setattr(_reaper, "_same", lambda now, recorded: now is not None and now.pid == recorded.pid)
    reap({who.pid: _reused(who)}, [], grace=0.2)
    assert _stopped(innocent), "the mutant comparing ids only should have signalled the planted process"


def test_local_federation_stop_never_signals_a_planted_reused_pid(processes, tmp_path):
    """``stop()``: a process seen earlier whose id now names another one, and a started process reaped and its id
    reused (its group then checked member by member), are left alone."""
    from dpfair.federated._deployment import LocalFederation, _signal_group

    pytest.importorskip("flwr")
    innocent, who = processes()
    toy = Path(__file__).resolve().parent / "toy_app"
    fed = LocalFederation(2, app_dir=toy, log_dir=tmp_path / "logs", stop_timeout=0.2)
    fed._seen[who.pid] = _reused(who)
    fed.stop()
    assert innocent.poll() is None

    class Reaped:  # a started process already waited for, whose id the kernel gave to `innocent`
        pid, returncode = who.pid, 0

        def poll(self) -> int:
            return 0

    _signal_group(Reaped(), 9, _reused(who))
    assert innocent.poll() is None
    _signal_group(Reaped(), 15, who)  # recorded as it is: its group is stopped
    assert _stopped(innocent) and innocent.returncode == -15
