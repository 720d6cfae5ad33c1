"""A local Flower deployment: one SuperLink and one SuperNode per agent, as separate processes on loopback.

:class:`LocalFederation` starts ``flower-superlink`` and ``n_nodes`` SuperNodes (each in its own process
group), waits until every SuperNode is registered, runs a Flower app with ``flwr run ... --stream`` and stops
every process it started (also on ``KeyboardInterrupt``; and, through an owner-death watch,
:mod:`dpfair.federated._reaper`, when its owner is killed). Built for flwr >= 1.41, < 1.42.

Three executors run the ClientApp of each SuperNode:

``"persistent"`` (default)
    Needs the flwr internals that :func:`dpfair.federated._executor.fast_path_problems` checks; where they
    differ it turns itself off with a ``RuntimeWarning`` (``fast_path_off``) and runs ``"flower"``.
    Each SuperNode (``--isolation process``, idle sleeps capped) runs its ClientApp tasks itself, in its own
    process, as soon as it pulls a message (the ClientApp is loaded once per FAB), and the SuperLink's Fleet pulls
    wait for a message instead of answering empty (a long poll): a no-op app's message round takes 0.2-0.3 s on
    2 loaded cores, where Flower's Simulation Engine takes 0.1 s (``benchmarks/bench_flower.py floor``; stock
    Flower: seconds).  What remains is Flower's: about ``14 N + 5`` HTTP requests per round to the SuperLink
    (one per object of each message), 2-4 ms of its CPU each (``benchmarks/bench_flower.py requests``).
``"flower"``
    Stock Flower: ``flower-supernode --isolation subprocess`` spawns a ``flwr-clientapp`` process per
    message and its fleet loop sleeps 3 s when idle: seconds per round trip.
``"simulation"``
    Flower's Simulation Engine (``pip install "dpfair[simulation]"``: ``flwr[simulation]``, Ray): a
    ``flower-superlink --simulation`` and no SuperNode process; ``flwr run --federation-config
    "num-supernodes=N ..."`` runs the ``N`` agents as virtual SuperNodes on a bounded pool of Ray actors
    (:mod:`dpfair.federated._simulation`).  Stock Flower, nothing patched.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dpfair._warnings import find_stack_level
from dpfair.federated._reaper import (  # /proc and checked signals: one copy
    ProcessIdentity,
    _children_map,
    _groups,
    _same,
    identity,
    own_groups,
    signal_if_same,
)
from dpfair.federated._simulation import SimulationSettings

__all__ = ["LocalFederation", "RunHandle", "app_dir", "format_run_config"]

_REGISTERED_MARK = "SuperNode ID:"


def format_run_config(run_config: Mapping[str, Any]) -> str:
    """Format a run config as the ``k=v k=v`` string of ``flwr run --run-config`` (TOML values).

    Parameters
    ----------
    run_config : mapping of str to bool, int, float or str
        Strings are quoted, booleans written ``true`` / ``false``, infinite floats ``inf`` / ``-inf`` (TOML);
        NaN is refused.

    Returns
    -------
    str
        ``k=v`` pairs separated by spaces, for ``flwr run --run-config``.
    """
    parts = []
    for key, value in run_config.items():
        if not isinstance(key, str) or not key or any(c.isspace() or c == "=" for c in key):
            raise ValueError(f"invalid run-config key {key!r}")
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int):
            text = str(int(value))
        elif isinstance(value, float):
            if value != value:
                raise ValueError(f"run-config value {key}={value!r} is not a number")
            text = ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(float(value))  # TOML's infinities
        elif isinstance(value, (str, os.PathLike)):
            text = json.dumps(os.fspath(value))  # a TOML basic string
        else:
            raise TypeError(f"run-config value {key}={value!r}: expected bool, int, float or str")
        parts.append(f"{key}={text}")
    return " ".join(parts)


def _free_ports(host: str, count: int) -> list[int]:
    socks, ports = [], []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def _descendants(pids: list[int]) -> list[int]:
    kids = _children_map()
    out, stack = [], list(pids)
    while stack:
        for child in kids.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def _signal_group(proc: subprocess.Popen, sig: int, leader: ProcessIdentity | None) -> None:
    """Signal the process group started as *proc* (its pgid is its pid), never a group that reused its id.

    While *proc* is not reaped (alive, or a zombie) its id, hence its group's, belongs to it: ``killpg`` reaches
    only that group.  Once reaped the id may be reused: each member still in the group is signalled through
    :func:`~dpfair.federated._reaper.signal_if_same`, and only while no other process holds the leader's id.
    """
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)  # started with start_new_session: its pgid is its pid, held by the unreaped child
        except (ProcessLookupError, PermissionError):
            pass
        return
    if leader is not None:
        for who in own_groups({proc.pid: leader}).values():
            signal_if_same(who, sig)


def _tail(path: Path, n: int = 20) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


@dataclass
class RunHandle:
    """A ``flwr run --stream`` started by :meth:`LocalFederation.submit`.

    Attributes
    ----------
    process : subprocess.Popen
        The ``flwr run`` process (stdout and stderr go to ``log_path``).
    args : list of str
        Its command line.
    log_path : pathlib.Path
        The file receiving its output.
    """

    process: subprocess.Popen
    args: list[str]
    log_path: Path
    _log_file: Any = field(repr=False, default=None)
    _leader: ProcessIdentity | None = field(repr=False, default=None)

    def wait(self, timeout: float | None = None) -> subprocess.CompletedProcess:
        """Wait until the run has finished; its output is in ``stdout`` (stderr merged).

        Raises
        ------
        TimeoutError
            If it did not finish within *timeout* seconds (the ``flwr run`` process is then killed).
        """
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            _signal_group(self.process, signal.SIGKILL, self._leader)
            self.process.wait()
            self._close()
            raise TimeoutError(
                f"`flwr run` did not finish within {timeout} s; see {self.log_path}\n{_tail(self.log_path)}"
            ) from None
        self._close()
        return subprocess.CompletedProcess(self.args, code, self.log_path.read_text(errors="replace"), "")

    def _close(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


_LIVE: weakref.WeakSet[LocalFederation] = weakref.WeakSet()


@atexit.register
def _stop_all_at_exit() -> None:  # pragma: no cover - interpreter exit
    for fed in list(_LIVE):
        fed.stop()


def app_dir() -> Path:
    """The folder of the Flower app project (``pyproject.toml`` with ``[tool.flwr.app]``) shipped with dpfair.

    Returns
    -------
    pathlib.Path
        The folder to pass to ``flwr run``.
    """
    return Path(__file__).resolve().parent / "flower_app"


class LocalFederation:
    """A SuperLink and ``n_nodes`` SuperNodes on the loopback address, as separate processes.

    Use as a context manager; every process it started is stopped on exit, also on ``KeyboardInterrupt``.

    Parameters
    ----------
    n_nodes : int
        Number of SuperNodes (agents).
    app_dir : path
        The Flower app project to run (a folder with a ``pyproject.toml`` holding ``[tool.flwr.app]``).
    node_configs : list of mapping, optional
        One ``--node-config`` per node; default ``{"partition-id": i, "num-partitions": n_nodes}``.
    executor : {"persistent", "flower", "simulation"}
        How ClientApp messages are executed: ``"persistent"`` (each SuperNode runs its ClientApp in-process, with
        capped idle sleeps, and its pulls wait on the SuperLink; a fraction of a second per round trip; turns
        itself off, with a warning, where flwr's internals are not as expected), ``"flower"`` (stock Flower
        processes; seconds per round trip) or ``"simulation"`` (Flower's Simulation Engine: ``n_nodes``
        virtual SuperNodes on Ray actors, no SuperNode process; needs ``flwr[simulation]``).
    host : str
        Address the SuperLink binds to and the nodes connect to.
    flwr_home : path, optional
        ``FLWR_HOME`` of the ``flwr`` CLI (its ``config.toml`` gets a ``local`` connection); each node gets
        its own ``FLWR_HOME`` below it (installed FABs). Default: a temporary folder, removed on stop.
    log_dir : path, optional
        Folder receiving one log file per process. Default: a temporary folder (kept: its path is in errors).
    startup_timeout : float
        Seconds to wait for the SuperLink to listen and every SuperNode to register.
    stop_timeout : float
        Grace period between SIGTERM and SIGKILL when stopping.
    simulation_cpus : int, optional
        ``executor="simulation"``: the CPUs Ray may use (``init-args-num-cpus``), each virtual SuperNode's
        task taking one (``client-resources-num-cpus=1``); default ``min(2, os.cpu_count())``.

    Attributes
    ----------
    processes : dict of str to subprocess.Popen
        Every process started, by name: ``"superlink"``, ``"supernode-<i>"`` and the runs' ``"run-<k>"``.
    superlink_address : str
        ``host:port`` of the SuperLink (Fleet, Control and Runtime APIs).
    connection : str
        Name of the ``flwr`` CLI connection to the SuperLink (``"local"``).
    """

    connection = "local"

    def __init__(
        self,
        n_nodes: int,
        *,
        app_dir: str | os.PathLike[str],
        node_configs: list[Mapping[str, Any]] | None = None,
        executor: Literal["persistent", "flower", "simulation"] = "persistent",
        host: str = "127.0.0.1",
        flwr_home: str | os.PathLike[str] | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 5.0,
        simulation_cpus: int | None = None,
    ) -> None:
        if int(n_nodes) < 1:
            raise ValueError(f"n_nodes must be >= 1, got {n_nodes}")
        if executor not in ("persistent", "flower", "simulation"):
            raise ValueError(f"executor must be 'persistent', 'flower' or 'simulation', got {executor!r}")
        self.n_nodes = int(n_nodes)
        self.app_dir = Path(app_dir).resolve()
        if not (self.app_dir / "pyproject.toml").is_file():
            raise FileNotFoundError(f"no pyproject.toml in Flower app folder {self.app_dir}")
        if node_configs is None:
            node_configs = [{"partition-id": i, "num-partitions": self.n_nodes} for i in range(self.n_nodes)]
        if len(node_configs) != self.n_nodes:
            raise ValueError(f"{len(node_configs)} node_configs for {self.n_nodes} nodes")
        self.node_configs = [dict(c) for c in node_configs]
        #: Why the fast path was turned off (``executor="persistent"`` asked, flwr's internals not as expected).
        self.fast_path_off: str | None = None
        if executor == "persistent":
            from dpfair.federated._executor import fast_path_problems

            problems = fast_path_problems()
            if problems:
                self.fast_path_off = "; ".join(problems)
                warnings.warn(
                    f"dpfair's fast executor is OFF ({self.fast_path_off}): running stock Flower processes "
                    "(seconds per message round instead of a fraction of a second).",
                    RuntimeWarning,
                    stacklevel=find_stack_level(),
                )
                executor = "flower"
        self.simulation: SimulationSettings | None = None
        if executor == "simulation":
            self.simulation = SimulationSettings.for_nodes(self.n_nodes, simulation_cpus)  # refuses without Ray
        self.executor = executor
        self.host = host
        self.startup_timeout = float(startup_timeout)
        self.stop_timeout = float(stop_timeout)
        self._own_home = flwr_home is None
        # a temporary home is created by start() (a federation that never starts leaves nothing behind)
        self.flwr_home = Path(flwr_home).resolve() if flwr_home is not None else Path()
        # a temporary log folder is created by start() too (kept: its path is in errors)
        self._own_logs = log_dir is None
        self.log_dir = Path(log_dir).resolve() if log_dir is not None else Path()
        self.processes: dict[str, subprocess.Popen] = {}
        self._logs: dict[str, Path] = {}
        self._files: list[Any] = []
        self._seen: dict[int, ProcessIdentity] = {}  # every process started or seen below them, as it was then
        self._leaders: dict[str, ProcessIdentity] = {}  # name -> the identity of the process started
        self._killed_nodes: set[int] = set()
        self._runs = 0
        self.superlink_address = ""
        self._bin = Path(sys.executable).parent
        self._reaper: subprocess.Popen | None = None
        self._ray_tmp: Path | None = None

    # ------------------------------------------------------------------ processes
    @property
    def pids(self) -> dict[str, int]:
        """Pid of every process started, by name (see :attr:`processes`)."""
        return {name: p.pid for name, p in self.processes.items()}

    def all_pids(self) -> set[int]:
        """Return the pids of every process started and of every descendant seen so far (flwr's own subprocesses).

        Returns
        -------
        set of int
            Every pid, alive or not.
        """
        self._see(self._live_descendants())
        return set(self._seen) | {p.pid for p in self.processes.values()}

    def _see(self, pids: Any) -> None:
        """Record the identity of each of *pids* not seen before (its start time and command line now)."""
        for pid in pids:
            if pid not in self._seen and (who := identity(pid)) is not None:
                self._seen[pid] = who

    def _live_descendants(self) -> list[int]:
        """Descendants of the processes started that are not reaped (a reaped one's id may name another now)."""
        return _descendants([p.pid for p in self.processes.values() if p.poll() is None])

    def log_path(self, name: str) -> Path:
        """Return the log file of a process.

        Parameters
        ----------
        name : str
            ``"superlink"``, ``"supernode-<i>"`` or ``"run-<k>"``.

        Returns
        -------
        pathlib.Path
            The log file (it may not exist yet).
        """
        return self.log_dir / f"{name}.log"

    def _env(self, flwr_home: Path) -> dict[str, str]:
        env = dict(os.environ)
        env["PATH"] = str(self._bin) + os.pathsep + env.get("PATH", "")
        env["FLWR_HOME"] = str(flwr_home)
        env["PYTHONUNBUFFERED"] = "1"
        # Flower's own setting: how often a SuperExec asks for a task (a ServerApp to start on the SuperLink, a
        # ClientApp per message on a stock SuperNode).  1 s on the SuperLink (a run's start), 0.1 s on stock nodes.
        env.setdefault("FLWR_SUPEREXEC_TASK_POLL_INTERVAL", "0.1")
        env.setdefault("FLWR_TELEMETRY_ENABLED", "0")
        return env

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        path = self.log_path(name)
        fh = open(path, "ab")
        self._files.append(fh)
        fh.write(f"$ {' '.join(args)}\n".encode())
        fh.flush()
        proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        self.processes[name] = proc
        self._logs[name] = path
        self._record(name, proc)
        return proc

    def _record(self, name: str, proc: subprocess.Popen) -> ProcessIdentity | None:
        """Record the identity of a process just started (exec'd: Popen returns after it) and tell the reaper."""
        who = identity(proc.pid)
        if who is not None:
            self._leaders[name] = who
            self._seen[proc.pid] = who
            self._tell_reaper(f"pgid {proc.pid} {who.start_time}")
        return who

    def _start_reaper(self) -> None:
        """The owner-death watch (:mod:`dpfair.federated._reaper`): stops everything if this process dies."""
        self._reaper = subprocess.Popen(
            [sys.executable, "-m", "dpfair.federated._reaper", str(self.stop_timeout)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            text=True,
        )
        if self._own_home:
            self._tell_reaper(f"home {self.flwr_home}")

    def record_result(self, path: str | os.PathLike[str]) -> None:
        """Have the owner-death watch mark *path* (a run's ``result.json``) as failed if this process dies.

        If this process dies before :meth:`stop` (a ``SIGKILL``, a crash), the watch writes why into the result,
        so it says what happened.

        Parameters
        ----------
        path : path
            The result file (created if the run wrote none).
        """
        self._tell_reaper(f"result {Path(path).resolve()}")

    def _tell_reaper(self, line: str) -> None:
        if self._reaper is not None and self._reaper.stdin is not None:
            try:
                self._reaper.stdin.write(line + "\n")
                self._reaper.stdin.flush()
            except OSError:
                pass

    def _release_reaper(self) -> None:
        reaper, self._reaper = self._reaper, None
        if reaper is None:
            return
        try:
            if reaper.stdin is not None:
                reaper.stdin.write("done\n")
                reaper.stdin.close()
        except OSError:
            pass
        try:
            reaper.wait(5.0)
        except subprocess.TimeoutExpired:
            reaper.kill()
            reaper.wait()

    def _check_alive(self, name: str, what: str) -> None:
        proc = self.processes[name]
        code = proc.poll()
        if code is not None:
            path = self._logs[name]
            raise RuntimeError(f"{what} exited with code {code} during start-up; see {path}\n{_tail(path)}")

    def _wait_for(self, name: str, what: str, ready: Any, deadline: float) -> None:
        while not ready():
            self._check_alive(name, what)
            if time.monotonic() > deadline:
                path = self._logs[name]
                raise TimeoutError(f"{what} not ready within {self.startup_timeout} s; see {path}\n{_tail(path)}")
            time.sleep(0.05)

    def start(self) -> LocalFederation:
        """Start the SuperLink and the SuperNodes; return when every SuperNode is registered.

        Returns
        -------
        LocalFederation
            ``self``.
        """
        if self.processes:
            raise RuntimeError("this LocalFederation was already started")
        _LIVE.add(self)
        try:
            if self._own_home and self.flwr_home == Path():
                self.flwr_home = Path(tempfile.mkdtemp(prefix="dpfair-flwr-home-")).resolve()
            if self._own_logs and self.log_dir == Path():
                self.log_dir = Path(tempfile.mkdtemp(prefix="dpfair-flwr-logs-")).resolve()
            self._start_reaper()
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        ports = _free_ports(self.host, 1 + self.n_nodes)
        link_port, node_ports = ports[0], ports[1:]
        self.superlink_address = f"{self.host}:{link_port}"
        self.flwr_home.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        (self.flwr_home / "config.toml").write_text(
            f'[superlink]\ndefault = "{self.connection}"\n\n[superlink.{self.connection}]\n'
            f'address = "{self.superlink_address}"\ninsecure = true\n'
        )
        link_home = self.flwr_home / "superlink"
        link_home.mkdir(exist_ok=True)
        link_env = self._env(link_home)
        link_args = ["--insecure", "--disable-runtime-dependency-installation", "--host", self.host, "--port", str(link_port)]
        if self.simulation is not None:
            # Ray's sessions (sockets, logs) in a folder of ours, removed on stop (also by the reaper)
            self._ray_tmp = Path(tempfile.mkdtemp(prefix="dpfair-ray-"))
            self._tell_reaper(f"home {self._ray_tmp}")
            link_env.update(self.simulation.environment(self._ray_tmp))
            self._spawn("superlink", [str(self._bin / "flower-superlink"), "--simulation", *link_args], link_env)
            self._wait_for("superlink", "SuperLink", lambda: _port_open(self.host, link_port), deadline)
            self.all_pids()
            return
        if "FLWR_SUPEREXEC_TASK_POLL_INTERVAL" not in os.environ:
            link_env["FLWR_SUPEREXEC_TASK_POLL_INTERVAL"] = "1.0"
        if self.executor == "persistent":
            # The SuperLink's SuperExec starts `flwr-serverapp` from PATH: a shim with fast object pulls.
            shim_dir = self.flwr_home / "bin"
            shim_dir.mkdir(exist_ok=True)
            shim = shim_dir / "flwr-serverapp"
            shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m dpfair.federated._executor serverapp "$@"\n')
            shim.chmod(0o755)
            link_env["PATH"] = str(shim_dir) + os.pathsep + link_env["PATH"]
        if self.executor == "persistent":  # the SuperNodes' pulls wait on the SuperLink for a message (long polls)
            link_cmd = [sys.executable, "-m", "dpfair.federated._executor", "superlink"]
        else:
            link_cmd = [str(self._bin / "flower-superlink")]
        self._spawn("superlink", [*link_cmd, *link_args], link_env)
        self._wait_for("superlink", "SuperLink", lambda: _port_open(self.host, link_port), deadline)

        for i, port in enumerate(node_ports):
            home = self.flwr_home / f"node-{i}"
            home.mkdir(exist_ok=True)
            env = self._env(home)
            node_args = [
                "--insecure",
                "--superlink",
                self.superlink_address,
                "--port",
                str(port),
                "--node-config",
                format_run_config(self.node_configs[i]),
            ]
            if self.executor == "persistent":
                # the SuperNode runs its ClientApps itself, in-process, as soon as it pulls a message
                self._spawn(
                    f"supernode-{i}",
                    [sys.executable, "-m", "dpfair.federated._executor", "node", *node_args, "--isolation", "process"],
                    env,
                )
            else:
                self._spawn(f"supernode-{i}", [str(self._bin / "flower-supernode"), *node_args], env)

        for i in range(self.n_nodes):
            log = self._logs[f"supernode-{i}"]
            self._wait_for(
                f"supernode-{i}", f"SuperNode {i}", lambda log=log: _REGISTERED_MARK in log.read_text(errors="replace"), deadline
            )
        self.all_pids()

    # ------------------------------------------------------------------ runs
    def submit(self, run_config: Mapping[str, Any] | None = None) -> RunHandle:
        """Start ``flwr run <app_dir> local --run-config ... --stream`` and return without waiting.

        Parameters
        ----------
        run_config : mapping, optional
            Overrides of the app's ``[tool.flwr.app.config]`` (see :func:`format_run_config`).

        Returns
        -------
        RunHandle
            The ``flwr run`` process (``.process``, ``.log_path``, ``.wait(timeout)``).
        """
        if "superlink" not in self.processes:
            raise RuntimeError("LocalFederation not started (use it as a context manager or call start())")
        for name, proc in self.processes.items():
            if name.startswith("run-"):  # an earlier run's `flwr run` (finished or not) is no fault of the federation
                continue
            if proc.poll() is not None and not (name != "superlink" and int(name.split("-")[1]) in self._killed_nodes):
                raise RuntimeError(f"{name} exited with code {proc.returncode}; see {self._logs[name]}")
        self._runs += 1
        name = f"run-{self._runs}"
        args = [str(self._bin / "flwr"), "run", str(self.app_dir), self.connection, "--stream"]
        if run_config:
            args += ["--run-config", format_run_config(run_config)]
        if self.simulation is not None:  # Flower's own setting of a simulation run (not the deprecated `options.`)
            args += ["--federation-config", self.simulation.federation_config()]
        path = self.log_path(name)
        fh = open(path, "wb")
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=self._env(self.flwr_home),
            start_new_session=True,
        )
        self.processes[name] = proc
        self._logs[name] = path
        return RunHandle(proc, args, path, fh, _leader=self._record(name, proc))

    def run(self, run_config: Mapping[str, Any] | None = None, timeout: float | None = None) -> subprocess.CompletedProcess:
        """Run the app and wait until the run has finished.

        Parameters
        ----------
        run_config : mapping, optional
            Overrides of the app's ``[tool.flwr.app.config]``.
        timeout : float, optional
            Seconds to wait (``None``: no limit).

        Returns
        -------
        subprocess.CompletedProcess
            ``returncode`` and output (``stdout``, stderr merged) of ``flwr run --stream``.

        Raises
        ------
        TimeoutError
            If the run did not finish within *timeout* seconds.
        """
        return self.submit(run_config).wait(timeout)

    # ------------------------------------------------------------------ faults and stop
    def kill_node(self, i: int) -> None:
        """SIGKILL SuperNode ``i`` (its whole process group, where its ClientApp runs), as a crash would.

        Parameters
        ----------
        i : int
            The node's index in ``[0, n_nodes)``.
        """
        if not 0 <= i < self.n_nodes:
            raise IndexError(f"no node {i} (n_nodes={self.n_nodes})")
        if self.simulation is not None:
            raise ValueError(
                "executor='simulation' runs virtual SuperNodes (Ray actors), not one process per node; "
                "kill a node with executor='persistent' or 'flower'."
            )
        self.all_pids()
        for name in (f"supernode-{i}", f"executor-{i}"):
            proc = self.processes.get(name)
            if proc is not None:
                _signal_group(proc, signal.SIGKILL, self._leaders.get(name))
        for name in (f"supernode-{i}", f"executor-{i}"):
            proc = self.processes.get(name)
            if proc is not None:
                proc.wait()
        self._killed_nodes.add(i)

    def stop(self) -> None:
        """Stop every process started (SIGTERM to their process groups, SIGKILL after ``stop_timeout``)."""
        named = list(self.processes.items())
        procs = [proc for _, proc in named]
        try:
            # every signal below goes to a process started here or seen below one, checked against its identity
            # recorded then (start time, command line), or to the group of a started process not yet reaped
            own = {os.getpgrp(), *(p.pid for p in procs)}
            self._see(self._live_descendants())
            extra = set(self._live_descendants())
            # the groups of descendants that started their own (the SuperExec; Ray's daemons and actors live in its
            # group and outlive a killed parent): every member, also those already re-parented to init
            extra |= _groups(extra, exclude=own)
            self._see(extra)
            targets = {pid: self._seen[pid] for pid in extra if pid in self._seen}
            targets.update({pid: who for pid, who in self._seen.items() if pid not in own})
            for name, proc in reversed(named):
                if proc.poll() is None:
                    _signal_group(proc, signal.SIGTERM, self._leaders.get(name))
            for who in targets.values():
                signal_if_same(who, signal.SIGTERM)
            deadline = time.monotonic() + self.stop_timeout
            for proc in procs:
                try:
                    proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            later = set(self._live_descendants())
            later |= _groups(later, exclude=own)
            self._see(later)
            targets.update({pid: self._seen[pid] for pid in later if pid in self._seen})
            while time.monotonic() < deadline and any(_same(identity(pid), who) for pid, who in targets.items()):
                time.sleep(0.05)
            for name, proc in named:
                _signal_group(proc, signal.SIGKILL, self._leaders.get(name))
                try:
                    proc.wait(1.0)
                except subprocess.TimeoutExpired:
                    pass
            for who in targets.values():
                signal_if_same(who, signal.SIGKILL)
        finally:
            for fh in self._files:
                fh.close()
            self._files.clear()
            _LIVE.discard(self)
            if self._own_home and self.flwr_home != Path():
                shutil.rmtree(self.flwr_home, ignore_errors=True)
            if self._ray_tmp is not None:
                shutil.rmtree(self._ray_tmp, ignore_errors=True)
            self._release_reaper()

    def __enter__(self) -> LocalFederation:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (
            f"LocalFederation(n_nodes={self.n_nodes}, executor={self.executor!r}, "
            f"superlink={self.superlink_address or None!r}, log_dir='{self.log_dir}')"
        )
