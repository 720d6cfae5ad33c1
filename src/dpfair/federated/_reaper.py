"""The owner-death watch of a :class:`~dpfair.federated.LocalFederation`: ``python -m dpfair.federated._reaper``.

The federation's processes run in their own sessions (so that a Ctrl-C reaches only the owner, which stops
them in order); if the owner itself is killed (``SIGKILL``, a crash) nothing would stop them.  The reaper is
a small process started first, in its own session, holding the read end of a pipe whose write end only the
owner holds.  The owner writes ``pgid <n>`` for every process group it starts and ``home <path>`` for a
temporary folder; ``done`` when it stopped everything itself.  When the pipe reaches end-of-file without
``done`` -- the owner is gone, however it died -- the reaper stops every recorded process group and every
descendant it can see (SIGTERM, then SIGKILL after a grace period) and removes the recorded folders.

It blocks on the pipe (no polling) and imports neither flwr nor numpy.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time

__all__ = ["reap"]


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
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # after "pid (comm) ": state, ppid, pgrp, ...
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


def _signal(pgids: set[int], pids: set[int], sig: int) -> None:
    for pgid in pgids:
        try:
            os.killpg(pgid, sig)
        except OSError:
            pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def _any_alive(pgids: set[int], pids: set[int]) -> bool:
    for pgid in pgids:
        try:
            os.killpg(pgid, 0)
            return True
        except OSError:
            pass
    return False


def reap(pgids: set[int], homes: list[str], grace: float = 5.0) -> None:
    """Stop the process groups *pgids* (and every descendant of their leaders) and remove *homes*.

    Parameters
    ----------
    pgids : set of int
        Process groups started by the owner (each leader's pid is its pgid).
    homes : list of str
        Temporary folders to remove.
    grace : float
        Seconds between SIGTERM and SIGKILL.
    """
    own = {os.getpgrp(), *pgids}
    pids = _descendants(sorted(pgids))
    pids |= _groups(pids, exclude=own)
    _signal(pgids, pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _any_alive(pgids, pids):
        time.sleep(0.1)
    later = _descendants(sorted(pgids))
    pids |= later | _groups(later, exclude=own)
    _signal(pgids, pids, signal.SIGKILL)
    for home in homes:
        shutil.rmtree(home, ignore_errors=True)


def _main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the pipe's end decides
    grace = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    pgids: set[int] = set()
    homes: list[str] = []
    done = False
    for line in sys.stdin:
        kind, _, value = line.rstrip("\n").partition(" ")
        if kind == "pgid" and value.isdigit():
            pgids.add(int(value))
        elif kind == "home" and value:
            homes.append(value)
        elif kind == "done":
            done = True
    if not done:
        reap(pgids, homes, grace)


if __name__ == "__main__":
    _main()
