"""The deployment page's multi-machine commands, replayed as written with stock Flower on 127.0.0.1.

The commands are read from ``docs/user_guide/federated_deployment.rst`` (the first ``bash`` block and the ``toml``
block of "Across machines"), so the page is the one source of truth; only what names a machine is replaced
(:func:`_replace`).  The SuperLink runs with TLS (a CA made here) and SuperNode authentication; each SuperNode gets
its own key pair, registered before it connects (the organisations at the same time, as on their own machines).
On the same deployment, a run the ServerApp refuses (a learner it does not know) is recorded failed by Flower
(``flwr ls``) and its result says why.  Every time limit follows the machine's measured pace (:mod:`pace`), not a
fixed number of seconds.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

import pace

from dpfair.federated import demo
from dpfair.federated._deployment import RunHandle
from dpfair.federated.data import write_agent_file

PAGE = Path(__file__).resolve().parents[2] / "docs" / "user_guide" / "federated_deployment.rst"
# bounded-gap at d = 5: 2 synchronizations (the second continues from the state the first left, through stock
# Flower's process per message), + init and finish: 4 stock round trips
AGENTS, HORIZON = 2, 2


def doc_blocks(page: Path = PAGE) -> tuple[list[str], str]:
    """The commands of the first ``bash`` block after "Across machines" (continuation lines joined, comments and
    blank lines dropped) and the text of the ``toml`` block after it."""
    text = page.read_text()
    section = text[text.index("Across machines\n---------------") :]

    def block(kind: str) -> list[str]:
        lines = section[section.index(f".. code-block:: {kind}\n") :].splitlines()[2:]
        body = []
        for line in lines:
            if line and not line.startswith("   "):
                break
            body.append(line[3:])
        return body

    commands, current = [], ""
    for line in block("bash"):
        stripped = re.sub(r"\s{2,}#.*$", "", line).strip()  # a comment after the command (none inside quotes here)
        if not stripped or (stripped.startswith("#") and not current):
            continue
        current += stripped[:-1] + " " if stripped.endswith("\\") else stripped
        if not stripped.endswith("\\"):
            commands.append(current)
            current = ""
    return commands, "\n".join(block("toml"))


def test_the_page_holds_the_commands_this_test_replays():
    commands, toml = doc_blocks()
    firsts = [c.split()[0] for c in commands]
    assert firsts == ["source", "flower-superlink", "ssh-keygen", "flwr", "flower-supernode", "flwr", "flwr"], firsts
    assert "--enable-supernode-auth" in commands[1] and "--ssl-certfile" in commands[1]
    assert "register" in commands[3] and "--auth-supernode-private-key" in commands[4] and "ls" in commands[6]
    assert "data-path='/srv/dpfair/agent-i.csv'" in commands[4]  # each organisation's own data, a node setting
    assert 'address = "server.example.org:8000"' in toml and "root-certificates" in toml


def _free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _certificates(folder: Path) -> None:
    """A test CA (``ca.crt``) and a server certificate for 127.0.0.1 signed by it (``server.pem``, ``server.key``)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def build(subject, issuer, key, signer, *, ca: bool):
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False,
            )
        return builder.sign(signer, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dpfair test CA")])
    ca = build(ca_name, ca_name, ca_key, ca_key, ca=True)
    server = build(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]), ca_name, server_key, ca_key, ca=False)
    (folder / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (folder / "server.pem").write_bytes(server.public_bytes(serialization.Encoding.PEM))
    (folder / "server.key").write_bytes(
        server_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


def _limits() -> dict[str, float]:
    """``round-timeout`` and ``start-timeout`` for this machine's pace (stock Flower: a process per message)."""
    return {
        "round-timeout": round(pace.round_limit(pace.stock_round_trip())),
        "start-timeout": round(pace.startup_limit(2 + AGENTS) + 3 * pace.stock_round_trip()),
    }


def _replace(command: str, link_port: int, node_port: int | None, agent: int | None, tmp: Path) -> str:
    """What names a machine, and the run's size and this machine's round limit (the page says to set it)."""
    command = command.replace("server.example.org", "127.0.0.1").replace("--host 0.0.0.0", "--host 127.0.0.1")
    command = command.replace(":8000", f":{link_port}").replace("--port 8000", f"--port {link_port}")
    limits = _limits()
    command = command.replace("/srv/dpfair", str(tmp / "srv")).replace(
        "n-agents=5 horizon=100000",
        f"n-agents={AGENTS} horizon={HORIZON} round-timeout={limits['round-timeout']:.1f} "
        f"start-timeout={limits['start-timeout']:.1f}",
    )
    if node_port is not None:
        command = command.replace("--port 9094", f"--port {node_port}")
    if agent is not None:
        command = re.sub(r"agent-i\b", f"agent-{agent}", command).replace("partition-id=i ", f"partition-id={agent} ")
    return command


class _Machines:
    """The processes of the replay: each command in ``bash`` after the page's ``source`` line, its output in a log."""

    def __init__(self, tmp_path: Path, source: str) -> None:
        self.tmp, self.source = tmp_path, source
        self.background: list[subprocess.Popen] = []
        self.logs: list = []

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")

    def run(self, command: str, name: str, *, flwr_home: Path, wait: float | None) -> subprocess.CompletedProcess | None:
        """Start *command*; with *wait*, wait for it (killed after *wait* seconds) and require exit status 0."""
        env = {**os.environ, "FLWR_HOME": str(flwr_home), "FLWR_TELEMETRY_ENABLED": "0"}
        flwr_home.mkdir(exist_ok=True)
        log = open(self.tmp / f"{name}.log", "w")
        self.logs.append(log)
        proc = subprocess.Popen(
            ["bash", "-c", f"{self.source} && exec {command}"],
            cwd=self.tmp,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        if wait is None:
            self.background.append(proc)
            return None
        try:
            code = proc.wait(wait)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        assert code == 0, f"{command}\n{self.log(name)}"
        return subprocess.CompletedProcess(command, code, self.log(name), "")

    def wait_for(self, name: str, mark: str, limit: float) -> None:
        deadline = time.monotonic() + limit
        while mark not in self.log(name):
            assert all(p.poll() is None for p in self.background), self.log(name)
            assert time.monotonic() < deadline, f"{name}: no {mark!r} within {limit:.0f} s\n" + self.log(name)
            time.sleep(0.2)

    def stop(self) -> None:
        for proc in reversed(self.background):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.background:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for log in self.logs:
            log.close()


def _join(machines: _Machines, commands: list[str], link_port: int, home: Path, startup: float) -> None:
    """Each organisation's key pair, its registration by the operator and its SuperNode (the page's commands 2-4),
    the organisations at the same time, as on their own machines; returns once every SuperNode has its ID."""
    tmp = machines.tmp

    def organisation(agent: int, node_port: int) -> None:
        org = tmp / f"org-{agent}"
        machines.run(_replace(commands[2], link_port, None, agent, tmp), f"keygen-{agent}", flwr_home=org, wait=startup)
        machines.run(_replace(commands[3], link_port, None, agent, tmp), f"register-{agent}", flwr_home=home, wait=startup)
        machines.run(_replace(commands[4], link_port, node_port, agent, tmp), f"supernode-{agent}", flwr_home=org, wait=None)
        machines.wait_for(f"supernode-{agent}", "SuperNode ID:", startup)

    with ThreadPoolExecutor(AGENTS) as pool:
        for done in [pool.submit(organisation, agent, port) for agent, port in enumerate(_free_ports(AGENTS))]:
            done.result()


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.serial
# make test's serial call runs this on a worker of its own beside the other serial tests (tests/conftest.py's
# scheduler): stock Flower waits in 3 s polls for most of this test's minute, at about half a CPU, and every limit here
# follows the measured pace
def test_the_deployment_pages_commands_run_as_written_with_stock_flower(tmp_path):
    commands, toml = doc_blocks()
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen (openssh-client) is not installed")
    _certificates(tmp_path)
    (tmp_path / "keys").mkdir()
    rng = np.random.default_rng(0)
    for agent in range(AGENTS):  # each organisation's own file (the page's data-path), in dpfair.federated.data's layout
        contexts = rng.uniform(-1, 1, (HORIZON, 10, 5)) / 5
        write_agent_file(tmp_path / "srv" / f"agent-{agent}.csv", contexts, (contexts.sum(axis=2) > 0).astype(float))
    (link_port,) = _free_ports(1)
    home = tmp_path / "operator"
    home.mkdir()
    toml = toml.replace("server.example.org:8000", f"127.0.0.1:{link_port}").replace("/path/to/ca.crt", str(tmp_path / "ca.crt"))
    (home / "config.toml").write_text(toml)
    venv = Path(sys.executable).parent.parent
    source = commands[0].replace(".venv", str(venv))  # source .venv/bin/activate, this test's environment
    startup = pace.startup_limit(2 + AGENTS)
    limits = _limits()
    print(
        f"\nmeasured process start {pace.process_start():.2f} s: start-up limit {startup:.0f} s, run settings {limits}; "
        "the run's limit follows the round trips it measures"
    )
    machines = _Machines(tmp_path, source)
    try:
        machines.run(_replace(commands[1], link_port, None, None, tmp_path), "superlink", flwr_home=tmp_path / "link", wait=None)
        machines.wait_for("superlink", "Uvicorn running", startup)
        _join(machines, commands, link_port, home, startup)
        # flwr run --stream: its time limit follows the round trips the ServerApp measures and logs (demo._watch)
        machines.run(_replace(commands[5], link_port, None, None, tmp_path), "flwr-run", flwr_home=home, wait=None)
        handle = RunHandle(machines.background[-1], [commands[5]], tmp_path / "flwr-run.log")
        why = demo._watch(
            handle, HORIZON + 2, None, {"round-timeout": limits["round-timeout"], "start-timeout": limits["start-timeout"]}, print
        )
        done = machines.log("flwr-run")
        assert why is None, f"{why}\n{done}"
        run_id = re.search(r"Successfully started run (\d+)", done).group(1)
        assert "dpfair: completed" in done, done
        listed = machines.run(
            _replace(commands[6], link_port, None, None, tmp_path).replace("RUN_ID", run_id),
            "flwr-ls",
            flwr_home=home,
            wait=startup,
        )
        assert "finished:completed" in listed.stdout.replace(" ", ""), listed.stdout
        result = json.loads((tmp_path / "srv" / "result.json").read_text())
        assert result["completed"] and result["rounds_played"] == HORIZON and not result["errors"]
        assert sorted(result["learners"]["priv-bounded-gap"]["privacy_spent"]) == [str(a) for a in range(AGENTS)]
        assert sorted(p.name for p in (tmp_path / "srv" / "metrics").glob("agent-*.npz")) == [
            f"agent-{a}.npz" for a in range(AGENTS)
        ]
        for agent in range(AGENTS):  # played on its own file: no fairness terms (the synthetic world's) recorded
            metrics = np.load(tmp_path / "srv" / "metrics" / f"agent-{agent}.npz")
            assert len(metrics["priv-bounded-gap:actions"]) == HORIZON and len(metrics["priv-bounded-gap:fair"]) == 0
        _a_failing_server_app_is_recorded_failed(machines, commands, link_port, home, startup)
    finally:
        machines.stop()


def _a_failing_server_app_is_recorded_failed(
    machines: _Machines, commands: list[str], link_port: int, home: Path, startup: float
) -> None:
    """``flwr run`` of the page's command to the same deployment with a learner the ServerApp refuses (before any
    message): Flower records the run as failed (``flwr ls``) and its result says why."""
    tmp = machines.tmp
    failing = (
        _replace(commands[5], link_port, None, None, tmp)
        .replace("result.json", "failed.json")
        .replace("epsilon=2.0", 'epsilon=2.0 learner="nope"')
    )
    assert 'learner="nope"' in failing and "failed.json" in failing, failing
    machines.run(failing, "flwr-run-failing", flwr_home=home, wait=None)
    proc = machines.background[-1]
    try:
        proc.wait(startup + pace.stock_round_trip())
    except subprocess.TimeoutExpired as late:
        raise AssertionError("the failing run's `flwr run --stream` did not end\n" + machines.log("flwr-run-failing")) from late
    out = machines.log("flwr-run-failing")
    run_id = re.search(r"Successfully started run (\d+)", out).group(1)
    listed = machines.run(
        _replace(commands[6], link_port, None, None, tmp).replace("RUN_ID", run_id),
        "flwr-ls-failing",
        flwr_home=home,
        wait=startup,
    )
    assert "finished:failed" in listed.stdout.replace(" ", ""), listed.stdout + out
    saved = json.loads((tmp / "srv" / "failed.json").read_text())
    assert saved["status"] == "failed" and "learner must be 'fed'" in saved["failed"], saved
