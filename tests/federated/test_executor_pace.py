"""The fast SuperNode's idle backoff counts a pulled message as traffic, so a faster ClientApp never polls slower.

The fleet loop of flwr's SuperNode sleeps 3 s after a pull that found no message and 0.5 s while a reply is
pending.  A ClientApp whose reply is ready at once causes no 0.5 s wait: a rule that saw traffic only in those
waits treated a busy node as idle and polled it at the idle pace.  Here the fleet loop's clock and pulls are
stand-ins: a node idle for longer than ``IDLE_AFTER`` pulls a message and its next sleep is the busy cap.
"""

from __future__ import annotations

import types

import pytest

pytest.importorskip("flwr")

from dpfair.federated import _executor


class _Clock:
    def __init__(self) -> None:
        self.now, self.slept = 0.0, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


@pytest.fixture
def fleet_loop(monkeypatch):
    import flwr.supernode.start_client_internal as sci

    clock = _Clock()
    fake_time = types.ModuleType("time")
    fake_time.monotonic, fake_time.sleep = clock.monotonic, clock.sleep
    pulled: list[int | None] = []
    monkeypatch.setattr(sci, "time", fake_time)
    monkeypatch.setattr(sci, "_pull_and_store_message", lambda *a, **k: pulled.pop(0))
    assert _executor._patch_supernode_sleep(0.05)
    return sci, clock, pulled


def test_a_pulled_message_is_traffic_even_when_the_reply_is_ready_at_once(fleet_loop):
    sci, clock, pulled = fleet_loop
    clock.now = _executor.IDLE_AFTER + 1.0  # idle since the start
    pulled.append(None)
    assert sci._pull_and_store_message() is None
    sci.time.sleep(3)  # no message: the idle pace
    assert clock.slept[-1] == _executor.IDLE_SLEEP
    pulled.append(42)  # a message; its reply is pushed without any 0.5 s wait
    assert sci._pull_and_store_message() == 42
    clock.now += 0.01
    pulled.append(None)
    sci._pull_and_store_message()
    sci.time.sleep(3)  # the next empty pull right after traffic: the busy cap, not the idle pace
    assert clock.slept[-1] == 0.05
    clock.now += _executor.IDLE_AFTER + 0.1
    sci.time.sleep(3)
    assert clock.slept[-1] == _executor.IDLE_SLEEP  # and back to idle once quiet


def test_the_sleep_only_rule_is_the_mutant_this_catches(fleet_loop, monkeypatch):
    """Without the pull counting as traffic (the old rule) the busy node sleeps the idle pace: the test above fails."""
    sci, clock, pulled = fleet_loop
    import flwr.supernode.start_client_internal as real

    inner = real._pull_and_store_message.__closure__  # the wrapper's closure holds the stand-in pull
    assert inner is not None
    clock.now = _executor.IDLE_AFTER + 1.0
    pulled.append(42)
    monkeypatch.setattr(sci, "_pull_and_store_message", lambda *a, **k: pulled.pop(0))  # unwrapped: the old rule
    sci._pull_and_store_message()
    clock.now += 0.01
    sci.time.sleep(3)
    assert clock.slept[-1] == _executor.IDLE_SLEEP
