"""Speed: the compiled words of the factorized PRIVATIZER's noise and the blocked noise lookup.

Keyed BLAKE2b written out in numba against :mod:`hashlib` (the specification of ``prf_words``), keys of every
length and counters past 2**32; the compiled SplitMix64 words against ``keyed_words``; a flipped bit of the key
or of the counter changes every word; ``release_noise_units`` with a leading axis of releases equals one call per
release.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from dpfair.bandits.fairx._prf_kernels import blake2b_words, keyed_states, splitmix_words
from dpfair.bandits.fairx._privatizer_factorized import _PERSON, prf_words
from dpfair.bandits.fairx.privatizer import Privatizer, keyed_words, tree_key

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")


def _hashlib_words(key: bytes, draw: int, n_entries: int, person: bytes = _PERSON) -> np.ndarray:
    words = []
    for block in range(-(-n_entries // 8)):
        data = draw.to_bytes(8, "little") + block.to_bytes(8, "little")
        words.append(np.frombuffer(hashlib.blake2b(data, key=key, digest_size=64, person=person).digest(), "<u8"))
    return np.concatenate(words)[:n_entries]


@pytest.mark.parametrize("key_length", [1, 16, 32, 63, 64])
def test_compiled_blake2b_words_are_hashlib_keyed_blake2b_of_the_counter(key_length):
    rng = np.random.default_rng(key_length)
    keys = tuple(rng.bytes(key_length) for _ in range(3))
    for first in (0, 5, 2**32 + 7, 2**63 - 3):
        got = prf_words(keys, first, 3, 21)
        assert got.shape == (3, 3, 21) and got.dtype == np.uint64
        for j in range(3):
            for row, key in enumerate(keys):
                np.testing.assert_array_equal(got[j, row], _hashlib_words(key, first + j, 21))


def test_keys_of_different_lengths_and_other_personalizations_and_widths():
    keys = (b"k", b"a longer key of 32 bytes........", bytes(64))
    states = keyed_states(keys, b"other")
    got = blake2b_words(states, 9, 2, 8)
    for row, key in enumerate(keys):
        np.testing.assert_array_equal(got[1, row], _hashlib_words(key, 10, 8, person=b"other"))
    with pytest.raises(ValueError, match="1 to 64 bytes"):
        keyed_states((b"",), _PERSON)
    with pytest.raises(ValueError, match="person"):
        keyed_states((b"k",), bytes(17))


def test_a_flipped_bit_of_the_key_or_the_counter_changes_every_word():
    key = bytes(range(32))
    flipped = bytes([key[0] ^ 1]) + key[1:]
    a, b = prf_words((key, flipped), 0, 2, 21)[:, 0], prf_words((key, flipped), 0, 2, 21)[:, 1]
    assert (a != b).all() and (a[0] != a[1]).all()


def test_compiled_splitmix_words_are_the_keyed_trees_stream():
    keys = np.array([tree_key(3, s, a) for s in range(2) for a in range(3)], dtype=np.uint64)
    got = splitmix_words(keys, 7, 4, 21)
    expected = keyed_words(keys, np.full(keys.size, 7 * 21, dtype=np.uint64), 4 * 21).reshape(keys.size, 4, 21)
    np.testing.assert_array_equal(got, expected.swapaxes(0, 1))


# an unkeyed (secure) tree answers its current release only: not in the list
@pytest.mark.parametrize(("continual", "secure"), [("sqrt", False), ("sqrt", True), ("honaker", False),
                                                   ("honaker", True), ("tree", False)])
def test_a_leading_axis_of_releases_equals_one_call_per_release(continual, secure):
    keys = None if secure else np.array([[tree_key(1, s, a) for a in range(3)] for s in range(2)], dtype=np.uint64)
    priv = Privatizer(2.0, 0.1, math.sqrt(2), 2, 40, (2, 3), continual=continual,
                      random_state=None if secure else 5, tree_keys=keys)
    index = np.random.default_rng(0).integers(0, 41, size=(6, 2, 3))
    gram, target = priv.release_noise_units(index)
    assert gram.shape == (6, 2, 3, 2, 2) and target.shape == (6, 2, 3, 2)
    for b in range(6):
        one_gram, one_target = priv.release_noise_units(index[b])
        np.testing.assert_array_equal(gram[b], one_gram)
        np.testing.assert_array_equal(target[b], one_target)
    with pytest.raises(ValueError, match="blocks, \\*batch_shape"):
        priv.release_noise_units(index[:, :1])
