"""srctrans.random under pmap on logical CPU devices: each key draws the numbers it draws alone.

The oracle is a call per key (itself checked against JAX's vectors in test_random.py) and
vmap over the same keys. The compiled prange runner runs each device's shard on its own
thread, so equal results also show that the draws do not depend on the thread or the
device a key lands on.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans import random as sr

DRAWS = """
import numpy as np
import srctrans.random as sr

def draws(key, mu):
    e = sr.normal(key, (3,))
    u = sr.uniform(key, (2,), minval=-1.0, maxval=2.0, dtype=np.float32)
    keys = sr.split(key, 2)
    g = sr.normal(keys[1], ())
    b = sr.bits(sr.fold_in(key, 7), (2,))
    return mu + 0.5 * e, u, g, b
"""


@pytest.mark.parametrize("count", [1, 2, 8])
def test_pmap_over_keys_equals_one_call_per_key_and_vmap(make_module, monkeypatch, count):
    monkeypatch.setenv("SRCTRANS_CPU_DEVICES", str(count))
    module = make_module(DRAWS)
    keys = sr.split(sr.key(2026), 8)
    mu = np.linspace(-1.0, 1.0, 3)
    got = srctrans.pmap(module.draws, in_axes=(0, None))(keys, mu)
    batched = srctrans.vmap(module.draws, in_axes=(0, None))(keys, mu)
    for k in range(8):
        alone = module.draws(keys[k], mu)
        for g, v, a in zip(got, batched, alone):
            np.testing.assert_array_equal(g[k], a)
            np.testing.assert_array_equal(v[k], a)
    assert got[1].dtype == np.float32 and got[3].dtype == np.uint32
    assert len({tuple(row) for row in got[0]}) == 8  # every key its own numbers


def test_pmap_of_the_gradient_of_a_reparameterized_sample(make_module, monkeypatch):
    """d/dmu and d/dsigma of sum(mu + sigma * normal(key)) per key: n and sum(normal(key))."""
    monkeypatch.setenv("SRCTRANS_CPU_DEVICES", "2")
    module = make_module("""
        import numpy as np
        import srctrans.random as sr

        def sample_sum(params, key):
            mu, sigma = params[0], params[1]
            return np.sum(mu + sigma * sr.normal(key, (5,)))
    """)
    keys = sr.split(sr.key(3), 4)
    params = np.array([0.3, 1.7])
    grads = srctrans.pmap(srctrans.grad(module.sample_sum), in_axes=(None, 0))(params, keys)
    for k in range(4):
        np.testing.assert_allclose(grads[k], [5.0, np.sum(sr.normal(keys[k], (5,)))], rtol=1e-12)
