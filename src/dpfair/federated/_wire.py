"""The wire between the ServerApp and the ClientApps of :mod:`dpfair.federated.apps`: one ``config`` record per
message, the agents' statistics packed as float64 bytes, the server's exchange of one message round, and the
refusal an agent answers with (a fixed code and an argument's name, never a text that may hold private values).

Split from :mod:`dpfair.federated.apps`, which uses it on both sides; it imports nothing of it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

_MESSAGE_TYPE = "train"


def _write_json(path: str, payload: Any) -> None:
    """Atomically: a temporary file in the same folder, then a rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        json.dump(payload, handle, indent=1, default=str)
    os.replace(tmp, target)


def _records(step: str, **config: Any) -> Any:
    from flwr.app import ConfigRecord, RecordDict

    return RecordDict({"config": ConfigRecord({"step": step, **config})})


def _pack(gram: np.ndarray, target: np.ndarray) -> bytes:
    """``d, U (row-major), u`` as little-endian float64 bytes: one value of the message's one ConfigRecord.

    Each Flower ``Array`` is a separate object that every hop stores and fetches with its own request;
    bytes in the ``config`` record keep a message at three objects, whatever the number of learners.
    """
    d = target.shape[0]
    values = np.concatenate([[float(d)], np.asarray(gram, dtype=float).ravel(), np.asarray(target, dtype=float)])
    return values.astype("<f8").tobytes()


def _unpack(value: Any, dim: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`_pack`, refusing anything but ``dim x dim`` and ``dim`` finite values."""
    if not isinstance(value, bytes) or len(value) % 8:
        raise _Refused(f"{what} must be packed float64 bytes, got {type(value).__name__}")
    flat = np.frombuffer(value, dtype="<f8")
    if flat.size != 1 + dim * dim + dim or flat[0] != dim:
        got = int(flat[0]) if flat.size and np.isfinite(flat[0]) else "?"
        raise _Refused(f"{what} have dimension {got} ({flat.size} values); expected {dim} ({1 + dim * dim + dim} values)")
    gram, target = flat[1 : 1 + dim * dim].reshape(dim, dim).copy(), flat[1 + dim * dim :].copy()
    if not (np.isfinite(gram).all() and np.isfinite(target).all()):
        raise _Refused(f"{what} hold NaN or infinite values")
    return gram, target


class _Refused(ValueError):
    """A message the agent will not act on, or an error while it acts: a fixed code and the argument's name.

    ``detail`` (which may hold private values) goes to the agent's local log only; the reply carries
    ``code`` and ``argument`` (:data:`ERROR_CODES`).
    """

    def __init__(self, detail: str, *, code: str = "malformed_message", argument: str = "config") -> None:
        super().__init__(detail)
        self.code, self.argument = code, argument


def _local_log() -> Any:
    """The agent's local log: Flower's logger on the client (never sent to the server)."""
    import logging

    return logging.getLogger("flwr")


def _flower_error(reply: Any) -> str:
    """An error reply of Flower's own (the ClientApp failed outside the agent's handler): its code only.

    Flower's ``reason`` holds the exception's text, which may hold the agent's private values: it is not
    recorded here (the agent's node logs it).
    """
    return f"the ClientApp failed (Flower error code {int(reply.error.code)}; the details are in the agent's log)"


class _Exchange:
    """Push one message per live agent and pull the replies with a short poll (not ``send_and_receive``'s 3 s)."""

    def __init__(self, grid: Any, timeout: float, wire_log: str) -> None:
        self.grid, self.timeout, self.wire_log = grid, timeout, wire_log
        self.count = 0

    def __call__(self, contents: Mapping[int, Any]) -> dict[int, Any]:
        from flwr.app import Message

        messages = [Message(content, dst_node_id=node, message_type=_MESSAGE_TYPE, ttl=max(self.timeout, 5.0) + 60.0)
                    for node, content in contents.items()]
        self.count += 1
        ids = set(self.grid.push_messages(messages))
        replies: dict[int, Any] = {}
        deadline = time.monotonic() + self.timeout
        pause = 0.001
        while ids and time.monotonic() < deadline:
            got = list(self.grid.pull_messages(ids))
            for reply in got:
                ids.discard(reply.metadata.reply_to_message_id)
                replies[reply.metadata.src_node_id] = reply
                self._log(reply)
            if got:  # the limit counts from the round's latest reply: the Simulation Engine answers one after another
                deadline = max(deadline, time.monotonic() + self.timeout)
            pause = 0.001 if got else min(0.02, pause * 2)
            if ids:
                time.sleep(pause)
        return replies

    def _log(self, reply: Any) -> None:
        if not self.wire_log:
            return
        entry: dict[str, Any] = {"node": reply.metadata.src_node_id}
        if reply.has_error():
            entry["error"] = _flower_error(reply)
        else:
            for name, record in reply.content.items():
                entry[name] = {k: (np.frombuffer(v, dtype="<f8").tolist() if isinstance(v, bytes) else
                                   v if isinstance(v, int | float | str | bool) else repr(v)) for k, v in record.items()}
        with open(self.wire_log, "a") as handle:
            handle.write(json.dumps(entry) + "\n")
