"""Toy Flower app for dpfair's deployment tests.

Each round the server pushes ``{"round": r, "x": r * ones(3)}`` to every node still answering and pulls the
replies with its own short poll loop (``Grid.push_messages`` / ``Grid.pull_messages``, not
``send_and_receive``, which sleeps 3 s between pulls). A client replies with its partition id, a message
counter kept in ``context.state`` and ``sum(x)``. A node that does not answer within ``round-timeout`` (or
answers with an error) is recorded as dropped from that round and not asked again. The server writes a JSON
result to ``result-path`` and one line per finished round to ``progress-path``.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

server = ServerApp()
client = ClientApp()


def _exchange(grid: Grid, messages: list[Message], timeout: float) -> dict[int, Message]:
    """Push *messages*, pull replies until all arrived or *timeout*; replies keyed by source node id."""
    ids = {mid for mid in grid.push_messages(messages) if mid}
    replies: dict[int, Message] = {}
    deadline = time.monotonic() + timeout
    while ids and time.monotonic() < deadline:
        for reply in grid.pull_messages(list(ids)):
            ids.discard(reply.metadata.reply_to_message_id)
            replies[reply.metadata.src_node_id] = reply
        if ids:
            time.sleep(float(os.environ.get("TOY_PULL_SLEEP", "0.005")))
    return replies


def _payload(r: int, use_arrays: bool) -> RecordDict:
    """The round-*r* message: ``x`` as an ``ArrayRecord`` (several flwr objects, each one more HTTP request per
    hop) or as bytes inside the ``ConfigRecord`` (one object)."""
    x = np.full(3, float(r))
    if use_arrays:
        return RecordDict({"c": ConfigRecord({"round": r}), "a": ArrayRecord({"x": Array(x)})})
    return RecordDict({"c": ConfigRecord({"round": r, "x": x.tobytes()})})


@server.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    n_nodes = int(cfg["n-nodes"])
    deadline = time.monotonic() + float(cfg["wait-nodes-timeout"])
    nodes = sorted(grid.get_node_ids())
    while len(nodes) < n_nodes and time.monotonic() < deadline:
        time.sleep(0.05)
        nodes = sorted(grid.get_node_ids())
    alive = list(nodes)
    partition: dict[int, int] = {}
    dropped: dict[str, dict] = {}
    rounds, latencies = [], []
    progress = str(cfg["progress-path"])
    for r in range(int(cfg["rounds"])):
        t0 = time.perf_counter()
        msgs = [
            Message(
                _payload(r, bool(cfg["use-arrays"])),
                dst_node_id=node,
                message_type="query",
            )
            for node in alive
        ]
        replies = _exchange(grid, msgs, float(cfg["round-timeout"]))
        latencies.append(time.perf_counter() - t0)
        got = {}
        for node in list(alive):
            reply = replies.get(node)
            if reply is None or reply.has_error():
                reason = "no reply" if reply is None else f"error: {reply.error.reason}"
                dropped[str(node)] = {"round": r, "partition": partition.get(node), "reason": reason}
                alive.remove(node)
                continue
            c = reply.content["c"]
            partition[node] = int(c["partition"])
            got[int(c["partition"])] = {"count": int(c["count"]), "sum": float(c["sum"]), "pid": int(c["pid"])}
        rounds.append(got)
        if progress:
            with open(progress, "a") as fh:
                fh.write(f"{r}\n")
    result = {
        "nodes": nodes,
        "partition": {str(k): v for k, v in partition.items()},
        "rounds": rounds,
        "latencies": latencies,
        "dropped": dropped,
        "serverapp_pid": os.getpid(),
    }
    with open(str(cfg["result-path"]), "w") as fh:
        json.dump(result, fh)


@client.query()
def query(msg: Message, context: Context) -> Message:
    state = context.state
    count = int(state["toy"]["count"]) + 1 if "toy" in state else 1
    state["toy"] = ConfigRecord({"count": count})
    if "a" in msg.content:
        x = msg.content["a"]["x"].numpy()
    else:
        x = np.frombuffer(msg.content["c"]["x"], dtype=np.float64)
    reply = ConfigRecord(
        {
            "partition": int(context.node_config["partition-id"]),
            "count": count,
            "sum": float(np.sum(x)),
            "pid": os.getpid(),
        }
    )
    return Message(RecordDict({"c": reply}), reply_to=msg)
