"""The compiled exact BLT release (continual="blt-exact", _exact_kernels): two-word integers against Python's,
bit-identical releases, the range bound and refusal, and the compiled engine against the numpy engine."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpfair.bandits.fairx import _exact_kernels as K
from dpfair.bandits.fairx._privatizer_exact import (
    ENCODER_LIMIT,
    OUTPUT_LIMIT,
    PARAM_BITS,
    ExactBLTRelease,
    check_encoder_range,
    dyadic_blt,
)

pytest.importorskip("numba")


def _parameters(T):
    Theta, Omega = K.check_parameters(*dyadic_blt(T))
    return Theta, Omega, Theta / 2.0**PARAM_BITS, Omega / 2.0**PARAM_BITS


def test_two_word_primitives_equal_python_integers():
    rng = np.random.default_rng(0)
    edges = [0, 1, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1]
    a = np.array(edges + list(rng.integers(0, 2**64, 300, dtype=np.uint64)), dtype=np.uint64)
    b = np.roll(a, 5)
    for x, y in zip(a, b, strict=True):
        hi, lo = K._mul64(x, y)
        assert (int(hi) << 64) | int(lo) == int(x) * int(y)
    values = [0, 1, -1, 2**77, -(2**77), 2**100 + 12345, -(2**120) - 7]
    for v in values + [int(z) << 40 for z in rng.integers(-(2**62), 2**62, 200)]:
        for k in (2**48 - 1, -(2**48) + 1, 0, 1, -3, int(rng.integers(-2**47, 2**47))):
            if abs(v * k) >= 2**127:
                continue
            word = K.to_words(np.array([v], dtype=object))[0]
            ph, pl = K._mul_signed(word[0], word[1], np.int64(k))
            assert K.from_words(np.array([[ph, pl]], dtype=np.uint64))[0] == v * k
            for bits in (1, 24, 48, 63):
                h, lo = K._round_shift(word[0], word[1], bits)
                assert K.from_words(np.array([[h, lo]], dtype=np.uint64))[0] == (v + (1 << (bits - 1))) >> bits


@pytest.mark.parametrize(("T", "bits"), [(300, 36), (20_002, 33)])
def test_compiled_encoder_and_decoder_are_bit_identical_to_python_integers(T, bits):
    """Up to 3,000 releases of 4 rows x 7 entries with increments up to 2^bits (runs of one sign: buffers past 2^70),
    against the reference's own Python-integer encode and decode; then increments of 2^45 until both refuse, at the
    same step."""
    Theta, Omega, theta, omega = _parameters(T)
    R, E = 4, 7
    ref = ExactBLTRelease(T, 1000.0, np.zeros(E, bool), R, lambda rows, counts, n: None)
    enc, dec, tot = np.zeros((R, 3, E, 2), np.uint64), np.zeros((R, 3, E)), np.zeros((R, E))
    rng = np.random.default_rng(T)
    rows, refused, top = np.arange(R), None, 0
    for step in range(min(T, 3000) + 1000):
        extreme = 2**bits if step < min(T, 3000) else 2**45
        m = rng.integers(-extreme, extreme, size=(R, E)) >> rng.choice([0, 3, 13, 23, 33])
        if step % 3 == 0 or extreme == 2**45:  # runs of the extreme increment, mostly one sign
            m[:] = np.where(rng.random((R, E)) < 0.9, extreme, -extreme)
        z = rng.integers(-(2**22), 2**22, size=(R, E))
        ok = K.exact_blt_step(m, z, rows, enc, dec, tot, Theta, Omega, theta, omega)
        try:
            r = ref.encode(m, rows)
        except ValueError:
            assert not ok
            refused = step
            break
        assert ok
        ref.decode(r + z.astype(object), rows)
        np.testing.assert_array_equal(K.from_words(enc).transpose(1, 0, 2), ref._encoder)
        np.testing.assert_array_equal(dec.transpose(1, 0, 2), ref._decoder)
        np.testing.assert_array_equal(tot, ref._total)
        if step < min(T, 3000):
            top = max(top, max(abs(int(v)) for v in ref._encoder.reshape(-1)))
    assert top >= 2**70  # the two words were needed in the first phase
    assert refused is not None and refused >= min(T, 3000)  # the range's refusal met by both, at the same step


def test_privatizer_releases_equal_the_compiled_step_bit_for_bit():
    """Privatizer(continual="blt-exact").release against to_units + noise_at + the compiled step, 400 releases."""
    from dpfair.bandits.fairx.privatizer import Privatizer

    batch, d, T = (2, 3), 4, 400
    keys = np.arange(1, 7, dtype=np.uint64).reshape(batch)
    with pytest.warns(Warning):
        priv = Privatizer(2.0, 0.1, math.sqrt(5), d, T, batch, continual="blt-exact", random_state=0, tree_keys=keys)
    Theta, Omega, theta, omega = _parameters(T)
    rows_u, cols_u = priv._upper
    R, E = 6, rows_u.size
    enc, dec, tot = np.zeros((R, 3, E, 2), np.uint64), np.zeros((R, 3, E)), np.zeros((R, E))
    rng = np.random.default_rng(1)
    for k in range(T):
        x = rng.uniform(-1, 1, size=(*batch, d)) * rng.choice([0.01, 1.0, 30.0])
        gram, target = x[..., :, None] * x[..., None, :], 0.7 * x
        mask = rng.random(batch) < 0.8
        sel = np.flatnonzero(mask)
        counts = priv.count.reshape(-1)[sel]
        aug = np.zeros((*batch, d + 1, d + 1), dtype=np.int64)
        aug[..., :d, :d], aug[..., :d, d] = priv.to_units(gram), priv.to_units(target)
        m = aug[..., rows_u, cols_u].reshape(R, E)[sel]
        z = priv._exact_blt.noise_at(sel, counts)
        assert K.exact_blt_step(m, z, sel, enc, dec, tot, Theta, Omega, theta, omega)
        released_gram, released_target = priv.release(gram, target, mask)
        full = np.zeros((R, d + 1, d + 1))
        full[:, rows_u, cols_u] = tot
        full[:, cols_u, rows_u] = tot
        g = priv.granularity
        full = full.reshape(*batch, d + 1, d + 1)
        np.testing.assert_array_equal(released_gram[mask], (full[..., :d, :d] * g)[mask], err_msg=f"release {k}")
        np.testing.assert_array_equal(released_target[mask], (full[..., :d, d] * g)[mask])


def test_range_refusal_before_any_change_and_the_plan_bound():
    Theta, Omega, theta, omega = _parameters(50)
    enc, dec, tot = np.zeros((1, 3, 1, 2), np.uint64), np.zeros((1, 3, 1)), np.zeros((1, 1))
    big = np.array([[2**62]], dtype=np.int64)  # r = C m reaches 2^62 at once
    assert not K.exact_blt_step(big, np.zeros((1, 1), np.int64), np.arange(1), enc, dec, tot,
                                Theta, Omega, theta, omega)
    assert not enc.any() and not tot.any()  # nothing changed
    ref = ExactBLTRelease(50, 1000.0, np.zeros(1, bool), 1, lambda rows, counts, n: None)
    with pytest.raises(ValueError, match="2\\*\\*78"):
        ref.encode(big, np.arange(1))
    assert not ref._encoder.any()
    assert OUTPUT_LIMIT == 2**K.OUTPUT_LIMIT_BITS and ENCODER_LIMIT == 2**K.ENCODER_LIMIT_BITS
    check_encoder_range(2.0**30, 20_002)  # Exp 1: gaps of at most 11 rounds, (5 + 1) / g = 5e4 per round
    with pytest.raises(ValueError, match="2\\*\\*78"):
        check_encoder_range(2.0**40, 20_002)


def _run(learners, horizon, engine):
    from dpfair.bandits import FederatedSyntheticEnvironment, simulate_federated

    env = FederatedSyntheticEnvironment(dim=5, n_actions=10, noise_std=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return simulate_federated(env, learners, horizon, 4, (0, 1), engine=engine, record_actions=True)


def test_learner_takes_blt_exact_and_the_engines_agree():
    from dpfair.bandits import PrivFairXLinUCB

    kw = {"radius": 1.0, "n_steps": 10, "step_size": 0.1}
    learners = {
        "exact": PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), "bounded-gap", random_state=0, continual="blt-exact", **kw),
        "sqrt": PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), "bounded-gap", random_state=0, continual="sqrt", **kw),
        "auto": PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), "bounded-gap", random_state=0, **kw),
    }
    compiled, reference = _run(learners, 600, "compiled"), _run(learners, 600, "numpy")
    np.testing.assert_array_equal(compiled.actions, reference.actions)
    np.testing.assert_allclose(compiled.fair_regret, reference.fair_regret, rtol=0, atol=1e-9)
    np.testing.assert_allclose(compiled.reward_regret, reference.reward_regret, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(compiled.communication_rounds, reference.communication_rounds)
    assert compiled.privacy_spent == reference.privacy_spent
    assert compiled.privacy_spent["exact"]["continual"] == "blt-exact"
    assert compiled.privacy_spent["sqrt"]["continual"] == "sqrt"
    assert not np.array_equal(compiled.actions[0], compiled.actions[1])  # the exact release's own noise
    # the default: the exact BLT (wherever its calibration and range hold), the same run as asked by name
    assert compiled.privacy_spent["auto"] == compiled.privacy_spent["exact"]
    np.testing.assert_array_equal(compiled.actions[2], compiled.actions[0])


def test_engine_releases_are_the_numpy_engines_bit_for_bit(monkeypatch):
    """The kernels' decoder sums and encoder words after a seeded run equal the numpy engine's PRIVATIZER state."""
    from dpfair.bandits import PrivFairXLinUCB
    from dpfair.bandits.fairx import simulator

    kept, made = [], []
    exact_rows = simulator._exact_rows
    monkeypatch.setattr(simulator, "_exact_rows", lambda *a: kept.append(exact_rows(*a)) or kept[-1])
    init = ExactBLTRelease.__init__

    def record(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(ExactBLTRelease, "__init__", record)
    learners = {"exact": PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), "bounded-gap", random_state=3, continual="blt-exact",
                                         radius=1.0, n_steps=10, step_size=0.1)}
    compiled = _run(learners, 400, "compiled")
    made.clear()
    reference = _run(learners, 400, "numpy")
    np.testing.assert_array_equal(compiled.actions, reference.actions)
    (ref,) = [r for r in made if r.count.any()]  # the numpy engine's PRIVATIZER (the dry run's made no release)
    encoder, total = kept[0][0], kept[0][4]
    last = total.shape[1] - 1  # the corner: never released, not run by the kernels (its buffers stay 0)
    np.testing.assert_array_equal(total[:, :last], ref._total[:, :last])
    np.testing.assert_array_equal(K.from_words(encoder).transpose(1, 0, 2), ref._encoder)
    assert ref.count.min() > 50 and np.abs(total[:, :last]).min() > 0


def test_secure_exact_noise_runs_compiled():
    from dpfair.bandits import PrivFairXLinUCB

    learner = PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), "bounded-gap", continual="blt-exact", radius=1.0)
    result = _run({"P": learner}, 200, "compiled")
    assert result.privacy_spent["P"]["noise"] == "secure" and result.communication_rounds.min() > 50
    assert np.isfinite(result.fair_regret).all()
