"""Low-latency process entry points for a local Flower deployment (flwr 1.41.0).

Two entry points, each started by :class:`dpfair.federated._deployment.LocalFederation` as a separate
process (``python -m dpfair.federated._executor <command> ...``):

``supernode <flower-supernode arguments>``
    ``flower-supernode`` with its idle sleeps capped. The stock SuperNode fleet loop sleeps a hard-coded
    3 s whenever it pulled no message from the SuperLink and polls for the ClientApp's reply every 0.5 s
    (``flwr/supernode/start_client_internal.py``: ``start_client_internal`` / ``_push_messages``); a
    protocol with hundreds of synchronizations cannot afford that. The module's ``time`` is replaced by a
    proxy whose ``sleep`` is ``min(seconds, cap)``.

``clientapp-executor --runtime-api-address HOST:PORT``
    A persistent replacement for ``flower-superexec`` + one ``flwr-clientapp`` process per message (the
    SuperNode must run with ``--isolation process``). It acquires ClientApp tasks from the SuperNode's
    Runtime API in a loop and runs each in-process, reusing flwr's own task functions
    (``flwr.supernode.runtime.run_clientapp``: ``pull_task_input``, ``push_message``, ``push_task_output``),
    installing each FAB and loading its ``ClientApp`` once per FAB hash. No process is spawned and nothing is
    re-imported per message.

Both rely on flwr internals, checked by :func:`fast_path_problems` (the supported range,
:data:`SUPPORTED_FLWR_RANGE`, and every internal they touch); where a check fails,
:class:`~dpfair.federated.LocalFederation` turns the fast path off in the owner's process with a
``RuntimeWarning`` and runs stock Flower (``executor="flower"``); the entry points themselves start
unpatched (the SuperNode, the ServerApp) or refuse to start (the executor).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import signal
import sys
import threading
import time
import types
import warnings
from typing import Any

from dpfair._warnings import find_stack_level

#: The flwr versions whose internals these entry points rely on: ``>= 1.41.0, < 1.42``.
SUPPORTED_FLWR_RANGE = ((1, 41), (1, 42))
SUPPORTED_FLWR_VERSION = "1.41.0"  # the version it was written and measured on

#: Upper bound (seconds) on any sleep of the SuperNode's fleet loop.
DEFAULT_SLEEP_CAP = 0.05

#: Seconds between two AcquireTask polls of the persistent executor when no task is pending.
DEFAULT_POLL_INTERVAL = float(os.environ.get("DPFAIR_EXECUTOR_POLL", "0.02"))

#: Idle backoff of the SuperNode's fleet loop and of the executor: their short polls last IDLE_AFTER seconds after
#: the last message; then they poll every IDLE_SLEEP seconds, and after LONG_IDLE_AFTER seconds every
#: LONG_IDLE_SLEEP seconds (stock Flower's 3 s): an idle federation stays under 5 % of a CPU, and the first message
#: after a long pause waits up to 6 s (SuperNode, then executor), about what stock Flower makes every message wait.
#: A run's ``init`` therefore waits up to ``start-timeout``, not ``round-timeout``.
IDLE_AFTER = 2.0
IDLE_SLEEP = float(os.environ.get("DPFAIR_IDLE_POLL", "0.5"))
LONG_IDLE_AFTER = 10.0
LONG_IDLE_SLEEP = 3.0


def idle_pause(idle_seconds: float, busy_pause: float, long_sleep: float = LONG_IDLE_SLEEP) -> float:
    """The pause between two polls after *idle_seconds* without traffic (*busy_pause* while there is traffic)."""
    if idle_seconds < IDLE_AFTER:
        return busy_pause
    return max(busy_pause, IDLE_SLEEP if idle_seconds < LONG_IDLE_AFTER else long_sleep)

#: A task running longer than this starts sending task heartbeats to the SuperNode.
_HEARTBEAT_AFTER = 5.0


def flwr_version() -> str | None:
    """The installed flwr version, or ``None`` when flwr is not installed."""
    try:
        import flwr
    except ImportError:
        return None
    return str(flwr.__version__)


def _in_range(version: str) -> bool:
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is None:
        return False
    low, high = SUPPORTED_FLWR_RANGE
    return low <= (int(match[1]), int(match[2])) < high


def fast_path_problems() -> list[str]:
    """Why the fast path (this module's entry points) cannot run with the installed flwr; empty when it can.

    Checks the version range and every flwr internal the entry points use: the SuperNode's ``time`` module,
    the object pulls' keyword defaults, the Runtime API task functions and messages.

    Returns
    -------
    list of str
        One line per failed check.
    """
    version = flwr_version()
    if version is None:
        return ["flwr is not installed"]
    problems = []
    if not _in_range(version):
        low, high = SUPPORTED_FLWR_RANGE
        problems.append(f"flwr {version} is outside the supported range >={low[0]}.{low[1]},<{high[0]}.{high[1]}")
    checks = [
        ("flwr.supernode.start_client_internal", ("time", "start_client_internal", "_pull_and_store_message")),
        ("flwr.supercore.inflatable.inflatable_utils", ("pull_objects", "pull_and_inflate_object_from_tree")),
        ("flwr.supernode.runtime.run_clientapp", ("pull_task_input", "push_message", "push_task_output")),
        ("flwr.proto.runtime_pb2", ("AcquireTaskRequest",)),
        ("flwr.supercore.runtime", ("RuntimeHttpClient",)),
        ("flwr.clientapp.utils", ("get_load_client_app_fn",)),
    ]
    for module_name, names in checks:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            problems.append(f"flwr has no module {module_name}")
            continue
        missing = [name for name in names if not hasattr(module, name)]
        if missing:
            problems.append(f"{module_name} has no {', '.join(missing)}")
        elif module_name.endswith("inflatable_utils"):
            for name in names:
                kw = getattr(module, name).__kwdefaults__ or {}
                if "initial_backoff" not in kw or "backoff_cap" not in kw:
                    problems.append(f"{module_name}.{name} has no initial_backoff / backoff_cap keyword")
    return problems


def _patch_supernode_sleep(cap: float) -> bool:
    """Cap every ``time.sleep`` of ``flwr.supernode.start_client_internal`` at *cap* seconds (adaptive when idle).

    Returns whether the patch was applied (only where :func:`fast_path_problems` finds none).
    """
    problems = fast_path_problems()
    if problems:
        warnings.warn(
            f"dpfair's low-latency SuperNode is off ({'; '.join(problems)}); starting the stock SuperNode "
            "(about 3 s per idle poll).",
            RuntimeWarning,
            stacklevel=find_stack_level(),
        )
        return False
    import flwr.supernode.start_client_internal as sci

    real_time = sci.time
    proxy = types.ModuleType("time")
    proxy.__dict__.update({k: v for k, v in vars(real_time).items() if not k.startswith("__")})

    last_active = [real_time.monotonic()]
    pull = sci._pull_and_store_message

    def pull_and_mark(*args: Any, **kwargs: Any) -> Any:
        # traffic is a message pulled from the SuperLink, however fast the ClientApp answers it (a rule on the
        # sleeps alone -- "a sleep under 3 s means a reply is pending" -- never sees a reply that is ready at once,
        # so a faster ClientApp would be treated as idle and polled slower)
        run_id = pull(*args, **kwargs)
        if run_id is not None:
            last_active[0] = real_time.monotonic()
        return run_id

    def capped_sleep(seconds: float) -> None:
        # short sleeps while there is traffic, back to IDLE_SLEEP once idle for IDLE_AFTER seconds
        now = real_time.monotonic()
        if seconds < 3.0:  # a reply pending (the 0.5 s wait of _push_messages): traffic too
            last_active[0] = now
        real_time.sleep(min(seconds, idle_pause(now - last_active[0], cap)))

    proxy.sleep = capped_sleep  # type: ignore[attr-defined]
    sci.time = proxy  # type: ignore[assignment]
    sci._pull_and_store_message = pull_and_mark  # type: ignore[attr-defined]
    return True


#: Initial backoff and cap (seconds) of flwr's object-pull retries (stock: 1 s and 10 s).
DEFAULT_PULL_BACKOFF = (0.002, 0.02)


def speed_up_object_pulls(initial_backoff: float = DEFAULT_PULL_BACKOFF[0], backoff_cap: float = DEFAULT_PULL_BACKOFF[1]) -> bool:
    """Shorten the retry backoff of flwr's object pulls in this process.

    A message's metadata becomes visible before its objects (arrays, records) are stored, so pulling it races
    with its push; flwr then retries each missing object with an exponential backoff starting at **1 s**
    (``flwr.supercore.inflatable.inflatable_utils.pull_objects``), which costs ~1 s per message hop. The
    SuperNode (pulling from the SuperLink), the executor (pulling from the SuperNode) and the ServerApp
    (``Grid.pull_messages``) all hit it. Returns whether the patch was applied (see :func:`fast_path_problems`).
    """
    if fast_path_problems():
        return False
    from flwr.supercore.inflatable import inflatable_utils as iu

    for fn in (iu.pull_objects, iu.pull_and_inflate_object_from_tree):
        kw = fn.__kwdefaults__
        if kw is None or "initial_backoff" not in kw or "backoff_cap" not in kw:
            return False
        kw["initial_backoff"] = float(initial_backoff)
        kw["backoff_cap"] = float(backoff_cap)
    return True


def run_serverapp(argv: list[str]) -> None:
    """Run ``flwr-serverapp`` with arguments *argv* and fast object pulls (:func:`speed_up_object_pulls`)."""
    speed_up_object_pulls()
    from flwr.superlink.cli import flwr_serverapp

    sys.argv = ["flwr-serverapp", *argv]
    sys.exit(flwr_serverapp())


def run_supernode(argv: list[str], *, sleep_cap: float = DEFAULT_SLEEP_CAP) -> None:
    """Run ``flower-supernode`` with arguments *argv* and the fleet loop's sleeps capped at *sleep_cap*."""
    _patch_supernode_sleep(sleep_cap)
    speed_up_object_pulls()
    from flwr.supernode.cli import flower_supernode

    sys.argv = ["flower-supernode", *argv]
    flower_supernode()


def client_app_error(ex: BaseException) -> tuple[int, str]:
    """The Flower error code and reason sent to the server when the ClientApp raises ``ex``.

    The reason names the exception's type only: its text may hold the agent's private values (Flower's own
    runner sends ``str(ex)``), so the details stay in this node's log (the executor prints them to stderr).

    Parameters
    ----------
    ex : BaseException
        What the ClientApp raised.

    Returns
    -------
    code : int
        ``ErrorCode.LOAD_CLIENT_APP_EXCEPTION`` or ``ErrorCode.CLIENT_APP_RAISED_EXCEPTION``.
    reason : str
        A text without any of the exception's values.
    """
    from flwr.clientapp.client_app import LoadClientAppError
    from flwr.common.constant import ErrorCode

    if isinstance(ex, LoadClientAppError):
        return ErrorCode.LOAD_CLIENT_APP_EXCEPTION, "An exception was raised when attempting to load `ClientApp`"
    return ErrorCode.CLIENT_APP_RAISED_EXCEPTION, f"the ClientApp raised {type(ex).__name__}; the details are in this node's log"

class PersistentClientAppExecutor:
    """Run a SuperNode's ClientApp tasks in this process, one after the other.

    Parameters
    ----------
    runtime_api_address : str
        ``host:port`` of the SuperNode's Runtime API (its ``--port``).
    poll_interval : float
        Seconds to wait between two AcquireTask polls when no task is pending.
    """

    def __init__(self, runtime_api_address: str, *, poll_interval: float = DEFAULT_POLL_INTERVAL) -> None:
        problems = fast_path_problems()
        if problems:
            raise RuntimeError(f"the persistent ClientApp executor cannot run ({'; '.join(problems)}); use executor='flower'")
        self.runtime_api_address = runtime_api_address
        speed_up_object_pulls()
        self.poll_interval = float(poll_interval)
        self._apps: dict[str, Any] = {}  # FAB hash -> loaded ClientApp
        self.tasks_done = 0

    def _client(self, token: str | None) -> Any:
        from flwr.supercore.interceptors import RuntimeTokenHttpInterceptor, RuntimeVersionHttpInterceptor
        from flwr.supercore.retry import make_simple_http_retry_invoker
        from flwr.supercore.runtime import RuntimeHttpClient

        interceptors: list[Any] = [
            RuntimeVersionHttpInterceptor(component_name="SuperExec" if token is None else "flwr-clientapp")
        ]
        if token is not None:
            interceptors.append(RuntimeTokenHttpInterceptor(token))
        return RuntimeHttpClient.from_server_address(
            server_address=self.runtime_api_address,
            insecure=True,
            root_certificates=None,
            interceptors=interceptors,
            retry_invoker=make_simple_http_retry_invoker(),
        )

    def _load_app(self, run: Any, fab: Any) -> Any:
        app = self._apps.get(fab.hash_str)
        if app is None:
            from flwr.cli.install import install_from_fab
            from flwr.clientapp.utils import get_load_client_app_fn

            install_from_fab(fab.content, skip_prompt=True)
            load = get_load_client_app_fn(default_app_ref="", app_path=None, multi_app=True)
            app = load(run.fab_id, run.fab_version, fab.hash_str)
            self._apps[fab.hash_str] = app
        return app

    def run_task(self, token: str) -> None:
        """Execute the task identified by *token* (what one ``flwr-clientapp`` process does)."""
        from flwr.app import Message
        from flwr.app.error import Error
        from flwr.common.constant import SubStatus
        from flwr.supercore.heartbeat import HeartbeatSender, make_task_heartbeat_fn_http
        from flwr.supernode.runtime.run_clientapp import pull_task_input, push_message, push_task_output

        client = self._client(token)
        message = reply = context = None
        sub_status, details = SubStatus.FAILED, "ClientApp task failed due to unknown reason"
        heartbeat = HeartbeatSender(make_task_heartbeat_fn_http(client))
        timer = threading.Timer(_HEARTBEAT_AFTER, heartbeat.start)
        timer.daemon = True
        timer.start()
        try:
            message, context, run, fab = pull_task_input(client)
            app = self._load_app(run, fab)
            reply = app(message=message, context=context)
            sub_status, details = SubStatus.COMPLETED, ""
        except Exception as ex:
            code, reason = client_app_error(ex)
            print(f"[dpfair executor] ClientApp raised {type(ex).__name__}: {ex}", file=sys.stderr, flush=True)
            details = reason
            if message is not None:
                reply = Message(Error(code=code, reason=reason), reply_to=message)
        finally:
            try:
                if reply is not None and context is not None:
                    push_message(client, reply, context)
            finally:
                timer.cancel()
                if heartbeat.is_running:
                    heartbeat.stop()
                push_task_output(client=client, context=context, sub_status=sub_status, details=details)
                client.close()
                self.tasks_done += 1

    def serve_forever(self) -> None:
        """Poll the Runtime API for ClientApp tasks and run them until the process is stopped."""
        from flwr.proto.runtime_pb2 import AcquireTaskRequest
        from flwr.supercore.constant import TaskType

        acquirer = self._client(None)
        request = AcquireTaskRequest(supported_task_types=[TaskType.CLIENT_APP.value], agentapp_fab_hashes=[])
        print(f"[dpfair executor] serving {self.runtime_api_address} (pid {os.getpid()})", flush=True)
        last_task = time.monotonic()
        try:
            while True:
                res = acquirer.AcquireTask(request)
                if res.HasField("task") and res.token:
                    try:
                        self.run_task(res.token)
                    except Exception as ex:  # a failed push must not stop the executor; flwr expires the task
                        print(f"[dpfair executor] task failed: {ex!r}", file=sys.stderr, flush=True)
                    last_task = time.monotonic()
                    continue
                time.sleep(idle_pause(time.monotonic() - last_task, self.poll_interval))
        finally:
            acquirer.close()


def _main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM -> SystemExit so ``finally`` blocks run.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if argv and argv[0] == "supernode":
        cap = float(os.environ.get("DPFAIR_SUPERNODE_SLEEP_CAP", DEFAULT_SLEEP_CAP))
        run_supernode(argv[1:], sleep_cap=cap)
        return
    if argv and argv[0] == "serverapp":
        run_serverapp(argv[1:])
        return
    parser = argparse.ArgumentParser(prog="python -m dpfair.federated._executor")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("supernode", help="flower-supernode with capped idle sleeps (remaining args passed on)")
    sub.add_parser("serverapp", help="flwr-serverapp with fast object pulls (remaining args passed on)")
    ex = sub.add_parser("clientapp-executor", help="persistent in-process ClientApp executor")
    ex.add_argument("--runtime-api-address", required=True)
    ex.add_argument("--poll-interval", type=float, default=DEFAULT_POLL_INTERVAL)
    ex.add_argument("--parent-pid", type=int, default=None, help="exit when this process is gone")
    args = parser.parse_args(argv)
    if args.parent_pid is not None:
        from flwr.supercore.app_utils import start_parent_process_monitor

        signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
        start_parent_process_monitor(args.parent_pid)
    PersistentClientAppExecutor(args.runtime_api_address, poll_interval=args.poll_interval).serve_forever()


if __name__ == "__main__":
    _main()
