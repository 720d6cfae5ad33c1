"""Runs that say what happened, and each agent on its own data -- in process, no Flower process started.

* every argument of ``dpfair federated demo`` is checked before any folder or process is created;
* ``--epsilon inf`` crosses ``flwr run --run-config`` (TOML ``inf``) and runs the exact non-private algorithm;
* a run that lost an agent ends ``degraded`` (exit status 3, 0 with ``--allow-drops``); a run stopped by Ctrl-C
  or SIGTERM leaves a result that says so;
* a SuperNode's ``data-path`` node setting reaches the data source (:mod:`dpfair.federated.data`), the file read
  once per process; a bad row drops that agent (``degraded``).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

from flower_inprocess import InProcessGrid

from dpfair.federated import _deployment, apps, demo
from dpfair.federated.data import FileStream, load_stream, resolve_data_path, write_agent_file

M, T, K, D = 3, 12, 4, 2


def _world(seed: int, horizon: int = T) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    contexts = rng.uniform(-1, 1, (horizon, K, D)) / math.sqrt(D)
    return contexts, (contexts.sum(axis=2) > 0).astype(float)


def _files(folder: Path, horizon: int = T) -> list[Path]:
    return [write_agent_file(folder / f"agent-{i}.csv", *_world(i, horizon)) for i in range(M)]


class _NoProcess:
    """Stands in for LocalFederation where no process may start."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("a process would have started")


# ------------------------------------------------------------------------------------------ checked before anything
@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n_agents": 0}, "n_agents must be an integer >= 1"),
    ({"horizon": 0}, "horizon must be an integer >= 1"),
    ({"seed": -1}, "seed must be an integer >= 0"),
    ({"timeout": 0.0}, "timeout must be a positive number"),
    ({"protocol": "gossip"}, "protocol must be one of"),
    ({"epsilon": float("nan")}, "epsilon"),
    ({"extra_config": {"horizn": 3}}, "unknown run setting"),
    ({"data": "nowhere/agent-{agent}.csv"}, "no data file"),
    ({"executor": "threads"}, "executor must be"),
])
def test_every_argument_is_checked_before_any_folder_or_process(tmp_path, monkeypatch, kwargs, match):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where a default --out folder would be created
    monkeypatch.setattr(_deployment, "LocalFederation", _NoProcess)
    args = {"n_agents": 2, "horizon": 10, **kwargs}
    with pytest.raises(ValueError, match=match):
        demo.run_demo(args.pop("n_agents"), args.pop("horizon"), **args)
    assert list(scratch.iterdir()) == []


def test_the_cli_refuses_in_one_line_and_its_help_has_no_escapes(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from dpfair.cli import app

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setattr(_deployment, "LocalFederation", _NoProcess)
    res = CliRunner().invoke(app, ["federated", "demo", "--agents", "0"])
    assert res.exit_code == 2 and "n_agents must be an integer >= 1" in res.output and "Traceback" not in res.output
    assert list(scratch.iterdir()) == []
    shown = CliRunner().invoke(app, ["federated", "demo", "--help"]).output
    flat = " ".join(shown.split())
    assert "\\[" not in shown and "--data" in flat and "--allow-drops" in flat and "inf runs the exact" in flat


# ------------------------------------------------------------------------------------------ epsilon = inf
def test_epsilon_inf_crosses_the_run_config_and_runs_the_exact_algorithm(tmp_path):
    from flwr.common.config import parse_config_args

    text = _deployment.format_run_config({"epsilon": float("inf"), "delta": 0.1})
    assert text == "epsilon=inf delta=0.1" and parse_config_args([text])["epsilon"] == math.inf
    with pytest.raises(ValueError, match="not a number"):
        _deployment.format_run_config({"epsilon": float("nan")})
    config = {"horizon": 20, "n-agents": M, "epsilon": math.inf, "metrics-dir": str(tmp_path / "m"),
              "round-timeout": 0.3, "start-timeout": 1.0, "result-path": "", "wire-log": str(tmp_path / "wire.jsonl")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = apps._serve(InProcessGrid(config, M), config)
    assert result["status"] == "completed"
    assert all(s["epsilon"] == math.inf for s in result["learners"]["priv-bounded-gap"]["privacy_spent"].values())
    # the exact statistics crossed the wire: U = I + sum x x^T of agent 0's played contexts (no noise)
    stream = apps._default_stream(config, 0)
    actions = np.load(tmp_path / "m" / "agent-0.npz")["priv-bounded-gap:actions"]
    x = np.stack([stream.contexts(t + 1)[a] for t, a in enumerate(actions)])
    last = [json.loads(line) for line in (tmp_path / "wire.jsonl").read_text().splitlines()
            if json.loads(line)["config"].get("agent") == 0 and "statistics:priv-bounded-gap" in json.loads(line)["config"]]
    gram = np.asarray(last[-1]["config"]["statistics:priv-bounded-gap"])[1 : 1 + 25].reshape(5, 5)
    np.testing.assert_allclose(gram, np.eye(5) + x.T @ x, atol=1e-9)


# ------------------------------------------------------------------------------------------ statuses
class _Handle:
    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.log_path.write_text("")
        self.process = subprocess.Popen([sys.executable, "-c", "pass"])
        self.process.wait()

    def wait(self, timeout=None):
        return None


class _FakeFederation:
    """A federation whose run writes the given result, or raises (no process but a trivial ``python -c pass``)."""

    result: dict | None = None
    raise_in_submit: type[BaseException] | None = None

    def __init__(self, n_nodes, *, app_dir, executor, log_dir, node_configs, startup_timeout):
        self.node_configs, self.log_dir, self.fast_path_off = node_configs, Path(log_dir), None
        _FakeFederation.seen_node_configs = node_configs

    def __enter__(self):
        self.log_dir.mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(self, *exc):
        return False

    def record_result(self, path):
        self.result_path = Path(path)

    def submit(self, config):
        if self.raise_in_submit is not None:
            self.result_path.write_text(json.dumps({"completed": False, "failed": None, "errors": [], "learners": {},
                                                    "dropped": {}, "rounds_played": 5, "horizon": 10, "n_agents": 2}))
            raise self.raise_in_submit
        self.result_path.write_text(json.dumps(self.result))
        return _Handle(self.log_dir / "run-1.log")


def _server(status: str) -> dict:
    return {"horizon": 10, "n_agents": 2, "status": status, "learners": {}, "errors": [], "failed": None,
            "completed": True, "rounds_played": 10, "dropped": {"1": 4} if status == "degraded" else {}}


@pytest.mark.parametrize(("status", "flags", "code"), [("completed", [], 0), ("degraded", [], 3),
                                                        ("degraded", ["--allow-drops"], 0)])
def test_a_degraded_run_has_its_own_status_and_exit_code(tmp_path, monkeypatch, status, flags, code):
    from typer.testing import CliRunner

    from dpfair.cli import app

    monkeypatch.setattr(_deployment, "LocalFederation", _FakeFederation)
    monkeypatch.setattr(_FakeFederation, "result", _server(status))
    res = CliRunner().invoke(app, ["federated", "demo", "--agents", "2", "--horizon", "10", "--out", str(tmp_path),
                                   *flags])
    assert res.exit_code == code, res.output
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["status"] == status
    assert ("DEGRADED" in res.output.splitlines()[-3]) is (status == "degraded"), res.output


def test_an_interrupted_demo_leaves_a_result_that_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(_deployment, "LocalFederation", _FakeFederation)
    monkeypatch.setattr(_FakeFederation, "raise_in_submit", KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt):
        demo.run_demo(2, 10, out=tmp_path)
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["status"] == "failed" and saved["rounds_played"] == 5 and "interrupted" in saved["failed"]


# ------------------------------------------------------------------------------------------ each agent on its own data
def test_the_file_layout_round_trips_and_is_read_once_per_process(tmp_path):
    contexts, outcomes = _world(7)
    path = write_agent_file(tmp_path / "a.csv", contexts, outcomes)
    stream = load_stream(path, horizon=T, n_actions=K, dim=D)
    assert isinstance(stream, FileStream) and load_stream(path, horizon=T, n_actions=K, dim=D) is stream
    np.testing.assert_array_equal(stream.contexts(3), contexts[2])
    assert stream.reward(5, 1) == outcomes[4, 1]
    # rows in any order, extra columns and rounds ignored
    import pandas as pd

    frame = pd.read_csv(path).sample(frac=1.0, random_state=0)
    frame["note"] = "x"
    frame.to_csv(tmp_path / "b.csv", index=False)
    np.testing.assert_array_equal(load_stream(tmp_path / "b.csv", horizon=T - 2, n_actions=K, dim=D).contexts_,
                                  contexts[: T - 2])
    frame.iloc[1:].to_csv(tmp_path / "c.csv", index=False)
    with pytest.raises(ValueError, match="is missing"):
        load_stream(tmp_path / "c.csv", horizon=T, n_actions=K, dim=D)
    with pytest.raises(ValueError, match="no column"):
        load_stream(path, horizon=T, n_actions=K, dim=D + 1)


def test_the_node_config_data_path_reaches_the_agent(tmp_path):
    files = _files(tmp_path / "data")
    assert resolve_data_path({"data-path": "/x/{agent}.csv"}, 2, {}) == "/x/2.csv"
    assert resolve_data_path({"data-path": "/x/{agent}.csv"}, 2, {"data-path": "/own.csv"}) == "/own.csv"
    config = {"horizon": T, "n-agents": M, "n-actions": K, "dim": D, "learner": "fed", "metrics-dir": str(tmp_path / "m"),
              "round-timeout": 0.3, "start-timeout": 1.0, "result-path": ""}
    grid = InProcessGrid(config, M)
    for i, path in enumerate(files):
        grid.nodes[100 + i].node_config["data-path"] = str(path)  # --node-config "data-path=..."
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = apps._serve(grid, config)
    assert result["status"] == "completed"
    for i in range(M):
        state = apps._AGENTS[(1, 100 + i)]
        np.testing.assert_array_equal(state["stream"].contexts_, _world(i)[0])  # its own file, no other


def test_a_bad_row_drops_that_agent_and_the_run_is_degraded(tmp_path):
    contexts, outcomes = _world(1)
    contexts[6, 0] = 50.0  # round 7: a context far outside the declared bound
    bad = write_agent_file(tmp_path / "bad.csv", contexts, outcomes)
    files = _files(tmp_path / "data")
    config = {"horizon": T, "n-agents": M, "n-actions": K, "dim": D, "learner": "priv", "random-state": 1,
              "context-bound": 1.0, "metrics-dir": str(tmp_path / "m"), "round-timeout": 0.3, "start-timeout": 1.0,
              "result-path": ""}
    grid = InProcessGrid(config, M)
    for i, path in enumerate(files):
        grid.nodes[100 + i].node_config["data-path"] = str(bad if i == 1 else path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = apps._serve(grid, config)
    assert result["status"] == "degraded" and result["completed"] and list(result["dropped"]) == ["1"]
    assert 1 < result["dropped"]["1"] <= 7


# ------------------------------------------------------------------------------------------ Flower's records
def test_per_round_metrics_are_flower_metric_records_in_the_run_context(tmp_path, caplog):
    import logging

    from flwr.app import Context, MetricRecord, RecordDict

    config = {**apps.RUN_CONFIG, "horizon": 20, "n-agents": M, "learner": "fed", "protocol": "p-fcb",
              "metrics-dir": str(tmp_path / "m"), "round-timeout": 0.3, "start-timeout": 1.0,
              "result-path": str(tmp_path / "r.json")}
    context = Context(7, 0, {}, RecordDict(), config)
    with warnings.catch_warnings(), caplog.at_level(logging.INFO, logger="flwr"):
        warnings.simplefilter("ignore")
        apps.make_server_app()._main(InProcessGrid(config, M), context)
    saved = json.loads((tmp_path / "r.json").read_text())
    rounds, summary = context.state["dpfair.rounds"], context.state["dpfair.summary"]
    assert isinstance(rounds, MetricRecord) and isinstance(summary, MetricRecord)
    assert len(rounds["round"]) == saved["message_rounds"] - 1 and rounds["round"][-1] == 20  # the play loop
    assert sum(rounds["synchronized:fed-p-fcb"]) == saved["learners"]["fed-p-fcb"]["communication_rounds"]
    assert set(rounds["agents-alive"]) == {M} and summary["completed"] == 1
    assert json.loads(context.state["dpfair.result"]["json"])["status"] == "completed"
    assert any("dpfair: metrics" in r.getMessage() for r in caplog.records)  # what `flwr log` shows


def test_demo_data_names_each_agents_file_and_the_simulations_pattern(tmp_path):
    files = _files(tmp_path / "agents")
    assert demo._agent_files(tmp_path / "agents", M, K, D, T) == [p.resolve() for p in files]
    assert demo._agent_files(str(tmp_path / "agents" / "agent-{agent}.csv"), M, K, D, T) == [p.resolve() for p in files]
    pattern = demo._shared_pattern([p.resolve() for p in files])  # the Simulation Engine's run setting
    assert [resolve_data_path({"data-path": pattern}, i) for i in range(M)] == [str(p.resolve()) for p in files]
    with pytest.raises(ValueError, match="is missing"):
        demo._agent_files(tmp_path / "agents", M, K, D, T + 1)  # a file shorter than the run: refused up front
    with pytest.raises(ValueError, match="pass a folder"):
        demo._agent_files(tmp_path / "agents" / "agent-0.csv", M, K, D, T)
