"""The exact BLT release (``_privatizer_exact``): integer encoder, lattice noise, float decoder.

Brute force against exact rational arithmetic (the encoder's coefficients and its error bound), the accounting
(``epsilon`` spent is the request; the sampler's share inside ``delta``), identical-noise neighbours (coordinates
before the change equal, after it within the proved slack of ``C e_s (m_s - m_s')``), constant state, and an
empirical audit that passes the mechanism and catches two mutants: half the noise, and an encoder whose output
is left off the integer lattice (the failure of a continuous ``C m`` plus discrete noise).
"""

from __future__ import annotations

import math
import pickle
from fractions import Fraction

import numpy as np
import pytest

from dpfair.bandits.fairx._privatizer_calibration import _entries, calibrate_privatizer
from dpfair.bandits.fairx._privatizer_exact import (
    PARAM_BITS,
    STATE_BITS,
    ExactBLTRelease,
    calibrate_exact_blt,
    dyadic_blt,
    encoder_bounds,
)
from dpfair.privacy import audit_epsilon
from dpfair.privacy.accounting import gaussian_dp_delta, gaussian_dp_epsilon
from dpfair.privacy.lattice import lattice_total_variation


def _exact_coefficients(T: int) -> list[Fraction]:
    """``c_j`` of ``C = 1 / q`` for the dyadic BLT, in exact rationals (``q c = 1``, the buffers' form)."""
    Theta, Omega = dyadic_blt(T)
    theta = [Fraction(t, 2**PARAM_BITS) for t in Theta]
    omega = [Fraction(o, 2**PARAM_BITS) for o in Omega]
    s, out = [Fraction(0)] * len(theta), []
    for t in range(T):
        c = (1 if t == 0 else 0) - sum(o * si for o, si in zip(omega, s, strict=True))
        s = [th * si + c for th, si in zip(theta, s, strict=True)]
        out.append(c)
    return out


def _words(rng: np.random.Generator):
    return lambda rows, counts, n_entries: rng.integers(0, 2**64, (rows.size, n_entries), dtype=np.uint64)


@pytest.mark.parametrize("T", [1, 7, 60])
def test_encoder_bounds_are_upper_bounds_of_the_exact_coefficients(T):
    c = _exact_coefficients(T)
    sens, s1, V = encoder_bounds(T)
    exact_sens = math.sqrt(float(sum(x * x for x in c)))
    exact_s1 = float(sum(abs(x) for x in c))
    assert exact_sens <= sens <= exact_sens * (1 + 1e-12)
    assert exact_s1 <= s1 <= exact_s1 * (1 + 1e-12)
    assert 1.5 <= V < 2.5  # d / 2 + sum |omega_i| / (2 (1 - theta_i)) < d / 2 + 1 / 2 (q(1) > 0)


def test_encoder_output_is_within_the_proved_error_of_the_exact_encoder():
    T, rows = 40, 3
    rng = np.random.default_rng(7)
    m = rng.integers(-(2**40), 2**40, size=(T, rows, 1))  # far beyond a bandit's increments
    c = _exact_coefficients(T)
    _, s1, V = encoder_bounds(T)
    eta = V * s1 * 2.0**-STATE_BITS
    mech = ExactBLTRelease(T, 2.0**16, np.array([False]), rows, _words(rng))
    for t in range(T):
        r = mech.encode(m[t], np.arange(rows))
        for row in range(rows):
            exact = sum(c[t - j] * int(m[j, row, 0]) for j in range(t + 1))  # (C m)_t, exact rational
            assert isinstance(r[row, 0], int)
            assert abs(Fraction(r[row, 0]) - exact) <= Fraction(1, 2) + Fraction(eta)


@pytest.mark.parametrize(("epsilon", "delta", "tau"), [(2.0, 0.1, 2_000), (1.0, 1e-5, 300), (8.0, 0.01, 50)])
def test_accounting_spends_exactly_the_request_with_the_sampler_inside_delta(epsilon, delta, tau):
    cal = calibrate_exact_blt(epsilon, delta, math.sqrt(5), 5, tau)
    assert cal.epsilon_accounted == pytest.approx(epsilon, rel=1e-8)
    g = cal.granularity
    assert 2**16 <= cal.sigma / g < 2**17
    # mu from the proved stream sensitivity S = sens(C) Delta / g + kappa sqrt(tau ((d+1)^2 - 1)), the slack computed
    # here from the encoder's bounds, not read back from the calibration
    sens, s1, V = encoder_bounds(tau)
    kappa = 1 + 2 * V * s1 * 2.0**-STATE_BITS
    slack = kappa * math.sqrt(tau * ((5 + 1) ** 2 - 1))
    assert cal.rounding_slack == pytest.approx(slack, rel=1e-12)
    assert cal.column_sensitivity == sens
    assert cal.sensitivity == pytest.approx(math.sqrt(2) * (5 + 1) + g * math.sqrt(35), rel=1e-12)
    assert cal.stream_sensitivity == pytest.approx(sens * cal.sensitivity / g + slack, rel=1e-12)
    assert cal.mu == pytest.approx(cal.stream_sensitivity / (math.sqrt(2) * cal.sigma / g), rel=1e-12)
    share = (1 + math.exp(epsilon)) * _entries(tau, 5) * lattice_total_variation(cal.sigma, g, "rounded")
    assert cal.delta_sampler >= share
    spent = gaussian_dp_delta(cal.mu, epsilon) + cal.delta_sampler
    assert delta * (1 - 1e-6) <= spent <= delta  # tight, not merely below
    assert cal.delta_sampler <= delta * 1e-3


def test_worst_release_noise_within_five_percent_of_the_square_root_at_exp1_scale():
    """What exactness costs here: the BLT against the square root and the encoder's rounding slack."""
    for tau in (2_000, 20_002):
        exact = calibrate_exact_blt(2.0, 0.1, math.sqrt(5), 5, tau)
        sqrt = calibrate_privatizer(2.0, 0.1, math.sqrt(5), 5, tau, continual="sqrt")
        tree = calibrate_privatizer(2.0, 0.1, math.sqrt(5), 5, tau, continual="tree")
        assert exact.worst_release_std / (sqrt.node_sigma * sqrt.release_factor) < 1.025
        assert exact.worst_release_std / (tree.node_sigma * tree.release_factor) < 0.35


def test_identical_noise_neighbours_differ_before_s_by_nothing_and_after_by_the_proved_shift():
    T, s, rows = 30, 9, 4
    rng = np.random.default_rng(3)
    m = rng.integers(-(2**30), 2**30, size=(T, rows, 2))
    m2 = m.copy()
    m2[s - 1] += rng.integers(-(2**20), 2**20, size=(rows, 2))  # one round's increment replaced
    outs = []
    for stream in (m, m2):
        mech = ExactBLTRelease(T, 2.0**16, np.array([False, True]), rows, _words(np.random.default_rng(11)))
        ys = []
        for t in range(T):
            ys.append(mech.encode(stream[t], np.arange(rows)) + mech.noise(np.arange(rows)).astype(object))
        outs.append(np.array(ys, dtype=object))
    diff = (outs[1] - outs[0]).astype(np.int64)  # the noise cancels: r(m') - r(m), integers
    assert not diff[: s - 1].any()
    c = np.array([float(x) for x in _exact_coefficients(T)])
    _, s1, V = encoder_bounds(T)
    kappa = 1 + 2 * V * s1 * 2.0**-STATE_BITS
    shift = c[: T - s + 1, None, None] * (m2[s - 1] - m[s - 1]).astype(float)[None]  # C e_s (m_s' - m_s)
    assert np.abs(diff[s - 1 :] - shift).max() <= kappa + 1e-6
    assert np.abs(diff[s - 1 :] - shift).max() > 0.1  # the rounding part is really there


def test_releases_are_the_prefix_sums_plus_the_decoded_noise():
    T, rows = 200, 2
    rng = np.random.default_rng(5)
    m = rng.integers(0, 2**20, size=(T, rows, 3))
    a = ExactBLTRelease(T, 2.0**16, np.array([True, False, True]), rows, _words(np.random.default_rng(1)))
    b = ExactBLTRelease(T, 2.0**16, np.array([True, False, True]), rows, _words(np.random.default_rng(1)))
    zero = np.zeros((rows, 3), dtype=np.int64)
    for t in range(T):
        release = a.step(m[t])
        noise_only = b.step(zero)
    # release - noise-only release = B (r(m) - r(0)) = A m + B e with |e| <= 1/2 + eta: within sum |b_j| grid units
    prefix = m.sum(axis=0)
    Theta, Omega = dyadic_blt(T)
    q = np.ones(T)
    q[1:] = sum(o / 2**PARAM_BITS * (th / 2**PARAM_BITS) ** np.arange(T - 1) for th, o in zip(Theta, Omega, strict=True))
    bound = np.abs(np.cumsum(q)).sum() * 1.01
    assert np.abs(release - noise_only - prefix).max() <= bound
    assert np.abs(noise_only).max() > 2**16  # the noise is there (about sigma_units times the release norm)


def test_masked_rows_keep_their_release_and_refuse_past_the_horizon():
    mech = ExactBLTRelease(3, 2.0**16, np.array([False]), 2, _words(np.random.default_rng(0)))
    first = mech.step(np.ones((2, 1), dtype=np.int64))
    second = mech.step(np.ones((2, 1), dtype=np.int64), mask=np.array([True, False]))
    assert second[1, 0] == first[1, 0] and second[0, 0] != first[0, 0]
    assert mech.count.tolist() == [2, 1]
    mech.step(np.ones((2, 1), dtype=np.int64))
    with pytest.raises(ValueError, match="n_releases=3"):
        mech.step(np.ones((2, 1), dtype=np.int64), mask=np.array([True, False]))
    with pytest.raises(ValueError, match="m_units must be an integer array"):
        mech.step(np.ones((2, 1)))


def test_state_does_not_grow_with_the_number_of_releases():
    sizes = []
    for T in (100, 3_000):
        mech = ExactBLTRelease(T, 2.0**16, np.array([False, True]), 3, _words(np.random.default_rng(2)))
        increments = np.random.default_rng(4).integers(0, 2**14, size=(T, 3, 2))
        for t in range(T):
            mech.step(increments[t])
        state = (mech._encoder, mech._decoder, mech._total, mech.count)
        assert mech._encoder.shape == (3, 3, 2) and mech._decoder.shape == (3, 3, 2)
        sizes.append(len(pickle.dumps(state)))
    assert sizes[1] <= 1.2 * sizes[0]  # 30x the releases: the same numbers, a few more digits in each integer


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="n_releases"):
        calibrate_exact_blt(1.0, 1e-5, 1.0, 2, 0)
    with pytest.raises(ValueError, match="dim"):
        calibrate_exact_blt(1.0, 1e-5, 1.0, 0, 10)
    with pytest.raises(ValueError, match="finite epsilon"):
        calibrate_exact_blt(math.inf, 1e-5, 1.0, 2, 10)


def _adaptive_loss(pad: bool, n: int = 200_000, steps: int = 6, mu: float = 1.3) -> np.ndarray:
    """Privacy loss of Gaussian outputs whose shifts depend on the earlier outputs, within a budget ``mu^2``."""
    rng = np.random.default_rng(8)
    budget, loss, previous = np.full(n, mu * mu), np.zeros(n), np.zeros(n)
    for t in range(steps):
        # an adversarial, output-dependent shift: larger after a larger output, never beyond the budget left
        shift = np.minimum(0.1 + 0.4 * np.abs(previous), np.sqrt(budget))
        if pad and t == steps - 1:
            shift = np.sqrt(budget)  # the proof's padding: the squared shifts sum to mu^2 on every path
        budget = np.maximum(budget - shift * shift, 0.0)
        x = rng.standard_normal(n)
        loss += shift * x + shift * shift / 2  # log p/q at the output shift + x drawn under p
        previous = shift + x
    return loss


def test_adaptive_shifts_with_a_pathwise_budget_give_the_gaussian_privacy_loss_exactly():
    """The composition step of the proof: padded to ``mu^2`` on every path, the loss is ``N(mu^2 / 2, mu^2)``; the
    unpadded stream (the mutant) is not that law (a mixture, below it), so the test can tell them apart."""
    from scipy import stats

    mu, n = 1.3, 200_000
    padded, unpadded = _adaptive_loss(True), _adaptive_loss(False)
    assert stats.kstest((padded - mu * mu / 2) / mu, "norm").pvalue > 1e-3
    assert abs(padded.mean() - mu * mu / 2) < 4 * mu / math.sqrt(n)
    assert padded.var() == pytest.approx(mu * mu, rel=0.02)
    assert unpadded.mean() < mu * mu / 2 - 10 * mu / math.sqrt(n)


# ------------------------------------------------------------------------------------ empirical audit
_T, _S, _MU, _DELTA = 12, 1, 1.0, 1e-3
_SIGMA_UNITS = 2.0**16


def _scalar_shift() -> int:
    """The increment (grid units) whose stream sensitivity ``sens(C) Delta + kappa sqrt(T)`` is ``mu = 1`` (scalar)."""
    sens, s1, V = encoder_bounds(_T)
    kappa = 1 + 2 * V * s1 * 2.0**-STATE_BITS
    return int((_MU * _SIGMA_UNITS - kappa * math.sqrt(_T)) / sens)


def _audit_mechanism(noise_share: float = 1.0, on_lattice: bool = True):
    """``size`` independent streams with ``m_s`` in ``{0, shift}`` reduced to the Neyman-Pearson statistic ``C e_s . Y``
    (or, off the lattice, whether ``Y_s`` is an integer)."""
    shift = _scalar_shift()
    c = np.array([float(x) for x in _exact_coefficients(_T)])

    def run(element, size, rng):
        mech = ExactBLTRelease(_T, _SIGMA_UNITS * noise_share, np.array([False]), size, _words(rng))
        rows = np.arange(size)
        stat = np.zeros(size)
        for t in range(_T):
            m = np.full((size, 1), shift * element if t == _S - 1 else 0, dtype=np.int64)
            r = mech.encode(m, rows)
            noise = mech.noise(rows)
            if on_lattice:
                y = (r + noise.astype(object)).astype(float)[:, 0]
            elif t == _S:  # the mutant: (C m)_t in doubles, never rounded, plus the same integer noise
                y = c[t - _S + 1] * shift * element + noise[:, 0]  # c_1 shift is not an integer
                return (y != np.rint(y)).astype(float)
            else:
                continue
            if t >= _S - 1:
                stat += c[t - _S + 1] * y
        return stat

    return run


@pytest.mark.slow
@pytest.mark.statistical
def test_audit_passes_the_exact_release_and_catches_two_mutants():
    claimed = gaussian_dp_epsilon(_MU, _DELTA)  # the exact mu-GDP profile claimed
    kwargs = {"n_samples": 40_000, "delta": _DELTA, "n_bins": 30, "random_state": 4}
    honest = audit_epsilon(_audit_mechanism(), 0, 1, **kwargs)
    half = audit_epsilon(_audit_mechanism(noise_share=0.5), 0, 1, **kwargs)
    off = audit_epsilon(
        _audit_mechanism(on_lattice=False), 0, 1, discrete=True, **{k: v for k, v in kwargs.items() if k != "n_bins"}
    )
    print(
        f"claimed {claimed:.3f}; audit honest {honest.epsilon_lower_bound:.3f}, half noise "
        f"{half.epsilon_lower_bound:.3f}, off the lattice {off.epsilon_lower_bound:.3f}"
    )
    assert honest.epsilon_lower_bound <= claimed
    assert half.epsilon_lower_bound > claimed
    assert off.epsilon_lower_bound > claimed


# ------------------------------------------------------------------------------------ through the Privatizer
def _privatizer(n_releases=40, batch=(2, 3), keys=None, **kwargs):
    from dpfair.bandits.fairx.privatizer import Privatizer

    with pytest.warns(Warning):  # seeded noise warns
        return Privatizer(
            2.0, 0.1, math.sqrt(5), 4, n_releases, batch, continual="blt-exact", random_state=0, tree_keys=keys, **kwargs
        )


def _increments(rng, batch):
    x = rng.uniform(-1, 1, size=(*batch, 4)) / 2
    return x[..., :, None] * x[..., None, :], 0.5 * x


def test_the_release_draws_rounded_gaussians_for_both_tables():
    """``law="rounded"`` is what makes ``r + Z`` a rounding of the continuous Gaussian mechanism (the proof); a
    discrete-Gaussian table would only be zCDP."""
    mech = ExactBLTRelease(10, 2.0**16, np.array([False, True]), 2, _words(np.random.default_rng(0)))
    assert mech._off.law == "rounded" and mech._diag.law == "rounded"
    assert mech._diag.sigma == pytest.approx(math.sqrt(2) * mech._off.sigma) and mech._off.sigma == 2.0**16
    priv = _privatizer()
    assert priv._exact_blt._off.law == "rounded" and priv._exact_blt._diag.law == "rounded"
    restored = pickle.loads(pickle.dumps(priv))._exact_blt  # the tables are rebuilt on load: the same law
    assert restored._off.law == "rounded" and restored._diag.law == "rounded"


def test_a_failing_word_source_leaves_the_release_unchanged():
    """The noise is drawn before the encoder's state changes: a word source that fails mid-stream leaves the
    encoder, the decoder and the counts as they were, and the next release continues the same stream."""
    calls = {"n": 0}
    rng = np.random.default_rng(6)

    def flaky(rows, counts, n_entries):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("no entropy")
        return rng.integers(0, 2**64, (rows.size, n_entries), dtype=np.uint64)

    mech = ExactBLTRelease(10, 2.0**16, np.array([False, True]), 2, flaky)
    m = np.array([[5, 7], [11, 13]], dtype=np.int64)
    mech.step(m)
    mech.step(m)
    before = (mech._encoder.copy(), mech._decoder.copy(), mech._total.copy(), mech.count.copy())
    with pytest.raises(OSError, match="no entropy"):
        mech.step(m)
    after = (mech._encoder, mech._decoder, mech._total, mech.count)
    for old, new in zip(before, after, strict=True):
        np.testing.assert_array_equal(old, new)
    mech.step(m)
    assert mech.count.tolist() == [3, 3]


def test_a_failing_release_construction_charges_nothing(monkeypatch):
    from dpfair.bandits.fairx import privatizer as module
    from dpfair.privacy import PrivacyBudget

    def broken(*args, **kwargs):
        raise MemoryError("no room for the lattice tables")

    monkeypatch.setattr(module, "ExactBLTRelease", broken)
    budget = PrivacyBudget(10.0, 0.5)
    with pytest.raises(MemoryError):
        module.Privatizer(2.0, 0.1, math.sqrt(5), 4, 40, (1, 2), continual="blt-exact", budget=budget)
    assert budget.ledger == ()


@pytest.mark.parametrize("target", [1e-8, 1e-7, 1e-6, 1e-5])
def test_accounted_epsilon_never_spends_more_than_its_delta(target):
    """The fixed point ``epsilon <- epsilon_mu(target - share(epsilon))`` approaches from below; at
    ``(1, 1e-5)``, ``tau = 2,000``, ``d = 5`` its sixth iterate at ``1e-8`` spent ``1.0000000206e-8``: the returned
    ``epsilon`` must spend at most ``target``, and not much less (the least such ``epsilon``, to ``1e-9``)."""
    from dpfair.bandits.fairx.privatizer import Privatizer

    with pytest.warns(Warning):
        priv = Privatizer(1.0, 1e-5, math.sqrt(5), 5, 2_000, (1,), continual="blt-exact", random_state=0)
    cal = priv.calibration
    mu = cal.column_sensitivity * cal.sensitivity / (math.sqrt(2) * priv.node_sigma)
    samples_tv = _entries(2_000, 5) * lattice_total_variation(priv.node_sigma, priv.granularity, "rounded")

    def spent(eps):
        return gaussian_dp_delta(mu, eps) + (1 + math.exp(eps)) * samples_tv

    eps = priv.accounted_epsilon(target)
    assert spent(eps) <= target
    assert spent(eps * (1 - 1e-9)) > target * (1 - 1e-6)


def test_privatizer_blt_exact_spends_the_request_and_refuses_the_noise_feed():
    from dpfair.bandits.fairx.privatizer import calibrate_privatizer

    priv = _privatizer()
    assert priv.calibration.epsilon_accounted == pytest.approx(2.0, rel=1e-8)
    assert priv.accounted_epsilon() == pytest.approx(2.0, rel=1e-8) and priv.accounted_epsilon() <= 2.0
    assert priv.calibration.sampler == "rounded" and priv.calibration.delta_accounted <= 0.1
    with pytest.raises(ValueError, match="release through Privatizer"):
        priv.release_noise_units(priv.count)
    with pytest.raises(ValueError, match="continual must be one of"):
        calibrate_privatizer(2.0, 0.1, 1.0, 2, 10, continual="exact")


def test_the_learner_takes_blt_exact_and_refuses_unknown_names():
    from dpfair.bandits import PrivFairXLinUCB

    learner = PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), continual="blt-exact")
    learner._validate_all(1, 5, 1000, n_agents=10, name="P")  # the compiled engine feeds it (test_exact_kernels)
    with pytest.raises(ValueError, match="continual must be 'auto'"):
        PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), continual="exact")._validate_all(1, 5, 1000, n_agents=10, name="P")


def test_privatizer_blt_exact_neighbours_with_the_same_keys_differ_only_from_the_changed_release_on():
    batch, T, s = (1, 2), 30, 11
    keys = np.array([[5, 9]], dtype=np.uint64)
    runs = []
    for changed in (False, True):
        priv, rng, out = _privatizer(T, batch, keys), np.random.default_rng(3), []
        for t in range(T):
            gram, target = _increments(rng, batch)
            if changed and t == s - 1:
                target = target + 0.4  # one round's (x, y) replaced: its increment moves
            out.append(np.concatenate([priv.release(gram, target)[1], priv.count[..., None]], axis=-1))
        runs.append(np.array(out))
    diff = runs[1] - runs[0]
    assert not diff[: s - 1].any()  # the same keys: before the change, the same releases bit for bit
    # from s on: the prefix sums move by 0.4 (A e_s), plus B e with |e| <= 1/2 + eta grid units per encoder output
    moved = diff[s - 1 :, ..., :4]
    assert np.abs(moved - 0.4).max() < 1e-3 and np.abs(moved - 0.4).max() > 0


def test_privatizer_blt_exact_state_is_constant_and_a_copy_continues_the_same_releases():
    batch = (1, 2)
    keys = np.array([[1, 2]], dtype=np.uint64)
    priv, rng, sizes = _privatizer(600, batch, keys), np.random.default_rng(0), []
    for k in (20, 599):
        while int(priv.count[0, 0]) < k:
            priv.release(*_increments(rng, batch))
        sizes.append(len(pickle.dumps(priv)))
        copy = pickle.loads(pickle.dumps(priv))
        last = _increments(rng, batch)
        np.testing.assert_array_equal(copy.release(*last)[0], priv.release(*last)[0])
    assert sizes[1] <= 1.1 * sizes[0]  # 30x the releases, the same state (no table of O(T) noise)


def test_the_float64_sums_of_neighbouring_increments_stay_within_the_charged_slack_and_a_bound_without_n_is_caught():
    """Two neighbouring increments (one pair replaced) summed as the learners sum them (``gram += z z^T`` in float64):
    each is off its exact value, and the two errors together stay within ``_summation_slack(n, L, B)`` in the
    Frobenius norm, the term the plan adds to ``Delta``; a slack without its outer ``n`` (``2 gamma_n (L^2 + B^2)``)
    is exceeded on the same sums, and so is one rounding's worth (``2 gamma_1 (L^2 + B^2)``)."""
    from fractions import Fraction

    from dpfair.bandits.fairx._privatizer_checks import _summation_slack

    rng = np.random.default_rng(3)
    n, d, bound, reward = 2000, 3, 1.0, 1.0
    x = rng.normal(size=(n, d))
    x /= np.maximum(1.0, np.linalg.norm(x, axis=1))[:, None] / bound
    z = np.concatenate([x, rng.uniform(-reward, reward, size=(n, 1))], axis=1)
    z_other = z.copy()
    z_other[n // 2] = np.concatenate([x[0][::-1], [-z[0, -1]]])

    def float_sum(rows):
        total = np.zeros((d + 1, d + 1))
        for row in rows:
            total += np.outer(row, row)
        return total

    def exact_sum(rows):
        return [[sum(Fraction(r[i]) * Fraction(r[j]) for r in rows) for j in range(d + 1)] for i in range(d + 1)]

    def frobenius_error(rows):  # one increment's own float64 error, against exact rationals
        computed, exact = float_sum(rows), exact_sum(rows)
        return math.sqrt(sum(float(Fraction(computed[i, j]) - exact[i][j]) ** 2
                             for i in range(d + 1) for j in range(d + 1)))

    error = frobenius_error(z) + frobenius_error(z_other)  # the proof needs each increment's own error
    assert 0 < error <= _summation_slack(n, bound, reward)
    gamma_n = n * 2.0**-53 / (1 - n * 2.0**-53)
    assert error > 2 * gamma_n * (bound**2 + reward**2)  # a slack without its outer n would not cover it


def test_the_noise_tables_distance_is_charged_even_when_the_estimate_falls_short(monkeypatch):
    """The calibration pays the tables' estimated distance first; when the measured distance of the final sigma's
    tables is above it (an estimate of half the truth, forced here), it pays the measured one and tries again: the
    share of delta charged always covers the tables the release samples from."""
    from dpfair.bandits.fairx import _privatizer_exact as exact
    from dpfair.privacy.lattice import lattice_total_variation

    honest = exact.lattice_total_variation_estimate
    monkeypatch.setattr(exact, "lattice_total_variation_estimate", lambda *a: 0.5 * honest(*a) / 1.15)
    cal = exact.calibrate_exact_blt(2.0, 0.1, math.sqrt(5), 5, 200)
    sampled = lattice_total_variation(cal.sigma, cal.granularity, "rounded")  # the release's two tables
    charged = cal.delta_sampler / ((1 + math.exp(2.0)) * exact._entries(200, 5))
    assert sampled <= charged * (1 + 1e-12)
    assert charged >= 1.1 * 0.5 * honest(cal.sigma, cal.granularity, "rounded") / 1.15  # it moved up, as checked
