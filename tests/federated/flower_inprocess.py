"""An in-process stand-in for Flower's Grid: the same ServerApp and ClientApp code, messages passed in memory.

It exercises the apps' protocol (schedules, releases, drops, refusals) in milliseconds; the tests in
``test_flower_deployment.py`` run the same apps over real SuperLink and SuperNode processes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from dpfair.federated import apps

_ids = itertools.count(1)


def task_identity() -> None:
    """Messages built outside a Flower process need a task identity (Flower sets it in its processes)."""
    from flwr.supercore.task_identity import TaskIdentity

    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 1


class InProcessGrid:
    """``get_node_ids`` / ``push_messages`` / ``pull_messages`` over ClientApp handlers in this process.

    ``silent``: node -> number of messages after which the node stops answering (a dead SuperNode).
    ``tamper``: optional ``(node, message) -> message`` applied before delivery (a malformed message).
    ``seen``: every reply that reached the server, in order.
    """

    def __init__(self, run_config: Mapping[str, Any], n_nodes: int, *, stream_factory: Callable | None = None,
                 silent: Mapping[int, int] | None = None, tamper: Callable[[int, Any], Any] | None = None) -> None:
        from flwr.app import Context, RecordDict

        task_identity()
        self.nodes = {100 + i: Context(1, 100 + i, {"partition-id": i}, RecordDict(), dict(run_config)) for i in range(n_nodes)}
        self.factory = apps._default_stream if stream_factory is None else stream_factory
        self.silent = dict(silent or {})
        self.tamper = tamper
        self.delivered = dict.fromkeys(self.nodes, 0)
        self.pending: list[Any] = []
        self.seen: list[Any] = []
        apps._AGENTS.clear()

    def get_node_ids(self) -> Iterable[int]:
        return list(self.nodes)

    def push_messages(self, messages: Iterable[Any]) -> list[str]:
        ids = []
        for message in messages:
            mid = f"m{next(_ids)}"
            message.metadata.__dict__["_message_id"] = mid
            node = message.metadata.dst_node_id
            ids.append(mid)
            self.delivered[node] += 1
            if node in self.silent and self.delivered[node] > self.silent[node]:
                continue  # the node is gone: no reply, ever
            if self.tamper is not None:
                message = self.tamper(node, message)
            self.pending.append(apps._handle(message, self.nodes[node], self.factory))
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> list[Any]:
        wanted = set(message_ids)
        out = [r for r in self.pending if r.metadata.reply_to_message_id in wanted]
        self.pending = [r for r in self.pending if r.metadata.reply_to_message_id not in wanted]
        self.seen.extend(out)
        return out
