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
    status : {"completed", "degraded", "failed"}
        ``"degraded"``: every round was played, but an agent dropped on the way (``server["dropped"]``).
    """

    server: dict[str, Any]
    fair_regret: dict[str, np.ndarray] = field(default_factory=dict)
    reward_regret: dict[str, np.ndarray] = field(default_factory=dict)
    actions: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)
    wall_seconds: float = 0.0
    out: Path = Path(".")
    failure: str | None = None
    status: str = "completed"


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
    data: str | Path | None = None,
    allow_drops: bool = False,
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
        Privacy of each agent's stream (``learner="priv"``); ``epsilon=float("inf")`` runs the exact non-private
        algorithm (no noise, nothing charged).
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
    data : path, optional
        Each agent's own file of contexts and outcomes (:mod:`dpfair.federated.data`): a folder holding
        ``agent-<i>.csv`` (or ``.parquet``) per agent, or a path with ``{agent}`` in it.  Each SuperNode gets its
        file as its ``data-path`` node setting (``--node-config``), as an organisation would run it.  Every file is
        checked before any process starts.  Default: the synthetic world of ``seed``.
    allow_drops : bool, default False
        Whether a run that lost an agent on the way (``status`` "degraded") counts as a success; otherwise the
        ServerApp has Flower record it as failed (the result still says "degraded").
    on_start : callable, optional
        Called with the running :class:`~dpfair.federated.LocalFederation` (tests use it to kill a node).
    echo : callable, optional
        Progress lines (default: silent): the start, then every few seconds the round, the seconds per message
        round, the estimated time left and the agents alive.

    Returns
    -------
    DemoResult
        The server's result, each learner's regret curves and actions, the wall time.

    Raises
    ------
    ValueError
        For an unknown run setting, an invalid learner setting, executor, *timeout*, *out* or data file (before
        any folder or process is created).
    KeyboardInterrupt
        Ctrl-C: every process is stopped and ``result.json`` says the run was interrupted.
    ImportError
        For ``executor="simulation"`` without ``flwr[simulation]`` (Ray).
    """
    config, files = _checked_config(n_agents, horizon, learner=learner, protocol=protocol, learners=learners,
                                    epsilon=epsilon, delta=delta, seed=seed, random_state=random_state, out=out,
                                    executor=executor, extra_config=extra_config, timeout=timeout, data=data,
                                    allow_drops=allow_drops)
    folder, node_configs, planned, full = _prepared_folder(config, files, n_agents, out)
    start = time.monotonic()
    failure = _run_federation(config, folder, node_configs, planned, full, n_agents=n_agents, horizon=horizon,
                              learner=learner, protocol=protocol, executor=executor, timeout=timeout,
                              on_start=on_start, say=echo or (lambda _line: None))
    wall = time.monotonic() - start
    server, status, failure = _final_result(folder, failure, int(horizon), int(n_agents), executor)
    result = DemoResult(server=server, wall_seconds=wall, out=folder, failure=failure, status=status)
    return _read_curves(result, folder / "metrics", horizon)


def _checked_config(n_agents: int, horizon: int, *, learner: str, protocol: str, learners: str, epsilon: float,
                    delta: float, seed: int, random_state: int | None, out: str | Path | None, executor: str,
                    extra_config: dict[str, Any] | None, timeout: float | None, data: str | Path | None,
                    allow_drops: bool) -> tuple[dict[str, Any], list[Path] | None]:
    """Every argument of :func:`run_demo` checked, before any folder or process is created: the run settings, and
    each agent's data file (``None``: the synthetic world)."""
    from dpfair.federated._deployment import format_run_config
    from dpfair.federated.apps import RUN_CONFIG, learners_from_config

    if executor not in ("persistent", "flower", "simulation"):
        raise ValueError(f"executor must be 'persistent', 'flower' or 'simulation', got {executor!r}.")
    for name, value, least in (("n_agents", n_agents, 1), ("horizon", horizon, 1), ("seed", seed, 0),
                               ("random_state", 0 if random_state is None else random_state, 0)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}.")
    if timeout is not None and not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}; omit it to derive it from the plan.")
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ValueError(f"out={str(out)!r} is a file; pass a folder (created if missing).")
    if executor == "simulation":
        from dpfair.federated._simulation import simulation_available

        missing = simulation_available()
        if missing:
            raise ImportError(missing)
    config: dict[str, Any] = {
        "learner": learner, "protocol": protocol, "learners": learners, "horizon": int(horizon),
        "n-agents": int(n_agents), "seed": int(seed),
        "epsilon": float(epsilon), "delta": float(delta), "random-state": -1 if random_state is None else int(random_state),
        "allow-drops": bool(allow_drops),
    }
    config.update(extra_config or {})
    if executor == "simulation":  # Ray's start-up and actors come before the first reply: minutes on a loaded 2-core box
        config.setdefault("start-timeout", _SIMULATION_START_TIMEOUT)
    unknown = sorted(set(config) - set(RUN_CONFIG))
    if unknown:
        raise ValueError(f"unknown run setting(s) {unknown}; the settings are {sorted(RUN_CONFIG)}.")
    format_run_config(config)  # a value `flwr run --run-config` cannot carry (NaN, a list) is refused here
    sizes = (int(config.get("n-actions", RUN_CONFIG["n-actions"])), int(config.get("dim", RUN_CONFIG["dim"])), int(horizon))
    for check in learners_from_config(config).values():  # refuse bad settings before starting any process
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if hasattr(check, "check_reset"):  # a private learner's dry run: every check, no charge, no noise
                check.check_reset(*sizes, n_agents=int(n_agents))
            else:  # a non-private learner charges nothing
                check.reset(*sizes, n_agents=int(n_agents))
    files = _agent_files(data, int(n_agents), *sizes) if data is not None else None
    if files is not None and executor == "simulation":  # virtual SuperNodes take no --node-config: one run setting
        config["data-path"] = _shared_pattern(files)
    return config, files


def _prepared_folder(config: dict[str, Any], files: list[Path] | None, n_agents: int,
                     out: str | Path | None) -> tuple[Path, list[dict[str, Any]], int, dict[str, Any]]:
    """The output folder, emptied of an earlier result, and the run's paths in ``config``.

    Returns ``(folder, node_configs, planned, full)``: each SuperNode's node settings, the planned message rounds
    (with init and finish) and every run setting.
    """
    from dpfair.federated.apps import RUN_CONFIG, planned_message_rounds

    planned = planned_message_rounds(config) + 2  # + init and finish
    full = {**RUN_CONFIG, **config}
    folder = Path(tempfile.mkdtemp(prefix="dpfair-federated-")) if out is None else Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    metrics = folder / "metrics"
    config["result-path"] = str(folder / "result.json")
    config["metrics-dir"] = str(metrics)
    full.update(config)
    (folder / "result.json").unlink(missing_ok=True)
    for old in metrics.glob("agent-*.npz"):
        old.unlink()
    node_configs = [{"partition-id": i, "num-partitions": int(n_agents)} for i in range(int(n_agents))]
    if files is not None:
        for node, path in zip(node_configs, files, strict=True):
            node["data-path"] = str(path)  # each SuperNode's own file, as an organisation would set it
    return folder, node_configs, planned, full


def _run_federation(config: dict[str, Any], folder: Path, node_configs: list[dict[str, Any]], planned: int,
                    full: dict[str, Any], *, n_agents: int, horizon: int, learner: str, protocol: str, executor: str,
                    timeout: float | None, on_start: Callable[[Any], None] | None,
                    say: Callable[[str], None]) -> str | None:
    """Start the local federation, submit the run and watch it; what failed (``None``: nothing seen to fail)."""
    from dpfair.federated._deployment import LocalFederation, app_dir

    if executor == "simulation":
        say(f"starting a simulation SuperLink on 127.0.0.1: {n_agents} virtual SuperNodes on Flower's Simulation Engine "
            f"(Ray) (logs in {folder / 'logs'})")
    else:
        say(f"starting a SuperLink and {n_agents} SuperNodes on 127.0.0.1 (logs in {folder / 'logs'})")
    failure: str | None = None
    try:
        # the processes' start-up may take as long as the run allows its agents to join (start-timeout)
        with LocalFederation(n_agents, app_dir=app_dir(), executor=executor, log_dir=folder / "logs",
                             node_configs=node_configs,
                             startup_timeout=max(60.0, float(full["start-timeout"]))) as federation:
            federation.record_result(folder / "result.json")  # if this process is killed, the result says so
            if federation.fast_path_off:
                say(f"WARNING: the fast executor is off ({federation.fast_path_off}); running stock Flower")
            if on_start is not None:
                on_start(federation)
            say(f"running {learner} / {protocol}, T={horizon}, m={n_agents} with flwr run: {planned} message rounds; "
                f"time limit {'derived from the measured pace' if timeout is None else f'{timeout:g} s'}")
            failure = _watch(federation.submit(config), planned, timeout, full, say)
    except (RuntimeError, TimeoutError, OSError) as exc:  # start-up: the message names the log to read
        failure = f"the local federation failed: {str(exc).splitlines()[0]}"
    except KeyboardInterrupt:  # Ctrl-C (or SIGTERM through the CLI): every process was stopped; the result says so
        _save_failure(folder, int(horizon), int(n_agents), "interrupted (Ctrl-C or SIGTERM) before the run ended; "
                      "every process the demo started was stopped")
        raise
    return failure


def _final_result(folder: Path, failure: str | None, horizon: int, n_agents: int,
                  executor: str) -> tuple[dict[str, Any], str, str | None]:
    """The server's result with the final word (status, and why it failed), written back; ``(server, status, failure)``."""
    path = folder / "result.json"
    server = _read_result(path)
    if server is None:
        failure = failure or f"the ServerApp wrote no result (see the logs in {folder / 'logs'})"
        server = _empty_result(horizon, n_agents)
    status = server.get("status") or ("completed" if server.get("completed") else "failed")
    if status == "degraded" and not server.get("failed"):
        failure = None  # the ServerApp raised only to have Flower record the drop: the result says what happened
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
        status = "failed"
    server["status"] = status
    from dpfair.federated._wire import _write_json

    _write_json(str(path), server)  # the final word: status, and why it failed
    return server, status, failure


def _read_curves(result: DemoResult, metrics: Path, horizon: int) -> DemoResult:
    """``result`` with each learner's actions and, over the agents that finished, its regret curves (agents' metrics)."""
    finished = {int(p.stem.split("-")[1]): np.load(p) for p in sorted(metrics.glob("agent-*.npz"))}
    for label in result.server["learners"]:
        result.actions[label] = {agent: m[f"{label}:actions"] for agent, m in finished.items()}
        complete = [m for m in finished.values() if len(m[f"{label}:fair"]) == horizon]
        if complete:
            result.fair_regret[label] = np.cumsum(np.mean([m[f"{label}:fair"] for m in complete], axis=0))
            result.reward_regret[label] = np.cumsum(np.mean([m[f"{label}:reward"] for m in complete], axis=0))
    return result


def _empty_result(horizon: int, n_agents: int) -> dict[str, Any]:
    return {"horizon": horizon, "n_agents": n_agents, "status": "failed", "learners": {}, "dropped": {}, "errors": [],
            "completed": False, "failed": None, "rounds_played": 0}


def _read_result(path: Path) -> dict[str, Any] | None:
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def _save_failure(folder: Path, horizon: int, n_agents: int, why: str) -> None:
    """Mark the run's result (the ServerApp's checkpoint, or a new one) as failed, naming *why*."""
    from dpfair.federated._wire import _write_json

    path = folder / "result.json"
    server = _read_result(path) or _empty_result(horizon, n_agents)
    server["failed"] = server.get("failed") or why
    server.setdefault("errors", []).append(why)
    server["completed"], server["status"] = False, "failed"
    _write_json(str(path), server)


def _agent_files(data: str | Path, n_agents: int, n_actions: int, dim: int, horizon: int) -> list[Path]:
    """Each agent's file from ``--data``: a pattern with ``{agent}``, or a folder of ``agent-<i>.csv`` / ``.parquet``.

    Every file is read and checked here (its layout, the run's sizes), before any process starts.
    """
    from dpfair.federated.data import load_stream

    text = str(data)
    if "{agent}" in text:
        files = [Path(text.replace("{agent}", str(i))) for i in range(n_agents)]
    elif Path(text).is_dir():
        files = []
        for i in range(n_agents):
            found = [p for p in (Path(text) / f"agent-{i}.csv", Path(text) / f"agent-{i}.parquet") if p.is_file()]
            files.append(found[0] if found else Path(text) / f"agent-{i}.csv")
    else:
        raise ValueError(f"data={text!r}: pass a folder holding agent-<i>.csv (or .parquet) for each agent, or a path "
                         "with {agent} in it (e.g. acs/state-{agent}.csv).")
    for path in files:
        if not path.is_file():
            raise ValueError(f"no data file {path} for agent {files.index(path)}")
        load_stream(path, horizon=horizon, n_actions=n_actions, dim=dim)  # raises ValueError naming the problem
    return [p.resolve() for p in files]


def _shared_pattern(files: list[Path]) -> str:
    """The ``data-path`` run setting naming every agent's file (``{agent}`` in place of the index)."""
    pattern = str(files[0]).replace("agent-0", "agent-{agent}")
    if all(Path(pattern.replace("{agent}", str(i))) == f for i, f in enumerate(files)):
        return pattern
    raise ValueError("the Simulation Engine's agents read their files from one run setting: name them agent-<i>.csv "
                     "in one folder, or pass a path with {agent}")


_RAY_START_FAILED = "The current node timed out during startup"  # ray/_private/node.py: a hard-coded 30 s wait
_SIMULATION_START_TIMEOUT = 300.0  # seconds the ServerApp waits for the first init reply on the Simulation Engine
_PROGRESS = re.compile(r"message round (\d+) of about (\d+) \(([0-9.]+) s each\)")
_ROUND = re.compile(r"dpfair: round (\d+) of (\d+), message round (\d+) of about (\d+) \(([0-9.]+) s each\)"
                    r"(?:, (\d+) of (\d+) agents alive)?")
_ECHO_EVERY = 5.0  # seconds between two progress lines on the console
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
    seen, echoed = 0, 0.0
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
                if time.monotonic() - echoed >= _ECHO_EVERY:
                    echoed = time.monotonic()
                    line = _progress_line(text, planned)
                    if line:
                        say(line)
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


def _progress_line(text: str, planned: int) -> str:
    """The console's progress line from the ServerApp's latest: round, pace, time left, agents alive."""
    found = _ROUND.findall(text)
    if not found:
        return ""
    t, horizon, done, _, pace, alive, agents = found[-1]
    left = max(planned - int(done), 0) * float(pace)
    eta = f"{left:.0f} s" if left < 90 else f"{left / 60:.0f} min"
    alive_text = f", {alive} of {agents} agents alive" if alive else ""
    return (f"round {t} of {horizon} ({100 * int(t) / max(int(horizon), 1):.0f} %), {float(pace):.3f} s per message "
            f"round, about {eta} left{alive_text}")


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
    state = {"completed": "completed", "degraded": "DEGRADED (every round played, an agent dropped)"}.get(
        result.status, "NOT completed")
    lines = [f"T={server['horizon']}, m={server['n_agents']}: {state} in {result.wall_seconds:.1f} s"]
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
