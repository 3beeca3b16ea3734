"""srctrans.random inside generated CUDA kernels: the same numbers as on the CPU.

The kernels draw with the very scalar Threefry kernels the CPU path compiles
(:mod:`numba_backend.cuda_random`). Under the simulator (which runs Python and the C
library's ``log``) every draw is equal bit for bit; on a real GPU ``bits``, ``uniform``,
``split`` and ``fold_in`` are too (integer arithmetic and FMAs), while ``normal`` goes
through libdevice's ``log`` for about a third of the draws, so there it is checked to
within a few ulps.

The cases need a CUDA target in this process; without one, ``test_cases_under_the_simulator``
runs this file again in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` and then compiles every
kernel that run wrote to PTX for compute capability 9.0.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import srctrans
from srctrans import random as sr

cuda = pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install 'srctrans[cuda]')")

REPO = Path(__file__).resolve().parents[2]
ACTIVE = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" or os.environ.get("SRCTRANS_CUDA_TESTS") == "gpu"
needs_cuda = pytest.mark.skipif(not ACTIVE, reason="needs a CUDA target in this process (run under the simulator below)")

NOISY = """
import numpy as np
import srctrans.random as sr

def draws(key, x):
    e = sr.normal(key, (3,))
    u = sr.uniform(key, (3,), minval=-1.0, maxval=2.0)
    f = sr.uniform(key, (2, 2), dtype=np.float32)
    b = sr.bits(key, (4,))
    keys = sr.split(key, 3)
    g = sr.normal(keys[1], ())
    k2 = sr.fold_in(key, 7)
    h = sr.normal(k2, (2,), dtype=np.float32)
    return x + 0.1 * e * u, f, b, keys, g, k2, h
"""


def _ulps(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.max(np.abs(a - b) / np.spacing(np.maximum(np.abs(a), np.abs(b)).astype(a.dtype)))


@needs_cuda
def test_pmap_draws_equal_the_cpu_draws(make_module):
    module = make_module(NOISY)
    keys = sr.split(sr.key(42), 8)
    x = np.random.default_rng(0).normal(size=(8, 3))
    got = srctrans.pmap(module.draws, backend="cuda")(keys, x)
    want = srctrans.vmap(module.draws)(keys, x)
    simulated = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
    names = ("x + 0.1 e u", "uniform float32", "bits", "split", "normal of a split key", "fold_in", "normal float32")
    for name, g, w in zip(names, got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        if simulated or name in ("uniform float32", "bits", "split", "fold_in"):
            np.testing.assert_array_equal(g, w, err_msg=name)
        else:  # libdevice's log in normal's erfinv (see the module docstring)
            assert _ulps(g, w) <= 4, name


@needs_cuda
def test_kernel_draws_equal_the_cpu_sampler_element_by_element():
    import numba_backend.cuda_random as rk

    @cuda.jit
    def fill(key, normal64, uniform32, bits):
        i = cuda.grid(1)
        if i < normal64.shape[0]:
            k0, k1 = key[0], key[1]
            normal64[i] = rk.normal_f64_at(k0, k1, i)
            uniform32[i] = rk.uniform_f32_at(k0, k1, i, np.float32(-1.0), np.float32(3.0))
            bits[i] = rk.bits32_at(k0, k1, i)

    n, key = 64, sr.key(7)
    outs = [cuda.device_array(n, np.float64), cuda.device_array(n, np.float32), cuda.device_array(n, np.uint32)]
    fill[1, 64](cuda.to_device(sr.key_data(key)), *outs)
    normal64, uniform32, bits = (o.copy_to_host() for o in outs)
    np.testing.assert_array_equal(uniform32, sr.uniform(key, (n,), np.float32, -1.0, 2.0))
    np.testing.assert_array_equal(bits, sr.bits(key, (n,)))
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        np.testing.assert_array_equal(normal64, sr.normal(key, (n,)))
    else:
        assert _ulps(normal64, sr.normal(key, (n,))) <= 4


def test_cases_under_the_simulator(tmp_path):
    """This file's cases in a subprocess under the simulator; then every kernel they ran, to PTX."""
    if ACTIVE:
        pytest.skip("the cases run in this process")
    log = tmp_path / "kernels.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SRCTRANS_")}
    env.update(PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]), NUMBA_ENABLE_CUDASIM="1", SRCTRANS_CUDA_KERNEL_LOG=str(log))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'tmp'}", __file__, "-k", "not under_the_simulator"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0 and "2 passed" in proc.stdout, (proc.stdout + proc.stderr)[-5000:]
    from numba_backend.cuda import compile_ptx_file

    kernels = sorted(set(log.read_text().split()))
    assert kernels
    for path in kernels:
        try:
            ptx = compile_ptx_file(path, cc=(9, 0))
        except ImportError as err:  # pragma: no cover
            pytest.skip(f"cannot compile PTX here: {err}")
        assert ".target sm_90" in ptx, path
        text = Path(path).read_text()
        assert "rk.normal_f64_at" in text and "rk.split_word" in text, textwrap.shorten(text, 400)
