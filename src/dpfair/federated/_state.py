"""An agent's state between Flower messages (``context.state``): small, picklable, no lattice tables.

Flower moves a ClientApp's ``context.state`` with every message (SuperNode -> ClientApp -> SuperNode), so it
must stay small: the learners are pickled without the lattice samplers' tables (each
:class:`~dpfair.privacy.lattice.LatticeGaussian` is rebuilt from ``(sigma, granularity)`` where the state is
loaded, once per process and shared, :func:`cached_lattice`), and the metrics are packed as arrays.  The
secure noise source pickles as a new secure source (:class:`~dpfair.privacy.SecureNoise`); a seeded one
keeps its generator's state.  Exp 1's learner at T = 2000: ~60 KB (8.3 MB with the tables).
"""

from __future__ import annotations

import functools
import io
import pickle
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["cached_lattice", "dumps_state", "pack_metrics", "unpack_metrics"]


@functools.lru_cache(maxsize=16)
def cached_lattice(sigma: float, granularity: float) -> Any:
    """This process's ``LatticeGaussian(sigma, granularity)``: built once, shared (its tables are read-only)."""
    from dpfair.privacy.lattice import LatticeGaussian

    return LatticeGaussian(sigma, granularity)


class _StatePickler(pickle.Pickler):
    """Pickle an agent's learners without the lattice samplers' tables (MBs): each is rebuilt from its
    ``(sigma, granularity)`` where the state is loaded, once per process (:func:`cached_lattice`)."""

    def reducer_override(self, obj: Any) -> Any:
        from dpfair.privacy.lattice import LatticeGaussian

        if type(obj) is LatticeGaussian:
            return cached_lattice, (float(obj.sigma), float(obj.granularity))
        return NotImplemented


def dumps_state(obj: Any) -> bytes:
    """Pickle *obj* (an agent's learners) with :class:`_StatePickler`; ``pickle.loads`` reads it back."""
    buffer = io.BytesIO()
    _StatePickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)  # SecureNoise pickles as "new"
    return buffer.getvalue()


def pack_metrics(metrics: Mapping[str, Mapping[str, list[Any]]]) -> bytes:
    """The agent's metrics so far as one ``.npz`` (compact arrays, not pickled lists of Python numbers)."""
    arrays = {}
    for label, m in metrics.items():
        arrays[f"{label}|actions"] = np.asarray(m["actions"], dtype=np.int64)
        arrays[f"{label}|fair"] = np.asarray(m["fair"], dtype=float)
        arrays[f"{label}|reward"] = np.asarray(m["reward"], dtype=float)
        if "observed" in m:
            arrays[f"{label}|observed"] = np.asarray(m["observed"], dtype=float)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def unpack_metrics(blob: bytes) -> dict[str, dict[str, list[Any]]]:
    """Inverse of :func:`pack_metrics`."""
    out: dict[str, dict[str, list[Any]]] = {}
    with np.load(io.BytesIO(blob), allow_pickle=False) as data:
        for key in data.files:
            label, _, name = key.partition("|")
            out.setdefault(label, {})[name] = data[key].tolist()
    return out
