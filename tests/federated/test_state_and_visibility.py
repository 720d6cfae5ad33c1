"""In process: the agent's ``context.state`` is small and survives a reload, every run setting is in the
app's pyproject, the plan counts the message rounds, agents that never join are errors that fail the run, and
the ServerApp reports through Flower's logger."""

from __future__ import annotations

import json
import logging
import math
import pickle
import tomllib
import warnings

import numpy as np
import pytest

pytest.importorskip("flwr")

from flower_inprocess import InProcessGrid

from dpfair.bandits import FederatedSyntheticEnvironment, PrivFairXLinUCB, simulate_federated
from dpfair.federated import RUN_CONFIG, app_dir, apps
from dpfair.federated._state import cached_lattice, dumps_state, pack_metrics, unpack_metrics
from dpfair.privacy.lattice import LatticeGaussian

M, SEED = 3, 4


def _config(tmp_path, extra, horizon):
    return {"horizon": horizon, "n-agents": M, "seed": SEED, "metrics-dir": str(tmp_path / "metrics"),
            "round-timeout": 0.3, "start-timeout": 1.0, "result-path": "", **extra}


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def flwr_log():
    handler, logger = _Capture(), logging.getLogger("flwr")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


def test_the_exp1_agent_state_is_small_with_secure_noise(tmp_path):
    """Default (secure) noise, Exp 1's learner (priv, bounded-gap, d = 5): the saved state holds no lattice table.

    With the lattice tables in it the learners alone pickled to 8.3 MB (the PRIVATIZER's two lattice tables) at T = 20.
    """
    horizon = 60
    config = _config(tmp_path, {}, horizon)  # random-state -1: secure noise
    grid = InProcessGrid(config, M)
    result = apps._serve(grid, config)
    assert result["completed"] and not result["errors"]
    saved = grid.nodes[100].state["dpfair"]
    learners, metrics = len(saved["learners"]), len(saved["metrics"])
    assert learners < 30_000, learners  # the learner: constant in T
    assert metrics < 24 * horizon + 2_000, metrics  # the metrics: 24 bytes a round
    assert learners + 24 * 2000 + 2_000 < 100_000  # hence under 100 KB at Exp 1's T = 2000
    assert b"_cumulative" not in saved["learners"]
    restored = pickle.loads(saved["learners"])
    lattices = restored["priv-bounded-gap"]._online.sync.privatizer._lattices
    assert lattices is None or all(isinstance(x, LatticeGaussian) for x in lattices[1:])


def test_lattices_are_rebuilt_once_per_process_and_identical():
    g = 2.0**-10
    original = LatticeGaussian(0.5, g)
    blob = dumps_state({"a": original, "b": original})
    assert len(blob) < 500 < len(pickle.dumps(original))
    back = pickle.loads(blob)
    assert back["a"] is back["b"] is cached_lattice(0.5, g) is pickle.loads(dumps_state(original))
    words = np.random.default_rng(0).integers(0, 2**63, size=1000, dtype=np.uint64)
    np.testing.assert_array_equal(back["a"].sample_units(words), original.sample_units(words))


def test_metrics_pack_round_trip():
    metrics = {"priv-p-fcb": {"actions": [1, 2], "fair": [0.5, 0.25], "reward": [-1.0, 2.0]},
               "fed-bounded-gap": {"actions": [], "fair": [], "reward": []}}
    assert unpack_metrics(pack_metrics(metrics)) == metrics


def test_a_reloaded_state_continues_exactly_like_the_simulator(tmp_path):
    """Every message reloads the agent from ``context.state`` (as a fresh ClientApp process would)."""
    horizon = 40
    config = _config(tmp_path, {"learner": "priv", "protocol": "p-fcb", "random-state": 3}, horizon)

    def forget(node, message):
        apps._AGENTS.clear()
        return message

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = apps._serve(InProcessGrid(config, M, tamper=forget), config)
        learner = PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), "p-fcb", random_state=3)
        env = FederatedSyntheticEnvironment()
        reference = simulate_federated(env, {"priv": learner}, horizon, M, [SEED], record_actions=True)
    assert result["completed"] and not result["errors"]
    for i in range(M):
        got = np.load(tmp_path / "metrics" / f"agent-{i}.npz")["priv-p-fcb:actions"]
        np.testing.assert_array_equal(got, reference.actions[0, 0, i])


def test_every_run_setting_is_in_the_app_pyproject_with_its_default():
    table = tomllib.loads((app_dir() / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    assert table == RUN_CONFIG
    assert len(RUN_CONFIG) == 31  # + allow-drops and data-path


@pytest.mark.parametrize("extra", [
    {"protocol": "p-fcb"}, {"protocol": "bounded-gap", "dim": 1}, {"learners": "fed:p-fcb,priv:bounded-gap", "dim": 1},
])
def test_the_plan_counts_the_message_rounds(tmp_path, extra):
    horizon = 80
    config = _config(tmp_path, {"random-state": 1, **extra}, horizon)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = apps._serve(InProcessGrid(config, M), config)
    planned = apps.planned_message_rounds(config)
    assert result["planned_message_rounds"] == planned
    assert result["message_rounds"] == planned + 1  # + finish
    # a message round per synchronization of any learner (the last message round ends at T)
    synchronized = set().union(*(set(e["synchronization_rounds"]) for e in result["learners"].values()))
    assert planned == len(synchronized | {horizon}) < horizon


def test_an_agent_that_never_answers_init_is_an_error_and_fails_the_run(tmp_path, flwr_log):
    config = _config(tmp_path, {"random-state": 1, "protocol": "p-fcb"}, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = apps._serve(InProcessGrid(config, M, silent={101: 0}), config)
    assert result["dropped"] == {"1": 1}
    assert any("did not answer init" in e for e in result["errors"])
    assert result["failed"] and "did not join" in result["failed"]
    assert result["rounds_played"] == 30  # the others went on
    errors = [r.getMessage() for r in flwr_log if r.levelno >= logging.ERROR]
    assert any("did not answer init" in e for e in errors) and any("did not join" in e for e in errors)
    infos = [r.getMessage() for r in flwr_log if r.levelno == logging.INFO]
    assert any("2 of 3 agents joined" in m for m in infos) and any("FAILED" in m for m in infos)


def test_the_server_app_writes_a_result_by_default_and_raises_on_failure(tmp_path, monkeypatch, flwr_log):
    """The ServerApp's ``main``: a result file at the default path (``{run_id}`` filled in), a raise that Flower
    records as a failed run, drops logged as warnings."""
    from flwr.app import Context, RecordDict

    monkeypatch.chdir(tmp_path)
    config = {**RUN_CONFIG, **_config(tmp_path, {"random-state": 1, "protocol": "p-fcb"}, 20)}
    config["result-path"] = RUN_CONFIG["result-path"]
    server = apps.make_server_app()
    grid = InProcessGrid(config, M, silent={102: 3})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # a mid-run drop is handled: every round is played, the result says "degraded", and Flower records the run
        # as failed unless the run allows drops
        with pytest.raises(RuntimeError, match="degraded: agent 2 from round 3 dropped"):
            server._main(grid, Context(42, 0, {}, RecordDict(), config))
        path = tmp_path / "dpfair-results" / "run-42.json"
        assert path.is_file()
        saved = json.loads(path.read_text())
        assert saved["status"] == "degraded" and saved["completed"] and saved["failed"] is None
        grid = InProcessGrid(config, M, silent={102: 3})
        server._main(grid, Context(44, 0, {}, RecordDict(), {**config, "allow-drops": True}))
        assert json.loads((tmp_path / "dpfair-results" / "run-44.json").read_text())["status"] == "degraded"
        grid = InProcessGrid(config, M, silent={102: 0})
        with pytest.raises(RuntimeError, match="did not join"):
            server._main(grid, Context(43, 0, {}, RecordDict(), config))
    assert (tmp_path / "dpfair-results" / "run-43.json").is_file()
    warned = [r.getMessage() for r in flwr_log if r.levelno == logging.WARNING]
    assert any("agent 2 dropped from round" in m for m in warned)
    assert any(str(path) in r.getMessage() for r in flwr_log)


def test_log_det_costs_a_round_trip_per_round_and_one_more_per_synchronization(tmp_path):
    """The log-det trigger (B1) is decided from every agent's data after each round: one play round trip per round
    (the trigger bits), and a release round trip per synchronization; the count ``benchmarks/bench_flower.py``
    reports (``T + synchronizations``, + init and finish)."""
    horizon = 30
    config = _config(tmp_path, {"learner": "fed", "protocol": "log-det", "dim": 2, "sync-threshold": 0.05}, horizon)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = apps._serve(InProcessGrid(config, M), config)
    syncs = result["learners"]["fed-log-det"]["communication_rounds"]
    assert result["completed"] and 0 < syncs < horizon
    assert result["message_rounds"] == horizon + syncs + 1  # + finish (init is not counted)
