"""Random numbers under vmap: a batch of keys gives, row for row, what each key gives alone."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans import random

MODEL = """
import numpy as np
from srctrans import random


def perturbed(key, mu):
    return mu + random.normal(key, (3,))


def coin(key, p):
    return random.bernoulli(key, p) * 1.0 + random.uniform(key)
"""


@pytest.mark.parametrize("compiled", [False, True])
def test_a_batch_of_keys_gives_each_key_its_own_numbers(make_module, compiled):
    mod = make_module(MODEL)
    keys = random.split(random.key(7), 5)
    mus = np.arange(5.0)
    batched = srctrans.vmap(mod.perturbed)
    if compiled:
        batched = srctrans.jit(batched)
    want = np.stack([mod.perturbed(k, m) for k, m in zip(keys, mus)])
    np.testing.assert_array_equal(batched(keys, mus), want)
    coins = srctrans.vmap(mod.coin, in_axes=(0, None))(keys, 0.3)
    np.testing.assert_array_equal(coins, [mod.coin(k, 0.3) for k in keys])
    assert len(set(np.round(want[:, 0] - mus, 12))) == 5  # five different streams
