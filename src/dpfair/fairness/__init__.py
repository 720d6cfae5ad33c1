"""Fairness metrics shared by every dpfair experiment (see :mod:`dpfair.fairness.metrics`)."""

from dpfair.fairness import metrics
from dpfair.fairness.metrics import *  # noqa: F403  (the public names are metrics.__all__)

__all__ = list(metrics.__all__)
