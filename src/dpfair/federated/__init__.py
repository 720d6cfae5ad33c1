"""dpfair's federated learners on a real federated engine: Flower (``pip install "dpfair[federated]"``).

* :func:`make_server_app` / :func:`make_client_app` -- Flower apps running Fed-FairX-LinUCB and
  Priv-FairX-LinUCB over the Message API (:mod:`dpfair.federated.apps`);
* :func:`app_dir` -- the Flower app project shipped with dpfair (``flwr run <app_dir()> <connection>``).

``flwr`` is imported only when an app is built, so ``import dpfair.federated`` works without it.
"""

from __future__ import annotations

from pathlib import Path

from dpfair.federated.apps import RUN_CONFIG, learner_from_config, make_client_app, make_server_app

__all__ = ["RUN_CONFIG", "app_dir", "learner_from_config", "make_client_app", "make_server_app"]


def app_dir() -> Path:
    """The folder of the Flower app project (``pyproject.toml`` with ``[tool.flwr.app]``) shipped with dpfair.

    Returns
    -------
    pathlib.Path
    """
    return Path(__file__).resolve().parent / "flower_app"
