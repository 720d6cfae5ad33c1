"""The owner-death watch of a :class:`~dpfair.federated.LocalFederation`: ``python -m dpfair.federated._reaper``.

The federation's processes run in their own sessions (so that a Ctrl-C reaches only the owner, which stops
them in order); if the owner itself is killed (``SIGKILL``, a crash) nothing would stop them.  The reaper is
a small process started first, in its own session, holding the read end of a pipe whose write end only the
owner holds.  The owner writes ``pgid <pid> <start time>`` for every process group it starts, ``home <path>``
for a temporary folder and ``result <path>`` for a run's result file; ``done`` when it stopped everything
itself.  When the pipe reaches end-of-file without ``done`` -- the owner is gone, however it died -- the
reaper stops every recorded process group and every descendant it can see (SIGTERM, then SIGKILL after a
grace period), removes the recorded folders and marks the recorded result as failed, naming why.

**It signals only what was started.**  A process id is reused once its process is gone (on a busy machine
within minutes), so a recorded number alone may name somebody else's process.  Every signal goes to one
process through a pidfd (``os.pidfd_open``: the descriptor pins the process, so the check and the signal
name the same one), and only after its identity -- the start time in ``/proc/<pid>/stat`` (clock ticks after
boot, fixed for the life of a process) and its command line -- equals the one recorded when it was started
or first seen.  A recorded group whose leader's identity differs is left alone, members included.  No signal
goes to a process group as a whole (``killpg``), which would reach a reused group.

It blocks on the pipe (no polling) and imports neither flwr nor numpy.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass

__all__ = ["ProcessIdentity", "identity", "reap", "signal_if_same"]


@dataclass(frozen=True)
class ProcessIdentity:
    """Who a process is: its id, its start time and its command line (from Linux ``/proc``).

    Attributes
    ----------
    pid : int
        The process id (reused by the kernel once the process is gone).
    start_time : int
        Clock ticks from boot to the process's start (field 22 of ``/proc/<pid>/stat``): never the same for
        two processes that held the same id.
    cmdline : bytes
        ``/proc/<pid>/cmdline`` (NUL-separated arguments); empty for a zombie.
    """

    pid: int
    start_time: int
    cmdline: bytes


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after ``pid (comm)``: state, ppid, pgrp, ... (``None``: no such process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()


def identity(pid: int) -> ProcessIdentity | None:
    """The identity of process *pid* now, or ``None`` when there is none (or it is a zombie).

    Parameters
    ----------
    pid : int
        A process id.

    Returns
    -------
    ProcessIdentity or None
        Its start time and command line.
    """
    fields = _stat_fields(pid)
    if fields is None or fields[0] == b"Z":
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read()
    except OSError:
        return None
    return ProcessIdentity(int(pid), int(fields[19]), cmdline)  # field 22 (starttime); fields[0] is field 3


def start_time(pid: int) -> int | None:
    """The start time (clock ticks after boot) of process *pid*, or ``None`` when there is none."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])


def signal_if_same(expected: ProcessIdentity, sig: int) -> bool:
    """Send *sig* to ``expected.pid`` only if that process is still *expected* (start time and command line).

    The process is pinned by a pidfd before its identity is read, so a process that ends between the check
    and the signal cannot hand its id to another one in between (the signal then reaches nobody).

    Parameters
    ----------
    expected : ProcessIdentity
        The identity recorded when the process was started or first seen.
    sig : int
        The signal.

    Returns
    -------
    bool
        Whether the signal was sent.
    """
    try:
        pidfd = os.pidfd_open(expected.pid)
    except OSError:  # gone (or no pidfd support: then nothing is signalled rather than a guess)
        return False
    try:
        now = identity(expected.pid)
        if not _same(now, expected):
            return False
        signal.pidfd_send_signal(pidfd, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(pidfd)


def _proc_table() -> list[tuple[int, int, int]]:
    """``(pid, ppid, pgid)`` of every process, from /proc/<pid>/stat (Linux; empty elsewhere)."""
    table: list[tuple[int, int, int]] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for name in entries:
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name))
        if fields is None:
            continue
        table.append((int(name), int(fields[1]), int(fields[2])))
    return table


def _children_map() -> dict[int, list[int]]:
    """ppid -> pids of every process (Linux /proc; empty elsewhere)."""
    kids: dict[int, list[int]] = {}
    for pid, ppid, _ in _proc_table():
        kids.setdefault(ppid, []).append(pid)
    return kids


def _descendants(pids: list[int]) -> set[int]:
    kids, out, stack = _children_map(), set(), list(pids)
    while stack:
        for child in kids.get(stack.pop(), []):
            if child not in out:
                out.add(child)
                stack.append(child)
    return out


def _groups(pids: set[int], exclude: set[int] | frozenset[int] = frozenset()) -> set[int]:
    """Every member of the process groups of *pids* (but the groups in *exclude*), from /proc.

    A descendant that started its own group (Flower's SuperExec) takes its children there (Ray's daemons and
    actors); those outlive a killed parent, re-parented to init, where no descendant walk finds them.
    """
    wanted: set[int] = set()
    for pid in pids:
        try:
            pgid = os.getpgid(pid)
        except OSError:
            continue
        if pgid not in exclude and pgid > 1:
            wanted.add(pgid)
    if not wanted:
        return set()
    return {pid for pid, _, pgid in _proc_table() if pgid in wanted}


def members(pgid: int) -> set[int]:
    """The processes of group *pgid* now (from /proc)."""
    return {pid for pid, _, group in _proc_table() if group == pgid}


def _same(now: ProcessIdentity | None, recorded: ProcessIdentity) -> bool:
    """Whether *now* is the *recorded* process (a command line recorded empty is not compared)."""
    return (now is not None and now.start_time == recorded.start_time
            and (not recorded.cmdline or now.cmdline == recorded.cmdline))


def own_groups(recorded: dict[int, ProcessIdentity]) -> dict[int, ProcessIdentity]:
    """The recorded groups that are still the ones started, with the identity of every member now.

    Parameters
    ----------
    recorded : dict of int to ProcessIdentity
        Group id (its leader's pid) -> the leader's identity when it was started.

    Returns
    -------
    dict of int to ProcessIdentity
        pid -> identity of every member of every recorded group whose leader is either the recorded one
        (same start time and command line) or gone (a group id is not reused while a member of the group is
        alive).  A group whose leader's id now belongs to another process is left out, members included.
    """
    table = _proc_table()
    out: dict[int, ProcessIdentity] = {}
    for pgid, leader in recorded.items():
        fields = _stat_fields(pgid)
        if fields is not None:
            now = identity(pgid)  # None for a zombie leader: its start time still tells
            if not _same(now or ProcessIdentity(pgid, int(fields[19]), leader.cmdline), leader):
                continue  # the id was reused: that group is somebody else's
        for pid, _, group in table:
            if group == pgid and (who := identity(pid)) is not None:
                out[pid] = who
    return out


def _snapshot(pids: set[int]) -> dict[int, ProcessIdentity]:
    return {pid: who for pid in pids if (who := identity(pid)) is not None}


def _signal_all(targets: dict[int, ProcessIdentity], sig: int) -> None:
    for who in targets.values():
        signal_if_same(who, sig)


def _any_alive(targets: dict[int, ProcessIdentity]) -> bool:
    return any(_same(identity(pid), who) for pid, who in targets.items())


def _mark_failed(path: str, why: str) -> None:
    """Write ``failed`` / ``status`` into a run's result file (created when the run wrote none), atomically."""
    try:
        with open(path) as fh:
            result = json.load(fh)
    except (OSError, ValueError):
        result = {"completed": False, "errors": []}
    if not isinstance(result, dict):
        return
    result["failed"] = result.get("failed") or why
    result["status"] = "failed"
    result["completed"] = False
    result.setdefault("errors", []).append(why)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".result.", suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(result, fh, indent=1, default=str)
        os.replace(tmp, path)
    except OSError:
        pass


def reap(groups: dict[int, ProcessIdentity], homes: list[str], grace: float = 5.0, results: list[str] | None = None,
         why: str = "") -> None:
    """Stop the process groups *groups* (and every descendant of their leaders) and remove *homes*.

    Parameters
    ----------
    groups : dict of int to ProcessIdentity
        Process groups started by the owner: group id (its leader's pid) -> the leader's identity when it
        was started.  A group whose leader's id now names another process is not touched.
    homes : list of str
        Temporary folders to remove.
    grace : float
        Seconds between SIGTERM and SIGKILL.
    results : list of str, optional
        Result files to mark as failed with *why*.
    why : str
        The reason written into *results*.
    """
    own = {os.getpgrp(), *groups}

    def targets() -> dict[int, ProcessIdentity]:
        found = own_groups(groups)
        leaders = [pgid for pgid in groups if pgid in found]
        extra = _descendants(leaders)
        extra |= _groups(extra, exclude=own)
        found.update(_snapshot(extra - set(found)))
        found.pop(os.getpid(), None)
        return found

    first = targets()
    _signal_all(first, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _any_alive(first):
        time.sleep(0.1)
    later = targets()
    later.update({pid: who for pid, who in first.items() if pid not in later})
    _signal_all(later, signal.SIGKILL)
    for home in homes:
        shutil.rmtree(home, ignore_errors=True)
    for path in results or []:
        _mark_failed(path, why)


def _main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the pipe's end decides
    grace = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    owner = os.getppid()
    groups: dict[int, ProcessIdentity] = {}
    homes: list[str] = []
    results: list[str] = []
    done = False
    for line in sys.stdin:
        kind, _, value = line.rstrip("\n").partition(" ")
        if kind == "pgid":
            pid, _, started = value.partition(" ")
            if pid.isdigit() and started.isdigit():
                # the command line read now (the owner has seen the process exec'd), if it is still that process
                who = identity(int(pid))
                groups[int(pid)] = (who if who is not None and who.start_time == int(started)
                                    else ProcessIdentity(int(pid), int(started), b""))
        elif kind == "home" and value:
            homes.append(value)
        elif kind == "result" and value:
            results.append(value)
        elif kind == "done":
            done = True
    if not done:
        why = (f"the process that started this run (pid {owner}) ended before the run did (killed or crashed); "
               "every process it started was stopped")
        reap(groups, homes, grace, results, why)


if __name__ == "__main__":
    _main()
