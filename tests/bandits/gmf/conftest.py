"""Fixtures of the GMF engine tests."""

from __future__ import annotations

import pytest

from dpfair.bandits import BanditPolicy


@pytest.fixture
def compiled_runs(monkeypatch):
    """Names of the policies whose rounds ran compiled (``play_compiled`` returned actions, not ``None``).

    The spy proves the compiled rounds ran: no silent fallback to the numpy rounds.
    """
    ran, original = [], BanditPolicy.play_compiled

    def spy(self, context_ids, rewards):
        actions = original(self, context_ids, rewards)
        if actions is not None:
            ran.append(type(self).__name__)
        return actions

    monkeypatch.setattr(BanditPolicy, "play_compiled", spy)
    return ran
