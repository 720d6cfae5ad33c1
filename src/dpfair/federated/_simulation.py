"""Flower's Simulation Engine for a :class:`~dpfair.federated.LocalFederation` (``executor="simulation"``).

``pip install "dpfair[simulation]"`` (``flwr[simulation]``: Ray).  A ``flower-superlink --simulation`` runs
each ``flwr run`` in a ``flwr-simulation`` process, whose Ray backend runs the ``N`` agents as *virtual*
SuperNodes (node setting ``partition-id`` ``0 .. N-1``) on a pool of Ray actors: no process per agent.

Resources are bounded with Flower's own settings, sent with each run (``flwr run --federation-config``; the
``options.`` keys of a ``config.toml`` connection are deprecated in flwr 1.41):

* ``init-args-num-cpus``: the CPUs Ray may use (default ``min(2, os.cpu_count())``: a 2-core CI box);
* ``client-resources-num-cpus=1``: one CPU per virtual SuperNode's task, so at most ``init-args-num-cpus``
  actors run at once (each a Python process holding Flower and dpfair, about 0.2 GB);
* ``client-resources-num-gpus=0``, ``init-args-logging-level="WARNING"``.

Ray's session folder (sockets, logs) goes to a temporary folder of the federation (``RAY_TMPDIR``), removed
when it stops; the ``flwr-simulation`` process shuts Ray down at the end of each run, and
:class:`~dpfair.federated.LocalFederation` stops whatever is left (Ray's processes run in the process group
of the SuperLink's SuperExec, which it stops as a whole; so does the owner-death reaper).

The agents' state: Flower keeps each virtual SuperNode's ``context.state`` between messages; an actor's
in-process copy of an agent is used only when it is that state's latest version
(:func:`dpfair.federated.apps.make_client_app`), because consecutive messages of one agent may run on
different actors.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SimulationSettings", "simulation_available"]


def simulation_available() -> str | None:
    """Why Flower's Simulation Engine cannot run here, or ``None`` when it can.

    Returns
    -------
    str or None
        A sentence naming what is missing and the install command.
    """
    if importlib.util.find_spec("flwr") is None:
        return 'Flower is not installed: pip install "dpfair[simulation]"'
    if importlib.util.find_spec("ray") is None:
        return "Flower's Simulation Engine needs Ray, which is not installed: pip install \"dpfair[simulation]\""
    return None


@dataclass(frozen=True)
class SimulationSettings:
    """The Simulation Engine's settings of one local simulation federation.

    Parameters
    ----------
    num_supernodes : int
        Virtual SuperNodes (agents), ``num-supernodes``.
    num_cpus : int
        CPUs Ray may use (``init-args-num-cpus``); each virtual SuperNode's task takes one.
    """

    num_supernodes: int
    num_cpus: int

    @classmethod
    def for_nodes(cls, num_supernodes: int, num_cpus: int | None = None) -> SimulationSettings:
        """Settings for *num_supernodes* agents; refuses where Ray is missing.

        Parameters
        ----------
        num_supernodes : int
            Virtual SuperNodes (agents).
        num_cpus : int, optional
            CPUs for Ray; default ``min(2, os.cpu_count())``.

        Returns
        -------
        SimulationSettings
            The settings.

        Raises
        ------
        ImportError
            If ``flwr[simulation]`` (Ray) is not installed.
        ValueError
            If *num_cpus* is not a positive integer.
        """
        missing = simulation_available()
        if missing:
            raise ImportError(missing)
        if num_cpus is None:
            num_cpus = min(2, os.cpu_count() or 1)
        if isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 1:
            raise ValueError(f"simulation_cpus must be a positive integer (CPUs Ray may use), got {num_cpus!r}.")
        return cls(int(num_supernodes), int(num_cpus))

    def federation_config(self) -> str:
        """The ``flwr run --federation-config`` value of a run (Flower's ``SimulationConfig`` fields).

        Returns
        -------
        str
            ``key=value`` pairs separated by spaces.
        """
        return (f'num-supernodes={self.num_supernodes} backend="ray" client-resources-num-cpus=1 '
                f'client-resources-num-gpus=0.0 init-args-num-cpus={self.num_cpus} init-args-num-gpus=0 '
                'init-args-logging-level="WARNING"')

    @staticmethod
    def environment(ray_tmp: Path) -> dict[str, str]:
        """Environment of the SuperLink (and so of ``flwr-simulation`` and Ray) for a simulation.

        Parameters
        ----------
        ray_tmp : pathlib.Path
            Folder for Ray's sessions (``RAY_TMPDIR``).

        Returns
        -------
        dict of str to str
            Variables to add.
        """
        return {
            "RAY_TMPDIR": str(ray_tmp),
            "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0",  # Ray's FutureWarning on every start, as Ray advises
            "RAY_DEDUP_LOGS": "1",
            "RAY_USAGE_STATS_ENABLED": "0",  # no network here: no usage report attempt
        }
