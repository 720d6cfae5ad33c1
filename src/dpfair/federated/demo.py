"""``dpfair federated demo``: the Flower apps over real local processes, with the simulator's numbers beside them.

Starts a SuperLink and one SuperNode per agent on the loopback address (each a separate process,
:class:`~dpfair.federated.LocalFederation`), or a simulation SuperLink whose Ray backend runs the agents
as virtual SuperNodes (``executor="simulation"``, Flower's Simulation Engine), runs the bundled Flower
app (:func:`~dpfair.federated.app_dir`) with ``flwr run``, reads the server's result and each agent's
own metrics, prints the fairness regret, the communication rounds and each agent's ``privacy_spent``,
and stops every process it started (also on Ctrl-C).
"""

from __future__ import annotations

import json
import math
import re
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
    failure : str or None
        Why the run failed (start-up, time limit, ``flwr run`` exit code, agents that never joined, the run
        stopping early), in one line; ``None`` when it completed.  ``result.json`` holds the (partial) result.
    """

    server: dict[str, Any]
    fair_regret: dict[str, np.ndarray] = field(default_factory=dict)
    reward_regret: dict[str, np.ndarray] = field(default_factory=dict)
    actions: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)
    wall_seconds: float = 0.0
    out: Path = Path(".")
    failure: str | None = None


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
    timeout: float | None = None,
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
    executor : {"persistent", "flower", "simulation"}, default "persistent"
        How the SuperNodes run the ClientApp (:class:`~dpfair.federated.LocalFederation`); ``"simulation"``:
        Flower's Simulation Engine (``dpfair federated demo --simulation``; ``pip install "dpfair[simulation]"``),
        the agents as virtual SuperNodes on at most ``min(2, os.cpu_count())`` Ray actors (``start-timeout``
        defaults to 300 s there: Ray starts before the first agent answers).
    extra_config : dict, optional
        More run settings (:data:`~dpfair.federated.RUN_CONFIG`).
    timeout : float, optional
        Seconds the run may take.  Default: derived from the plan and the measured pace, ``planned message
        rounds x seconds per message round (from the ServerApp's progress lines) x 3``, plus
        ``start-timeout``, twice ``round-timeout`` and 60 s of slack; a run that stops making progress
        times out at the last limit.
    on_start : callable, optional
        Called with the running :class:`~dpfair.federated.LocalFederation` (tests use it to kill a node).
    echo : callable, optional
        Progress lines (default: silent).

    Returns
    -------
    DemoResult
        The server's result, each learner's regret curves and actions, the wall time.

    Raises
    ------
    ValueError
        For an unknown run setting, an invalid learner setting, executor or *timeout* (before any process starts).
    ImportError
        For ``executor="simulation"`` without ``flwr[simulation]`` (Ray).
    """
    from dpfair.federated._deployment import LocalFederation, app_dir
    from dpfair.federated.apps import RUN_CONFIG, planned_message_rounds

    if executor not in ("persistent", "flower", "simulation"):
        raise ValueError(f"executor must be 'persistent', 'flower' or 'simulation', got {executor!r}.")
    if executor == "simulation":
        from dpfair.federated._simulation import simulation_available

        missing = simulation_available()
        if missing:
            raise ImportError(missing)
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
    if executor == "simulation":  # Ray's start-up and actors come before the first reply: minutes on a loaded 2-core box
        config.setdefault("start-timeout", _SIMULATION_START_TIMEOUT)
    unknown = sorted(set(config) - set(RUN_CONFIG))
    if unknown:
        raise ValueError(f"unknown run setting(s) {unknown}; the settings are {sorted(RUN_CONFIG)}.")
    from dpfair.federated.apps import learners_from_config

    sizes = (int(config.get("n-actions", 10)), int(config.get("dim", 5)), int(horizon))
    for check in learners_from_config(config).values():  # refuse bad settings before starting any process
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if hasattr(check, "check_reset"):  # a private learner's dry run: every check, no charge, no noise
                check.check_reset(*sizes, n_agents=int(n_agents))
            else:  # a non-private learner charges nothing
                check.reset(*sizes, n_agents=int(n_agents))
    (folder / "result.json").unlink(missing_ok=True)
    for old in metrics.glob("agent-*.npz"):
        old.unlink()
    if timeout is not None and not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}; omit it to derive it from the plan.")
    planned = planned_message_rounds(config) + 2  # + init and finish
    full = {**RUN_CONFIG, **config}
    start = time.monotonic()
    if executor == "simulation":
        say(f"starting a simulation SuperLink on 127.0.0.1: {n_agents} virtual SuperNodes on Flower's Simulation Engine "
            f"(Ray) (logs in {folder / 'logs'})")
    else:
        say(f"starting a SuperLink and {n_agents} SuperNodes on 127.0.0.1 (logs in {folder / 'logs'})")
    failure: str | None = None
    try:
        # the processes' start-up may take as long as the run allows its agents to join (start-timeout)
        with LocalFederation(n_agents, app_dir=app_dir(), executor=executor, log_dir=folder / "logs",
                             startup_timeout=max(60.0, float(full["start-timeout"]))) as federation:
            if federation.fast_path_off:
                say(f"WARNING: the fast executor is off ({federation.fast_path_off}); running stock Flower")
            if on_start is not None:
                on_start(federation)
            say(f"running {learner} / {protocol}, T={horizon}, m={n_agents} with flwr run: {planned} message rounds; "
                f"time limit {'derived from the measured pace' if timeout is None else f'{timeout:g} s'}")
            failure = _watch(federation.submit(config), planned, timeout, full, say)
    except (RuntimeError, TimeoutError, OSError) as exc:  # start-up: the message names the log to read
        failure = f"the local federation failed: {str(exc).splitlines()[0]}"
    wall = time.monotonic() - start
    path = folder / "result.json"
    if path.exists():
        server = json.loads(path.read_text())
    else:
        failure = failure or f"the ServerApp wrote no result (see the logs in {folder / 'logs'})"
        server = {"horizon": int(horizon), "n_agents": int(n_agents), "learners": {}, "dropped": {}, "errors": [],
                  "completed": False, "rounds_played": 0}
    failure = failure or server.get("failed") or (None if server.get("completed") else "the run did not complete")
    run_log = folder / "logs" / "run-1.log"
    if failure and executor == "simulation" and run_log.exists() and _RAY_START_FAILED in run_log.read_text(errors="replace"):
        failure = ("Ray's node did not start within Ray's own 30 s (the machine is overloaded), so the Simulation Engine "
                   f"did not run; retry on a less loaded machine ({failure})")
    if failure:
        server["failed"] = failure
        if failure not in server["errors"]:
            server["errors"].append(failure)
        server["completed"] = False
        from dpfair.federated.apps import _write_json

        _write_json(str(path), server)  # the partial result, saved
    result = DemoResult(server=server, wall_seconds=wall, out=folder, failure=failure)
    finished = {int(p.stem.split("-")[1]): np.load(p) for p in sorted(metrics.glob("agent-*.npz"))}
    for label in result.server["learners"]:
        result.actions[label] = {agent: m[f"{label}:actions"] for agent, m in finished.items()}
        complete = [m for m in finished.values() if len(m[f"{label}:fair"]) == horizon]
        if complete:
            result.fair_regret[label] = np.cumsum(np.mean([m[f"{label}:fair"] for m in complete], axis=0))
            result.reward_regret[label] = np.cumsum(np.mean([m[f"{label}:reward"] for m in complete], axis=0))
    return result


_RAY_START_FAILED = "The current node timed out during startup"  # ray/_private/node.py: a hard-coded 30 s wait
_SIMULATION_START_TIMEOUT = 300.0  # seconds the ServerApp waits for the first init reply on the Simulation Engine
_PROGRESS = re.compile(r"message round (\d+) of about (\d+) \(([0-9.]+) s each\)")
_MARGIN = 3.0
_SLACK = 60.0  # seconds added to a derived limit (start-up of the ServerApp, a slow round)


def _watch(handle: Any, planned: int, timeout: float | None, config: dict[str, Any], say: Callable[[str], None]) -> str | None:
    """Wait for the ``flwr run`` of *handle*; return why it failed (one line) or ``None``.

    Without *timeout* the limit follows the ServerApp's progress lines: the time of the last line plus the
    message rounds left x the measured seconds per round x ``_MARGIN``, plus slack.
    """
    begun = time.monotonic()
    slack = _SLACK + 2.0 * float(config["round-timeout"])
    limit = float(timeout) if timeout is not None else float(config["start-timeout"]) + slack + 60.0
    how = "--timeout" if timeout is not None else "the start-up allowance"
    seen = 0
    while True:
        code = handle.process.poll()
        if code is not None:
            handle.wait(0)
            return None if code == 0 else f"`flwr run` exited with code {code}; see {handle.log_path}"
        if timeout is None:
            try:
                text = handle.log_path.read_text(errors="replace")
            except OSError:
                text = ""
            found = _PROGRESS.findall(text)
            if len(found) > seen:
                seen = len(found)
                done, pace = int(found[-1][0]), float(found[-1][2])
                limit = time.monotonic() - begun + max(planned - done, 1) * pace * _MARGIN + slack
                how = f"{planned} message rounds x {pace:.3f} s measured x {_MARGIN:g}"
        elapsed = time.monotonic() - begun
        if elapsed > limit:
            try:
                handle.wait(0.001)
            except TimeoutError:
                pass
            say(f"time limit reached after {elapsed:.0f} s")
            return (f"the run did not finish within {limit:.0f} s (limit from {how}); the partial result is saved; "
                    "pass --timeout SECONDS to allow more")
        time.sleep(0.5)


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
        if error != result.failure:
            lines.append(f"error: {error}")
    if result.failure:
        lines.append(f"FAILED: {result.failure}")
    lines.append(f"result: {result.out / 'result.json'}")
    return lines
