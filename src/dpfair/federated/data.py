"""An agent's own data for the federated apps: a CSV or Parquet file of contexts and outcomes.

Each organisation keeps its file on its own machine and points its SuperNode at it::

    flower-supernode ... --node-config "partition-id=0 data-path='/srv/agent-0.parquet'"

The ClientApp's default data source (:func:`dpfair.federated.make_client_app`) reads the node setting
``data-path`` (else the run setting ``data-path`` with ``{agent}`` replaced by the agent's index; else the
synthetic world).  The file is read once per process (cached by path, size and modification time).

Layout: one row per round and candidate action, columns

``round``
    ``1 .. T`` (every round of the run present);
``action``
    ``0 .. n_actions - 1`` (every action of every round present, once);
``x0 .. x{dim-1}``
    the candidate's context (numbers);
``outcome``
    the reward the agent observes if it selects that candidate (a number within the run's ``reward-bound``).

Other columns are ignored.  Nothing of the file leaves the agent but what its learner releases; its fairness
regret cannot be scored (the true merits are unknown), so the agent's metrics hold its actions and the rewards
it observed (``<learner>:actions`` and ``<learner>:observed`` in its ``agent-<i>.npz``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FileStream", "load_stream", "resolve_data_path", "write_agent_file"]

_CACHE: dict[tuple[str, int, int, int, int, int], FileStream] = {}


class FileStream:
    """An agent's stream of contexts and outcomes read from a file (see the module's layout).

    Parameters
    ----------
    contexts : numpy.ndarray of shape (horizon, n_actions, dim)
        Round ``t``'s candidates at index ``t - 1``.
    outcomes : numpy.ndarray of shape (horizon, n_actions)
        The reward of each candidate.
    """

    def __init__(self, contexts: np.ndarray, outcomes: np.ndarray) -> None:
        self.contexts_ = np.asarray(contexts, dtype=float)
        self.outcomes_ = np.asarray(outcomes, dtype=float)

    def contexts(self, t: int) -> np.ndarray:
        """The candidates of round *t*.

        Parameters
        ----------
        t : int
            The round, ``1 .. horizon``.

        Returns
        -------
        numpy.ndarray of shape (n_actions, dim)
            The file's contexts of that round.
        """
        return self.contexts_[t - 1]

    def reward(self, t: int, action: int) -> float:
        """The outcome of candidate *action* in round *t*.

        Parameters
        ----------
        t : int
            The round, ``1 .. horizon``.
        action : int
            The chosen candidate.

        Returns
        -------
        float
            The file's outcome of that candidate in that round.
        """
        return float(self.outcomes_[t - 1, int(action)])


def resolve_data_path(run_config: Mapping[str, Any], agent: int, node_config: Mapping[str, Any] | None = None) -> str:
    """The data file of *agent*: the node's ``data-path``, else the run's with ``{agent}`` filled in ("" for none).

    Parameters
    ----------
    run_config : mapping
        Run settings (``data-path``).
    agent : int
        The agent's index (its ``partition-id``).
    node_config : mapping, optional
        The SuperNode's ``--node-config`` (``data-path``).

    Returns
    -------
    str
        The path, or ``""`` when neither names one.
    """
    own = (node_config or {}).get("data-path")
    if isinstance(own, str) and own:
        return own
    shared = str(run_config.get("data-path", "") or "")
    return shared.replace("{agent}", str(int(agent))) if shared else ""


def _read_table(path: Path) -> dict[str, np.ndarray]:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import importlib.util

        import pandas as pd

        if importlib.util.find_spec("pyarrow") is None and importlib.util.find_spec("fastparquet") is None:
            raise ImportError(f"data file {path.name}: reading Parquet needs pyarrow (pip install pyarrow); or use CSV")

        frame = pd.read_parquet(path)
        return {str(c): frame[c].to_numpy() for c in frame.columns}
    if suffix == ".csv":
        import pandas as pd

        frame = pd.read_csv(path)
        return {str(c).strip(): frame[c].to_numpy() for c in frame.columns}
    raise ValueError(f"data file {path.name}: expected a .csv or .parquet file")


def load_stream(path: str | os.PathLike[str], *, horizon: int, n_actions: int, dim: int) -> FileStream:
    """Read an agent's file into a :class:`FileStream` (once per process: cached by path, size and time).

    Parameters
    ----------
    path : path
        A ``.csv`` or ``.parquet`` file of the module's layout.
    horizon, n_actions, dim : int
        The run's ``T``, actions per round and context dimension; the file must hold each of rounds
        ``1 .. horizon`` with ``n_actions`` candidates of ``dim`` features (extra rounds are ignored).

    Returns
    -------
    FileStream
        The agent's stream (the same object for the same file while it is unchanged).

    Raises
    ------
    ValueError
        A missing column, a missing or repeated (round, action), a value that is not a finite number.
    OSError
        The file cannot be read.
    ImportError
        A Parquet file without pyarrow (or fastparquet).
    """
    target = Path(path).expanduser().resolve()
    info = target.stat()
    key = (str(target), info.st_size, info.st_mtime_ns, int(horizon), int(n_actions), int(dim))
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    table = _read_table(target)
    features = [f"x{j}" for j in range(int(dim))]
    missing = [c for c in ("round", "action", "outcome", *features) if c not in table]
    if missing:
        raise ValueError(f"data file {target.name}: no column(s) {missing} (layout: round, action, x0..x{dim - 1}, outcome)")
    try:
        rounds = np.asarray(table["round"], dtype=float)
        actions = np.asarray(table["action"], dtype=float)
        values = np.column_stack([np.asarray(table[c], dtype=float) for c in (*features, "outcome")])
    except (TypeError, ValueError):
        raise ValueError(f"data file {target.name}: round, action, x0..x{dim - 1} and outcome must be numbers") from None
    keep = (rounds >= 1) & (rounds <= horizon)
    rounds, actions, values = rounds[keep], actions[keep], values[keep]
    if not (np.all(rounds == np.round(rounds)) and np.all(actions == np.round(actions))):
        raise ValueError(f"data file {target.name}: round and action must be integers")
    if actions.size and (actions.min() < 0 or actions.max() >= n_actions):
        raise ValueError(f"data file {target.name}: action must be in [0, {n_actions})")
    index = (rounds.astype(np.int64) - 1) * int(n_actions) + actions.astype(np.int64)
    counts = np.bincount(index, minlength=int(horizon) * int(n_actions)) if index.size else np.zeros(horizon * n_actions)
    if np.any(counts != 1):
        first = int(np.flatnonzero(counts != 1)[0])
        t, a = first // int(n_actions) + 1, first % int(n_actions)
        what = "missing" if counts[first] == 0 else "repeated"
        raise ValueError(f"data file {target.name}: round {t}, action {a} is {what} (each of rounds 1..{horizon} needs "
                         f"actions 0..{n_actions - 1} once)")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"data file {target.name}: a context or outcome is not a finite number")
    ordered = np.empty((int(horizon) * int(n_actions), values.shape[1]))
    ordered[index] = values
    ordered = ordered.reshape(int(horizon), int(n_actions), values.shape[1])
    stream = FileStream(ordered[:, :, :-1], ordered[:, :, -1])
    _CACHE.clear()  # one agent per process: keep the latest file only
    _CACHE[key] = stream
    return stream


def write_agent_file(path: str | os.PathLike[str], contexts: np.ndarray, outcomes: np.ndarray) -> Path:
    """Write contexts ``(horizon, n_actions, dim)`` and outcomes ``(horizon, n_actions)`` in the module's layout.

    Parameters
    ----------
    path : path
        A ``.csv`` or ``.parquet`` file to write (its folder is created).
    contexts : numpy.ndarray of shape (horizon, n_actions, dim)
        Round ``t``'s candidates at index ``t - 1``.
    outcomes : numpy.ndarray of shape (horizon, n_actions)
        The reward of each candidate.

    Returns
    -------
    pathlib.Path
        The file written.
    """
    import pandas as pd

    contexts, outcomes = np.asarray(contexts, dtype=float), np.asarray(outcomes, dtype=float)
    horizon, n_actions, dim = contexts.shape
    if outcomes.shape != (horizon, n_actions):
        raise ValueError(f"outcomes have shape {outcomes.shape}; expected {(horizon, n_actions)}")
    frame = pd.DataFrame({"round": np.repeat(np.arange(1, horizon + 1), n_actions),
                          "action": np.tile(np.arange(n_actions), horizon)})
    for j in range(dim):
        frame[f"x{j}"] = contexts[:, :, j].ravel()
    frame["outcome"] = outcomes.ravel()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.suffix.lower() == ".parquet":
        frame.to_parquet(target, index=False)
    elif target.suffix.lower() == ".csv":
        frame.to_csv(target, index=False)
    else:
        raise ValueError(f"{target.name}: expected a .csv or .parquet file")
    return target
