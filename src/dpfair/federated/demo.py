"""``dpfair federated demo``: the Flower apps over real local processes, with the simulator's numbers beside them.

Starts a SuperLink and one SuperNode per agent on the loopback address (each a separate process,
:class:`~dpfair.federated.LocalFederation`), runs the bundled Flower app (:func:`~dpfair.federated.app_dir`)
with ``flwr run``, reads the server's result and each agent's own metrics, prints the fairness regret,
the communication rounds and each agent's ``privacy_spent``, and stops every process it started
(also on Ctrl-C).
"""

from __future__ import annotations

import json
import math
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DemoResult", "run_demo", "summary"]


@dataclass
class DemoResult:
    """What :func:`run_demo` measured.

    Parameters
    ----------
    server : dict
        The ServerApp's ``result.json``: per learner (``learners``) the communication rounds, the rounds
        they happened at and each agent's ``privacy_spent``; ``dropped`` (agent -> first round missed),
        ``errors``, ``completed``.
    fair_regret, reward_regret : dict of str to numpy.ndarray
        Per learner, the cumulative regrets averaged over the agents that played every round (from the
        agents' own metrics files, which never crossed the wire).
    actions : dict of str to dict of int to numpy.ndarray
        Per learner and agent, the actions played.
    wall_seconds : float
        From starting the processes to their end.
    out : pathlib.Path
        Folder with ``result.json``, ``metrics/`` and ``logs/``.
    """

    server: dict[str, Any]
    fair_regret: dict[str, np.ndarray] = field(default_factory=dict)
    reward_regret: dict[str, np.ndarray] = field(default_factory=dict)
    actions: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)
    wall_seconds: float = 0.0
    out: Path = Path(".")


def run_demo(
    n_agents: int = 5,
    horizon: int = 2000,
    *,
    learner: str = "priv",
    protocol: str = "bounded-gap",
    learners: str = "",
    epsilon: float = 2.0,
    delta: float = 0.1,
    seed: int = 0,
    random_state: int | None = None,
    out: str | Path | None = None,
    executor: str = "persistent",
    extra_config: dict[str, Any] | None = None,
    timeout: float = 600.0,
    on_start: Callable[[Any], None] | None = None,
    echo: Callable[[str], None] | None = None,
) -> DemoResult:
    """Run Fed-/Priv-FairX-LinUCB on Flower with one SuperNode process per agent on this machine.

    Parameters
    ----------
    n_agents : int, default 5
        Agents (SuperNodes), ``m``.
    horizon : int, default 2000
        Rounds ``T``.
    learner : {"priv", "fed"}, default "priv"
        Priv-FairX-LinUCB or Fed-FairX-LinUCB.
    protocol : {"bounded-gap", "p-fcb", "log-det"}, default "bounded-gap"
        Communication protocol.
    learners : str, default ""
        Several learners on the same streams in one run, ``"kind:protocol,..."`` (e.g.
        ``"fed:bounded-gap,fed:p-fcb,priv:bounded-gap"``); overrides ``learner`` and ``protocol``.
    epsilon, delta : float
        Privacy of each agent's stream (``learner="priv"``).
    seed : int, default 0
        Seed of the synthetic world (each agent plays its share of it).
    random_state : int, optional
        Seeded PRIVATIZER noise (reproducible, *not hardened*); ``None``: secure noise.
    out : path, optional
        Folder for ``result.json``, the agents' metrics and every process's log (default: a
        temporary folder).
    executor : {"persistent", "flower"}, default "persistent"
        How the SuperNodes run the ClientApp (:class:`~dpfair.federated.LocalFederation`).
    extra_config : dict, optional
        More run settings (:data:`~dpfair.federated.RUN_CONFIG`).
    timeout : float, default 600
        Seconds the run may take.
    on_start : callable, optional
        Called with the running :class:`~dpfair.federated.LocalFederation` (tests use it to kill a node).
    echo : callable, optional
        Progress lines (default: silent).

    Returns
    -------
    DemoResult
        The server's result, each learner's regret curves and actions, the wall time.
    """
    from dpfair.federated import LocalFederation, app_dir
    from dpfair.federated.apps import RUN_CONFIG

    say = echo or (lambda _line: None)
    folder = Path(tempfile.mkdtemp(prefix="dpfair-federated-")) if out is None else Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    metrics = folder / "metrics"
    config = {
        "learner": learner, "protocol": protocol, "learners": learners, "horizon": int(horizon),
        "n-agents": int(n_agents), "seed": int(seed),
        "epsilon": float(epsilon), "delta": float(delta), "random-state": -1 if random_state is None else int(random_state),
        "result-path": str(folder / "result.json"), "metrics-dir": str(metrics),
    }
    config.update(extra_config or {})
    unknown = sorted(set(config) - set(RUN_CONFIG))
    if unknown:
        raise ValueError(f"unknown run setting(s) {unknown}; the settings are {sorted(RUN_CONFIG)}.")
    from dpfair.federated.apps import learners_from_config

    for check in learners_from_config(config).values():  # refuse bad settings before starting any process
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check.reset(int(config.get("n-actions", 10)), int(config.get("dim", 5)), int(horizon), n_agents=int(n_agents))
    (folder / "result.json").unlink(missing_ok=True)
    for old in metrics.glob("agent-*.npz"):
        old.unlink()
    start = time.monotonic()
    say(f"starting a SuperLink and {n_agents} SuperNodes on 127.0.0.1 (logs in {folder / 'logs'})")
    with LocalFederation(n_agents, app_dir=app_dir(), executor=executor, log_dir=folder / "logs") as federation:
        if on_start is not None:
            on_start(federation)
        say(f"running {learner} / {protocol}, T={horizon}, m={n_agents} with flwr run")
        federation.run(config, timeout=timeout)
    wall = time.monotonic() - start
    path = folder / "result.json"
    if not path.exists():
        raise RuntimeError(f"the ServerApp wrote no result to {path}; see the logs in {folder / 'logs'}.")
    result = DemoResult(server=json.loads(path.read_text()), wall_seconds=wall, out=folder)
    finished = {int(p.stem.split("-")[1]): np.load(p) for p in sorted(metrics.glob("agent-*.npz"))}
    for label in result.server["learners"]:
        result.actions[label] = {agent: m[f"{label}:actions"] for agent, m in finished.items()}
        complete = [m for m in finished.values() if len(m[f"{label}:fair"]) == horizon]
        if complete:
            result.fair_regret[label] = np.cumsum(np.mean([m[f"{label}:fair"] for m in complete], axis=0))
            result.reward_regret[label] = np.cumsum(np.mean([m[f"{label}:reward"] for m in complete], axis=0))
    return result


def summary(result: DemoResult) -> list[str]:
    """The lines ``dpfair federated demo`` prints.

    Parameters
    ----------
    result : DemoResult
        What :func:`run_demo` returned.

    Returns
    -------
    list of str
        One learner per block: fairness and reward regret at ``T``, communication rounds, each agent's
        ``privacy_spent``; then dropped agents, errors and where the result is.
    """
    server = result.server
    lines = [f"T={server['horizon']}, m={server['n_agents']}: {'completed' if server.get('completed') else 'NOT completed'}"
             f" in {result.wall_seconds:.1f} s"]
    for label, entry in server["learners"].items():
        lines.append(f"{label} ({entry['learner']}, {entry['protocol']}): communication rounds {entry['communication_rounds']}")
        if label in result.fair_regret:
            lines.append(f"  fairness regret at T: {result.fair_regret[label][-1]:.2f} (reward regret "
                         f"{result.reward_regret[label][-1]:.2f}), averaged over the agents that played every round")
        for agent, spent in sorted(entry["privacy_spent"].items(), key=lambda kv: int(kv[0])):
            eps = spent.get("epsilon")
            eps_text = "inf" if eps is None or (isinstance(eps, float) and math.isinf(eps)) else f"{eps:g}"
            protects = spent.get("protects")
            seeded = " [seeded noise: reproducible, not hardened]" if spent.get("noise") == "seeded" else ""
            lines.append(f"  agent {agent}: privacy_spent epsilon={eps_text}, delta={spent.get('delta', 0):g}{seeded} -- "
                         f"{protects}")
    for agent, first in sorted(server["dropped"].items(), key=lambda kv: int(kv[0])):
        lines.append(f"agent {agent} DROPPED from round {first}")
    for error in server["errors"]:
        lines.append(f"error: {error}")
    lines.append(f"result: {result.out / 'result.json'}")
    return lines
