"""The PRIVATIZER of Priv-FairX-LinUCB (Solanki, Jain & Gujar, Algorithm 2): tree-based releases of each
agent's ridge statistics at the communication rounds.

One binary tree per agent runs over the *communication rounds* (not the bandit rounds): the
element inserted at communication round ``k`` is what the agent gathered since the previous one,
``[S | s]`` with ``S = sum x x^T`` and ``s = sum x y`` (the *increment*), rounded to the noise grid.
Each node of the tree is noised once, when it is completed, and the release at round ``k`` is the
running sum of the rounded increments plus the noise of the ``popcount(k)`` nodes of the binary
decomposition of ``k`` (Algorithm 2, lines 10-15; Dubey & Pentland 2020, Algorithm 5):
:meth:`Privatizer.release`.

Rounding the increments, not the sums
-------------------------------------
Every increment is rounded to the grid *before* it enters the running sum, so the sum is an exact
integer number of grid steps and the release is that integer plus the integer noise, times the grid,
with no further rounding.  Turned back into tree nodes, node ``(a, b]`` is then exactly the sum of the
rounded increments ``a + 1 .. b`` plus its own noise: replacing one round's ``(x, y)`` changes one
increment, hence only the ``floor(log2 tau) + 1`` nodes that contain it, each by at most ``Delta``
below.  (Rounding the running sum instead, ``round(S_k) + noise``, makes node ``(a, b]`` equal to
``round(S_b) - round(S_a) + N``: a changed element moves the rounding of *every later* sum, so nodes
without the change differ too and the tree's accounting does not hold --
``tests/bandits/fairx/test_privatizer_neighbours.py``.)

Node noise (Algorithm 2, lines 5-8)
-----------------------------------
The paper writes ``N_hat`` in ``R^{d x (d+1)}`` and ``N = (N_hat + N_hat^T) / sqrt(2)``, which only
type-checks for a square matrix.  Our reading: the node holds the augmented symmetric
``(d+1) x (d+1)`` matrix ``sum z z^T`` with ``z = (x, y)`` (as in Dubey & Pentland), and ``N`` is
symmetric with off-diagonal entries of variance ``sigma^2`` and diagonal entries of variance
``2 sigma^2`` -- the law of ``(N_hat + N_hat^T) / sqrt(2)`` for ``N_hat`` with i.i.d. ``N(0, sigma^2)``
entries.  Only the ``(d+1)(d+2)/2`` distinct entries are drawn (one call to the noise source per
release, for every tree of the batch).  The released ``H`` is the top-left ``d x d`` block of ``N``,
``h`` the first ``d`` entries of its last column; the corner ``sum y^2`` is never released.

The entries are discrete Gaussians on a grid ``g = 2**k`` about ``sigma / 2**14``
(:class:`dpfair.privacy.lattice.LatticeGaussian`): floating-point safe (the running sums and the noise
are held as exact integers of grid steps, and the released float is a deterministic function of
their exact integer sum: no low-order bit of the data survives), drawn by a search of fixed length
from the OS CSPRNG by default, the same law from a seeded generator in experiments.  Every engine
(:func:`dpfair.bandits.simulate_federated`'s numpy and compiled engines, an agent run on its own
under :mod:`dpfair.federated`) releases through :meth:`Privatizer.release`: the same rounding.

Factorizations (``continual=``)
-------------------------------
The tree is one factorization ``A = B C`` of the ``tau x tau`` prefix-sum matrix.  With
``continual="honaker"``, ``"sqrt"`` or ``"blt"`` (:mod:`dpfair.privacy._factorizations`; the learner's default
is the exact BLT, :mod:`dpfair.bandits.fairx._privatizer_exact`; the BLT keeps ``O(1)`` noise vectors in its
stream and its table in int32, 8 MiB per agent at ``tau = 100,000`` against the square root's 58 MiB, for 2.9 %
more noise at the worst release) the running sums ``P_k`` of the rounded increments ``m`` (exact integers of grid
steps) are released as ``g (P_k + n_k)`` with ``n = round(B z)`` computed from the Gaussian ``z`` alone: because
``P_k`` is an integer that is ``round(B (C m + z))``, post-processing of the Gaussian mechanism on
``C m`` (:mod:`dpfair.bandits.fairx._privatizer_factorized`), valid for adaptive streams since ``C`` is
lower-triangular (Denisov, McMahan, Rush, Smith & Thakurta 2022).  Its sensitivity is
``max_s ||C e_s||`` times the ``Delta`` below, and ``sigma`` comes from the exact ``mu``-GDP profile
(:func:`dpfair.privacy.accounting.gaussian_dp_mu`).  With secure noise ``z`` is a keyed cryptographic PRF
of a per-agent 256-bit secret key and the draw's counter, so an agent's pickled state (Flower's
``context.state``) is its keys and counts, not every past ``z``; the table of release noise is a
per-process cache rebuilt from the keys.

Calibration (``noise_calibration=``)
------------------------------------
Replacing one round's ``(x, y)`` of an agent (``||x|| <= L`` declared, ``|y| <= B`` by clipping)
changes one rounded increment, and so every node that contains it, by at most
``Delta = sqrt(2) (L^2 + B^2) + g sqrt((d+1)^2 - 1)`` in Frobenius norm (proof in
:func:`calibrate_privatizer`).  With the noise above one node is
``Delta^2 / (4 sigma^2)``-zCDP (Canonne, Kamath & Steinke 2020 for the discrete Gaussian), and the
element lies in at most ``levels = floor(log2 tau) + 1`` nodes, so one agent's whole stream of
releases is ``rho = levels Delta^2 / (4 sigma^2)``-zCDP (Bun & Steinke 2016).  The table sampler is
within total variation ``tv`` of the exact law per entry, which costs ``(1 + e^epsilon) n tv`` of
``delta`` for the ``n = tau (d+1)(d+2)/2`` entries drawn per agent (about ``1e-6`` here).

``"tight"`` (default)
    The smallest ``sigma`` whose ``rho`` converts (tightly, :func:`dpfair.privacy.zcdp_for_approx_dp`)
    to exactly the requested ``(epsilon, delta)`` after the sampler's share of ``delta``:
    ``privacy_spent`` equals the request.
``"paper"``
    Algorithm 2, line 6, exactly: ``sigma^2 = 16 n (L^2 + B^2)^2 ln(2/delta)^2 / epsilon^2`` with the
    paper's depth ``n = 1 + ceil(log2 tau)`` (``B = 1`` in the paper).  The accounted ``epsilon`` of
    that noise is reported beside the requested one.

Exp 1's setting (``epsilon = 2``, ``delta = 0.1``, ``L = sqrt(5)``, ``B = 1``, ``d = 5``, ``m = 10``,
``T = 100,000``: the bounded-gap protocol plans ``tau = 20,002`` releases, ``n = 16``, 15 levels):
the paper's ``sigma = 143.8`` is ``rho = 0.013``-zCDP: ``(0, 0.1)``-DP, or ``(2, 1.5e-6)``-DP (the
sampler's share; ``1.7e-35`` from the Gaussian itself) -- far more than was asked; the tight
``sigma = 20.6`` (``rho = 0.635``) spends exactly ``(2, 0.1)``: 7.0 times less noise for the requested
guarantee, and so a 7.0 times smaller Lemma-4 shift in the shared Gram matrix.  The paper's formula composes the nodes
through a per-node ``(epsilon / sqrt(8 m ln(2/delta)), delta / 2m)`` Gaussian bound (Section 5.2),
which both squares ``ln(2/delta)`` and ignores that zCDP composes the ``levels`` nodes exactly.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

from dpfair._validation import as_finite_array, check_int, check_open_unit
from dpfair.bandits.fairx._privatizer_calibration import (
    _MAX_ENTRIES,
    _MAX_STEPS,
    CALIBRATIONS,
    CONTINUAL,
    PrivatizerCalibration,
    _accounted,
    _entries,
    _lattice_tv,
    calibrate_privatizer,
    privatizer_depth,
    privatizer_node_variance,
)
from dpfair.bandits.fairx._privatizer_exact import ExactBLTRelease
from dpfair.bandits.fairx._privatizer_factorized import _FactorizedNoise, new_row_keys, prf_words
from dpfair.privacy.accounting import gaussian_dp_delta, gaussian_dp_epsilon
from dpfair.privacy.budget import PrivacyBudget, charge, check_budget, inside_charged_release
from dpfair.privacy.continual import get_factorization
from dpfair.privacy.lattice import LatticeGaussian
from dpfair.privacy.leaks import warn_seeded_noise
from dpfair.privacy.noise import NoiseSource, SecureNoise, check_random_state, get_noise_source

__all__ = [
    "CALIBRATIONS",
    "CONTINUAL",
    "Privatizer",
    "PrivatizerCalibration",
    "calibrate_privatizer",
    "keyed_words",
    "privatizer_depth",
    "privatizer_node_variance",
    "tree_key",
]


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def keyed_words(keys: np.ndarray, start: np.ndarray, n_words: int) -> np.ndarray:
    """Words ``start[k] .. start[k] + n_words - 1`` of SplitMix64 streams seeded with ``keys[k]``.

    SplitMix64 (Steele, Lea & Flood 2014): the ``j``-th output (``j >= 1``) of the stream seeded with
    ``s`` is the finalizer of ``s + j * 0x9E3779B97F4A7C15`` (mod ``2^64``), so any position of any
    stream is one vectorized expression: a counter-based generator for reproducible, *not hardened*,
    per-tree noise.

    Parameters
    ----------
    keys : numpy.ndarray of uint64, shape (n,)
        One stream seed per row.
    start : numpy.ndarray of uint64, shape (n,)
        Position (0-based) of each row's first word.
    n_words : int
        Words per row.

    Returns
    -------
    numpy.ndarray of uint64, shape (n, n_words)
    """
    keys = np.asarray(keys, dtype=np.uint64)
    position = np.asarray(start, dtype=np.uint64)[:, None] + np.arange(1, n_words + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = keys[:, None] + position * _GOLDEN  # arithmetic mod 2^64
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _exact_accounted(mu: float, target: float, samples_tv: float) -> float:
    """The least ``epsilon`` (up to a bisection's last step, taken upward) with ``delta_mu(epsilon) + (1 + e^epsilon)
    samples_tv <= target``: the blt-exact release's accounted ``epsilon`` (``inf`` where none is found).

    The fixed point ``epsilon <- epsilon_mu(target - share(epsilon))`` approaches from below, so its last iterate can
    spend a little more than ``target``; the returned value is checked and, where it falls short, bisected upward.
    """

    def spent(eps: float) -> float:
        return gaussian_dp_delta(mu, eps) + (1.0 + math.exp(min(eps, 700.0))) * samples_tv

    eps = gaussian_dp_epsilon(mu, target)
    for _ in range(6):  # each round pays the share at the previous, smaller epsilon: increasing
        share = (1.0 + math.exp(min(eps, 700.0))) * samples_tv
        if share >= target:
            return math.inf
        eps = gaussian_dp_epsilon(mu, target - share)
    if spent(eps) <= target:
        return eps
    low, step = eps, max(abs(eps), 1e-12) * 1e-9
    high = low + step
    while spent(high) > target:  # the share grows as e^epsilon: beyond some epsilon no value spends at most target
        if (1.0 + math.exp(min(high, 700.0))) * samples_tv >= target or high > 1e4:
            return math.inf
        low, step = high, 2.0 * step
        high = low + step
    for _ in range(200):  # invariant: spent(low) > target >= spent(high)
        mid = 0.5 * (low + high)
        if mid in (low, high):
            break
        low, high = (low, mid) if spent(mid) <= target else (mid, high)
    return high


def tree_key(random_state: Any, run_id: int, agent: int) -> np.uint64:
    """The key of one agent's PRIVATIZER tree for seeded noise: a function of the seed, the run and the agent.

    Parameters
    ----------
    random_state : int
        The learner's seed (a non-negative integer).
    run_id : int
        Which run (``simulate_federated``'s seed of the run; any integer the agents of a deployment share).
    agent : int
        The agent's index.

    Returns
    -------
    numpy.uint64
    """
    entropy = [check_int(random_state, "random_state", minimum=0), check_int(run_id, "run_id", minimum=0),
               check_int(agent, "agent", minimum=0)]
    return np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0]


class Privatizer:
    """Algorithm 2's trees for a batch of agents (one tree per agent, batched over leading axes).

    Because the tree mechanism is linear, a release is the running sum plus the sum of the noisy
    nodes' noise.  :meth:`release` takes each communication round's *increment* (what the agent
    gathered since its previous release), rounds it to the grid, adds it to the tree's running sum
    (held as exact integers of grid steps, as is the noise) and returns sum plus noise: the released
    statistics.  :meth:`advance` and :meth:`noise` give the noise alone (a release with zero
    increments).  With ``continual="honaker"`` or ``"sqrt"`` the tree is replaced by that factorization
    ``A = B C`` of the prefix-sum matrix (:mod:`dpfair.bandits.fairx._privatizer_factorized`).

    **Contract for other engines** (the compiled synchronizations use it; the numpy engine goes through
    :meth:`release`, which is built on it):

    * :meth:`to_units` is *the* rounding of an increment to the grid: ``rint(increment / granularity)``
      as int64 (exact: ``granularity`` is a power of two);
    * :meth:`release_noise_units` ``(release_index)`` is the int64 noise, in grid units, that release
      number ``release_index[row]`` (1-based; 0 gives zeros) adds to that row's exact integer prefix sum
      of rounded increments: a fixed function of ``(row, release number)`` once drawn;
    * so release ``k`` of a row is ``granularity * (sum of to_units(increments 1..k) + noise_units(k))``,
      exactly what :meth:`release` returns.

    For ``continual="tree"`` any ``release_index`` works with keyed trees (``tree_keys``: every node is a
    function of its position); without keys only the current ``count`` can be asked (the nodes are
    drawn in the order of the releases).  For the factorizations any index up to ``n_releases`` works.

    Parameters
    ----------
    epsilon, delta : float
        Requested guarantee (``epsilon`` finite, ``delta`` in (0, 1)).
    context_bound : float
        Declared ``L``.
    dim : int
        Context dimension ``d``.
    n_releases : int
        Planned number of communication rounds ``tau`` (the tree's capacity).
    batch_shape : tuple of int
        One tree per entry, for example ``(n_seeds, n_agents)``.
    reward_bound : float, default 1.0
        Declared ``B``.
    noise_calibration : {"tight", "paper"}, default "tight"
        See :func:`calibrate_privatizer`.
    continual : {"tree", "honaker", "sqrt", "blt", "blt-exact"}, default "tree"
        The factorization of the prefix-sum matrix (:func:`calibrate_privatizer`); ``"paper"`` needs ``"tree"``.
        ``"blt-exact"`` (:mod:`dpfair.bandits.fairx._privatizer_exact`) releases through :meth:`release` only
        (no :meth:`release_noise_units`: its noise is added after an integer encoder of the data).  Its encoder
        refuses a step whose buffers would reach ``2**78`` (or its output ``2**62``) grid steps; that refusal
        depends on the data, so a stream that meets it is **outside the guarantee** (the learners refuse, before
        any charge, every plan whose declared bounds could reach it; a ``Privatizer`` used on its own does not
        check).
    random_state : None, int, numpy.random.Generator or NoiseSource
        ``None`` for secure noise (the OS CSPRNG); a seed for experiments.  With a factorization, secure
        noise draws one 256-bit secret key per tree from the OS CSPRNG here and derives ``z`` from it by a
        keyed PRF in counter mode (:mod:`dpfair.bandits.fairx._privatizer_factorized`): the pickled state holds the
        keys and counts, constant-size in the number of releases, and a copy continues the same noise.
    tree_keys : array-like of uint64 of shape ``batch_shape``, optional
        Seeded noise only: one key per tree, each tree drawing its own SplitMix64 stream
        (:func:`tree_key`), so that a tree's noise does not depend on which other trees share the
        batch -- an agent running alone in its own process (:mod:`dpfair.federated`) draws exactly the
        noise it draws inside a batched :func:`~dpfair.bandits.simulate_federated`.  Ignored (never
        weakened) with secure noise, which is not reproducible by design.
    budget : PrivacyBudget, optional
        Charged ``(epsilon, delta)`` once, at construction (``None``: the process-wide ledger); a learner that
        creates its PRIVATIZER inside its own charged release (:class:`~dpfair.bandits.PrivFairXLinUCB`) pays there.

    Attributes
    ----------
    calibration : PrivatizerCalibration
        The noise and its accounting.
    n_levels : int
        The paper's depth ``n``.
    levels_used : int
        Levels an element occupies, ``floor(log2 tau) + 1``.
    node_sigma : float
        Standard deviation of an off-diagonal node entry.
    node_variance : float
        ``node_sigma ** 2``.
    granularity : float
        The noise grid.
    rho : float
        zCDP of one agent's whole stream of releases.
    count : numpy.ndarray
        Releases made so far per tree, shape ``batch_shape``.

    Examples
    --------
    >>> import numpy as np
    >>> priv = Privatizer(1.0, 1e-5, 1.0, 2, 8, (1,), random_state=0)
    >>> x = np.array([[0.6, 0.8]])
    >>> gram_hat, target_hat = priv.release(x[:, :, None] * x[:, None, :], 0.5 * x)
    >>> bool(np.all(gram_hat / priv.granularity == np.rint(gram_hat / priv.granularity)))
    True
    """

    def __init__(
        self,
        epsilon: float,
        delta: float,
        context_bound: float,
        dim: int,
        n_releases: int,
        batch_shape: tuple[int, ...],
        *,
        reward_bound: float = 1.0,
        noise_calibration: str = "tight",
        continual: str = "tree",
        random_state: Any = None,
        tree_keys: Any = None,
        budget: PrivacyBudget | None = None,
    ) -> None:
        calibration = calibrate_privatizer(
            epsilon, delta, context_bound, dim, n_releases, reward_bound=reward_bound, noise_calibration=noise_calibration,
            continual=continual,
        )
        check_budget(budget)
        check_random_state(random_state)
        self._setup(calibration, context_bound, reward_bound, dim, n_releases, batch_shape, random_state, tree_keys,
                    budget)

    @classmethod
    def _calibrated(cls, calibration: PrivatizerCalibration, context_bound: float, reward_bound: float, dim: int,
                    n_releases: int, batch_shape: tuple[int, ...], *, random_state: Any = None,
                    tree_keys: Any = None) -> Privatizer:
        """The trees of a calibration made from validated arguments (a learner's plan: ``synchronization._plan``).

        Nothing is validated or calibrated again; the learner creates them inside its own charged release.
        """
        if not inside_charged_release():  # its noise is paid for by the learner's one charge, never by none
            raise RuntimeError("Privatizer._calibrated builds a learner's trees inside its charged release only.")
        privatizer = cls.__new__(cls)
        privatizer._setup(calibration, context_bound, reward_bound, dim, n_releases, batch_shape, random_state,
                          tree_keys, None)
        return privatizer

    def _setup(self, cal: PrivatizerCalibration, context_bound: float, reward_bound: float, dim: int, n_releases: int,
               batch_shape: Any, random_state: Any, tree_keys: Any, budget: PrivacyBudget | None) -> None:
        """The trees (or the factorization) of ``cal``, the one charge of a PRIVATIZER used on its own, its noise."""
        self.calibration = cal
        self.continual = cal.continual
        self.epsilon, self.delta = cal.epsilon, cal.delta
        self.context_bound, self.reward_bound = float(context_bound), float(reward_bound)
        self.dim = int(dim)
        self.n_releases = int(n_releases)
        self.batch_shape = self._check_batch_shape(batch_shape)
        self.n_levels, self.levels_used = cal.n_levels, cal.levels_used
        self.node_sigma = cal.node_sigma
        self.granularity = cal.granularity
        self.rho = cal.rho
        d1 = self.dim + 1
        self._upper = np.triu_indices(d1)
        self._lattices: tuple[float, LatticeGaussian, LatticeGaussian] | None = None
        # node noise and the running sums of the rounded increments, in integer grid steps (exact)
        tree = self.continual == "tree"
        self._nodes = np.zeros((self.n_levels if tree else 0, *self.batch_shape, d1, d1), dtype=np.int64)
        self._gram_units = np.zeros((*self.batch_shape, self.dim, self.dim), dtype=np.int64)
        self._target_units = np.zeros((*self.batch_shape, self.dim), dtype=np.int64)
        self.count = np.zeros(self.batch_shape, dtype=np.int64)
        self._keys: np.ndarray | None = None
        secure = random_state is None or bool(getattr(random_state, "secure", False))
        if tree_keys is not None and not secure:
            keys = np.asarray(tree_keys)
            if keys.dtype != np.uint64 or keys.shape != self.batch_shape:
                raise ValueError(
                    f"tree_keys must be a uint64 array of shape batch_shape={self.batch_shape} (see tree_key), "
                    f"got dtype {keys.dtype} and shape {keys.shape}."
                )
            self._keys = keys.copy()
        self._factorized: _FactorizedNoise | None = None
        self._exact_blt: ExactBLTRelease | None = None
        if self.continual == "blt-exact":  # integer encoder, rounded Gaussian words, float decoder (_privatizer_exact)
            # built (its lattice tables too) before the charge: a failure here spends nothing; the words are
            # fetched through self._exact_words only at a release, once the noise source below exists
            self._exact_blt = ExactBLTRelease(self.n_releases, self.node_sigma / self.granularity,
                                              self._upper[0] == self._upper[1], math.prod(self.batch_shape),
                                              self._exact_words)
        # every argument is valid: the one charge of a PRIVATIZER used on its own (each tree of the batch protects
        # a different agent: parallel composition), then its noise source; a learner creates its trees inside its
        # own charged release (dpfair.privacy.budget.charged_release) and pays there
        if not inside_charged_release():
            charge(budget, cal.epsilon, cal.delta, label="Privatizer (the trees of one batch of agents)")
        self._noise: NoiseSource = get_noise_source(random_state)
        if not inside_charged_release():
            warn_seeded_noise(self._noise, cal.epsilon, "Privatizer")
        # secure factorized noise: a 256-bit secret key per row from the OS CSPRNG, z = PRF(key, draw) (counter
        # mode), so that the state is the keys and the counts, not every past z (_privatizer_factorized)
        self._row_keys: tuple[bytes, ...] | None = None
        if not tree and self._exact_blt is None:
            key_digest = None
            if secure:
                self._row_keys = new_row_keys(math.prod(self.batch_shape))
                key_digest = hashlib.blake2b(b"prf" + b"".join(self._row_keys), digest_size=32).digest()
            elif self._keys is not None:
                key_digest = hashlib.blake2b(b"splitmix64" + self._keys.tobytes(), digest_size=32).digest()
            self._factorized = _FactorizedNoise(
                get_factorization(self.continual, self.n_releases), self.node_sigma / self.granularity,
                self._upper[0] == self._upper[1], math.prod(self.batch_shape), self._factorized_words, key_digest,
            )

    def _exact_words(self, rows: np.ndarray, counts: np.ndarray, n_entries: int) -> np.ndarray:
        """Words of release ``counts[j]`` (0-based) of row ``rows[j]``: keyed SplitMix64 positions, else the source."""
        if self._keys is not None:
            start = counts.astype(np.uint64) * np.uint64(n_entries)
            return keyed_words(self._keys.reshape(-1)[rows], start, n_entries)
        return self._noise.random_words((rows.size, n_entries))

    def _factorized_words(self, first_draw: int, n_draws: int) -> np.ndarray:
        """Words of draws ``first_draw ..`` of the rows of ``z``, shape ``(n_draws, n_trees, n_entries)``."""
        n_trees, n_entries = math.prod(self.batch_shape), self._upper[0].size
        if self._row_keys is not None:  # secure: the keyed PRF in counter mode
            return prf_words(self._row_keys, first_draw, n_draws, n_entries)
        if self._keys is None:
            return self._noise.random_words((n_draws, n_trees, n_entries))  # a seeded generator, in draw order
        from dpfair.bandits.fairx._prf_kernels import splitmix_words  # keyed_words' stream, compiled

        return splitmix_words(self._keys.reshape(-1), first_draw, n_draws, n_entries)

    def _check_batch_shape(self, batch_shape: Any) -> tuple[int, ...]:
        if isinstance(batch_shape, int | np.integer) or not isinstance(batch_shape, tuple | list):
            raise TypeError(f"batch_shape must be a tuple of ints, e.g. (n_seeds, n_agents), got {batch_shape!r}.")
        shape = tuple(check_int(s, "batch_shape", minimum=1) for s in batch_shape)
        n_levels = privatizer_depth(self.n_releases)
        entries = n_levels * math.prod(shape) * (self.dim + 1) ** 2
        if self.continual not in ("tree", "blt-exact"):  # the table of release noise and the vectors z (sqrt: all)
            entries = 2 * (self.n_releases + 1) * math.prod(shape) * (self.dim + 1) * (self.dim + 2) // 2
        if entries > _MAX_ENTRIES:
            raise ValueError(
                f"batch_shape={shape} with dim={self.dim} and n_releases={self.n_releases} needs {entries:,} noise "
                f"entries in memory (more than {_MAX_ENTRIES:,}); run fewer agents or seeds at once."
            )
        return shape

    @property
    def node_variance(self) -> float:
        """``node_sigma ** 2``."""
        return self.node_sigma**2

    def accounted_epsilon(self, delta: float | None = None) -> float:
        """``epsilon`` of one agent's stream of releases at ``delta``, from its zCDP and the sampler's share.

        Parameters
        ----------
        delta : float, optional
            Target ``delta`` in (0, 1); default the privatizer's ``delta``.

        Returns
        -------
        float
            The accounted ``epsilon``.
        """
        target = self.delta if delta is None else check_open_unit(delta, "delta")
        sensitivity = self.calibration.sensitivity
        if self.continual == "blt-exact":  # mu-GDP less the noise table's share (1 + e^epsilon) n tv: a fixed point
            from dpfair.privacy.lattice import lattice_total_variation

            cal = self.calibration
            mu = cal.column_sensitivity * sensitivity / (math.sqrt(2.0) * self.node_sigma)
            samples_tv = _entries(self.n_releases, self.dim) * lattice_total_variation(self.node_sigma, self.granularity,
                                                                                       "rounded")
            return _exact_accounted(mu, target, samples_tv)
        if self.continual != "tree":  # the exact mu-GDP profile of the Gaussian matrix mechanism
            mu = self.calibration.column_sensitivity * sensitivity / (math.sqrt(2.0) * self.node_sigma)
            return gaussian_dp_epsilon(mu, target)
        rho = self.levels_used * sensitivity**2 / (4.0 * self.node_sigma**2)  # follows node_sigma if changed
        tv = 0.0 if self.calibration.sampler == "exact" else _lattice_tv(self.node_sigma, self.granularity)
        return _accounted(rho, target, _entries(self.n_releases, self.dim) * tv, self.epsilon)[0]

    def _lattice(self) -> tuple[LatticeGaussian, LatticeGaussian]:
        if self._lattices is None or self._lattices[0] != self.node_sigma:
            g = self.granularity
            self._lattices = (self.node_sigma, LatticeGaussian(self.node_sigma, g),
                              LatticeGaussian(math.sqrt(2.0) * self.node_sigma, g))
        return self._lattices[1], self._lattices[2]

    def _draw(self, n_trees: int, keys: np.ndarray | None = None, counts: np.ndarray | None = None) -> np.ndarray:
        """Symmetric node noise for ``n_trees`` trees, in integer grid steps: one call to the noise source for all of them.

        With ``keys`` (seeded, keyed trees) the words of tree ``k`` at its release ``counts[k]`` are
        positions ``counts[k] * n_entries + e`` of the tree's own SplitMix64 stream.
        """
        d1 = self.dim + 1
        rows, cols = self._upper
        on_diagonal = rows == cols
        if self.calibration.sampler == "exact" and isinstance(self._noise, SecureNoise):
            values = self._exact(n_trees, on_diagonal)
        else:
            if keys is not None and counts is not None:
                words = keyed_words(keys, counts.astype(np.uint64) * np.uint64(rows.size), rows.size)
            else:
                words = self._noise.random_words((n_trees, rows.size))  # the (d+1)(d+2)/2 distinct entries
            off, diag = self._lattice()
            values = np.empty(words.shape, dtype=np.int64)
            values[:, on_diagonal] = diag.sample_units(words[:, on_diagonal])  # variance 2 sigma^2
            values[:, ~on_diagonal] = off.sample_units(words[:, ~on_diagonal])  # variance sigma^2
        out = np.zeros((n_trees, d1, d1), dtype=np.int64)
        out[:, rows, cols] = values
        out[:, cols, rows] = values
        return out

    def _exact(self, n_trees: int, on_diagonal: np.ndarray) -> np.ndarray:
        """OpenDP's exact discrete Gaussian on the same grid, in grid steps: one call per law (off-diagonal, diagonal)."""
        import opendp.prelude as dp

        dp.enable_features("contrib")
        g = self.granularity
        values = np.empty((n_trees, on_diagonal.size), dtype=np.int64)
        for where, sigma in ((~on_diagonal, self.node_sigma), (on_diagonal, math.sqrt(2.0) * self.node_sigma)):
            size = n_trees * int(where.sum())
            domain = dp.vector_domain(dp.atom_domain(T="i64"), size=size)
            meas = dp.m.make_gaussian(domain, dp.l2_distance(T="i64"), scale=sigma / g)
            values[:, where] = np.asarray(meas([0] * size), dtype=np.int64).reshape(n_trees, -1)
        return values

    def _selection(self, mask: Any) -> np.ndarray:
        """``mask`` checked and broadcast to ``batch_shape`` (default: every tree)."""
        if mask is None:
            return np.ones(self.batch_shape, bool)
        raw = np.asarray(mask)
        if raw.dtype != bool:
            raise TypeError(f"mask must be a boolean array (the trees that communicate), got dtype {raw.dtype}.")
        try:
            return np.broadcast_to(raw, self.batch_shape)
        except ValueError:
            raise ValueError(
                f"mask of shape {raw.shape} does not broadcast to the privatizer's batch_shape {self.batch_shape}."
            ) from None

    def _check_capacity(self, sel: np.ndarray) -> None:
        if (self.count + sel > self.n_releases).any():
            raise ValueError(
                f"the PRIVATIZER's tree holds n_releases={self.n_releases} communication rounds; a further "
                "release was requested: plan more releases."
            )

    def advance(self, mask: Any = None) -> None:
        """Insert the next element into the trees selected by ``mask`` (a communication round), noise only.

        The node completed at release ``k`` (level = lowest set bit of ``k``) gets fresh noise; the lower
        levels, now covered by it, are cleared.  :meth:`release` calls it; on its own it is a release
        of zero increments.

        Parameters
        ----------
        mask : array-like of bool, optional
            Trees that communicate (broadcast to ``batch_shape``); default all.

        Raises
        ------
        ValueError
            When a tree would exceed its planned ``n_releases``, or ``mask`` is not a boolean array that
            broadcasts to ``batch_shape``.
        """
        sel = self._selection(mask)
        if not sel.any():
            return
        self._check_capacity(sel)
        new_count = self.count + sel
        if self._exact_blt is not None:  # a release of zero increments: the encoder still steps
            zeros = np.zeros((math.prod(self.batch_shape), self._upper[0].size), dtype=np.int64)
            self._exact_blt.step(zeros, sel.reshape(-1))
            self.count = new_count
            return
        if self._factorized is not None:  # the noise of each release is drawn (lazily) by release_noise_units
            self.count = new_count
            return
        k = np.where(sel, new_count, 1)
        level = np.log2(k & -k).astype(np.int64)  # lowest set bit of k
        keys = None if self._keys is None else self._keys[sel]
        fresh = self._draw(int(sel.sum()), keys, new_count[sel])  # Algorithm 2, lines 6-7
        levels = np.arange(self.n_levels).reshape((-1,) + (1,) * len(self.batch_shape))
        clear = (levels < level) & sel
        self._nodes[clear] = 0
        nodes = np.moveaxis(self._nodes, 0, -3)  # (*batch, n_levels, d1, d1), a view
        idx = np.nonzero(sel)
        nodes[(*idx, level[sel])] = fresh
        self.count = new_count

    def _noise_units(self) -> tuple[np.ndarray, np.ndarray]:
        return self.release_noise_units(self.count)

    def release_noise_units(self, release_index: Any) -> tuple[np.ndarray, np.ndarray]:
        """The int64 noise (grid units) that release number ``release_index[row]`` adds to each row's prefix sums.

        The contract in the class docstring: release ``k`` of a row is ``granularity * (P_k +
        noise_units(k))`` with ``P_k`` the exact sum of :meth:`to_units` of its first ``k`` increments.
        A leading axis asks for several releases of every row in one call (the compiled engine's noise
        feed): ``release_noise_units(index)[b]`` is ``release_noise_units(index[b])``.

        Parameters
        ----------
        release_index : array-like of int, shape ``batch_shape`` or ``(blocks, *batch_shape)``
            1-based release number per row, ``0 <= k <= n_releases`` (0: no release yet, zero noise).

        Returns
        -------
        H : numpy.ndarray of int64
            Shape ``(*release_index.shape, d, d)``, symmetric.
        h : numpy.ndarray of int64
            Shape ``(*release_index.shape, d)``.

        Raises
        ------
        ValueError
            For an index of the wrong shape or outside ``[0, n_releases]``, or, for an unkeyed tree, an
            index other than the current ``count`` (its nodes are drawn in release order).
        """
        index = np.asarray(release_index)
        blocked = index.ndim == len(self.batch_shape) + 1 and index.shape[1:] == self.batch_shape
        if not (index.shape == self.batch_shape or blocked) or not np.issubdtype(index.dtype, np.integer):
            raise ValueError(f"release_index must be an integer array of shape batch_shape={self.batch_shape} "
                             f"(or (blocks, *batch_shape)), got dtype {index.dtype} and shape {index.shape}.")
        index = index.astype(np.int64)
        if self._exact_blt is not None:
            raise ValueError("continual='blt-exact' has no data-independent release noise (the encoder rounds the "
                             "data before the noise is added): release through Privatizer.release.")
        if (index < 0).any() or (index > self.n_releases).any():
            raise ValueError(f"release_index must lie in [0, n_releases={self.n_releases}].")
        d, d1 = self.dim, self.dim + 1
        if self._factorized is not None:
            flat = index.reshape(-1, math.prod(self.batch_shape))  # (blocks, rows): one table lookup
            values = self._factorized.units(flat).reshape(*index.shape, -1)
            rows, cols = self._upper
            total = np.empty((*index.shape, d1, d1), dtype=np.int64)
            total[..., rows, cols] = values
            total[..., cols, rows] = values
        elif not blocked and np.array_equal(index, self.count):
            total = self._nodes.sum(axis=0)  # nodes of levels whose bit is 0 in the count are zero
        elif self._keys is not None:  # keyed tree: the node completed at release e is a function of (key, e)
            keys = np.broadcast_to(self._keys, index.shape)
            total = np.zeros((*index.shape, d1, d1), dtype=np.int64)
            for level in range(self.n_levels):
                bit = ((index >> level) & 1).astype(bool)
                if bit.any():
                    end = ((index[bit] >> (level + 1)) << (level + 1)) + (1 << level)
                    total[bit] += self._draw(int(bit.sum()), keys[bit], end)
        else:
            raise ValueError("an unkeyed tree's noise is drawn in release order: only release_index == count is "
                             "available; pass tree_keys (seeded noise) or use a factorization for other indices.")
        return total[..., :d, :d], total[..., :d, d]

    def to_units(self, increment: Any) -> np.ndarray:
        """The one rounding of an increment to the noise grid: ``rint(increment / granularity)`` as int64.

        Parameters
        ----------
        increment : array-like of float
            A Gram or target increment (any shape), finite.

        Returns
        -------
        numpy.ndarray of int64
            The increment in grid units (exact: ``granularity`` is a power of two).

        Raises
        ------
        ValueError
            If it is not finite or reaches ``2**62`` grid units.
        """
        steps = np.rint(as_finite_array(increment, "increment") / self.granularity)
        if float(np.abs(steps).max(initial=0.0)) >= _MAX_STEPS:
            raise ValueError("an increment reaches 2**62 grid steps of the noise, beyond exact integer arithmetic; "
                             "rescale the contexts and rewards (smaller context_bound and reward_bound).")
        return steps.astype(np.int64)

    def noise(self) -> tuple[np.ndarray, np.ndarray]:
        """Noise of the current releases: ``H`` (``d x d``) and ``h`` (``d``) per tree.

        Returns
        -------
        H : numpy.ndarray
            Shape ``(*batch_shape, d, d)``, symmetric, multiples of ``granularity``.
        h : numpy.ndarray
            Shape ``(*batch_shape, d)``.
        """
        H, h = self._noise_units()
        g = self.granularity
        return H.astype(float) * g, h.astype(float) * g

    def release(self, gram_increment: Any, target_increment: Any, mask: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """One communication round: round each increment to the grid, add it to the running sum, release sum + noise.

        Algorithm 2, lines 10-15, for the trees of ``mask``: the increment (what the agent gathered
        since its previous release) is rounded to the noise grid *before* it enters the tree, so every
        running sum is an exact number of grid steps and each tree node is exactly the sum of the
        rounded increments it covers plus its noise (module docstring; the node sensitivity is proved in
        :func:`calibrate_privatizer`).  The released value is ``(sum + noise) * granularity``, a
        deterministic function of that exact integer: no further rounding.

        Parameters
        ----------
        gram_increment : array-like of shape ``batch_shape + (d, d)``
            ``sum x x^T`` over the bandit rounds since each tree's previous release (finite, symmetric).
        target_increment : array-like of shape ``batch_shape + (d,)``
            ``sum x y`` over the same rounds (finite).
        mask : array-like of bool, optional
            Trees that communicate (broadcast to ``batch_shape``); default all.  The other trees' entries
            of the increments are ignored and their rows of the output repeat their previous release.

        Returns
        -------
        gram_hat : numpy.ndarray
            The released ``sum round_g(increments) + H``, shape ``batch_shape + (d, d)``, symmetric.
        target_hat : numpy.ndarray
            The released ``sum round_g(increments) + h``, shape ``batch_shape + (d,)``.

        Raises
        ------
        ValueError
            Before any noise is drawn: increments that are not finite, of the wrong shape, an asymmetric
            ``gram_increment``, running sums beyond ``2**62`` grid steps, a bad ``mask`` or a tree past its
            planned ``n_releases``.
        """
        d = self.dim
        gram = as_finite_array(gram_increment, "gram_increment")
        target = as_finite_array(target_increment, "target_increment")
        if gram.shape != (*self.batch_shape, d, d):
            raise ValueError(
                f"gram_increment must have shape {(*self.batch_shape, d, d)} (batch_shape + (d, d)), got {gram.shape}."
            )
        if target.shape != (*self.batch_shape, d):
            raise ValueError(
                f"target_increment must have shape {(*self.batch_shape, d)} (batch_shape + (d,)), got {target.shape}."
            )
        if not np.array_equal(gram, np.swapaxes(gram, -1, -2)):
            raise ValueError("gram_increment must be symmetric (a sum of x x^T); its rounding must be too.")
        sel = self._selection(mask)
        self._check_capacity(sel)
        g = self.granularity
        # exact: dividing by a power of two and rint (to_units); the rows that do not communicate add nothing
        gram_steps = np.where(sel[..., None, None], self.to_units(gram), 0)
        target_steps = np.where(sel[..., None], self.to_units(target), 0)
        gram_sum = self._gram_units + gram_steps.astype(float)  # float64 here only to check the range below
        target_sum = self._target_units + target_steps.astype(float)
        if max(float(np.abs(gram_sum).max(initial=0.0)), float(np.abs(target_sum).max(initial=0.0))) >= _MAX_STEPS:
            raise ValueError(
                "the running sums reach 2**62 grid steps of the noise, beyond exact integer arithmetic; rescale "
                "the contexts and rewards (smaller context_bound and reward_bound) or plan fewer rounds."
            )
        if self._exact_blt is not None:
            return self._release_exact(gram_steps, target_steps, sel)
        self.advance(sel)
        self._gram_units += gram_steps
        self._target_units += target_steps
        H, h = self.release_noise_units(self.count)
        return (self._gram_units + H).astype(float) * g, (self._target_units + h).astype(float) * g

    def _release_exact(self, gram_steps: np.ndarray, target_steps: np.ndarray,
                       sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``continual="blt-exact"``: the rows' rounded increments through the integer encoder, ``g (B Y)`` back.

        The corner ``sum y^2`` is not an input (its increment is 0) and its release is never returned.
        """
        d, d1 = self.dim, self.dim + 1
        rows, cols = self._upper
        augmented = np.zeros((*self.batch_shape, d1, d1), dtype=np.int64)
        augmented[..., :d, :d] = gram_steps
        augmented[..., :d, d] = target_steps
        m = augmented[..., rows, cols].reshape(-1, rows.size)
        total = self._exact_blt.step(m, sel.reshape(-1)).reshape(*self.batch_shape, rows.size)
        self._gram_units += gram_steps
        self._target_units += target_steps
        self.count = self.count + sel
        out = np.zeros((*self.batch_shape, d1, d1))
        out[..., rows, cols] = total
        out[..., cols, rows] = total
        g = self.granularity
        return out[..., :d, :d] * g, out[..., :d, d] * g

    def __repr__(self) -> str:
        return (
            f"Privatizer(epsilon={self.epsilon:g}, delta={self.delta:g}, context_bound={self.context_bound:g}, "
            f"dim={self.dim}, n_releases={self.n_releases}, batch_shape={self.batch_shape}, "
            f"noise_calibration={self.calibration.noise_calibration!r}, continual={self.continual!r})"
        )
