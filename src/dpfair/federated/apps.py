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

Faults: an agent that does not answer within ``round-timeout`` seconds (counted from the round's latest
reply: Flower's Simulation Engine runs the agents of a round one after another on a few actors), or answers
with an error, is dropped from that round on; the run goes on with the others, its last release stays in the sum
(nothing already aggregated is lost), and the result says who dropped and from which round.  An agent
refuses a malformed message (unknown step, wrong shapes, NaN, a round in the past) with an error
reply; its state is left as it was.

Error text never crosses the trust boundary: whatever goes wrong inside an agent -- a malformed
message, or an error raised while it plays on its private stream (a reward cell that is not a number,
a context out of bounds, its own code) -- reaches the server only as a fixed code and the name of the
argument (``{"code": "invalid_reward", "argument": "rewards"}``, :data:`ERROR_CODES`), never as the
exception's text, which may hold private values.  The details stay in the agent's local log (Flower's
logger, ``flwr``, on the client).

Visibility: the ServerApp reports through Flower's logger (``flwr run --stream``, ``flwr log``): the agents
that joined and the plan, a progress line once a round is played and every 2 s after, each dropped agent
(warning), each error, the end.  It writes its result to ``result-path`` (default
``dpfair-results/run-{run_id}.json``), also during the run.  A run that failed (an agent that never answered
``init``, too few SuperNodes, a run that stopped early) raises at its end, so that Flower records it as failed.

Run settings (``[tool.flwr.app.config]`` of the app project, every one listed there, ``flwr run
--run-config``): see :data:`RUN_CONFIG`.
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

from dpfair.federated._state import dumps_state, pack_metrics, unpack_metrics
from dpfair.federated._wire import _Exchange, _flower_error, _local_log, _pack, _records, _Refused, _unpack, _write_json

__all__ = ["ERROR_CODES", "RUN_CONFIG", "learner_from_config", "learners_from_config", "make_client_app", "make_server_app",
           "planned_message_rounds", "round_metrics"]

#: Every run setting with its default.  ``learners``: several learners on the same streams in one run,
#: ``"kind:protocol,kind:protocol"`` (e.g. ``"fed:bounded-gap,fed:p-fcb,priv:bounded-gap"``; empty: the one
#: ``learner`` with ``protocol``); each is labelled ``kind-protocol``.  Strings: ``learner`` ("fed" or "priv"), ``protocol``,
#: ``noise-calibration``, ``radius`` ("theory" or a number), paths (``result-path``, ``wire-log``,
#: ``metrics-dir``; empty: not written; ``{run_id}`` is replaced by the Flower run id; relative paths start
#: at the ServerApp's working directory -- the result's absolute path is in the run's log).  ``random-state`` -1
#: draws secure noise.  ``context-bound`` 0 declares ``sqrt(dim)`` (the synthetic world's bound);
#: ``sync-threshold`` 0 the log-det default.  ``epsilon = inf`` runs the exact non-private algorithm (TOML ``inf``).
#: ``data-path``: each agent's own file of contexts and outcomes (:mod:`dpfair.federated.data`; ``{agent}`` is
#: replaced by the agent's index); a SuperNode's own ``data-path`` node setting comes first; empty: the synthetic
#: world.  ``allow-drops``: a run that played every round but lost an agent on the way (``status`` "degraded") ends
#: normally instead of being recorded by Flower as failed.
RUN_CONFIG: dict[str, Any] = {
    "learner": "priv",
    "protocol": "bounded-gap",
    "learners": "",
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
    "allow-drops": False,
    "result-path": "dpfair-results/run-{run_id}.json",
    "wire-log": "",
    "metrics-dir": "dpfair-results/run-{run_id}-metrics",
    "data-path": "",
}

#: The codes an agent's error reply carries (with the argument's name), each with its fixed description:
#: the only text about an error inside an agent that leaves it.
ERROR_CODES: dict[str, str] = {
    "malformed_message": "the server's message is malformed or out of turn",
    "not_initialized": "this agent has not been initialized (no 'init' message yet)",
    "invalid_settings": "the run settings do not give a valid learner for this agent",
    "invalid_stream": "the agent's data source failed",
    "invalid_context": "a context of the agent's stream is invalid",
    "invalid_reward": "a reward of the agent's stream is invalid",
    "invalid_shared_statistics": "the shared statistics cannot be used by this agent",
    "release_failed": "the agent could not release its statistics",
    "metrics_failed": "the agent could not compute its local metrics",
    "agent_error": "an unexpected error inside the agent",
}

_PROGRESS_EVERY = 2.0  # seconds between two progress lines (and result checkpoints) of the ServerApp
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
        Unfitted; each agent calls its ``reset``.
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


def learners_from_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Every learner of a run, by label (``kind-protocol``), from the ``learners`` setting (or ``learner``).

    Parameters
    ----------
    config : mapping
        Run settings (:data:`RUN_CONFIG` keys).

    Returns
    -------
    dict
        Label -> learner, in the order given.
    """
    c = _settings(config)
    items = [item.strip() for item in str(c["learners"]).split(",") if item.strip()] or [f"{c['learner']}:{c['protocol']}"]
    out: dict[str, Any] = {}
    for item in items:
        kind, _, protocol = item.partition(":")
        protocol = protocol or c["protocol"]
        label = f"{kind}-{protocol}"
        if label in out:
            raise ValueError(f"learners lists {label!r} twice; list each kind:protocol once.")
        out[label] = learner_from_config({**c, "learner": kind, "protocol": protocol, "learners": ""})
    return out


# ------------------------------------------------------------------------------------------------ server


def _reply_config(reply: Any) -> dict[str, Any]:
    if reply.has_error():
        raise RuntimeError(_flower_error(reply))
    config = dict(reply.content["config"])
    if config.get("step") == "refused" or "error" in config:
        # only the fixed code and the argument's name are kept, never a text the agent might have put in
        code = config.get("code") if config.get("code") in ERROR_CODES else "agent_error"
        argument = config.get("argument")
        argument = argument if isinstance(argument, str) and argument.replace("-", "_").isidentifier() else "?"
        raise ValueError(f"refused: {code} ({argument}): {ERROR_CODES[code]}")
    return config


def _planned(servers: Mapping[str, Any], horizon: int) -> int:
    """Message rounds of the play loop (init and finish not counted); log-det: one per round (releases extra)."""
    if any(server.protocol == "log-det" for server in servers.values()):
        return horizon
    t, count = 0, 0
    while t < horizon:
        t = min((r for r in (server.next_round(t) for server in servers.values()) if r is not None), default=horizon)
        count += 1
    return count


def planned_message_rounds(config: Mapping[str, Any]) -> int:
    """The Flower message rounds a run's play loop takes (log-det: its lower bound, one per round).

    Parameters
    ----------
    config : mapping
        Run settings (:data:`RUN_CONFIG` keys).

    Returns
    -------
    int
        Message rounds, without the ``init`` and ``finish`` rounds.
    """
    c = _settings(config)
    T, m, d = int(c["horizon"]), int(c["n-agents"]), int(c["dim"])
    return _planned({label: lr.make_server(d, T, m) for label, lr in learners_from_config(c).items()}, T)


def round_metrics(rounds: Mapping[str, list[float]]) -> Any:
    """The per-message-round metrics of a run as one Flower ``MetricRecord`` (lists of numbers, one entry per round).

    Parameters
    ----------
    rounds : mapping of str to list of float
        ``round`` (the protocol's round reached), ``seconds`` (the message round's wall time), ``agents-alive``,
        and ``synchronized:<label>`` (1 when that learner synchronized there).

    Returns
    -------
    flwr.app.MetricRecord
        Nothing in it is a function of an agent's data (the schedule, the timing, who answered).
    """
    from flwr.app import MetricRecord

    return MetricRecord({key: list(values) for key, values in rounds.items()})


def _serve(grid: Any, run_config: Mapping[str, Any],
           learner_factory: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None,
           checkpoint: Callable[[dict[str, Any]], None] | None = None,
           rounds: dict[str, list[float]] | None = None) -> dict[str, Any]:
    """The server's run: the agents join (init), play the rounds with their synchronizations, then finish."""
    run = _ServerRun(grid, run_config, learner_factory, checkpoint)
    if not run.join():
        return run.result
    return run.finish(run.play(rounds if rounds is not None else {}))


class _ServerRun:
    """The state of one server run of :func:`_serve`: the learners' servers, the live agents and the result."""

    def __init__(self, grid: Any, run_config: Mapping[str, Any],
                 learner_factory: Callable[[Mapping[str, Any]], dict[str, Any]] | None,
                 checkpoint: Callable[[dict[str, Any]], None] | None) -> None:
        c = self.c = _settings(run_config)
        self.grid = grid
        self.T, self.m, self.d = T, m, d = int(c["horizon"]), int(c["n-agents"]), int(c["dim"])
        self.learners = learners = (learners_from_config if learner_factory is None else learner_factory)(c)
        self.servers = servers = {label: learner.make_server(d, T, m) for label, learner in learners.items()}
        self.log = _local_log()
        self.planned = planned = _planned(servers, T)
        self.result: dict[str, Any] = {
            "horizon": T, "n_agents": m, "status": "running", "dropped": {}, "errors": [], "agents": {},
            "completed": False, "failed": None,
            "rounds_played": 0, "planned_message_rounds": planned,
            "learners": {label: {"learner": type(learner).__name__, "protocol": servers[label].protocol,
                                 "communication_rounds": 0, "synchronization_rounds": [], "privacy_spent": {}}
                         for label, learner in learners.items()},
        }
        self.save = checkpoint or (lambda _result: None)
        self.exchange = _Exchange(grid, float(c["round-timeout"]), str(c["wire-log"]))
        self.live: dict[int, int] = {}  # agent -> node

    def fail(self, why: str) -> dict[str, Any]:
        result = self.result
        result["errors"].append(why)
        result["failed"] = result["failed"] or why
        result["status"] = "failed"
        self.log.error("dpfair: %s", why)
        self.save(result)
        return result

    # ---------------------------------------------------------------------------------------- joining
    def join(self) -> bool:
        """Wait for the SuperNodes and send them init; whether the run can go on (some agents joined)."""
        c, m, result, exchange, live = self.c, self.m, self.result, self.exchange, self.live
        start = time.monotonic()
        nodes: list[int] = []
        while time.monotonic() - start < float(c["start-timeout"]):
            nodes = sorted(self.grid.get_node_ids())
            if len(nodes) >= m:
                break
            time.sleep(0.05)
        if len(nodes) < m:
            self.fail(f"only {len(nodes)} of n-agents={m} SuperNodes connected within start-timeout={c['start-timeout']} s")
            return False
        # init loads the ClientApp and wakes idle SuperNodes (stock Flower polls every 3 s): start-timeout, not round-timeout
        exchange.timeout = max(float(c["round-timeout"]), float(c["start-timeout"]))
        init_replies = exchange({node: _records("init") for node in nodes})
        exchange.timeout = float(c["round-timeout"])
        for node in nodes:
            reply = init_replies.get(node)
            if reply is None:
                result["errors"].append(f"node {node} did not answer init within start-timeout={c['start-timeout']} s")
                continue
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
        result["dropped"].update({str(a): 1 for a in range(m) if a not in live})
        for error in result["errors"]:
            self.log.error("dpfair: %s", error)
        if len(live) < m:
            self.fail(f"agent(s) {sorted(a for a in range(m) if a not in live)} did not join (init); the run goes on "
                      "without them")
        self.log.info("dpfair: %d of %d agents joined; T=%d, %s, about %d message rounds", len(live), m, self.T,
                      ", ".join(self.learners), self.planned)
        return True

    # ---------------------------------------------------------------------------------------- one message round
    def drop(self, agent: int, first_round: int, why: str) -> None:
        self.result["dropped"][str(agent)] = first_round
        self.result["errors"].append(f"agent {agent}, round {first_round}: {why}")
        self.log.warning("dpfair: agent %d dropped from round %d: %s", agent, first_round, why)
        self.live.pop(agent, None)

    def ask(self, step: str, t: int, shared: Mapping[str, tuple[np.ndarray, np.ndarray]], **extra: Any) -> dict[int, Any]:
        contents = {}
        for node in self.live.values():
            packed = {f"shared:{label}": _pack(gram, target) for label, (gram, target) in shared.items()}
            contents[node] = _records(step, round=t, **extra, **packed)
        replies = self.exchange(contents)
        answers: dict[int, Any] = {}
        for agent, node in list(self.live.items()):
            reply = replies.get(node)
            if reply is None:
                self.drop(agent, t + 1, f"no answer within round-timeout={self.c['round-timeout']} s")
                continue
            try:
                answers[agent] = (_reply_config(reply), reply)
            except (RuntimeError, ValueError) as exc:
                self.drop(agent, t + 1, str(exc))
        return answers

    def aggregate(self, label: str, answers: Mapping[int, Any], t: int) -> tuple[np.ndarray, np.ndarray]:
        releases = {}
        for agent, (config, _) in list(answers.items()):
            try:
                releases[agent] = _unpack(config.get(f"statistics:{label}"), self.d,
                                          f"agent {agent}'s statistics of {label}")
            except _Refused as exc:  # a malformed reply: the agent is dropped, its last release stays in the sum
                self.drop(agent, t + 1, str(exc))
        entry = self.result["learners"][label]
        entry["communication_rounds"] += 1
        entry["synchronization_rounds"].append(t)
        return self.servers[label].aggregate(releases)

    # ---------------------------------------------------------------------------------------- the rounds
    def play(self, per_round: dict[str, list[float]]) -> int:
        """Play rounds until the horizon or no agent is left; the round reached.  ``per_round``: the metrics."""
        T, m, servers, exchange, live, result = self.T, self.m, self.servers, self.exchange, self.live, self.result
        triggered_by = [label for label, server in servers.items() if server.protocol == "log-det"]
        per_round.update({"round": [], "seconds": [], "agents-alive": [],
                          **{f"synchronized:{label}": [] for label in servers}})
        self.loop_start, self.exchanges_before = loop_start, exchanges_before = time.monotonic(), exchange.count
        t, pending = 0, {}  # pending: label -> the U, u of a synchronization not yet delivered
        reported = loop_start - _PROGRESS_EVERY  # a first progress line once a round is played, then every 2 s
        while t < T and live:
            if t and time.monotonic() - reported >= _PROGRESS_EVERY:
                reported, done = time.monotonic(), exchange.count - exchanges_before
                result["rounds_played"] = t
                self.log.info("dpfair: round %d of %d, message round %d of about %d (%.3f s each), %d of %d agents "
                              "alive", t, T, done, self.planned, (reported - loop_start) / max(done, 1), len(live), m)
                self.save(result)
            began = time.monotonic()
            scheduled = {label: server.next_round(t) for label, server in servers.items() if server.protocol != "log-det"}
            upcoming = [r for r in scheduled.values() if r is not None]
            until = t + 1 if triggered_by else min(upcoming, default=T)
            release = [label for label, r in scheduled.items() if r == until]
            answers = self.ask("play", t, pending, until=until, release=",".join(release))
            pending, t = {}, until
            for label in release:
                pending[label] = self.aggregate(label, answers, t)
            fired = [label for label in triggered_by if any(a[0].get(f"trigger:{label}", False) for a in answers.values())]
            if fired and live:
                answers = self.ask("release", t, {}, release=",".join(fired))
                for label in fired:
                    pending[label] = self.aggregate(label, answers, t)
            per_round["round"].append(t)
            per_round["seconds"].append(time.monotonic() - began)
            per_round["agents-alive"].append(len(live))
            for label in servers:
                per_round[f"synchronized:{label}"].append(int(label in release or label in fired))
        self.pending = pending
        return t

    def finish(self, t: int) -> dict[str, Any]:
        """Deliver the last synchronization, collect what each agent spent, and the result's final figures."""
        T, result = self.T, self.result
        for agent, (config, _) in self.ask("finish", t, self.pending).items():
            for label, spent in json.loads(config["privacy_spent"]).items():
                result["learners"][label]["privacy_spent"][str(agent)] = spent
        result["completed"] = t >= T
        result["rounds_played"] = t
        if not result["completed"]:
            self.fail(f"the run stopped at round {t} of {T}: no agent left" if not self.live
                      else f"the run stopped at round {t} of {T}")
        # the communication cost: message rounds (Flower round trips) of the play loop and their mean wall time
        loop_seconds, n_exchanges = time.monotonic() - self.loop_start, self.exchange.count - self.exchanges_before
        result["message_rounds"] = n_exchanges
        result["seconds_per_message_round"] = loop_seconds / max(n_exchanges, 1)
        # completed: every round with every agent; degraded: every round, but an agent dropped on the way
        result["status"] = "failed" if result["failed"] else "degraded" if result["dropped"] else "completed"
        self.log.info("dpfair: %s: %d rounds, %d message rounds (%.3f s each), %d agent(s) dropped, %d error(s)",
                      "completed" if result["status"] == "completed" else result["status"].upper(), t, n_exchanges,
                      result["seconds_per_message_round"], len(result["dropped"]), len(result["errors"]))
        return result


def make_server_app(*, learner_factory: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None) -> Any:
    """A Flower ``ServerApp`` running the server's half of Fed-/Priv-FairX-LinUCB.

    Parameters
    ----------
    learner_factory : callable, optional
        ``run settings -> {label: learner}``; default :func:`learners_from_config`.  The server uses only
        each learner's protocol and schedule (:class:`~dpfair.bandits.FederatedServer`).

    Returns
    -------
    flwr.serverapp.ServerApp
        Its ``main`` writes the run's result (JSON) to the ``result-path`` setting: per learner the
        communication rounds, the rounds they happened at and each agent's ``privacy_spent``; dropped
        agents (agent -> first round missed) and errors.
    """
    from flwr.serverapp import ServerApp

    app = ServerApp()
    factory = learners_from_config if learner_factory is None else learner_factory

    @app.main()
    def main(grid: Any, context: Any) -> None:
        config = dict(context.run_config)
        path = str(config.get("result-path", RUN_CONFIG["result-path"])).replace("{run_id}", str(context.run_id))
        if path:
            path = os.path.abspath(path)
            _local_log().info("dpfair: the result goes to %s", path)
        rounds: dict[str, list[float]] = {}
        try:
            result = _serve(grid, config, factory, checkpoint=(lambda r: _write_json(path, r)) if path else None,
                            rounds=rounds)
        except Exception as exc:  # a setting the server refuses, its own error: the result says so, Flower records it
            if path:  # (the server holds no agent's data: its errors name settings and its own state)
                why = f"the ServerApp failed: {type(exc).__name__}: {exc}"
                _write_json(path, {"status": "failed", "failed": why, "errors": [why], "completed": False,
                                   "rounds_played": 0, "learners": {}, "dropped": {}})
            raise
        if path:
            _write_json(path, result)
        _record(context, result, rounds)
        if result["failed"]:  # Flower records the run as failed (`flwr ls`: finished:failed)
            raise RuntimeError(f"dpfair run failed: {result['failed']}")
        if result["status"] == "degraded" and not _settings(config)["allow-drops"]:
            dropped = ", ".join(f"agent {a} from round {r}" for a, r in sorted(result["dropped"].items()))
            raise RuntimeError(f"dpfair run degraded: {dropped} dropped (pass allow-drops=true to accept drops)")

    return app


def _record(context: Any, result: Mapping[str, Any], rounds: Mapping[str, list[float]]) -> None:
    """Put the run's metrics into Flower's records: the ServerApp's ``context.state`` (kept by the SuperLink with the
    run) gets ``dpfair.rounds`` (:func:`round_metrics`) and ``dpfair.summary`` (MetricRecords) and ``dpfair.result``
    (a ConfigRecord holding the result's JSON); the summary is also logged, so ``flwr log <run id>`` shows it."""
    from flwr.app import ConfigRecord, MetricRecord

    summary = {"rounds-played": int(result["rounds_played"]), "message-rounds": int(result.get("message_rounds", 0)),
               "seconds-per-message-round": float(result.get("seconds_per_message_round", 0.0)),
               "agents-dropped": len(result["dropped"]), "completed": int(bool(result["completed"]))}
    for label, entry in result["learners"].items():
        summary[f"communication-rounds:{label}"] = int(entry["communication_rounds"])
    try:
        context.state["dpfair.rounds"] = round_metrics(rounds)
        context.state["dpfair.summary"] = MetricRecord(summary)
        context.state["dpfair.result"] = ConfigRecord({"json": json.dumps(result, default=str)})
    except (TypeError, ValueError) as exc:  # a record Flower will not hold: the result file still has everything
        _local_log().warning("dpfair: the metrics could not be recorded in Flower's context: %s", exc)
    _local_log().info("dpfair: metrics %s (status %s)", json.dumps(summary), result["status"])
    if rounds.get("round"):
        _local_log().info("dpfair: per-round metrics (MetricRecord dpfair.rounds): %s", json.dumps(
            {key: values[-5:] for key, values in rounds.items()}) + " (the last 5 of each)")


# ------------------------------------------------------------------------------------------------ client
_AGENTS: dict[tuple[int, int], dict[str, Any]] = {}  # (run, node) -> state, for executors that keep the process


def _default_stream(config: Mapping[str, Any], agent: int, node_config: Mapping[str, Any] | None = None) -> Any:
    from dpfair.bandits import FederatedSyntheticEnvironment

    c = _settings(config)
    from dpfair.federated.data import load_stream, resolve_data_path

    path = resolve_data_path(c, agent, node_config)
    if path:  # the agent's own file, read once per process
        return load_stream(path, horizon=int(c["horizon"]), n_actions=int(c["n-actions"]), dim=int(c["dim"]))
    env = FederatedSyntheticEnvironment(int(c["dim"]), int(c["n-actions"]), float(c["reward-noise-std"]))
    return env.agent_stream(int(c["seed"]), int(c["horizon"]), int(c["n-agents"]), agent)


def _inside(code: str, argument: str, action: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``action(*args, **kwargs)`` on the agent's private data; any error becomes ``_Refused(code, argument)``."""
    try:
        return action(*args, **kwargs)
    except _Refused:
        raise
    except Exception as exc:
        raise _Refused(f"{type(exc).__name__}: {exc}", code=code, argument=argument) from exc


def _rounds_played(state: dict[str, Any]) -> int:
    return next(iter(state["learners"].values())).t_


def _check_round(config: Mapping[str, Any], state: dict[str, Any]) -> int:
    t, played = config.get("round"), _rounds_played(state)
    if isinstance(t, bool) or not isinstance(t, int):
        raise _Refused(f"the message has no integer 'round' (got {t!r})", argument="round")
    if t != played:
        raise _Refused(f"the message's round {t} is {'in the past' if t < played else 'ahead of this agent'}: "
                       f"this agent has played {played} rounds", argument="round")
    return t


def _labels(config: Mapping[str, Any], state: dict[str, Any], key: str = "release") -> list[str]:
    labels = [label for label in str(config.get(key, "")).split(",") if label]
    unknown = sorted(set(labels) - set(state["learners"]))
    if unknown:
        raise _Refused(f"the message names learner(s) {unknown} this run does not have ({sorted(state['learners'])})",
                       argument=key)
    return labels


def _receive(config: Mapping[str, Any], state: dict[str, Any]) -> None:
    shared = {}
    for name, value in config.items():
        if not name.startswith("shared:"):
            continue
        label = name.split(":", 1)[1]
        if label not in state["learners"]:
            raise _Refused(f"shared statistics for learner {label!r}, which this run does not have", argument="shared")
        try:
            shared[label] = _unpack(value, state["learners"][label].dim_, "the shared statistics")
        except _Refused as exc:
            raise _Refused(str(exc), argument="shared") from None
    for label, (gram, target) in shared.items():
        # symmetric, and positive definite once Lemma 4's shift is added (V = U + the agent's own S: private), or
        # ValueError (the state is then reloaded)
        _inside("invalid_shared_statistics", "shared", state["learners"][label].receive_shared, gram, target)


def _play(state: dict[str, Any], until: int) -> None:
    stream, scale = state["stream"], float(state["merit_scale"])
    scored = hasattr(stream, "fairness_terms")
    # everything here reads the agent's private stream: an error becomes a code and the argument's name (_inside)
    while _rounds_played(state) < until:
        t = _rounds_played(state) + 1
        x = _inside("invalid_context", "contexts", stream.contexts, t)
        uniform = _inside("invalid_stream", "uniform", stream.uniform, t) if hasattr(stream, "uniform") else None
        for label, learner in state["learners"].items():  # the same contexts and variates: common random numbers
            action = _inside("invalid_context", "contexts", learner.select, x, uniform=uniform)
            reward = _inside("invalid_reward", "rewards", stream.reward, t, action)
            _inside("invalid_reward", "rewards", learner.update, x, action, reward)
            metrics = state["metrics"][label]
            metrics["actions"].append(action)
            if scored:
                fair, regret = _inside("metrics_failed", "fairness_terms", stream.fairness_terms, t, learner.policy_, scale)
                metrics["fair"].append(fair)
                metrics["reward"].append(regret)
            else:  # the agent's own data: no true merits to score against; the reward it observed
                metrics.setdefault("observed", []).append(float(reward))


def _statistics(reply: Any, state: dict[str, Any], labels: list[str]) -> None:
    for label in labels:
        gram, target = _inside("release_failed", "statistics", state["learners"][label].local_statistics)
        reply["config"][f"statistics:{label}"] = _pack(gram, target)


def _handle(message: Any, context: Any, stream_factory: Callable[[Mapping[str, Any], int], Any]) -> Any:
    from flwr.app import Message

    key = (int(context.run_id), int(context.node_id))
    config = dict(context.run_config)
    try:
        if "config" not in message.content or "step" not in message.content["config"]:
            raise _Refused("the message has no 'config' record with a 'step'", argument="step")
        step_config = dict(message.content["config"])
        step = step_config["step"]
        if step not in _STEPS:
            raise _Refused(f"unknown step {step!r}; expected one of {_STEPS}", argument="step")
        if step == "init":
            state = _start(config, context, stream_factory)
            _AGENTS[key] = state
            _save(context, state)
            return Message(_records("init", agent=state["agent"]), reply_to=message)
        state = _current(key, context) or _load(context, config, stream_factory)
        _check_round(step_config, state)
        reply = _records(step, agent=state["agent"])
        if step == "play":
            played, horizon = _rounds_played(state), next(iter(state["learners"].values())).horizon_
            until = step_config.get("until")
            if isinstance(until, bool) or not isinstance(until, int) or not played < until <= horizon:
                raise _Refused(f"'until' must be an integer in ({played}, {horizon}], got {until!r}", argument="until")
            release = _labels(step_config, state)
            _receive(step_config, state)
            _play(state, until)
            _statistics(reply, state, release)
            for label, learner in state["learners"].items():
                if learner.protocol == "log-det" and label not in release:
                    reply["config"][f"trigger:{label}"] = learner.synchronization_requested()
        elif step == "release":
            _statistics(reply, state, _labels(step_config, state))
        else:  # finish
            _receive(step_config, state)
            learners = state["learners"]
            reply["config"]["privacy_spent"] = json.dumps({k: v.privacy_spent_ for k, v in learners.items()}, default=str)
            reply["config"]["synchronizations"] = json.dumps({k: v.n_synchronizations_ for k, v in learners.items()})
            _inside("metrics_failed", "metrics-dir", _write_metrics, state, context)
        _AGENTS[key] = state
        _save(context, state)
        return Message(reply, reply_to=message)
    except Exception as exc:
        # refuse: the state is not saved (and the in-process copy dropped), so the agent stays as it was.  Only a
        # fixed code and the argument's name leave the agent; the details (possibly private values) stay in its log.
        _AGENTS.pop(key, None)
        code, argument = (exc.code, exc.argument) if isinstance(exc, _Refused) else ("agent_error", "")
        agent = context.node_config.get("partition-id", "?")
        agent = agent if isinstance(agent, int) and not isinstance(agent, bool) else "?"
        _local_log().warning("agent %s refused a message (%s, argument %r): %s", agent, code, argument, exc,
                             exc_info=exc)
        return Message(_records("refused", agent=agent, code=code, argument=argument,
                                error=f"agent {agent} refused the message: {ERROR_CODES[code]} ({argument})"),
                       reply_to=message)


def _stream(factory: Callable[..., Any], config: Mapping[str, Any], agent: int, context: Any) -> Any:
    """``factory(run settings, agent, node_config)`` -- or ``factory(run settings, agent)`` for a two-argument one."""
    import inspect

    try:
        inspect.signature(factory).bind(config, agent, {})
        takes_node_config = True
    except (TypeError, ValueError):
        takes_node_config = False
    if takes_node_config:
        return factory(config, agent, dict(context.node_config))
    return factory(config, agent)


def _start(config: Mapping[str, Any], context: Any, stream_factory: Callable[[Mapping[str, Any], int], Any]) -> dict[str, Any]:
    c = _settings(config)
    agent = context.node_config.get("partition-id")
    if isinstance(agent, bool) or not isinstance(agent, int):
        raise _Refused(f"this SuperNode has no integer partition-id node setting (got {agent!r}); start it with "
                       "--node-config 'partition-id=<agent index>'", code="invalid_settings", argument="partition-id")
    learners = _inside("invalid_settings", "run_config", learners_from_config, c)
    for learner in learners.values():
        _inside("invalid_settings", "run_config", learner.reset, int(c["n-actions"]), int(c["dim"]), int(c["horizon"]),
                n_agents=int(c["n-agents"]), agent=agent, run_id=int(c["seed"]))
    stream = _inside("invalid_stream", "stream", _stream, stream_factory, c, agent, context)
    return {"agent": agent, "learners": learners, "stream": stream, "merit_scale": c["merit-scale"],
            "metrics": {label: {"actions": [], "fair": [], "reward": []} for label in learners}}


def _current(key: tuple[int, int], context: Any) -> dict[str, Any] | None:
    """This process's copy of an agent, if it is the latest version of the agent's ``context.state``.

    Flower's Simulation Engine runs consecutive messages of one agent on any of its Ray actors: a copy kept by
    one actor is stale once another has handled a later message (the version counts the agent's saves).
    """
    state = _AGENTS.get(key)
    if state is None or "dpfair" not in context.state:
        return None
    return state if context.state["dpfair"].get("version") == state["version"] else None


def _save(context: Any, state: dict[str, Any]) -> None:
    from flwr.app import ConfigRecord

    state["version"] = int(state.get("version", 0)) + 1
    # the node's own state (kept by its SuperNode, never sent): the learners and the metrics so far, small
    # (tens of KB: no lattice tables, metrics as arrays), as Flower moves it with every message
    context.state["dpfair"] = ConfigRecord({
        "agent": state["agent"], "metrics": pack_metrics(state["metrics"]), "learners": dumps_state(state["learners"]),
        "version": state["version"],
    })


def _load(context: Any, config: Mapping[str, Any], stream_factory: Callable[[Mapping[str, Any], int], Any]) -> dict[str, Any]:
    if "dpfair" not in context.state:
        raise _Refused("this agent has not been initialized (no 'init' message yet)", code="not_initialized",
                       argument="step")
    saved = context.state["dpfair"]
    agent = int(saved["agent"])
    c = _settings(config)
    return {"agent": agent, "learners": pickle.loads(saved["learners"]), "metrics": unpack_metrics(saved["metrics"]),
            "stream": _inside("invalid_stream", "stream", _stream, stream_factory, c, agent, context),
            "merit_scale": c["merit-scale"],
            "version": int(saved.get("version", 0))}


def _write_metrics(state: dict[str, Any], context: Any) -> None:
    folder = context.node_config.get("metrics-dir") or _settings(context.run_config)["metrics-dir"]
    if not folder:
        return
    target = Path(str(folder).replace("{run_id}", str(context.run_id)))
    target.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for label, m in state["metrics"].items():
        arrays[f"{label}:actions"] = np.asarray(m["actions"], dtype=np.int64)
        arrays[f"{label}:fair"] = np.asarray(m["fair"])
        arrays[f"{label}:reward"] = np.asarray(m["reward"])
        if "observed" in m:  # the rewards observed on the agent's own data (no regret to score there)
            arrays[f"{label}:observed"] = np.asarray(m["observed"], dtype=float)
        arrays[f"{label}:synchronizations"] = np.asarray(state["learners"][label].n_synchronizations_)
    fd, tmp = tempfile.mkstemp(dir=target, prefix=f".agent-{state['agent']}.", suffix=".npz")
    with os.fdopen(fd, "wb") as handle:
        np.savez(handle, **arrays)
    os.replace(tmp, target / f"agent-{state['agent']}.npz")


def make_client_app(*, stream_factory: Callable[[Mapping[str, Any], int], Any] | None = None) -> Any:
    """A Flower ``ClientApp`` running one agent of Fed-/Priv-FairX-LinUCB on its own stream.

    Parameters
    ----------
    stream_factory : callable, optional
        ``(run settings, agent index, node settings) -> stream`` (or ``(run settings, agent index)``) with
        ``contexts(t)`` (``(n_actions, dim)``) and
        ``reward(t, action)``, optionally ``uniform(t)`` (the variate that draws the action) and
        ``fairness_terms(t, policy, merit_scale)`` (scored metrics); rounds ``t = 1 .. horizon``.  Default:
        the agent's own file when its SuperNode's ``data-path`` node setting (or the run's ``data-path``)
        names one (:mod:`dpfair.federated.data`, read once per process), else the agent's share of
        :class:`~dpfair.bandits.FederatedSyntheticEnvironment`'s seeded streams
        (:meth:`~dpfair.bandits.FederatedSyntheticEnvironment.agent_stream`).  The agent's index is its
        SuperNode's ``partition-id`` node setting.

    Returns
    -------
    flwr.clientapp.ClientApp
        Its ``train`` handler serves every step of the protocol (init, play, release, finish).
    """
    from flwr.clientapp import ClientApp

    app = ClientApp()
    factory = _default_stream if stream_factory is None else stream_factory

    @app.train()
    def train(message: Any, context: Any) -> Any:
        return _handle(message, context, factory)

    return app
