"""``dpfair federated demo --agents 5 --data DIR``: each agent plays on its own file, and the console shows progress.

The command runs as a user runs it (its own process, its console a pipe read line by line): five SuperNode
processes, each given its organisation's file as its ``data-path`` node setting.  Every file has its own
contexts and its own outcomes, so the rewards an agent observed (its metrics, which never cross the wire) match
its own file's outcomes at the actions it played, round by round, and no other agent's file.  Progress lines
(round, pace, time left, agents alive) reach the console before the run's final line.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

from dpfair.federated.data import write_agent_file

M, T, K, D = 5, 10, 10, 5  # the demo's n-actions and dim; the first progress line comes once a round is played
LABEL = "fed-bounded-gap"
_PROGRESS = re.compile(rf"^round (\d+) of {T} \(\d+ %\), [0-9.]+ s per message round, about .* left, "
                       rf"(\d+) of {M} agents alive$")


def _organisation(i: int) -> tuple[np.ndarray, np.ndarray]:
    """Agent *i*'s own contexts and outcomes (every agent's differ)."""
    rng = np.random.default_rng(1000 + i)
    contexts = rng.uniform(-1.0, 1.0, (T, K, D)) / math.sqrt(D)
    return contexts, rng.uniform(0.0, 1.0, (T, K))


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.serial
def test_demo_plays_each_agent_on_its_own_file_with_live_progress(tmp_path):
    worlds = [_organisation(i) for i in range(M)]
    for i, (contexts, outcomes) in enumerate(worlds):
        write_agent_file(tmp_path / "data" / f"agent-{i}.csv", contexts, outcomes)
    out = tmp_path / "out"
    command = [str(Path(sys.executable).parent / "dpfair"), "federated", "demo", "--agents", str(M), "--horizon", str(T),
               "--learner", "fed", "--data", str(tmp_path / "data"), "--out", str(out)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OPENBLAS_NUM_THREADS": "1"}
    began = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.monotonic() - began, line.rstrip("\n")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code = proc.wait(timeout=240)
    except subprocess.TimeoutExpired:
        proc.terminate()  # the demo's own orderly stop (SIGTERM): it stops every process it started
        proc.wait(30)
        raise
    reader.join(10)
    shown = "\n".join(text for _, text in lines)
    assert code == 0, shown

    # live progress: round, pace, time left, agents alive -- on the console before the run's final line
    progress = [(at, _PROGRESS.match(text)) for at, text in lines if _PROGRESS.match(text)]
    final = [at for at, text in lines if text.startswith(f"T={T}, m={M}: completed in")]
    assert progress and final, shown
    assert all(int(m.group(2)) == M for _, m in progress)
    assert progress[0][0] < final[0], shown

    # each agent played on its own file: the rewards it observed are its file's outcomes at its actions
    observed = {}
    for i in range(M):
        with np.load(out / "metrics" / f"agent-{i}.npz") as metrics:
            actions, rewards = metrics[f"{LABEL}:actions"], metrics[f"{LABEL}:observed"]
        assert actions.shape == rewards.shape == (T,)
        np.testing.assert_array_equal(rewards, worlds[i][1][np.arange(T), actions])
        for j in range(M):
            if j != i:
                assert not np.array_equal(rewards, worlds[j][1][np.arange(T), actions]), (i, j)
        observed[i] = rewards
    assert len({tuple(r) for r in observed.values()}) == M  # five distinct per-agent curves
