"""Cost of the federated learners on Flower, three ways, side by side in one process run (printed, never asserted).

1. **Round trip per synchronization**: the same plan (Fed-FairX-LinUCB, bounded-gap, ``d = 5``: one
   synchronization per round, ``m = 3``, seeded) on
   * dpfair's fast executor (``executor="persistent"``: a SuperLink whose pulls wait for a message (long polls),
     SuperNodes with capped idle sleeps that run their ClientApp in-process, on 127.0.0.1),
   * stock Flower (``executor="flower"``: ``flower-supernode --isolation subprocess``, a ``flwr-clientapp``
     process per message),
   * Flower's Simulation Engine (``executor="simulation"``: ``flower-superlink --simulation``, the agents as
     virtual SuperNodes on at most 2 Ray actors; needs ``flwr[simulation]``).
   Each row: the ServerApp's play-loop seconds per message round (start-up excluded), the whole run's wall time,
   and whether the actions equal the fast executor's (the same seeded numbers).  The load average is printed
   before and after: on the shared 2-core machine the figures move with it.
2. **The floor**: a no-op Flower app written by this script (the ServerApp sends a tiny message to every node and
   pulls the replies with a short poll; the ClientApp echoes it) on the Simulation Engine and on the fast executor,
   in the same process run, at ``N = 3`` and ``5``; beside it dpfair's own app (the same plan as above) on the fast
   executor.  Printed: seconds per message round of each and the ratios ``dpfair fast / no-op Simulation``
   (the target: at most 1.5) and ``no-op fast / dpfair fast`` (a no-op ClientApp must not be slower than
   dpfair's own: at most 1), with the 1-minute load average when each row was done.
3. **Round trips per run** for each protocol at the demo's defaults (``T = 2000``, ``m = 5``, ``d = 5``): the
   play loop's message rounds (one per synchronization for the scheduled protocols; one per round plus one per
   synchronization for log-det) and the two of ``init`` and ``finish``.  The log-det count is data-dependent: it
   is taken from ``simulate_federated``'s synchronizations on the same streams.

4. **Requests per message round** (``requests``, not part of the default run): what an idle SuperLink spends per
   request (``GET /health``: its middleware layers only; a SuperNode's signed heartbeat and empty pull, sent by
   Flower's own Fleet client; one ECDSA signature and check), then every request the SuperLink serves per message
   round, by API call, for the no-op app and dpfair's app on the fast executor, counted from the SuperLink's access
   log (``FLWR_LOG_LEVEL=DEBUG``, Flower's own setting) as the difference of a run of 10 and one of ``10 + rounds``
   message rounds (no start-up request counted), and the SuperLink's CPU seconds per no-op round.

Run: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_flower.py [horizon] [agents] [floor rounds]`` (defaults
20, 3 and 40; stock Flower takes seconds per round trip); ``... bench_flower.py floor [rounds] [3,5]`` runs the floor table
alone; ``... bench_flower.py requests [rounds] [3,5]`` the request accounting (default 30 rounds).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

import numpy as np

from dpfair.bandits import FederatedSyntheticEnvironment, FedFairXLinUCB, simulate_federated
from dpfair.bandits.fairx.schedules import communication_schedule
from dpfair.federated import run_demo
from dpfair.federated.apps import planned_message_rounds


def round_trips(horizon: int, agents: int) -> None:
    """The table of round trips per synchronization, one run per executor."""
    executors = ["persistent", "flower"]
    if importlib.util.find_spec("ray") is not None:
        executors.append("simulation")
    else:
        print('Simulation Engine skipped: pip install "dpfair[simulation]" (Ray)')
    print(f"same plan: Fed-FairX-LinUCB bounded-gap, T={horizon}, m={agents}, d=5 ({horizon} synchronizations), seeded")
    print(f"{'executor':<12} {'s / round trip':>15} {'round trips':>12} {'whole run s':>12}  actions = fast executor's")
    first = None
    for executor in executors:
        start = time.perf_counter()
        # generous limits: a stock round trip takes tens of seconds on a loaded 2-core machine (this measures, it
        # does not test drops)
        result = run_demo(
            agents,
            horizon,
            learner="fed",
            protocol="bounded-gap",
            seed=4,
            executor=executor,
            extra_config={"round-timeout": 600.0, "start-timeout": 600.0},
        )
        wall = time.perf_counter() - start
        server = result.server
        actions = result.actions.get("fed-bounded-gap", {})
        if first is None:
            first = actions
        same = bool(actions) and all(np.array_equal(actions[a], first[a]) for a in first)
        status = "" if result.failure is None else f"  FAILED: {result.failure}"
        print(
            f"{executor:<12} {server.get('seconds_per_message_round', float('nan')):>15.3f} "
            f"{server.get('message_rounds', 0):>12} {wall:>12.1f}  {same}{status}"
        )


_NOOP_APP = textwrap.dedent(
    """
    import json, time
    from flwr.app import ConfigRecord, Message, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp

    server = ServerApp()
    client = ClientApp()


    @server.main()
    def main(grid, context):
        cfg = context.run_config
        deadline = time.monotonic() + float(cfg["start-timeout"])
        nodes = sorted(grid.get_node_ids())
        while len(nodes) < int(cfg["n-nodes"]) and time.monotonic() < deadline:
            time.sleep(0.02)
            nodes = sorted(grid.get_node_ids())
        seconds = []
        for r in range(int(cfg["rounds"]) + 1):  # round 0 wakes the nodes (and Ray's actors): not counted
            began = time.perf_counter()
            ids = set(grid.push_messages([Message(RecordDict({"c": ConfigRecord({"r": r})}), dst_node_id=n,
                                                  message_type="train") for n in nodes]))
            pause, limit = 0.001, time.monotonic() + float(cfg["start-timeout"])
            while ids and time.monotonic() < limit:  # the same short poll as dpfair's ServerApp
                got = list(grid.pull_messages(ids))
                for reply in got:
                    ids.discard(reply.metadata.reply_to_message_id)
                pause = 0.001 if got else min(0.02, pause * 2)
                if ids:
                    time.sleep(pause)
            if r:
                seconds.append(time.perf_counter() - began)
        with open(cfg["result-path"], "w") as fh:
            json.dump({"seconds": seconds, "nodes": len(nodes)}, fh)


    @client.train()
    def echo(message, context):
        return Message(RecordDict({"c": ConfigRecord({"r": message.content["c"]["r"]})}), reply_to=message)
    """
)
_NOOP_PYPROJECT = textwrap.dedent(
    """
    [build-system]
    requires = ["hatchling"]
    build-backend = "hatchling.build"

    [project]
    name = "dpfair-noop-floor"
    version = "1.0.0"
    dependencies = []

    [tool.hatch.build.targets.wheel]
    packages = ["."]

    [tool.flwr.app]
    publisher = "dpfair"

    [tool.flwr.app.components]
    serverapp = "noop_floor:server"
    clientapp = "noop_floor:client"

    [tool.flwr.app.config]
    rounds = 40
    n-nodes = 3
    start-timeout = 300.0
    result-path = ""
    """
)


def noop_floor(executor: str, agents: int, rounds: int, folder: Path) -> float:
    """Seconds per message round of the no-op app (the median round) on *executor* with *agents* nodes."""
    from dpfair.federated import LocalFederation

    app = folder / "noop_app"
    app.mkdir(exist_ok=True)
    (app / "noop_floor.py").write_text(_NOOP_APP)
    (app / "pyproject.toml").write_text(_NOOP_PYPROJECT)
    result = folder / f"noop-{executor}-{agents}.json"
    with LocalFederation(
        agents, app_dir=app, executor=executor, log_dir=folder / f"logs-{executor}-{agents}", startup_timeout=300.0
    ) as federation:
        done = federation.run({"rounds": rounds, "n-nodes": agents, "result-path": str(result)}, timeout=900)
    if done.returncode != 0 or not result.exists():
        raise RuntimeError(f"the no-op app failed on {executor}: {done.stdout[-2000:]}")
    return float(np.median(json.loads(result.read_text())["seconds"]))


def floor_table(agents_list: tuple[int, ...] = (3, 5), rounds: int = 40) -> None:
    """The no-op floor and dpfair's fast executor side by side, with their ratios."""
    has_ray = importlib.util.find_spec("ray") is not None
    print(
        f"the floor: a no-op app, {rounds} message rounds (median), beside dpfair's app (Fed-FairX-LinUCB, bounded-gap, "
        f"d=5: one message round per round, T={rounds})"
    )
    print(
        f"{'N':>3} {'no-op sim':>10} {'no-op fast':>11} {'dpfair fast':>12} {'dpfair fast / no-op sim':>24} "
        f"{'no-op fast / dpfair fast':>25} {'load':>5}"
    )
    with tempfile.TemporaryDirectory(prefix="dpfair-bench-floor-") as tmp:
        folder = Path(tmp)
        for agents in agents_list:
            sim = noop_floor("simulation", agents, rounds, folder) if has_ray else float("nan")
            fast = noop_floor("persistent", agents, rounds, folder)
            run = run_demo(
                agents,
                rounds,
                learner="fed",
                protocol="bounded-gap",
                seed=4,
                executor="persistent",
                out=folder / f"dpfair-{agents}",
                extra_config={"round-timeout": 600.0, "start-timeout": 600.0},
            )
            ours = float(run.server.get("seconds_per_message_round", float("nan")))
            print(
                f"{agents:>3} {sim:>10.3f} {fast:>11.3f} {ours:>12.3f} {ours / sim:>24.2f} {fast / ours:>25.2f}"
                f" {os.getloadavg()[0]:>5.1f}{'' if run.failure is None else f'  FAILED: {run.failure}'}",
                flush=True,
            )


def round_trips_per_protocol(horizon: int = 2000, agents: int = 5, dim: int = 5) -> None:
    """Round trips of one run per protocol at the demo's defaults."""
    print(f"round trips per run, T={horizon}, m={agents}, d={dim} (+2: init and finish)")
    for protocol in ("bounded-gap", "p-fcb", "log-det"):
        config = {"learner": "fed", "protocol": protocol, "horizon": horizon, "n-agents": agents, "dim": dim}
        if protocol == "log-det":
            env = FederatedSyntheticEnvironment(dim=dim)
            syncs = int(
                simulate_federated(env, {"b1": FedFairXLinUCB("log-det")}, horizon, agents, [0]).communication_rounds[0, 0]
            )
            loop = horizon + syncs  # a round's play (and trigger bits), plus a release round trip per synchronization
            note = f"{horizon} rounds + {syncs} synchronizations (each asks the releases in a round trip of its own)"
        else:
            loop = planned_message_rounds(config)
            syncs = len(communication_schedule(protocol, horizon, agents, dim))
            note = (
                f"{syncs} synchronizations, one round trip each (the agents play every round up to the next one "
                f"locally){'' if loop == syncs else f', + {loop - syncs} to play the rounds after the last one'}"
            )
        print(f"  {protocol:<12} {loop + 2:>6} round trips: {note}")


_ACCESS_LINE = re.compile(r'\[uvicorn\.access\] \S+ - "(?:GET|POST) (\S+) HTTP')


def _served(log: Path) -> Counter:
    """Requests the SuperLink served so far, by path (its access log, at Flower's DEBUG level)."""
    return Counter(match[1] for match in _ACCESS_LINE.finditer(log.read_text(errors="replace")))


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process *pid* so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _noop_requests(agents: int, rounds: int, folder: Path) -> tuple[Counter, float]:
    """Requests per message round of the no-op app on the fast executor, and the SuperLink's CPU seconds per round.

    One federation, two runs (``10`` and ``10 + rounds`` message rounds): their difference is *rounds* rounds
    without any start-up request.
    """
    from dpfair.federated import LocalFederation

    app = folder / "noop_app"
    app.mkdir(exist_ok=True)
    (app / "noop_floor.py").write_text(_NOOP_APP)
    (app / "pyproject.toml").write_text(_NOOP_PYPROJECT)
    seen, cpu = [], []
    with LocalFederation(
        agents, app_dir=app, executor="persistent", log_dir=folder / f"req-noop-{agents}", startup_timeout=300.0
    ) as federation:
        link, log = federation.processes["superlink"].pid, federation.log_path("superlink")
        for n in (0, 10, 10 + rounds):
            if n:
                out = folder / f"req-noop-{agents}-{n}.json"
                federation.run({"rounds": n, "n-nodes": agents, "result-path": str(out)}, timeout=900)
            time.sleep(1.0)  # the access log's last lines
            seen.append(_served(log))
            cpu.append(_cpu_seconds(link))
    per_round = Counter({k: (seen[2][k] - 2 * seen[1][k] + seen[0][k]) / rounds for k in seen[2]})
    return per_round, (cpu[2] - 2 * cpu[1] + cpu[0]) / rounds


def _dpfair_requests(agents: int, rounds: int, folder: Path) -> Counter:
    """Requests per message round of dpfair's app (bounded-gap, ``d = 5``) on the fast executor.

    Two runs of ``run_demo`` (``T = 10`` and ``T = 10 + rounds``), each in a federation of its own: their
    difference (start-up requests cancel out up to the timing of heartbeats and idle polls).
    """
    seen = []
    for horizon in (10, 10 + rounds):
        out = folder / f"req-dpfair-{agents}-{horizon}"
        run_demo(
            agents,
            horizon,
            learner="fed",
            protocol="bounded-gap",
            seed=4,
            executor="persistent",
            out=out,
            extra_config={"round-timeout": 600.0, "start-timeout": 600.0},
        )
        seen.append(sum((_served(path) for path in (out / "logs").glob("superlink*.log")), Counter()))
    return Counter({k: (seen[1][k] - seen[0][k]) / rounds for k in seen[1]})


def request_cost(n: int = 400) -> None:
    """SuperLink CPU per request on an idle SuperLink (dpfair's, with long polls off): its HTTP stack alone.

    ``GET /health`` (the middleware layers and nothing else), a SuperNode's signed heartbeat and its signed empty
    pull (Flower's own Fleet client and signing interceptor, as the SuperNode sends them), *n* of each, one after
    the other; and one ECDSA signature and check of the node authentication's curve.
    """
    import socket
    import subprocess

    import httpx
    from flwr.proto.fleet_pb2 import ActivateNodeRequest, PullMessagesRequest, RegisterNodeFleetRequest
    from flwr.proto.heartbeat_pb2 import SendNodeHeartbeatRequest
    from flwr.proto.node_pb2 import Node
    from flwr.supercore.interceptors.http.runtime_version import RuntimeVersionHttpInterceptor
    from flwr.supercore.primitives.asymmetric import (
        bytes_to_public_key,
        generate_key_pairs,
        public_key_to_bytes,
        sign_message,
        verify_signature,
    )
    from flwr.supernode.fleet_http_client import FleetHttpClient
    from flwr.supernode.node_auth_http_interceptor import NodeAuthHttpInterceptor

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    address, home = f"127.0.0.1:{port}", tempfile.mkdtemp(prefix="dpfair-bench-link-")
    env = dict(
        os.environ,
        FLWR_HOME=home,
        FLWR_TELEMETRY_ENABLED="0",
        DPFAIR_SUPERLINK_LONG_POLL="0",
        PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
    )
    link = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dpfair.federated._executor",
            "superlink",
            "--insecure",
            "--disable-runtime-dependency-installation",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        plain = httpx.Client(base_url=f"http://{address}")
        deadline = time.monotonic() + 120
        while True:
            try:
                plain.get("/health")
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        private, public = generate_key_pairs()
        key = public_key_to_bytes(public)
        with FleetHttpClient.from_server_address(
            address,
            True,
            None,
            interceptors=[RuntimeVersionHttpInterceptor(component_name="SuperNode"), NodeAuthHttpInterceptor(private, public)],
        ) as fleet:
            fleet.RegisterNode(RegisterNodeFleetRequest(public_key=key))
            node = Node(node_id=fleet.ActivateNode(ActivateNodeRequest(public_key=key, heartbeat_interval=30)).node_id)
            cases = {
                "GET /health (the middleware layers only)": lambda: plain.get("/health"),
                "Fleet send-node-heartbeat (signed)": lambda: fleet.SendNodeHeartbeat(
                    SendNodeHeartbeatRequest(node=node, heartbeat_interval=30)
                ),
                "Fleet pull-messages, nothing to pull (signed)": lambda: fleet.PullMessages(PullMessagesRequest(node=node)),
            }
            print(f"SuperLink CPU per request, {n} requests each, one after the other (load {os.getloadavg()[0]:.1f})")
            for name, call in cases.items():
                call()
                link_cpu, own_cpu = _cpu_seconds(link.pid), time.process_time()
                for _ in range(n):
                    call()
                link_cpu, own_cpu = _cpu_seconds(link.pid) - link_cpu, time.process_time() - own_cpu
                print(f"  {name:<46} SuperLink {1000 * link_cpu / n:5.2f} ms, client {1000 * own_cpu / n:5.2f} ms")
        began = time.perf_counter()
        signature = sign_message(private, b"2026-01-01T00:00:00")
        signed = time.perf_counter()
        verify_signature(bytes_to_public_key(key), b"2026-01-01T00:00:00", signature)
        print(
            f"  ECDSA ({public.curve.name}): sign {1000 * (signed - began):.2f} ms, check "
            f"{1000 * (time.perf_counter() - signed):.2f} ms",
            flush=True,
        )
    finally:
        link.terminate()
        link.wait(30)


def request_table(agents_list: tuple[int, ...] = (3, 5), rounds: int = 30) -> None:
    """Every HTTP request the SuperLink serves per message round, by API call, no-op app and dpfair's app.

    Counted from the SuperLink's access log (``FLWR_LOG_LEVEL=DEBUG``, Flower's own setting; every process then logs
    at DEBUG, which costs CPU: the seconds are not the floor table's).
    """
    request_cost()
    before = os.environ.get("FLWR_LOG_LEVEL")
    os.environ["FLWR_LOG_LEVEL"] = "DEBUG"
    try:
        with tempfile.TemporaryDirectory(prefix="dpfair-bench-requests-") as tmp:
            for agents in agents_list:
                noop, noop_cpu = _noop_requests(agents, rounds, Path(tmp))
                ours = _dpfair_requests(agents, rounds, Path(tmp))
                print(
                    f"requests the SuperLink served per message round, N={agents} ({rounds} rounds, differences of "
                    f"two runs; load {os.getloadavg()[0]:.1f})"
                )
                print(f"  {'request':<42} {'no-op':>7} {'dpfair':>7}")
                for path in sorted(set(noop) | set(ours)):
                    if abs(noop[path]) >= 0.005 or abs(ours[path]) >= 0.005:
                        print(f"  {path:<42} {noop[path]:>7.2f} {ours[path]:>7.2f}")
                total = sum(noop.values())
                print(f"  {'total':<42} {total:>7.2f} {sum(ours.values()):>7.2f}")
                print(
                    f"  SuperLink CPU per no-op round {noop_cpu:.3f} s: {1000 * noop_cpu / max(total, 1):.2f} ms per "
                    "request (with DEBUG logging)",
                    flush=True,
                )
    finally:
        if before is None:
            os.environ.pop("FLWR_LOG_LEVEL", None)
        else:
            os.environ["FLWR_LOG_LEVEL"] = before


def main(horizon: int = 20, agents: int = 3, floor_rounds: int = 40) -> None:
    print(f"load average (1, 5, 15 min) before: {os.getloadavg()} on {os.cpu_count()} CPUs")
    round_trips(horizon, agents)
    floor_table(rounds=floor_rounds)
    print(f"load average (1, 5, 15 min) after: {os.getloadavg()}")
    round_trips_per_protocol()


if __name__ == "__main__":
    if sys.argv[1:2] in (["--help"], ["-h"]):
        print(__doc__)
    elif sys.argv[1:2] == ["requests"]:  # requests [rounds] [N,N,...]
        sizes = tuple(int(n) for n in sys.argv[3].split(",")) if len(sys.argv) > 3 else (3, 5)
        request_table(sizes, rounds=int(sys.argv[2]) if len(sys.argv) > 2 else 30)
    elif sys.argv[1:2] == ["floor"]:  # floor [rounds] [N,N,...]
        print(f"load average (1, 5, 15 min) before: {os.getloadavg()} on {os.cpu_count()} CPUs")
        sizes = tuple(int(n) for n in sys.argv[3].split(",")) if len(sys.argv) > 3 else (3, 5)
        floor_table(sizes, rounds=int(sys.argv[2]) if len(sys.argv) > 2 else 40)
        print(f"load average (1, 5, 15 min) after: {os.getloadavg()}")
    else:
        main(*(int(a) for a in sys.argv[1:4]))
