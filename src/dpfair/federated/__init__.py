"""dpfair's federated learners on a real federated engine: Flower (``pip install "dpfair[federated]"``).

* :func:`make_server_app` / :func:`make_client_app` -- Flower apps running Fed-FairX-LinUCB and
  Priv-FairX-LinUCB over the Message API (:mod:`dpfair.federated.apps`);
* :func:`app_dir` -- the Flower app project shipped with dpfair (``flwr run <app_dir()> <connection>``);
* :class:`LocalFederation` -- a SuperLink and one SuperNode per agent as local processes, and
  :func:`run_demo` (``dpfair federated demo``) on top of it;
* :class:`FileStream`, :func:`load_stream`, :func:`write_agent_file` -- each agent's own file of contexts and
  outcomes (CSV / Parquet, :mod:`dpfair.federated.data`), named by its SuperNode's ``data-path`` node setting.

``flwr`` is imported only when an app is built, so ``import dpfair.federated`` works without it.
"""

from __future__ import annotations

from dpfair.federated._deployment import LocalFederation, app_dir, format_run_config
from dpfair.federated.apps import RUN_CONFIG, learner_from_config, learners_from_config, make_client_app, make_server_app
from dpfair.federated.data import FileStream, load_stream, write_agent_file
from dpfair.federated.demo import DemoResult, run_demo

__all__ = [
    "RUN_CONFIG",
    "DemoResult",
    "FileStream",
    "LocalFederation",
    "app_dir",
    "format_run_config",
    "learner_from_config",
    "learners_from_config",
    "load_stream",
    "make_client_app",
    "make_server_app",
    "run_demo",
    "write_agent_file",
]
