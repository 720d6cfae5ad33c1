"""Secure factorized PRIVATIZER noise: keyed PRF words against OS-CSPRNG words, state size and cache rebuild.

Printed, never asserted; on the shared 2-core machine the figures move with the load (printed before and after).

1. **Cost per release** (secure noise, ``continual="sqrt"``, ``d = 5``, 10 agents in one batch, the noise
   only): the keyed BLAKE2b PRF in counter mode (the default: noise rebuilt from the keys) against the
   reference in the same process, the same Privatizer drawing its ``z`` words from the OS CSPRNG in draw order
   (the previous secure path: every drawn ``z`` then had to be kept in the state).  Both are timed over the same releases,
   interleaved in chunks so that the load hits both alike.
2. **Pickled size** of one agent's PRIVATIZER (batch ``(1, 1)``, ``tau = 20,002``: Exp 1) after ``k`` releases.
3. **Rebuild** of the table after unpickling at ``k`` releases in a process that never saw the agent
   (``O(k log k)``: the square root's doubling FFT blocks replayed).
4. **Noise state per agent** in memory after all ``tau`` releases, for ``continual="sqrt"`` and ``"blt"`` (the
   table of release noise plus the stream's arrays, counted from the arrays themselves), at Exp 1's ``tau =
   20,002`` and Exp 3's ``tau = 100,000`` (bounded-gap, ``m = 50``: a release every round), with Exp 3's total at
   ``m = 50`` and the worst release's noise std of each.
5. **The exact BLT release** (``continual="blt-exact"``): its state per agent (the encoder's integers and the
   decoder's doubles, counted from the objects) after ``k`` releases of Exp-1-sized increments, its worst
   release's noise std against the square root's, and the wall time of one ``Privatizer.release`` of 10 agents
   (seeded keyed words) against the square root's.

Run: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_privatizer_state.py [releases]`` (default 4000;
``0`` runs part 4 only).
"""

from __future__ import annotations

import math
import os
import pickle
import sys
import time
import warnings

import numpy as np

from dpfair.bandits.fairx import _privatizer_factorized as factorized
from dpfair.bandits.fairx.privatizer import Privatizer
from dpfair.privacy.budget import charged_release

DIM, AGENTS, TAU = 5, 10, 20_002


def _privatizer(shape: tuple[int, ...], reference: bool = False) -> Privatizer:
    with charged_release(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priv = Privatizer(2.0, 0.1, math.sqrt(5), DIM, TAU, shape, continual="sqrt")
    if reference:  # the previous secure path: OS-CSPRNG words in draw order, kept in the state
        priv._row_keys = None
        priv._factorized.key_digest = None
    return priv


def per_release(n_releases: int) -> None:
    """Noise of ``n_releases`` releases of 10 agents, PRF against OS-CSPRNG words, interleaved in chunks."""
    prf, reference = _privatizer((1, AGENTS)), _privatizer((1, AGENTS), reference=True)
    elapsed = {"prf": 0.0, "os-csprng": 0.0}
    chunk = 250
    for start in range(0, n_releases, chunk):
        upto = np.full((1, AGENTS), min(start + chunk, n_releases))
        for name, priv in (("prf", prf), ("os-csprng", reference)):
            began = time.perf_counter()
            for k in range(start + 1, int(upto[0, 0]) + 1):
                priv.release_noise_units(np.full((1, AGENTS), k))
            elapsed[name] += time.perf_counter() - began
    prf_us, ref_us = (elapsed[n] / n_releases * 1e6 for n in ("prf", "os-csprng"))
    print(f"noise per release (10 agents, sqrt, d = 5, {n_releases} releases): keyed PRF {prf_us:.1f} us, "
          f"OS-CSPRNG words {ref_us:.1f} us, ratio {prf_us / ref_us:.2f}")


def state_and_rebuild(checkpoints: tuple[int, ...]) -> None:
    """Pickled size at each checkpoint and the rebuild of the table after unpickling there."""
    one, reference = _privatizer((1, 1)), _privatizer((1, 1), reference=True)
    zero_gram, zero_target = np.zeros((1, 1, DIM, DIM)), np.zeros((1, 1, DIM))
    done = 0
    for k in checkpoints:
        for _ in range(k - done):
            one.release(zero_gram, zero_target)
            reference.release(zero_gram, zero_target)
        done = k
        blob = pickle.dumps(one)
        factorized._clear_cache()  # a process that never saw this agent
        back = pickle.loads(blob)
        began = time.perf_counter()
        rebuilt = back.release_noise_units(back.count)[0]
        rebuild = time.perf_counter() - began
        assert np.array_equal(rebuilt, one.release_noise_units(one.count)[0])
        print(f"after {k:>6} releases: pickled PRF state {len(blob):>8,} B (OS-CSPRNG words: "
              f"{len(pickle.dumps(reference)):>10,} B); rebuild after unpickling {rebuild * 1e3:8.1f} ms")


def _array_bytes(obj: object) -> int:
    """Bytes of the numpy arrays held by ``obj``'s attributes (one level: the stream's buffers, spectra, ...)."""
    return sum(v.nbytes for v in vars(obj).values() if isinstance(v, np.ndarray))


def noise_state(taus: tuple[int, ...] = (TAU, 100_000), agents: int = 50) -> None:
    """Noise state of one agent after all ``tau`` releases, square root against BLT (secure noise, ``d = 5``)."""
    for tau in taus:
        sizes, worst = {}, {}
        for continual in ("sqrt", "blt"):
            with charged_release(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                priv = Privatizer(2.0, 0.1, math.sqrt(5), DIM, tau, (1, 1), continual=continual)
            priv._factorized.extend(tau)
            table = priv._factorized._state()
            sizes[continual] = table.table.nbytes + _array_bytes(table.stream)
            worst[continual] = priv.calibration.node_sigma * priv.calibration.release_factor
            del priv, table
            factorized._clear_cache()
        print(f"tau = {tau:>7,}: noise state per agent sqrt {sizes['sqrt'] / 2**20:7.1f} MiB, blt "
              f"{sizes['blt'] / 2**20:6.1f} MiB ({sizes['blt'] / sizes['sqrt']:.2f}); {agents} agents: sqrt "
              f"{agents * sizes['sqrt'] / 2**20:7.0f} MiB, blt {agents * sizes['blt'] / 2**20:5.0f} MiB; worst release "
              f"std blt / sqrt {worst['blt'] / worst['sqrt']:.4f}")


def exact_state(checkpoints: tuple[int, ...] = (100, 2_000), taus: tuple[int, ...] = (TAU, 100_000)) -> None:
    """State per agent of ``continual="blt-exact"`` after ``k`` releases; its noise and release time against sqrt."""
    rng = np.random.default_rng(0)
    keys = np.arange(1, AGENTS + 1, dtype=np.uint64).reshape(1, AGENTS)
    for tau in taus:
        with charged_release(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exact = Privatizer(2.0, 0.1, math.sqrt(5), DIM, tau, (1, AGENTS), continual="blt-exact",
                               random_state=0, tree_keys=keys)
            sqrt = Privatizer(2.0, 0.1, math.sqrt(5), DIM, tau, (1, AGENTS), continual="sqrt", random_state=0,
                              tree_keys=keys)
        ratio = exact.calibration.node_sigma * exact.calibration.release_factor / (
            sqrt.calibration.node_sigma * sqrt.calibration.release_factor)
        elapsed = {"blt-exact": 0.0, "sqrt": 0.0}
        done = 0
        for k in checkpoints:
            for _ in range(k - done):
                x = rng.uniform(-1, 1, size=(1, AGENTS, 5 * DIM)).reshape(1, AGENTS, 5, DIM) / 2  # 5 rounds
                gram, target = np.einsum("...ri,...rj->...ij", x, x), x.sum(axis=-2)
                for name, priv in (("blt-exact", exact), ("sqrt", sqrt)):
                    began = time.perf_counter()
                    priv.release(gram, target)
                    elapsed[name] += time.perf_counter() - began
            done = k
            mech = exact._exact_blt
            state = (sum(sys.getsizeof(v) for v in mech._encoder.flat) + mech._encoder.nbytes
                     + mech._decoder.nbytes + mech._total.nbytes) / AGENTS
            print(f"tau = {tau:>7,}, blt-exact after {k:>5,} releases: state per agent {state / 1024:.1f} KiB "
                  f"(pickled, 10 agents: {len(pickle.dumps(exact)) / 1024:.1f} KiB); worst release std / sqrt "
                  f"{ratio:.4f}; release of 10 agents {1e3 * elapsed['blt-exact'] / k:.2f} ms (sqrt "
                  f"{1e3 * elapsed['sqrt'] / k:.2f} ms)")
        factorized._clear_cache()


if __name__ == "__main__":
    releases = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    print(f"load average before: {os.getloadavg()}")
    if releases:
        per_release(releases)
        state_and_rebuild((10, 200, 2_000, 20_000))
    noise_state()
    exact_state()
    print(f"load average after: {os.getloadavg()}")
