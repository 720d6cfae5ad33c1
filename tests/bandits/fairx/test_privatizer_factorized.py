"""Priv-FairX-LinUCB's PRIVATIZER through a factorization of the prefix-sum matrix.

The release contract (``release() == g * (prefix units + release_noise_units(count))``), the noise as a fixed
function of (row, release number), the tree path bit for bit as before, identical-noise neighbours inside
the learner's synchronization path, the white-box privacy loss of ``C m + z`` (the release is
``round(B (C m + z))``), an empirical audit that catches a half-noise mutant, and ``privacy_spent``.
"""

from __future__ import annotations

import hashlib
import math
import pickle
import warnings

import numpy as np
import pytest
from scipy.special import ndtri

from dpfair.bandits import FederatedSyntheticEnvironment, PrivFairXLinUCB, simulate_federated
from dpfair.bandits.fairx._privatizer_factorized import KEY_BYTES, _clear_cache, gaussian_from_words, prf_words
from dpfair.bandits.fairx.privatizer import CONTINUAL, Privatizer, calibrate_privatizer, keyed_words, tree_key
from dpfair.bandits.fairx.synchronization import _AgentSync
from dpfair.bandits.fairx.synchronization import _plan as plan_options
from dpfair.federated._state import dumps_state
from dpfair.privacy import audit_epsilon, get_factorization
from dpfair.privacy.accounting import gaussian_dp_delta, gaussian_dp_epsilon

FACTORIZED = ("honaker", "sqrt", "blt")


def _plan(name, learner, horizon, n_agents, dim):
    """The learner's plan of one run, as its reset plans it (a private learner: its template's step 1)."""
    if isinstance(learner, PrivFairXLinUCB):
        return learner._validate_all(1, dim, horizon, n_agents=n_agents, name=name)[1].plan
    return plan_options(name, learner._run_options(), horizon, n_agents, dim)


def _keys(n_seeds: int, n_agents: int, base: int = 5) -> np.ndarray:
    return np.array([[tree_key(base, s, a) for a in range(n_agents)] for s in range(n_seeds)], dtype=np.uint64)


def _increments(rng: np.random.Generator, shape: tuple[int, ...], dim: int) -> tuple[np.ndarray, np.ndarray]:
    x = rng.uniform(0.0, 1.0, size=(*shape, dim)) / math.sqrt(dim)
    return x[..., :, None] * x[..., None, :], 0.7 * x


def _hash(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------ the contract
@pytest.mark.parametrize("continual", CONTINUAL)
@pytest.mark.parametrize("keyed", [False, True])
def test_release_is_the_grid_times_prefix_units_plus_release_noise_units(continual, keyed):
    rng = np.random.default_rng(0)
    d, shape = 3, (2, 3)
    priv = Privatizer(2.0, 0.1, math.sqrt(3), d, 20, shape, continual=continual, random_state=4,
                      tree_keys=_keys(*shape) if keyed else None)
    g = priv.granularity
    units_gram = np.zeros((*shape, d, d), dtype=np.int64)
    units_target = np.zeros((*shape, d), dtype=np.int64)
    for k in range(12):
        gram, target = _increments(rng, shape, d)
        mask = np.array([True, k % 3 != 1])[:, None]
        released_gram, released_target = priv.release(gram, target, mask)
        units_gram += np.where(mask[..., None, None], priv.to_units(gram), 0)
        units_target += np.where(mask[..., None], priv.to_units(target), 0)
        noise_gram, noise_target = priv.release_noise_units(priv.count)
        assert noise_gram.dtype == np.int64 and noise_target.dtype == np.int64
        np.testing.assert_array_equal(noise_gram, np.swapaxes(noise_gram, -1, -2))
        np.testing.assert_array_equal(released_gram, g * (units_gram + noise_gram))
        np.testing.assert_array_equal(released_target, g * (units_target + noise_target))
    assert priv.count.tolist() == [[12, 12, 12], [8, 8, 8]]


@pytest.mark.parametrize("continual", ["tree", *FACTORIZED])
def test_release_noise_is_a_fixed_function_of_row_and_release_number(continual):
    """Asked ahead (the compiled engine's use), then met again by release(): the same integers."""
    d, shape, tau = 2, (1, 4), 16
    priv = Privatizer(1.0, 1e-3, 1.0, d, tau, shape, continual=continual, random_state=9, tree_keys=_keys(*shape))
    ahead = {k: priv.release_noise_units(np.full(shape, k)) for k in (0, 3, 16, 7)}
    assert not ahead[0][0].any() and not ahead[0][1].any()
    mask = np.array([[True, True, False, True]])
    zero_gram, zero_target = np.zeros((*shape, d, d)), np.zeros((*shape, d))
    for _ in range(tau):
        gram, target = priv.release(zero_gram, zero_target, mask)
        for k, (H, h) in ahead.items():
            rows = (priv.count == k) & mask
            np.testing.assert_array_equal(gram[rows], priv.granularity * H[rows])
            np.testing.assert_array_equal(target[rows], priv.granularity * h[rows])
    mixed = priv.release_noise_units(np.array([[3, 16, 0, 7]]))
    for col, k in enumerate((3, 16, 0, 7)):
        np.testing.assert_array_equal(mixed[0][0, col], ahead[k][0][0, col])


def test_an_unkeyed_tree_offers_only_its_current_release_and_bad_indices_are_refused():
    priv = Privatizer(1.0, 1e-3, 1.0, 2, 8, (3,), random_state=1)
    with pytest.raises(ValueError, match="release order"):
        priv.release_noise_units(np.full(3, 2))
    with pytest.raises(ValueError, match="integer array of shape"):
        priv.release_noise_units(np.zeros(2, dtype=int))
    with pytest.raises(ValueError, match=r"\[0, n_releases=8\]"):
        Privatizer(1.0, 1e-3, 1.0, 2, 8, (3,), continual="sqrt", random_state=1).release_noise_units(np.full(3, 9))
    with pytest.raises(ValueError, match="continual='tree'"):
        Privatizer(1.0, 1e-3, 1.0, 2, 8, (3,), noise_calibration="paper", continual="sqrt")
    with pytest.raises(ValueError, match="continual must be"):
        calibrate_privatizer(1.0, 1e-3, 1.0, 2, 8, continual="banded")
    with pytest.raises(ValueError, match=r"n_releases=.*continual='tree'"):  # O(tau) memory: refused before allocating
        calibrate_privatizer(1.0, 1e-3, 1.0, 2, 2**40, continual="sqrt")
    assert _plan("P", PrivFairXLinUCB(1.0, 1e-3, 1.0, "log-det"), 2**23, 2, 2).continual == "tree"  # "auto"


# ------------------------------------------------------------------------------------ the tree as before
def test_the_tree_path_is_bit_for_bit_the_previous_privatizer():
    """Hashes recorded with the PRIVATIZER before the factorizations landed (same seeds, same masks)."""
    rng = np.random.default_rng(3)
    expected = {False: "ee4e719735a5c6df", True: "ad15567fc669b027"}
    for keyed, digest in expected.items():
        priv = Privatizer(2.0, 0.1, math.sqrt(5), 3, 20, (2, 3), random_state=7, tree_keys=_keys(2, 3) if keyed else None)
        releases = []
        for k in range(12):
            x = rng.normal(size=(2, 3, 3))
            gram, target = priv.release(x[..., :, None] * x[..., None, :], x * 0.3, np.array([True, k % 3 != 1])[:, None])
            releases.append(np.concatenate([gram.ravel(), target.ravel()]))
        assert _hash(np.array(releases)) == digest


@pytest.mark.slow
def test_the_learner_with_the_tight_tree_or_the_paper_formula_is_bit_for_bit_as_before():
    env = FederatedSyntheticEnvironment(dim=2, n_actions=3)
    learners = {c: PrivFairXLinUCB(2.0, 0.1, math.sqrt(2), noise_calibration=c, continual="tree", random_state=11,
                                   n_steps=2) for c in ("tight", "paper")}
    res = simulate_federated(env, learners, horizon=100, n_agents=2, seeds=[0], engine="numpy")
    # recorded when the plan began to charge the float64 sums of the increments (Delta + 2 n gamma_n (L^2 + B^2),
    # n = the horizon): the tight tree's final regret moved in its 13th digit (62.10342653658292 before), the paper's
    # formula (its noise not a function of Delta) not at all
    assert _hash(res.fair_regret) == "0af18a604252990b"
    assert res.fair_regret[:, 0, -1].tolist() == [62.10342653657844, 80.26414983561007]


# --------------------------------------------------------------------------------- privacy_spent and plan
def test_default_is_the_exact_blt_or_the_tight_tree_never_the_square_root_and_privacy_spent_is_the_request():
    learner = PrivFairXLinUCB(2.0, 0.1, math.sqrt(5))
    plan = _plan("Priv", learner, 1000, 10, 5)
    spent = plan.spent
    assert (spent["epsilon"], spent["delta"]) == (2.0, 0.1)
    assert spent["continual"] == "blt-exact" and plan.continual == "blt-exact"
    # the accounted figures: the mu-GDP profile at the request less the noise table's share, never above delta
    # the plan charges the float64 sums of an increment of at most `horizon` pairs
    cal = calibrate_privatizer(2.0, 0.1, math.sqrt(5), 5, plan.n_releases, continual="blt-exact", summed_pairs=1000)
    assert plan.calibration == cal and spent["mu"] == cal.mu and cal.delta_sampler > 0
    unsummed = calibrate_privatizer(2.0, 0.1, math.sqrt(5), 5, plan.n_releases, continual="blt-exact")
    slack = 2 * 1000 * (1000 * 2.0**-53 / (1 - 1000 * 2.0**-53)) * (5 + 1)
    assert cal.sensitivity - unsummed.sensitivity == pytest.approx(slack, rel=1e-6) and slack > 0
    assert gaussian_dp_delta(spent["mu"], 2.0) + cal.delta_sampler <= 0.1
    assert gaussian_dp_epsilon(spent["mu"], 0.1) <= 2.0
    sqrt = calibrate_privatizer(2.0, 0.1, math.sqrt(5), 5, plan.n_releases, continual="sqrt")
    assert cal.node_sigma * cal.release_factor <= 1.05 * sqrt.node_sigma * sqrt.release_factor
    # where the exact BLT is more than 5 % noisier at the worst release (100,000 releases at epsilon 0.5: +5.4 %),
    # the default is still the exact BLT (the square root's float sampler is stated, not charged: asked by name only)
    far = _plan("Priv", PrivFairXLinUCB(0.5, 0.1, math.sqrt(5)), 100_000, 50, 5)
    assert far.n_releases == 100_000 and far.continual == far.spent["continual"] == "blt-exact"
    exact = calibrate_privatizer(0.5, 0.1, math.sqrt(5), 5, 100_000, continual="blt-exact", summed_pairs=100_000)
    sqrt = calibrate_privatizer(0.5, 0.1, math.sqrt(5), 5, 100_000, continual="sqrt", summed_pairs=100_000)
    assert 1.05 * sqrt.node_sigma * sqrt.release_factor < exact.node_sigma * exact.release_factor
    assert exact.node_sigma * exact.release_factor < 1.06 * sqrt.node_sigma * sqrt.release_factor
    assert far.calibration == exact
    # where the exact BLT refuses (its noise table's share of a tiny delta is too large), the tight tree: exact too
    tiny = _plan("Priv", PrivFairXLinUCB(2.0, 1e-12, math.sqrt(5)), 1000, 10, 5)
    with pytest.raises(ValueError, match="share of delta"):
        calibrate_privatizer(2.0, 1e-12, math.sqrt(5), 5, tiny.n_releases, continual="blt-exact")
    assert tiny.continual == tiny.spent["continual"] == "tree"
    assert tiny.calibration == calibrate_privatizer(2.0, 1e-12, math.sqrt(5), 5, tiny.n_releases, continual="tree",
                                                    summed_pairs=1000)
    paper = _plan("P", PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), noise_calibration="paper"), 1000, 10, 5)
    assert paper.continual == "tree"
    with pytest.raises(ValueError, match="needs continual='tree'"):
        _plan("P", PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), noise_calibration="paper", continual="sqrt"), 1000, 10, 5)
    with pytest.raises(ValueError, match="continual must be 'auto'"):
        _plan("P", PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), continual="Sqrt"), 1000, 10, 5)


def test_exp1_noise_at_the_worst_release_and_the_lemma4_shift_follow_the_factorization():
    """At Exp 1's setting (tau = 20,002): the worst release's std per agent, and the shift that uses it."""
    worst = {}
    for continual in CONTINUAL:
        cal = calibrate_privatizer(2.0, 0.1, math.sqrt(5), 5, 20_002, continual=continual)
        worst[continual] = cal.node_sigma * cal.release_factor
        f = get_factorization(continual, 20_002)
        assert cal.release_factor == pytest.approx(float(f.release_norms().max()))
        assert cal.column_sensitivity == pytest.approx(f.sensitivity)
    assert worst["tree"] == pytest.approx(77.22, abs=0.01)  # 20.64 * sqrt(14)
    assert worst["sqrt"] == pytest.approx(18.53, abs=0.01)
    assert worst["honaker"] == pytest.approx(47.55, abs=0.01)
    shifts = {c: _plan("P", PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), continual=c), 100_000, 10, 5).shift for c in CONTINUAL}
    assert shifts["sqrt"] < shifts["honaker"] < shifts["tree"]
    assert shifts["tree"] / shifts["sqrt"] == pytest.approx(worst["tree"] / worst["sqrt"], rel=1e-4)


# ---------------------------------------------------------------------- identical-noise neighbours (learner)
@pytest.mark.parametrize("continual", CONTINUAL)
def test_identical_noise_neighbours_in_the_learner_path_differ_by_the_changed_increment_only(continual):
    """Replace one round of one agent: only that agent's releases from its communication round on move, each
    by the same rounded increment difference g * (A e_s)_k * delta_units, within the stated sensitivity."""
    d, m, horizon, tau = 2, 3, 40, 10
    bound = math.sqrt(d)
    learner = PrivFairXLinUCB(1.0, 1e-3, bound, continual=continual, random_state=1)
    plan = _plan("P", learner, horizon, m, d)
    plan.schedule = np.zeros(horizon + 1, bool)
    plan.schedule[4:horizon + 1:4] = True  # tau = 10 communication rounds of 4 bandit rounds
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 1, size=(horizon, 1, m, d))
    y = rng.uniform(-1, 1, size=(horizon, 1, m))
    changed_round, agent = 13, 1  # inside communication round s = 4
    x_b, y_b = x.copy(), y.copy()
    x_b[changed_round - 1, 0, agent] = bound * np.array([1.0, 0.0])  # orthogonal contexts of norm L, y = 0
    x[changed_round - 1, 0, agent] = bound * np.array([0.0, 1.0])
    y[changed_round - 1, 0, agent], y_b[changed_round - 1, 0, agent] = 0.0, 0.0
    keys = _keys(1, m)
    syncs = [_AgentSync(plan, 1, m, d, tree_keys=keys) for _ in range(2)]
    releases = [[], []]
    for t in range(1, horizon + 1):
        for sync, xs, ys, out in zip(syncs, (x, x_b), (y, y_b), releases, strict=True):
            sync.accumulate(xs[t - 1], ys[t - 1])
            if plan.schedule[t]:
                out.append(sync.release(np.ones(1, bool)))
                sync.local_gram[:] = 0.0
                sync.local_target[:] = 0.0
    assert len(releases[0]) == tau
    cal = syncs[0].privatizer.calibration
    first_diff = None
    for k in range(tau):
        d_gram = releases[0][k][0] - releases[1][k][0]
        d_target = releases[0][k][1] - releases[1][k][1]
        others = np.arange(m) != agent
        assert not d_gram[0, others].any() and not d_target[0, others].any()
        if k < 3:  # releases before the changed communication round
            assert not d_gram.any() and not d_target.any()
            continue
        diff = np.concatenate([d_gram[0, agent].ravel(), d_target[0, agent], d_target[0, agent]])
        if first_diff is None:
            first_diff = diff
            assert np.linalg.norm(diff) <= cal.sensitivity
            assert np.linalg.norm(diff) >= math.sqrt(2) * bound**2 - 3 * cal.granularity  # near the worst pair
        np.testing.assert_array_equal(diff, first_diff)  # (A e_s)_k = 1 for every k >= s: the same move


# ------------------------------------------------------------------ white box: release = round(B (C m + z))
def _z(priv: Privatizer, n_rows_of_c: int) -> np.ndarray:
    """Rebuild the privatizer's z (grid units) from its keyed words: shape (rows of C, trees, entries)."""
    keys = priv._keys.reshape(-1)
    n_entries = priv._upper[0].size
    words = keyed_words(keys, np.zeros(keys.size, np.uint64), n_rows_of_c * n_entries)
    words = words.reshape(keys.size, n_rows_of_c, n_entries).swapaxes(0, 1)
    return ndtri(((words >> np.uint64(11)).astype(float) + 0.5) * 2.0**-53) * priv._factorized.scale


@pytest.mark.slow
@pytest.mark.parametrize("continual", FACTORIZED)
def test_white_box_release_noise_is_round_of_B_z_and_the_loss_on_C_m_is_the_calibrated_gaussian(continual):
    d, tau = 2, 37
    priv = Privatizer(1.0, 1e-3, 1.0, d, tau, (1, 2), continual=continual, random_state=0, tree_keys=_keys(1, 2))
    f = get_factorization(continual, tau)
    B, C = f.matrices()
    z = _z(priv, f.n_rows)
    expected = np.rint(np.einsum("kr,rte->kte", B, z))
    got = np.stack([priv._factorized.units(np.full(2, k)) for k in range(1, tau + 1)])
    assert np.abs(got - expected).max() <= 1  # equal but for a rounding tie moved by the FFT's last bit
    assert (got == expected).mean() > 0.999
    # the Gaussian mechanism on C m: whitened shift of the worst neighbours is exactly the calibrated mu
    cal = priv.calibration
    sigma_units = cal.node_sigma / cal.granularity
    worst = int(np.argmax(np.linalg.norm(C, axis=0)))
    column = C[:, worst]
    delta_units = cal.sensitivity / cal.granularity  # Frobenius bound of one increment's change, in units
    mu = np.linalg.norm(column) * delta_units / (math.sqrt(2.0) * sigma_units)  # off-diagonal copies counted once
    assert mu == pytest.approx(cal.mu, rel=1e-12)
    assert gaussian_dp_delta(mu, 1.0) <= 1e-3
    # the privacy loss of y = C m + z against C m' = C m + column * D (whitened, one coordinate) over fresh z
    rng = np.random.default_rng(5)
    noise = rng.normal(size=(40_000, column.size))
    shift = column * delta_units / (math.sqrt(2.0) * sigma_units)
    loss = (np.sum((noise + shift) ** 2, axis=1) - np.sum(noise**2, axis=1)) / 2.0  # log p(y) / p'(y)
    assert loss.mean() == pytest.approx(mu**2 / 2, rel=0.05)  # > 5 standard errors
    assert loss.var() == pytest.approx(mu**2, rel=0.05)


# -------------------------------------------------------------------------- audit with a half-noise mutant
def _audit_mechanism(continual: str, tau: int, s: int, epsilon: float, delta: float, noise_share: float):
    """The released target entry (d = 1) of each stream, reduced to the Neyman-Pearson statistic."""
    f = get_factorization(continual, tau)
    B, _ = f.matrices()
    weights = np.linalg.solve(B @ B.T, np.tril(np.ones((tau, tau)))[:, s - 1])

    def run(element, size, rng):
        priv = Privatizer(epsilon, delta, 1.0, 1, tau, (size,), continual=continual, random_state=rng)
        priv._factorized.scale = priv._factorized.scale * noise_share  # the mutant: a fraction of the noise
        zero = np.zeros((size, 1, 1))
        out = []
        for k in range(1, tau + 1):
            target = np.full((size, 1), element if k == s else 0.0)
            out.append(priv.release(zero, target)[1][:, 0])
        return weights @ np.array(out)

    return run


@pytest.mark.slow
@pytest.mark.parametrize("continual", FACTORIZED)
def test_audit_passes_the_factorized_privatizer_and_catches_a_half_noise_mutant(continual):
    epsilon, delta, tau = 1.0, 1e-3, 8
    cal = calibrate_privatizer(epsilon, delta, 1.0, 1, tau, continual=continual)
    s = int(np.argmax(get_factorization(continual, tau).column_norms())) + 1
    # the target entry sits twice in the augmented matrix: a move of Delta / sqrt(2) is the whole sensitivity
    element = math.floor(cal.sensitivity / math.sqrt(2.0) / cal.granularity) * cal.granularity
    kwargs = {"n_samples": 100_000, "delta": delta, "n_bins": 30, "random_state": 4}
    honest = audit_epsilon(_audit_mechanism(continual, tau, s, epsilon, delta, 1.0), 0.0, element, **kwargs)
    mutant = audit_epsilon(_audit_mechanism(continual, tau, s, epsilon, delta, 0.5), 0.0, element, **kwargs)
    print(f"{continual}: claimed epsilon {epsilon} at delta {delta}; audit honest {honest.epsilon_lower_bound:.3f}, "
          f"half-noise mutant {mutant.epsilon_lower_bound:.3f}")
    assert honest.epsilon_lower_bound <= epsilon
    assert mutant.epsilon_lower_bound > epsilon


@pytest.mark.parametrize("continual", FACTORIZED)
def test_release_noise_has_the_std_of_the_factorization_rows(continual):
    """Off-diagonal entries: sigma ||B_k||; diagonal: sqrt(2) times (what Lemma 4's shift assumes)."""
    tau, n = 16, 8_000
    priv = Privatizer(1.0, 1e-3, 1.0, 1, tau, (n,), continual=continual, random_state=3)
    norms = get_factorization(continual, tau).release_norms()
    for k in (1, 7, 16):
        gram, target = priv.release_noise_units(np.full(n, k))
        scale = priv.node_sigma / priv.granularity * norms[k - 1]
        assert target[:, 0].std() == pytest.approx(scale, rel=0.05)  # ~6 standard errors
        assert gram[:, 0, 0].std() == pytest.approx(math.sqrt(2.0) * scale, rel=0.05)
        assert abs(target[:, 0].mean()) < 4 * scale / math.sqrt(n)


# ---------------------------------------------------------------- secure noise: a keyed PRF in counter mode
def _fixed_keys(n_rows: int, seed: int = 0) -> tuple[bytes, ...]:
    rng = np.random.default_rng(seed)
    return tuple(rng.bytes(KEY_BYTES) for _ in range(n_rows))


def test_prf_words_are_keyed_blake2b_of_the_counter_and_a_fixed_function_of_key_draw_and_entry():
    keys = _fixed_keys(3)
    words = prf_words(keys, 0, 12, 21)
    assert words.shape == (12, 3, 21) and words.dtype == np.uint64
    # the specification, recomputed here: BLAKE2b-512(key, person, le64(draw) || le64(block)), little-endian words
    digest = hashlib.blake2b((7).to_bytes(8, "little") + (2).to_bytes(8, "little"), key=keys[1], digest_size=64,
                             person=b"dpfair.privz.v1").digest()
    np.testing.assert_array_equal(words[7, 1, 16:21], np.frombuffer(digest, dtype="<u8")[:5])
    # any window of draws, any subset of rows: the same words (a function of (key, draw, entry) only)
    np.testing.assert_array_equal(prf_words(keys, 5, 4, 21), words[5:9])
    np.testing.assert_array_equal(prf_words(keys[2:], 0, 12, 21)[:, 0], words[:, 2])
    np.testing.assert_array_equal(prf_words(keys, 0, 12, 10), words[..., :10])
    # other keys, other words: no word in common between rows (2^-64 per pair by chance)
    assert np.unique(words).size == words.size
    assert not np.isin(prf_words(_fixed_keys(3, seed=1), 0, 12, 21), words).any()


@pytest.mark.statistical
def test_prf_gaussian_is_standard_normal_and_independent_across_entries_rows_and_draws():
    """KS at n = 20,000 variates from fixed keys (reproducible); a mis-scaled uniform mutant is caught."""
    from scipy.stats import kstest

    words = prf_words(_fixed_keys(4, seed=11), 0, 250, 20)  # 4 rows x 250 draws x 20 entries (3 blocks of 8)
    z = gaussian_from_words(words)
    assert kstest(z.ravel(), "norm").pvalue > 0.01
    mutant = ndtri(((words >> np.uint64(12)).astype(float) + 0.5) * 2.0**-53)  # the top bit lost: u in (0, 1/2)
    assert kstest(mutant.ravel(), "norm").pvalue < 1e-12
    samples = z.reshape(-1, 20)  # 1,000 samples of the 20 entries: block 0 vs 1 vs 2 independent
    corr = np.corrcoef(samples, rowvar=False)
    assert np.abs(corr[np.triu_indices(20, 1)]).max() < 0.15  # null sd 0.032: 4.7 sd for the max of 190 pairs
    rows = np.corrcoef(z.transpose(1, 0, 2).reshape(4, -1))  # rows (keys) independent, 5,000 variates each
    assert np.abs(rows[np.triu_indices(4, 1)]).max() < 0.06  # null sd 0.014
    lagged = np.corrcoef(z[1:].ravel(), z[:-1].ravel())[0, 1]  # consecutive draws independent
    assert abs(lagged) < 0.04  # null sd 0.007


@pytest.mark.parametrize("continual", FACTORIZED)
def test_secure_factorized_noise_differs_across_privatizers_and_rows(continual):
    a, b = (Privatizer(1.0, 1e-3, 1.0, 2, 16, (1, 3), continual=continual) for _ in range(2))
    assert a._row_keys is not None and len(a._row_keys) == 3 and all(len(k) == KEY_BYTES for k in a._row_keys)
    noise_a = np.stack([a.release_noise_units(np.full((1, 3), k))[0] for k in range(1, 9)])
    noise_b = np.stack([b.release_noise_units(np.full((1, 3), k))[0] for k in range(1, 9)])
    assert not (noise_a == noise_b).all(axis=(-1, -2)).any()
    assert not (noise_a[:, 0, 0] == noise_a[:, 0, 1]).all(axis=(-1, -2)).any()


@pytest.mark.parametrize("continual", FACTORIZED)
def test_the_pickled_state_of_an_exp1_agent_is_small_and_constant_in_the_releases(continual):
    """Secure noise, one agent, d = 5, Exp 1's tau = 20,002: the keys and the counts, not the past z."""
    priv = Privatizer(2.0, 0.1, math.sqrt(5), 5, 20_002, (1, 1), continual=continual)
    zero_gram, zero_target = np.zeros((1, 1, 5, 5)), np.zeros((1, 1, 5))
    sizes = {}
    for k in range(1, 201):
        priv.release(zero_gram, zero_target)
        if k in (10, 200):
            sizes[k] = len(pickle.dumps(priv))
    assert abs(sizes[200] - sizes[10]) < 300 and sizes[200] < 30_000, sizes
    assert len(dumps_state(priv)) < 30_000


@pytest.mark.parametrize("continual", FACTORIZED)
@pytest.mark.parametrize("source", ["secure", "seeded-keyed", "seeded"])
def test_an_unpickled_privatizer_continues_with_the_releases_of_the_original(continual, source):
    """The state-resume property: reloaded in a process that never saw it (cache cleared) or in this one."""
    rng = np.random.default_rng(8)
    d, shape = 3, (1, 2)
    kwargs = {"secure": {}, "seeded": {"random_state": 6},
              "seeded-keyed": {"random_state": 6, "tree_keys": _keys(*shape)}}[source]
    priv = Privatizer(2.0, 0.1, math.sqrt(3), d, 40, shape, continual=continual, **kwargs)
    for k in range(7):
        priv.release(*_increments(rng, shape, d), np.array([[True, k % 2 == 0]]))
    blob = pickle.dumps(priv)
    _clear_cache()
    fresh = pickle.loads(blob)  # rebuilds its table from the keys
    shared = pickle.loads(blob)  # finds fresh's table in the process cache (keyed sources)
    if source != "seeded":
        assert len(blob) < 10_000 and shared._factorized._state() is fresh._factorized._state()
    for k in range(25):
        increments = _increments(rng, shape, d)
        mask = np.array([[k % 3 != 0, True]])
        expected = priv.release(*increments, mask)
        for copy in (fresh, shared):
            np.testing.assert_array_equal(copy.release(*increments, mask)[0], expected[0])
            np.testing.assert_array_equal(copy.release_noise_units(copy.count)[1], priv.release_noise_units(priv.count)[1])


def test_blt_noise_table_is_int32_within_its_proved_bound_and_the_engines_agree_on_it() -> None:
    from dpfair.bandits import FairXLinUCB

    priv = Privatizer(2.0, 0.1, math.sqrt(5), 5, 100_000, (1, 2), continual="blt", random_state=0,
                      tree_keys=_keys(1, 2))
    f = priv._factorized
    assert f._state().table.dtype == np.int32  # sum_j |b_j| 8.3 max scale < 2^31: every entry fits exactly
    bound = np.abs(np.cumsum(f.factorization.inverse_coefficients())).sum() * 8.3 * f.scale.max()
    assert bound < 2**31 - 1
    got = f.units(np.full(2, 3000))
    assert np.abs(got).max() < bound and got.dtype == np.int32
    # the sqrt keeps its int64 table (its numbers unchanged)
    assert Privatizer(2.0, 0.1, 1.0, 2, 50, (1,), continual="sqrt", random_state=0)._factorized._state().table.dtype == np.int64
    # the compiled engine reads the int32 table through fill_noise_slots: the numpy engine's numbers exactly
    env = FederatedSyntheticEnvironment(dim=3, n_actions=4, noise_std=0.2, random_state=2)
    learners = {"B0": FairXLinUCB(radius=0.5),
                "L": PrivFairXLinUCB(3.0, 0.1, math.sqrt(3), "bounded-gap", continual="blt", random_state=2)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = [simulate_federated(env, learners, 80, 3, [2], engine=e, record_actions=True) for e in ("compiled", "numpy")]
    np.testing.assert_array_equal(runs[0].actions, runs[1].actions)
    np.testing.assert_allclose(runs[0].fair_regret, runs[1].fair_regret, rtol=0, atol=1e-9)
    assert runs[0].privacy_spent["L"]["continual"] == "blt"
