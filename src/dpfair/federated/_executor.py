"""Low-latency process entry points for a local Flower deployment (flwr 1.41.0).

Entry points, each started by :class:`dpfair.federated._deployment.LocalFederation` as a separate process
(``python -m dpfair.federated._executor <command> ...``):

``node <flower-supernode arguments>``
    ``flower-supernode --isolation process`` that runs its ClientApp tasks itself, in its own process, as soon as
    its fleet loop has pulled a message (:meth:`PersistentClientAppExecutor.run_pending`): the task goes through
    the SuperNode's own Runtime API handlers (``flwr.supernode.servicer.runtime.runtime_handlers``) and flwr's
    task functions (``flwr.supernode.runtime.run_clientapp``: ``pull_task_input``, ``push_message``,
    ``push_task_output``), called in-process instead of over HTTP; the ClientApp is loaded once per FAB hash.  No
    process is spawned, nothing is re-imported per message and no executor polls for tasks.  Its fleet loop's
    sleeps are capped as ``supernode``'s.

``supernode <flower-supernode arguments>``
    ``flower-supernode`` with its idle sleeps capped. The stock SuperNode fleet loop sleeps a hard-coded
    3 s whenever it pulled no message from the SuperLink and polls for the ClientApp's reply every 0.5 s
    (``flwr/supernode/start_client_internal.py``: ``start_client_internal`` / ``_push_messages``); a
    protocol with hundreds of synchronizations cannot afford that. The module's ``time`` is replaced by a
    proxy whose ``sleep`` is ``min(seconds, cap)``.

``superlink <flower-superlink arguments>``
    ``flower-superlink`` whose Fleet ``pull-messages`` waits for a message (:func:`patch_superlink_long_poll`)
    instead of answering empty: a SuperNode's poll is an HTTP request through nine middleware layers and a
    signature check on the SuperLink, the cost that dominates a message round on a small machine.

``serverapp <flwr-serverapp arguments>``
    ``flwr-serverapp`` with fast object pulls (:func:`speed_up_object_pulls`).

``clientapp-executor --runtime-api-address HOST:PORT``
    A persistent replacement for ``flower-superexec`` + one ``flwr-clientapp`` process per message (the
    SuperNode must run with ``--isolation process``): acquires ClientApp tasks from the SuperNode's Runtime API
    over HTTP in a loop and runs each in-process.  ``node`` does the same without HTTP and is what
    :class:`~dpfair.federated.LocalFederation` starts.

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
#: after a long pause waits up to 3 s (6 s with the HTTP executor beside the SuperNode), what stock Flower makes
#: every message wait.
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


#: The SuperNode's Runtime API handlers an in-process ClientApp task calls (without HTTP).
_NODE_HANDLERS = (
    "pull_task_input",
    "pull_messages",
    "push_messages",
    "pull_object",
    "push_object",
    "confirm_message_received",
    "push_task_output",
)


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
        ("flwr.supernode.servicer.runtime.runtime_handlers", _NODE_HANDLERS),
        ("flwr.supercore.servicer.runtime.runtime_handlers", ("acquire_task", "send_task_heartbeat")),
        ("flwr.supernode.nodestate", ("NodeState",)),
        ("flwr.superlink.servicer.fleet.fleet_handlers", ("pull_messages",)),
        ("flwr.superlink.servicer.runtime.runtime_handlers", ("pull_messages",)),
        ("flwr.superlink.cli", ("flower_superlink",)),
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


def _patch_supernode_sleep(cap: float, inline: PersistentClientAppExecutor | None = None) -> bool:
    """Cap every ``time.sleep`` of ``flwr.supernode.start_client_internal`` at *cap* seconds (adaptive when idle).

    With *inline*, every message pulled from the SuperLink is also run at once in this process by *inline*
    (:meth:`PersistentClientAppExecutor.run_pending`), so its reply is in the node's state when the fleet loop
    looks for it.  Returns whether the patch was applied (only where :func:`fast_path_problems` finds none).
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
            if inline is not None and "state" in kwargs:
                inline.run_pending(kwargs["state"])
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


#: Longest wait (seconds) of a SuperNode's pull on the SuperLink for a message to arrive (a long poll).
DEFAULT_LONG_POLL = 0.5

#: At most this many pulls wait at once (each holds one of the SuperLink's worker threads); the others answer at once.
_LONG_POLL_SLOTS = 16


def patch_superlink_long_poll(wait: float = DEFAULT_LONG_POLL) -> bool:
    """Make the SuperLink's ``pull-messages`` (Fleet: SuperNodes; Runtime: the ServerApp) wait up to *wait* seconds.

    Stock Flower answers a pull at once, empty or not, and the puller polls again: each poll is an HTTP request
    through the SuperLink's nine middleware layers (and, from a SuperNode, a signature check): about 3 ms of the
    SuperLink's CPU on a loaded 2-core machine, and a message waits for the next poll.  Here a pull that finds
    nothing waits on the SuperLink until a message (a SuperNode's pull: ``store_message_ins``) or a reply (the
    ServerApp's: ``store_message_res``) is stored with all its objects (the object store's ``put``), or *wait* has
    passed: the message leaves at once, whole, and an idle node costs one request per *wait*.  At most
    :data:`_LONG_POLL_SLOTS` pulls wait at a time (each holds one of the SuperLink's worker threads).
    Returns whether the patch was applied (see :func:`fast_path_problems`).
    """
    if fast_path_problems():
        return False
    from flwr.superlink.servicer.fleet import fleet_handlers
    from flwr.superlink.servicer.runtime import runtime_handlers

    arrived = threading.Condition()
    generation = [0]
    slots = threading.BoundedSemaphore(_LONG_POLL_SLOTS)
    patched: set[tuple[type, str]] = set()

    def wake_on(cls: type, name: str) -> None:
        if (cls, name) in patched:
            return
        inner = getattr(cls, name)

        def stored(self: Any, *args: Any, **kwargs: Any) -> Any:
            out = inner(self, *args, **kwargs)
            with arrived:
                generation[0] += 1
                arrived.notify_all()
            return out

        setattr(cls, name, stored)
        patched.add((cls, name))

    for module, stores in ((fleet_handlers, "store_message_ins"), (runtime_handlers, "store_message_res")):
        module.pull_messages = _long_poll(module.pull_messages, stores, wait, arrived, generation, slots, wake_on)
    return True


def _long_poll(
    pull: Any,
    stores: str,
    wait: float,
    arrived: threading.Condition,
    generation: list[int],
    slots: threading.BoundedSemaphore,
    wake_on: Any,
) -> Any:
    """*pull* (a ``pull_messages`` handler of the SuperLink) waiting for what the state's *stores* method stores."""
    from flwr.supercore.inflatable.inflatable_object import iterate_object_tree

    def ready(res: Any, store: Any) -> bool:
        # a message becomes visible before its objects are pushed (pre-registered, empty): a puller that gets it
        # then retries each missing object over HTTP, so it is handed over once they are all stored
        return bool(res.messages_list) and all(
            store.get(node.object_id) != b"" for tree in res.message_object_trees for node in iterate_object_tree(tree)
        )

    def pull_messages(*args: Any, **kwargs: Any) -> Any:
        state = kwargs["state"] if "state" in kwargs else args[1]
        store = state.object_store
        with arrived:
            wake_on(type(state), stores)
            wake_on(type(store), "put")
            seen = generation[0]
        res = pull(*args, **kwargs)
        if ready(res, store) or wait <= 0 or not slots.acquire(blocking=False):
            return res
        try:
            deadline = time.monotonic() + wait
            while not ready(res, store) and (left := deadline - time.monotonic()) > 0:
                with arrived:
                    if generation[0] == seen:
                        arrived.wait(left)
                    seen = generation[0]
                if not res.messages_list:  # once pulled, messages are the puller's: only their objects are awaited
                    res = pull(*args, **kwargs)
        finally:
            slots.release()
        return res

    return pull_messages


def run_superlink(argv: list[str]) -> None:
    """Run ``flower-superlink`` with arguments *argv* and long polls (:func:`patch_superlink_long_poll`)."""
    wait = float(os.environ.get("DPFAIR_SUPERLINK_LONG_POLL", DEFAULT_LONG_POLL))
    if not patch_superlink_long_poll(wait):
        warnings.warn(
            "dpfair's long poll is off (flwr's internals differ): starting the stock SuperLink.",
            RuntimeWarning,
            stacklevel=find_stack_level(),
        )
    from flwr.superlink.cli import flower_superlink

    sys.argv = ["flower-superlink", *argv]
    flower_superlink()


def run_serverapp(argv: list[str]) -> None:
    """Run ``flwr-serverapp`` with arguments *argv* and fast object pulls (:func:`speed_up_object_pulls`)."""
    speed_up_object_pulls()
    from flwr.superlink.cli import flwr_serverapp

    sys.argv = ["flwr-serverapp", *argv]
    sys.exit(flwr_serverapp())


def run_supernode(argv: list[str], *, sleep_cap: float = DEFAULT_SLEEP_CAP, inline: bool = False) -> None:
    """Run ``flower-supernode`` with arguments *argv* and the fleet loop's sleeps capped at *sleep_cap*.

    With *inline* (the SuperNode started with ``--isolation process``), the ClientApp runs in this process:
    each message pulled from the SuperLink is run at once (:meth:`PersistentClientAppExecutor.run_pending`),
    no executor process polls for it and no Runtime API request carries it.
    """
    runner = PersistentClientAppExecutor() if inline else None  # refuses where fast_path_problems finds any
    _patch_supernode_sleep(sleep_cap, runner)
    speed_up_object_pulls()
    if runner is not None:
        print(f"[dpfair executor] ClientApps run in the SuperNode (pid {os.getpid()})", flush=True)
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


class _LocalRuntime:
    """The SuperNode's Runtime API for one task, called in the SuperNode's own process.

    The methods ``flwr.supernode.runtime.run_clientapp`` calls on its ``RuntimeHttpClient``, each resolving the
    task from its token (as the HTTP router does) and calling the same handler: what a ``flwr-clientapp`` process
    does over HTTP, without a request, a serialization or a poll.
    """

    def __init__(self, state: Any, token: str) -> None:
        self._state, self._token = state, token

    def _task(self) -> Any:
        task = self._state.get_task_by_token(self._token)
        if task is None:
            raise RuntimeError("the ClientApp task's token is no longer valid")
        return task

    def _call(self, name: str, request: Any) -> Any:
        from flwr.supernode.servicer.runtime import runtime_handlers

        return getattr(runtime_handlers, name)(request, self._state, self._task())

    # the names of RuntimeHttpClient's methods
    def PullTaskInput(self, request: Any) -> Any:
        return self._call("pull_task_input", request)

    def PullMessages(self, request: Any) -> Any:
        return self._call("pull_messages", request)

    def PushMessages(self, request: Any) -> Any:
        return self._call("push_messages", request)

    def PullObject(self, request: Any) -> Any:
        return self._call("pull_object", request)

    def PushObject(self, request: Any) -> Any:
        return self._call("push_object", request)

    def ConfirmMessageReceived(self, request: Any) -> Any:
        return self._call("confirm_message_received", request)

    def PushTaskOutput(self, request: Any) -> Any:
        return self._call("push_task_output", request)

    def SendTaskHeartbeat(self, request: Any) -> Any:
        from flwr.supercore.servicer.runtime import runtime_handlers

        return runtime_handlers.send_task_heartbeat(request, self._state, self._task())

    def close(self) -> None:
        pass


class PersistentClientAppExecutor:
    """Run a SuperNode's ClientApp tasks in this process, one after the other.

    Two ways: :meth:`serve_forever` polls a SuperNode's Runtime API over HTTP (a process of its own beside the
    SuperNode); :meth:`run_pending`, called in the SuperNode's process right after it pulled a message, runs the
    pending tasks through the same Runtime API handlers without HTTP (what :class:`~dpfair.federated.LocalFederation`
    uses).

    Parameters
    ----------
    runtime_api_address : str, optional
        ``host:port`` of the SuperNode's Runtime API (its ``--port``); needed by :meth:`serve_forever` only.
    poll_interval : float
        Seconds to wait between two AcquireTask polls when no task is pending.
    """

    def __init__(self, runtime_api_address: str | None = None, *, poll_interval: float = DEFAULT_POLL_INTERVAL) -> None:
        problems = fast_path_problems()
        if problems:
            raise RuntimeError(f"the persistent ClientApp executor cannot run ({'; '.join(problems)}); use executor='flower'")
        self.runtime_api_address = runtime_api_address
        speed_up_object_pulls()
        self.poll_interval = float(poll_interval)
        self._apps: dict[str, Any] = {}  # FAB hash -> loaded ClientApp
        self._state: Any = None  # the SuperNode's state (run_pending): tasks then run without HTTP
        self.tasks_done = 0

    def run_pending(self, state: Any) -> int:
        """Run every pending ClientApp task of the SuperNode whose state is *state*, in this process.

        Parameters
        ----------
        state : flwr.supernode.nodestate.NodeState
            The state of the SuperNode this process runs.

        Returns
        -------
        int
            The number of tasks run.
        """
        from flwr.proto.runtime_pb2 import AcquireTaskRequest
        from flwr.supercore.constant import TaskType
        from flwr.supercore.servicer.runtime.runtime_handlers import acquire_task

        self._state = state
        request = AcquireTaskRequest(supported_task_types=[TaskType.CLIENT_APP.value], agentapp_fab_hashes=[])
        ran = 0
        while True:
            res = acquire_task(request, state)
            if not (res.HasField("task") and res.token):
                return ran
            try:
                self.run_task(res.token)
            except Exception as ex:  # a failed task must not stop the SuperNode; flwr expires the task
                print(f"[dpfair executor] task failed: {ex!r}", file=sys.stderr, flush=True)
            ran += 1

    def _client(self, token: str | None) -> Any:
        if self._state is not None and token is not None:
            return _LocalRuntime(self._state, token)
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
    if argv and argv[0] in ("supernode", "node"):
        cap = float(os.environ.get("DPFAIR_SUPERNODE_SLEEP_CAP", DEFAULT_SLEEP_CAP))
        run_supernode(argv[1:], sleep_cap=cap, inline=argv[0] == "node")
        return
    if argv and argv[0] == "superlink":
        run_superlink(argv[1:])
        return
    if argv and argv[0] == "serverapp":
        run_serverapp(argv[1:])
        return
    parser = argparse.ArgumentParser(prog="python -m dpfair.federated._executor")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("supernode", help="flower-supernode with capped idle sleeps (remaining args passed on)")
    sub.add_parser("node", help="supernode, running its ClientApps in-process (with --isolation process)")
    sub.add_parser("superlink", help="flower-superlink whose Fleet pulls wait for a message (remaining args passed on)")
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
