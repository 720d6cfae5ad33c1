"""Flower apps for the federated FairX learners: every agent a Flower ``ClientApp``, the server a ``ServerApp``.

Solanki, Jain & Gujar's Algorithm 1 as a protocol between organisations, on Flower's Message API
(``flwr==1.41``).  One communication round of Flower per synchronization of the protocol:

1. the server (:func:`make_server_app`) waits for ``n-agents`` SuperNodes and asks each which agent it
   is (its ``partition-id`` node setting);
2. each message tells the agents to play up to the next synchronization round (the server's
   :class:`~dpfair.bandits.FederatedServer` knows the bounded-gap and P-FCB schedules) and carries the
   shared ``U, u`` of the last synchronization;
3. each agent (:func:`make_client_app`) receives ``U, u``, plays its rounds on its *own* stream of
   contexts and rewards (``select`` / ``update``), and replies with
   :meth:`~dpfair.bandits.FedFairXLinUCB.local_statistics` -- for Priv-FairX-LinUCB the PRIVATIZER's
   noisy ``U_hat, u_hat``, the only thing that leaves the agent;
4. the server sums the latest release of every agent and goes on.  With the log-det protocol (B1) the
   agents play one round per message and report their trigger; a synchronization follows when one
   fires (a message per round: slow, and its timing is not covered by the privacy accounting).

Metrics (actions, fairness-regret terms) never cross the wire: each agent writes its own to
``metrics-dir`` (a node setting, or the run setting) at the end of the run.

Faults: an agent that does not answer within ``round-timeout`` seconds, or answers with an error, is
dropped from that round on; the run goes on with the others, its last release stays in the sum
(nothing already aggregated is lost), and the result says who dropped and from which round.  An agent
refuses a malformed message (unknown step, wrong shapes, NaN, a round in the past) with an error
reply naming the problem; its state is left as it was.

Run settings (``[tool.flwr.app.config]`` of the app project, ``flwr run --run-config``): see
:data:`RUN_CONFIG`.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["RUN_CONFIG", "learner_from_config", "make_client_app", "make_server_app"]

#: Every run setting with its default.  Strings: ``learner`` ("fed" or "priv"), ``protocol``,
#: ``noise-calibration``, ``radius`` ("theory" or a number), paths (``result-path``, ``wire-log``,
#: ``metrics-dir``; empty: not written).  ``random-state`` -1 draws secure noise.  ``context-bound``
#: 0 declares ``sqrt(dim)`` (the synthetic world's bound); ``sync-threshold`` 0 the log-det default.
RUN_CONFIG: dict[str, Any] = {
    "learner": "priv",
    "protocol": "bounded-gap",
    "horizon": 2000,
    "n-agents": 5,
    "dim": 5,
    "n-actions": 10,
    "seed": 0,
    "reward-noise-std": 0.1,
    "epsilon": 2.0,
    "delta": 0.1,
    "noise-calibration": "tight",
    "context-bound": 0.0,
    "reward-bound": 1.0,
    "random-state": -1,
    "merit-scale": 10.0,
    "regularization": 1.0,
    "noise-std": 0.1,
    "theta-norm-bound": 1.0,
    "confidence-delta": 0.1,
    "radius": "theory",
    "n-steps": 10,
    "step-size": 0.1,
    "sync-threshold": 0.0,
    "round-timeout": 30.0,
    "start-timeout": 60.0,
    "result-path": "",
    "wire-log": "",
    "metrics-dir": "",
}

_MESSAGE_TYPE = "train"
_STEPS = ("init", "play", "release", "finish")


def _settings(config: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(config) - set(RUN_CONFIG))
    if unknown:
        raise ValueError(f"unknown run setting(s) {unknown}; the settings are {sorted(RUN_CONFIG)}.")
    out = dict(RUN_CONFIG)
    out.update(config)
    return out


def learner_from_config(config: Mapping[str, Any]) -> Any:
    """The learner a run's settings describe (every agent builds the same one).

    Parameters
    ----------
    config : mapping
        Run settings (:data:`RUN_CONFIG` keys; missing ones take their defaults).

    Returns
    -------
    FedFairXLinUCB or PrivFairXLinUCB
    """
    from dpfair.bandits import FedFairXLinUCB, PrivFairXLinUCB

    c = _settings(config)
    radius = c["radius"]
    if isinstance(radius, str) and radius != "theory":
        radius = float(radius)
    common = {
        "merit_scale": c["merit-scale"], "regularization": c["regularization"], "noise_std": c["noise-std"],
        "theta_norm_bound": c["theta-norm-bound"], "confidence_delta": c["confidence-delta"], "radius": radius,
        "n_steps": c["n-steps"], "step_size": c["step-size"],
        "sync_threshold": None if not c["sync-threshold"] else c["sync-threshold"],
    }
    if c["learner"] == "fed":
        return FedFairXLinUCB(c["protocol"], **common)
    if c["learner"] == "priv":
        bound = c["context-bound"] or math.sqrt(int(c["dim"]))
        return PrivFairXLinUCB(
            c["epsilon"], c["delta"], bound, c["protocol"], noise_calibration=c["noise-calibration"],
            reward_bound=c["reward-bound"], random_state=None if int(c["random-state"]) < 0 else int(c["random-state"]),
            **common,
        )
    raise ValueError(f"learner must be 'fed' (Fed-FairX-LinUCB) or 'priv' (Priv-FairX-LinUCB), got {c['learner']!r}.")


def _write_json(path: str, payload: Any) -> None:
    """Atomically: a temporary file in the same folder, then a rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        json.dump(payload, handle, indent=1, default=str)
    os.replace(tmp, target)


def _records(step: str, **config: Any) -> Any:
    from flwr.app import ConfigRecord, RecordDict

    return RecordDict({"config": ConfigRecord({"step": step, **config})})


def _with_arrays(content: Any, name: str, **arrays: np.ndarray) -> Any:
    from flwr.app import Array, ArrayRecord

    content[name] = ArrayRecord({k: Array(np.ascontiguousarray(v, dtype=float)) for k, v in arrays.items()})
    return content


# ------------------------------------------------------------------------------------------------ server
class _Exchange:
    """Push one message per live agent and pull the replies with a short poll (not ``send_and_receive``'s 3 s)."""

    def __init__(self, grid: Any, timeout: float, wire_log: str) -> None:
        self.grid, self.timeout, self.wire_log = grid, timeout, wire_log

    def __call__(self, contents: Mapping[int, Any]) -> dict[int, Any]:
        from flwr.app import Message

        messages = [Message(content, dst_node_id=node, message_type=_MESSAGE_TYPE, ttl=max(self.timeout, 5.0) + 60.0)
                    for node, content in contents.items()]
        ids = set(self.grid.push_messages(messages))
        replies: dict[int, Any] = {}
        deadline = time.monotonic() + self.timeout
        pause = 0.001
        while ids and time.monotonic() < deadline:
            got = list(self.grid.pull_messages(ids))
            for reply in got:
                ids.discard(reply.metadata.reply_to_message_id)
                replies[reply.metadata.src_node_id] = reply
                self._log(reply)
            pause = 0.001 if got else min(0.02, pause * 2)
            if ids:
                time.sleep(pause)
        return replies

    def _log(self, reply: Any) -> None:
        if not self.wire_log:
            return
        entry: dict[str, Any] = {"node": reply.metadata.src_node_id}
        if reply.has_error():
            entry["error"] = str(reply.error.reason)
        else:
            for name, record in reply.content.items():
                if hasattr(record, "to_numpy_ndarrays") or type(record).__name__ == "ArrayRecord":
                    entry[name] = {k: v.numpy().tolist() for k, v in record.items()}
                else:
                    entry[name] = {k: (v if isinstance(v, int | float | str | bool) else repr(v)) for k, v in record.items()}
        with open(self.wire_log, "a") as handle:
            handle.write(json.dumps(entry) + "\n")


def _reply_config(reply: Any) -> dict[str, Any]:
    if reply.has_error():
        raise RuntimeError(f"the ClientApp raised: {reply.error.reason}")
    config = dict(reply.content["config"])
    if "error" in config:
        raise ValueError(str(config["error"]))
    return config


def _serve(grid: Any, run_config: Mapping[str, Any], learner_factory: Callable[[Mapping[str, Any]], Any]) -> dict[str, Any]:
    c = _settings(run_config)
    T, m, d = int(c["horizon"]), int(c["n-agents"]), int(c["dim"])
    learner = learner_factory(c)
    server = learner.make_server(d, T, m)
    result: dict[str, Any] = {
        "learner": type(learner).__name__, "protocol": server.protocol, "horizon": T, "n_agents": m,
        "communication_rounds": 0, "synchronization_rounds": [], "dropped": {}, "errors": [], "agents": {},
        "privacy_spent": {}, "completed": False,
    }
    exchange = _Exchange(grid, float(c["round-timeout"]), str(c["wire-log"]))
    start = time.monotonic()
    nodes: list[int] = []
    while time.monotonic() - start < float(c["start-timeout"]):
        nodes = sorted(grid.get_node_ids())
        if len(nodes) >= m:
            break
        time.sleep(0.05)
    if len(nodes) < m:
        result["errors"].append(f"only {len(nodes)} of n-agents={m} SuperNodes connected within start-timeout")
        return result
    live: dict[int, int] = {}  # agent -> node
    for node, reply in exchange({node: _records("init") for node in nodes}).items():
        try:
            agent = int(_reply_config(reply)["agent"])
        except (RuntimeError, ValueError, KeyError) as exc:
            result["errors"].append(f"node {node}, init: {exc}")
            continue
        if not 0 <= agent < m or agent in live:
            result["errors"].append(f"node {node} claims agent {agent}: partition-id must be distinct, in [0, {m})")
            continue
        live[agent] = node
    result["agents"] = {str(a): n for a, n in sorted(live.items())}
    if len(live) < m:
        result["dropped"].update({str(a): 1 for a in range(m) if a not in live})

    def drop(agent: int, first_round: int, why: str | None = None) -> None:
        result["dropped"][str(agent)] = first_round
        if why:
            result["errors"].append(f"agent {agent}, round {first_round}: {why}")
        live.pop(agent, None)

    def ask(step: str, t: int, shared: tuple[np.ndarray, np.ndarray] | None, **extra: Any) -> dict[int, dict[str, Any]]:
        contents = {}
        for node in live.values():
            content = _records(step, round=t, **extra)
            if shared is not None:
                _with_arrays(content, "shared", gram=shared[0], target=shared[1])
            contents[node] = content
        replies = exchange(contents)
        answers: dict[int, dict[str, Any]] = {}
        for agent, node in list(live.items()):
            reply = replies.get(node)
            if reply is None:
                drop(agent, t + 1, f"no answer within round-timeout={c['round-timeout']} s")
                continue
            try:
                answers[agent] = {"config": _reply_config(reply), "reply": reply}
            except (RuntimeError, ValueError) as exc:
                drop(agent, t + 1, str(exc))
        return answers

    def releases(answers: Mapping[int, dict[str, Any]]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        out = {}
        for agent, answer in answers.items():
            arrays = answer["reply"].content["statistics"]
            out[agent] = (arrays["gram"].numpy(), arrays["target"].numpy())
        return out

    t, shared = 0, None  # shared: the U, u of a synchronization not yet delivered
    log_det = server.protocol == "log-det"
    while t < T and live:
        if log_det:
            until, release = t + 1, False
        else:
            scheduled = server.next_round(t)
            until, release = (scheduled, True) if scheduled is not None else (T, False)
        answers = ask("play", t, shared, until=until, release=release)
        shared = None  # delivered: each synchronization's U, u reaches an agent once
        t = until
        if log_det and any(a["config"].get("trigger", False) for a in answers.values()):
            answers, release = ask("release", t, None), True
        if release and answers:
            shared = server.aggregate(releases(answers))
            result["communication_rounds"] += 1
            result["synchronization_rounds"].append(t)
    for agent, answer in ask("finish", t, shared).items():
        result["privacy_spent"][str(agent)] = json.loads(answer["config"]["privacy_spent"])
    result["completed"] = t >= T
    result["rounds_played"] = t
    return result


def make_server_app(*, learner_factory: Callable[[Mapping[str, Any]], Any] | None = None) -> Any:
    """A Flower ``ServerApp`` running the server's half of Fed-/Priv-FairX-LinUCB.

    Parameters
    ----------
    learner_factory : callable, optional
        ``run settings -> learner``; default :func:`learner_from_config`.  The server uses only the
        learner's protocol and schedule (:class:`~dpfair.bandits.FederatedServer`).

    Returns
    -------
    flwr.serverapp.ServerApp
        Its ``main`` writes the run's result (JSON) to the ``result-path`` setting: communication
        rounds, the rounds they happened at, each agent's ``privacy_spent``, dropped agents (agent ->
        first round missed) and errors.
    """
    from flwr.serverapp import ServerApp

    app = ServerApp()
    factory = learner_from_config if learner_factory is None else learner_factory

    @app.main()
    def main(grid: Any, context: Any) -> None:
        config = dict(context.run_config)
        result = _serve(grid, config, factory)
        path = str(config.get("result-path", ""))
        if path:
            _write_json(path, result)

    return app


# ------------------------------------------------------------------------------------------------ client
_AGENTS: dict[tuple[int, int], dict[str, Any]] = {}  # (run, node) -> state, for executors that keep the process


def _default_stream(config: Mapping[str, Any], agent: int) -> Any:
    from dpfair.bandits import FederatedSyntheticEnvironment

    c = _settings(config)
    env = FederatedSyntheticEnvironment(int(c["dim"]), int(c["n-actions"]), float(c["reward-noise-std"]))
    return env.agent_stream(int(c["seed"]), int(c["horizon"]), int(c["n-agents"]), agent)


class _Refused(ValueError):
    """A message the agent will not act on."""


def _check_round(config: Mapping[str, Any], state: dict[str, Any]) -> int:
    t = config.get("round")
    if isinstance(t, bool) or not isinstance(t, int):
        raise _Refused(f"the message has no integer 'round' (got {t!r})")
    if t != state["learner"].t_:
        past = "in the past" if t < state["learner"].t_ else "ahead of this agent"
        raise _Refused(f"the message's round {t} is {past}: this agent has played {state['learner'].t_} rounds")
    return t


def _receive(content: Any, state: dict[str, Any]) -> None:
    if "shared" not in content:
        return
    arrays = content["shared"]
    if set(arrays) != {"gram", "target"}:
        raise _Refused(f"the shared statistics must be 'gram' and 'target', got {sorted(arrays)}")
    d = state["learner"].dim_
    gram, target = arrays["gram"].numpy(), arrays["target"].numpy()
    if gram.shape != (d, d) or target.shape != (d,):
        raise _Refused(f"the shared statistics have shapes {gram.shape} and {target.shape}; expected {(d, d)} and {(d,)}")
    if not (np.isfinite(gram).all() and np.isfinite(target).all()):
        raise _Refused("the shared statistics hold NaN or infinite values")
    # symmetric, and positive definite once Lemma 4's shift is added, or ValueError before any change
    state["learner"].receive_shared(gram, target)


def _play(state: dict[str, Any], until: int) -> None:
    learner, stream, metrics = state["learner"], state["stream"], state["metrics"]
    scale = float(state["merit_scale"])
    while learner.t_ < until:
        t = learner.t_ + 1
        x = stream.contexts(t)
        uniform = stream.uniform(t) if hasattr(stream, "uniform") else None
        action = learner.select(x, uniform=uniform)
        learner.update(x, action, stream.reward(t, action))
        metrics["actions"].append(action)
        if hasattr(stream, "fairness_terms"):
            fair, reward = stream.fairness_terms(t, learner.policy_, scale)
            metrics["fair"].append(fair)
            metrics["reward"].append(reward)


def _handle(message: Any, context: Any, stream_factory: Callable[[Mapping[str, Any], int], Any]) -> Any:
    from flwr.app import Message

    key = (int(context.run_id), int(context.node_id))
    config = dict(context.run_config)
    try:
        if "config" not in message.content or "step" not in message.content["config"]:
            raise _Refused("the message has no 'config' record with a 'step'")
        step_config = dict(message.content["config"])
        step = step_config["step"]
        if step not in _STEPS:
            raise _Refused(f"unknown step {step!r}; expected one of {_STEPS}")
        if step == "init":
            state = _start(config, context, stream_factory)
            _AGENTS[key] = state
            _save(context, state)
            return Message(_records("init", agent=state["agent"]), reply_to=message)
        state = _AGENTS.get(key) or _load(context, config, stream_factory)
        _check_round(step_config, state)
        learner = state["learner"]
        reply = _records(step, agent=state["agent"])
        if step == "play":
            until = step_config.get("until")
            if isinstance(until, bool) or not isinstance(until, int) or not learner.t_ < until <= learner.horizon_:
                raise _Refused(f"'until' must be an integer in ({learner.t_}, {learner.horizon_}], got {until!r}")
            _receive(message.content, state)
            _play(state, until)
            if step_config.get("release", False):
                gram, target = learner.local_statistics()
                _with_arrays(reply, "statistics", gram=gram, target=target)
            elif learner.protocol == "log-det":
                reply["config"]["trigger"] = learner.synchronization_requested()
        elif step == "release":
            gram, target = learner.local_statistics()
            _with_arrays(reply, "statistics", gram=gram, target=target)
        else:  # finish
            _receive(message.content, state)
            reply["config"]["privacy_spent"] = json.dumps(learner.privacy_spent_, default=str)
            reply["config"]["synchronizations"] = learner.n_synchronizations_
            _write_metrics(state, context)
        _AGENTS[key] = state
        _save(context, state)
        return Message(reply, reply_to=message)
    except (_Refused, ValueError, TypeError) as exc:
        # refuse: the state is not saved, so the agent stays as it was before this message
        _AGENTS.pop(key, None)
        agent = context.node_config.get("partition-id", "?")
        return Message(_records("refused", error=f"agent {agent} refused the message: {exc}"), reply_to=message)


def _start(config: Mapping[str, Any], context: Any, stream_factory: Callable[[Mapping[str, Any], int], Any]) -> dict[str, Any]:
    c = _settings(config)
    agent = context.node_config.get("partition-id")
    if isinstance(agent, bool) or not isinstance(agent, int):
        raise _Refused(f"this SuperNode has no integer partition-id node setting (got {agent!r}); start it with "
                       "--node-config 'partition-id=<agent index>'")
    learner = learner_from_config(c)
    learner.reset(int(c["n-actions"]), int(c["dim"]), int(c["horizon"]), n_agents=int(c["n-agents"]), agent=agent,
                  run_id=int(c["seed"]))
    return {"agent": agent, "learner": learner, "stream": stream_factory(c, agent),
            "metrics": {"actions": [], "fair": [], "reward": []}, "merit_scale": c["merit-scale"]}


def _save(context: Any, state: dict[str, Any]) -> None:
    from flwr.app import ConfigRecord

    # the node's own state (kept by its SuperNode, never sent): the learner and the metrics so far
    context.state["dpfair"] = ConfigRecord({
        "agent": state["agent"], "learner": pickle.dumps(state["learner"]), "metrics": pickle.dumps(state["metrics"]),
    })


def _load(context: Any, config: Mapping[str, Any], stream_factory: Callable[[Mapping[str, Any], int], Any]) -> dict[str, Any]:
    if "dpfair" not in context.state:
        raise _Refused("this agent has not been initialized (no 'init' message yet)")
    saved = context.state["dpfair"]
    agent = int(saved["agent"])
    return {"agent": agent, "learner": pickle.loads(saved["learner"]), "metrics": pickle.loads(saved["metrics"]),
            "stream": stream_factory(_settings(config), agent), "merit_scale": _settings(config)["merit-scale"]}


def _write_metrics(state: dict[str, Any], context: Any) -> None:
    folder = context.node_config.get("metrics-dir") or _settings(context.run_config)["metrics-dir"]
    if not folder:
        return
    target = Path(str(folder))
    target.mkdir(parents=True, exist_ok=True)
    m = state["metrics"]
    fd, tmp = tempfile.mkstemp(dir=target, prefix=f".agent-{state['agent']}.", suffix=".npz")
    with os.fdopen(fd, "wb") as handle:
        np.savez(handle, actions=np.asarray(m["actions"], dtype=np.int64), fair=np.asarray(m["fair"]),
                 reward=np.asarray(m["reward"]), synchronizations=state["learner"].n_synchronizations_)
    os.replace(tmp, target / f"agent-{state['agent']}.npz")


def make_client_app(*, stream_factory: Callable[[Mapping[str, Any], int], Any] | None = None) -> Any:
    """A Flower ``ClientApp`` running one agent of Fed-/Priv-FairX-LinUCB on its own stream.

    Parameters
    ----------
    stream_factory : callable, optional
        ``(run settings, agent index) -> stream`` with ``contexts(t)`` (``(n_actions, dim)``) and
        ``reward(t, action)``, optionally ``uniform(t)`` (the variate that draws the action) and
        ``fairness_terms(t, policy, merit_scale)`` (scored metrics); rounds ``t = 1 .. horizon``.  Default:
        the agent's share of :class:`~dpfair.bandits.FederatedSyntheticEnvironment`'s seeded streams
        (:meth:`~dpfair.bandits.FederatedSyntheticEnvironment.agent_stream`).  The agent's index is its
        SuperNode's ``partition-id`` node setting.

    Returns
    -------
    flwr.clientapp.ClientApp
    """
    from flwr.clientapp import ClientApp

    app = ClientApp()
    factory = _default_stream if stream_factory is None else stream_factory

    @app.train()
    def train(message: Any, context: Any) -> Any:
        return _handle(message, context, factory)

    return app
