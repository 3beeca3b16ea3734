"""jit(target="cuda"): array code, its gradients and its batches on a GPU (or the simulator).

These need a CUDA target in *this* process: Numba's simulator (``NUMBA_ENABLE_CUDASIM=1``
before ``numba.cuda`` is imported) or a GPU with CuPy. Without either they skip;
``tests/gpu/test_jit_cuda.py`` runs this file in a subprocess under the simulator and then
compiles every kernel the run wrote to PTX, and ``benchmarks/gpu_check.sh`` runs it on a GPU.

The oracle is the same transformation run on the CPU (uncompiled: the generated file as
Python), and for vmap the stacking of per-example results.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

cuda = pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install 'srctrans[cuda]')")
if not cuda.is_available():
    pytest.skip("no CUDA target in this process: test_jit_cuda.py runs these under NUMBA_ENABLE_CUDASIM=1", allow_module_level=True)

from numba_backend import cuda_arrays  # noqa: E402 - only with a CUDA target

SIMULATED = cuda_arrays.SIMULATED
xp = cuda_arrays.xp
RNG = np.random.default_rng(7)
# libdevice's exp/log/tanh may differ from the C library's in the last bits
RTOL = 1e-13 if SIMULATED else 1e-11

FUNCTIONS = '''
import numpy as np
import srctrans

def poly(x):
    return x * x + x * 2.0

def layer(W, X, b):
    return np.sum(np.tanh(X @ W + b))

def euler(y0, k):
    y = y0
    for i in range(20):
        y = y + 0.05 * (-k * y * y + np.sin(y))
    return np.sum(y * y)

def mlp_loss(params, x, t):
    W1, b1, W2, b2 = params
    h = np.tanh(x @ W1 + b1)
    o = h @ W2 + b2
    return np.sum((o - t) ** 2)

def branches(x, s):
    if np.sum(x) > 0.0:
        y = x * s
    else:
        y = -x * s
    return np.maximum(y, 0.25) + np.where(x > 0.5, x, 2.0 * x)

def centered(x):
    m = np.mean(x, axis=1, keepdims=True)
    return np.sqrt((x - m) ** 2 + 1.0)

def scaled(x, a):
    return x * a - 1

def noisy(key, x):
    k1, k2 = srctrans.random.split(key)
    return x * srctrans.random.normal(k1, x.shape) + srctrans.random.uniform(k2, x.shape)

def int_start(x):
    s = 1
    for i in range(3):
        s = s * np.sum(np.sin(x))
    return s

def one_tuple(x):
    y = x
    for i in range(2):
        y = y * 2.0
    return (y,)

def shadows(x, sign, cuda):
    return np.sign(x) * sign + cuda

def wraps(a):
    return (a - 1) > 100

def cumulative_loop(x):
    for i in range(3):
        x = np.cumsum(x) * 0.5
    return x
'''


@pytest.fixture(scope="module")
def fns(tmp_path_factory):
    import importlib
    import sys

    folder = tmp_path_factory.mktemp("jit_cuda")
    (folder / "cuda_user_fns.py").write_text(FUNCTIONS)
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("cuda_user_fns")
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("cuda_user_fns", None)


def host(x):
    return srctrans.device_get(x)


def close(got, want, rtol=RTOL):
    got, want = srctrans.tree.tree_leaves(host(got)), srctrans.tree.tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        assert np.asarray(g).dtype == np.asarray(w).dtype, (np.asarray(g).dtype, np.asarray(w).dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-13)


def test_elementwise_function_runs_as_one_kernel_and_returns_a_device_array(fns):
    f = srctrans.jit(fns.poly, target="cuda")
    x = RNG.standard_normal((3, 5))
    out = f(x)
    assert isinstance(out, xp.ndarray)
    close(out, x * x + x * 2.0)
    text = srctrans.source(f)
    assert srctrans.source_path(f).name.endswith(".cuda.py") and ".poly.jit." in srctrans.source_path(f).name
    assert text.count("@cuda.jit(cache=True)") == 1 and "def poly(x):" in text
    assert "return poly_value_fused(x)" in text


def test_float32_stays_float32_and_ints_keep_numpy_semantics(fns):
    f = srctrans.jit(fns.scaled, target="cuda")
    x32 = RNG.standard_normal(7).astype(np.float32)
    close(f(x32, 0.5), x32 * 0.5 - 1, rtol=1e-6)
    u8 = np.arange(5, dtype=np.uint8)
    close(f(u8, 3), u8 * 3 - 1)  # uint8 stays uint8 and wraps, as NumPy's does


def test_gradient_of_a_layer_matches_the_cpu(fns):
    W, X, b = RNG.standard_normal((4, 3)), RNG.standard_normal((6, 4)), RNG.standard_normal(3)
    g = srctrans.jit(srctrans.grad(fns.layer, argnums=(0, 1, 2)), target="cuda")
    close(g(W, X, b), srctrans.grad(fns.layer, argnums=(0, 1, 2))(W, X, b))
    vg = srctrans.jit(srctrans.value_and_grad(fns.layer), target="cuda")
    value, grad = vg(W, X, b)
    close(value, fns.layer(W, X, b))
    close(grad, srctrans.grad(fns.layer)(W, X, b))


def test_gradient_through_a_loop(fns):
    y0 = RNG.uniform(0.1, 1.0, 5)
    g = srctrans.jit(srctrans.grad(fns.euler), target="cuda")
    close(g(y0, 0.7), srctrans.grad(fns.euler)(y0, 0.7))


def test_per_example_gradients_of_an_mlp_with_a_params_tuple(fns):
    params = (RNG.standard_normal((4, 6)), RNG.standard_normal(6), RNG.standard_normal((6, 2)), RNG.standard_normal(2))
    X, T = RNG.standard_normal((5, 4)), RNG.standard_normal((5, 2))
    per_example = srctrans.jit(srctrans.vmap(srctrans.grad(fns.mlp_loss), in_axes=(None, 0, 0)), target="cuda")
    got = per_example(params, X, T)
    rows = [srctrans.grad(fns.mlp_loss)(params, X[i], T[i]) for i in range(len(X))]
    close(got, tuple(np.stack([r[k] for r in rows]) for k in range(4)))


def test_vmap_of_the_gradient_of_a_loop(fns):
    Y0 = RNG.uniform(0.1, 1.0, (4, 3))
    v = srctrans.jit(srctrans.vmap(srctrans.grad(fns.euler), in_axes=(0, None)), target="cuda")
    close(v(Y0, 0.7), np.stack([srctrans.grad(fns.euler)(y, 0.7) for y in Y0]))
    text = srctrans.source(v)  # a loop in each example: one kernel, the loop inside each thread
    assert "CUDA kernel (one thread per example)" in text and "cuda.local.array((20, 3), float64)" in text


def test_vmap_without_a_scalar_form_runs_the_vectorized_file(fns):
    X = RNG.standard_normal((4, 5))
    v = srctrans.jit(srctrans.vmap(fns.cumulative_loop), target="cuda")
    close(v(X), np.stack([fns.cumulative_loop(x) for x in X]))
    text = srctrans.source(v)
    assert srctrans.source_path(v).name.endswith(".cuda.py") and "vmap method: vectorized" in text


def test_host_control_flow_reads_a_device_value(fns):
    f = srctrans.jit(fns.branches, target="cuda")
    for x in (RNG.uniform(0.0, 1.0, 6), -RNG.uniform(0.0, 1.0, 6)):
        close(f(x, 1.5), fns.branches(x, 1.5))


def test_broadcasting_along_a_column_is_made_contiguous(fns):
    f = srctrans.jit(fns.centered, target="cuda")
    x = RNG.standard_normal((3, 4))
    close(f(x), fns.centered(x))


def test_device_arrays_are_used_in_place(fns):
    f = srctrans.jit(fns.poly, target="cuda")
    (gpu,) = srctrans.devices("cuda")[:1]
    x = RNG.standard_normal(6)
    on_device = srctrans.device_put(x, gpu)
    assert isinstance(on_device, xp.ndarray)
    close(f(on_device), x * x + x * 2.0)
    numba_array = cuda.to_device(x)
    close(f(numba_array), x * x + x * 2.0)
    # a result goes back in as it is, and srctrans.device_get brings any pytree home
    close(f(f(on_device)), fns.poly(fns.poly(x)))
    assert isinstance(srctrans.device_get({"a": f(x)})["a"], np.ndarray)


def test_an_error_on_the_device_names_the_users_line(fns):
    f = srctrans.jit(fns.layer, target="cuda")
    with pytest.raises(ValueError) as info:
        f(RNG.standard_normal((4, 3)), RNG.standard_normal((6, 5)), RNG.standard_normal(3))  # 5 != 4
    notes = "\n".join(getattr(info.value, "__notes__", []))
    line = FUNCTIONS.split("\n").index("    return np.sum(np.tanh(X @ W + b))") + 1
    assert "in your code:" in notes and f"cuda_user_fns.py:{line}" in notes and "X @ W + b" in notes, notes
    assert ".cuda.py" in notes


def test_random_numbers_are_the_same_bits_as_without_jit(fns):
    key, x = srctrans.random.key(3), RNG.standard_normal(5)
    f = srctrans.jit(fns.noisy, target="cuda")
    got = host(f(key, x))
    want = fns.noisy(key, x)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_a_loop_value_that_changes_type_is_saved_as_it_is(fns):
    """s = 1, then s * (a float): each tape holds what its trip saved (not the first trip's type)."""
    X = RNG.standard_normal((4, 3))
    want = np.stack([srctrans.grad(fns.int_start)(x) for x in X])
    close(srctrans.jit(srctrans.vmap(srctrans.grad(fns.int_start)), target="cuda")(X), want)
    with pytest.raises(srctrans.SrcTransError, match="a tape of int64 values"):  # a kernel refuses, never guesses
        srctrans.pmap(srctrans.grad(fns.int_start), backend="cuda")(X)


def test_a_returned_tuple_of_one_stays_a_tuple(fns):
    X = RNG.standard_normal((3, 2))
    got = srctrans.jit(srctrans.vmap(fns.one_tuple), target="cuda")(X)
    assert isinstance(got, tuple) and len(got) == 1
    close(got, srctrans.vmap(fns.one_tuple)(X))


def test_names_of_the_kernels_own_helpers_can_be_operands(fns):
    x = RNG.standard_normal(5)
    close(srctrans.jit(fns.shadows, target="cuda")(x, 2.0, 0.5), fns.shadows(x, 2.0, 0.5))


def test_integer_lines_wrap_as_numpy_does(fns):
    a = np.array([0, 1, 50, 200], dtype=np.uint8)
    close(srctrans.jit(fns.wraps, target="cuda")(a), fns.wraps(a))
    u = np.arange(6, dtype=np.uint8).reshape(3, 2)  # a loop of uint8 examples: no scalar form, the vectorized file
    close(srctrans.jit(srctrans.vmap(fns.cumulative_loop), target="cuda")(u), srctrans.vmap(fns.cumulative_loop)(u))
