"""Time limits of the real-process Flower tests, derived from this machine's measured pace (not fixed seconds).

On the shared 2-core machine a Flower round trip moves with the load (0.05 s idle with the fast executor, several
seconds under a load of 15); a fixed 60 s start-up or a 4 s round limit fails there.  :func:`process_start` times
what dominates both start-up and a stock round trip -- a fresh Python process importing Flower's ClientApp
runtime and dpfair's apps (stock Flower starts one per message) -- and the limits below scale with it.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import time
from pathlib import Path

_PROBE = "import flwr.clientapp, flwr.serverapp, flwr.supernode, dpfair.federated.apps"


@functools.lru_cache(maxsize=1)
def process_start() -> float:
    """Seconds for a fresh Python process to import Flower's runtimes and dpfair's apps (the faster of two)."""
    times = []
    for _ in range(2):
        start = time.monotonic()
        subprocess.run([sys.executable, "-c", _PROBE], check=True, capture_output=True)
        times.append(time.monotonic() - start)
    return min(times)


def stock_round_trip() -> float:
    """A stock Flower round trip, from the measured process start: the SuperNode's 3 s idle poll, a ``flwr-clientapp``
    process per message (Flower's and dpfair's imports, the agent's state and lattice tables rebuilt), the SuperLink's
    object fetches: about 8 process starts of work (measured: 36 s a round trip at a 4 s process start, load 27)."""
    return 3.0 + 8.0 * process_start()


def startup_limit(processes: int) -> float:
    """Seconds allowed for *processes* Flower processes to start and register (each at least 4 process starts of
    work on a machine whose cores they share), never under 30 s."""
    return max(30.0, 4.0 * process_start() * max(processes, 1))


def fast_round_limit() -> float:
    """The ``round-timeout`` for a live agent on the fast executor (milliseconds idle, seconds under load): three
    process starts' worth, never under 4 s."""
    return max(4.0, 3.0 * process_start())


def round_limit(round_trip: float) -> float:
    """The ``round-timeout`` for a live agent: 10 round trips (a loaded machine stalls a process for seconds)."""
    return max(4.0, 10.0 * round_trip)


def alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (Linux /proc): what the hygiene tests wait on."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"
