"""numba_backend.vector_math: compiled loops call glibc's SIMD exp/log/tanh/sin..., as NumPy's do.

Each compiled function is checked against NumPy itself, to a few ulp over wide ranges and
exactly on special values (±0 with its sign, subnormals, overflow, ±inf, nan); where
libmvec is in use the compiled code must really call it (its x86-64 assembly names the
vector function), and where it is not, those checks are skipped with the reason.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest

import numba_backend.cpu  # noqa: F401  (installs the vector math library, as every compile does)
from numba_backend import vector_math

ROOT = Path(__file__).resolve().parents[2]
IN_USE = vector_math.state["installed"]
needs_libmvec = pytest.mark.skipif(not IN_USE, reason=f"libmvec not in use: {vector_math.state['reason']}")

# NumPy ufunc -> (libmvec base name, domain of the random part of the test data)
UNARY = {
    "exp": ("exp", "wide"),
    "exp2": ("exp2", "wide"),
    "log": ("log", "positive"),
    "log2": ("log2", "positive"),
    "log10": ("log10", "positive"),
    "sin": ("sin", "wide"),
    "cos": ("cos", "wide"),
    "tan": ("tan", "wide"),
    "arcsin": ("asin", "unit"),
    "arccos": ("acos", "unit"),
    "arctan": ("atan", "wide"),
    "sinh": ("sinh", "wide"),
    "cosh": ("cosh", "wide"),
    "tanh": ("tanh", "wide"),
}
BINARY = {"power": "pow", "arctan2": "atan2"}
SPECIAL = [
    0.0,
    -0.0,
    np.inf,
    -np.inf,
    np.nan,
    -np.nan,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    -1e-300,
    1e-300,
    1e-20,
    -1e-20,
    1e-8,
    0.5,
    1.0,
    -1.0,
    2.0,
    -2.0,
    19.0,
    20.0,
    22.0,
    -22.0,
    88.7,
    -103.9,
    709.78,
    710.0,
    -710.0,
    -745.2,
    -746.0,
    1e22,
    -1e22,
    1e300,
    -1e300,
    1.7976931348623157e308,
    3.141592653589793,
    1.5707963267948966,
    0.7853981633974483,
]


def data(domain: str, dtype) -> np.ndarray:
    """Special values and 8 vector widths' worth of odd lengths, so the loops' scalar tails run too."""
    rng = np.random.default_rng(7)
    n = 20011
    parts = {
        "wide": np.concatenate(
            [rng.standard_normal(n) * 8, np.exp(rng.uniform(-700, 700, n)) * rng.choice([-1, 1], n)]
        ),
        "positive": np.concatenate([rng.uniform(0, 4, n), np.exp(rng.uniform(-740, 709, n))]),
        "unit": np.concatenate([rng.uniform(-1, 1, n), 1 - np.exp(rng.uniform(-36, 0, n))]),
    }[domain]
    with np.errstate(over="ignore"):  # float64 specials beyond float32's range become inf, as intended
        return np.concatenate([SPECIAL, parts]).astype(dtype)


def ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Error of ``got`` in units in the last place of its dtype, against a more precise ``exact``."""
    rounded = exact.astype(got.dtype)
    finite = np.isfinite(rounded) & np.isfinite(got)
    with np.errstate(invalid="ignore", over="ignore"):  # the spacing of inf (masked out below)
        scale = np.spacing(np.maximum(np.abs(rounded), np.finfo(got.dtype).tiny)).astype(exact.dtype)
        return np.where(finite, np.abs(got.astype(exact.dtype) - exact) / scale, 0.0)


GENERATED = "_srctrans_vector_math_cases"  # a module name as srctrans gives its generated files


def generated(fn):
    """``fn`` as if it came from a generated file: only those get the vector functions."""
    fn.__module__ = GENERATED
    return fn


def compiled(expr: str, nargs: int = 1, **options):
    names = ", ".join("abc"[:nargs])
    namespace = {"np": np, "math": math, "numba": numba, "__name__": GENERATED}
    exec(f"def f({names}):\n    return {expr}\n", namespace)
    return numba.njit(**options)(namespace["f"])


def vector_calls(dispatcher) -> set[str]:
    asm = "\n".join(dispatcher.inspect_asm(sig) for sig in dispatcher.signatures)
    return set(re.findall(r"_ZGV[bcde]N\d+v+_\w+", asm))


def check_against_numpy(got: np.ndarray, want: np.ndarray, exact: np.ndarray, where: str) -> None:
    """``got`` within 4 ulp of ``exact`` (glibc's bound for libmvec; NumPy's loops stay within
    about 3), and the same as NumPy's ``want`` on every special value."""
    assert got.dtype == want.dtype, where
    distance = ulps(got, exact)
    worst = int(np.argmax(distance))
    assert distance[worst] <= 4, f"{where}: {distance[worst]:.2f} ulp at {worst}: {got[worst]!r}, NumPy {want[worst]!r}"
    inexact = ~np.isfinite(got) | ~np.isfinite(want)  # nan and inf, with their signs, where NumPy has them
    assert np.array_equal(got[inexact], want[inexact], equal_nan=True), f"{where}: {got[inexact]} vs {want[inexact]}"
    zeros = want == 0
    assert np.array_equal(got[zeros], want[zeros]), where
    assert np.array_equal(np.signbit(got[zeros]), np.signbit(want[zeros])), f"{where}: sign of zero"


def more_precise(dtype):
    # x86-64's long double has 64 significant bits, and glibc's long double functions are accurate
    return np.float64 if dtype == np.float32 else np.longdouble


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("ufunc", sorted(UNARY))
def test_unary_ufunc_matches_numpy(ufunc, dtype):
    base, domain = UNARY[ufunc]
    x = data(domain, dtype)
    f = compiled(f"np.{ufunc}(a)")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        got, want = f(x), getattr(np, ufunc)(x)
        exact = getattr(np, ufunc)(x.astype(more_precise(dtype)))
    check_against_numpy(got, want, exact, f"np.{ufunc} {np.dtype(dtype).name}")
    if IN_USE and dtype == np.float64:
        assert any(name.endswith(f"_{base}") for name in vector_calls(f)), vector_calls(f)


@pytest.mark.parametrize("ufunc", sorted(BINARY))
def test_binary_ufunc_matches_numpy(ufunc):
    rng = np.random.default_rng(3)
    special = np.array(SPECIAL)
    a = np.concatenate([np.repeat(special, len(special)), rng.uniform(0, 10, 5001), rng.standard_normal(5001) * 100])
    b = np.concatenate([np.tile(special, len(special)), rng.standard_normal(5001) * 30, rng.standard_normal(5001)])
    f = compiled(f"np.{ufunc}(a, b)", 2)
    with np.errstate(all="ignore"):
        got, want = f(a, b), getattr(np, ufunc)(a, b)
        exact = getattr(np, ufunc)(a.astype(np.longdouble), b.astype(np.longdouble))
    check_against_numpy(got, want, exact, f"np.{ufunc}")
    if IN_USE:
        assert any(name.endswith(f"_{BINARY[ufunc]}") for name in vector_calls(f)), vector_calls(f)


def test_fused_expressions_strided_views_and_math_module_loops():
    x = np.random.default_rng(1).standard_normal((301, 67)) * 3
    layer = compiled("np.tanh(a @ b + 0.5)", 2)
    w = np.random.default_rng(2).standard_normal((67, 45))
    np.testing.assert_allclose(layer(x, w), np.tanh(x @ w + 0.5), rtol=2e-15, atol=0)

    strided = compiled("np.exp(a[::3, 1:]) * np.sin(a.T[1:, ::3]).T")
    np.testing.assert_allclose(strided(x), np.exp(x[::3, 1:]) * np.sin(x.T[1:, ::3]).T, rtol=1e-15)

    @numba.njit
    @generated
    def loop(a):
        out = np.empty_like(a)
        for i in range(a.shape[0]):
            out[i] = math.exp(-a[i] * a[i]) * math.cos(a[i])
        return out

    v = x.ravel()
    np.testing.assert_allclose(loop(v), np.exp(-v * v) * np.cos(v), rtol=1e-15, atol=1e-300)
    if IN_USE:
        assert {re.sub(r"_ZGV\w+?_", "", n) for n in vector_calls(loop)} >= {"exp", "cos"}


def test_parallel_prange_threads_call_it_too():
    @numba.njit(parallel=True)
    @generated
    def rows(a):
        out = np.empty_like(a)
        for i in numba.prange(a.shape[0]):
            out[i] = np.tanh(a[i]) + np.exp(-np.abs(a[i]))
        return out

    x = np.random.default_rng(4).standard_normal((64, 999))
    # both terms are at most 1: a few ulp of 1 absolutely (their sum cancels near x = -0.45)
    np.testing.assert_allclose(rows(x), np.tanh(x) + np.exp(-np.abs(x)), rtol=1e-15, atol=1e-15)


@needs_libmvec
def test_srctrans_jit_of_a_tanh_layer_calls_the_vector_function(tmp_path, monkeypatch):
    import srctrans

    monkeypatch.setattr(srctrans.config, "cache_dir", str(tmp_path))  # compiled here, not loaded from a cache

    def layer(W, x):
        return np.tanh(x @ W.T)

    f = srctrans.jit(layer)
    W = np.random.default_rng(5).standard_normal((64, 32))
    xs = np.random.default_rng(6).standard_normal((200, 32))
    got = f(W, xs)
    np.testing.assert_allclose(got, np.tanh(xs @ W.T), rtol=1e-15, atol=0)
    assert any(n.endswith("_tanh") for n in vector_calls(f._simple.compiled))


def test_vector_names_follow_the_x86_64_vector_function_abi():
    if not IN_USE:
        pytest.skip(f"libmvec not in use: {vector_math.state['reason']}")
    avx512 = {"avx", "avx2", "avx512f"}
    avx2 = {"avx", "avx2"}
    assert vector_math.vector_name("llvm.tanh.v8f64", avx512) == "_ZGVeN8v_tanh"
    assert vector_math.vector_name("llvm.tanh.v8f64", avx2) is None  # would need zmm registers
    assert vector_math.vector_name("llvm.exp.v4f64", avx2) == "_ZGVdN4v_exp"
    assert vector_math.vector_name("llvm.exp.v4f64", {"avx"}) is None
    assert vector_math.vector_name("llvm.log.v2f64", set()) == "_ZGVbN2v_log"  # SSE2: every x86-64
    assert vector_math.vector_name("llvm.pow.v8f64", avx512) == "_ZGVeN8vv_pow"
    assert vector_math.vector_name("llvm.sin.v16f32", avx512) == "_ZGVeN16v_sinf"
    assert vector_math.vector_name("llvm.exp.v16f64", avx512) is None  # no such width
    assert vector_math.vector_name("llvm.sqrt.v8f64", avx512) is None  # an instruction, not a library call
    assert vector_math.vector_name("llvm.fma.v8f64", avx512) is None


def test_rewrite_renames_calls_and_drops_intrinsic_attributes():
    ir = textwrap.dedent("""\
        define <8 x double> @f(<8 x double> %x) {
          %y = tail call fast <8 x double> @llvm.tanh.v8f64(<8 x double> %x)
          %z = call <8 x double> @llvm.tanh.v8f64(<8 x double> %y) #1
          ret <8 x double> %z
        }
        declare <8 x double> @llvm.tanh.v8f64(<8 x double>) #0
        declare <8 x double> @llvm.tanh.v8f64.other(<8 x double>) #0
        """)
    out = vector_math.rewrite(ir, {"llvm.tanh.v8f64": "_ZGVeN8v_tanh"})
    assert "tail call fast <8 x double> @_ZGVeN8v_tanh(<8 x double> %x)" in out
    assert "call <8 x double> @_ZGVeN8v_tanh(<8 x double> %y) #1" in out
    assert "declare <8 x double> @_ZGVeN8v_tanh(<8 x double>)\n" in out
    assert "declare <8 x double> @llvm.tanh.v8f64.other(<8 x double>) #0" in out  # another name, untouched


def test_rewrite_keeps_one_declaration_when_a_linked_callee_declares_the_vector_function():
    """A callee's library, rewritten already, declares ``_ZGVeN8v_cos``; the caller's intrinsic
    must not declare it again (LLVM refused the module: "invalid redefinition")."""
    ir = textwrap.dedent("""\
        define <8 x double> @f(<8 x double> %x) {
          %y = call <8 x double> @llvm.cos.v8f64(<8 x double> %x)
          %z = call <8 x double> @_ZGVeN8v_cos(<8 x double> %y)
          ret <8 x double> %z
        }
        declare <8 x double> @llvm.cos.v8f64(<8 x double>) #0
        declare <8 x double> @_ZGVeN8v_cos(<8 x double>)
        """)
    out = vector_math.rewrite(ir, {"llvm.cos.v8f64": "_ZGVeN8v_cos"})
    assert out.count("declare <8 x double> @_ZGVeN8v_cos(") == 1
    assert "llvm.cos" not in out and out.count("call <8 x double> @_ZGVeN8v_cos(") == 2


def test_rewrite_makes_the_copies_of_linked_functions_internal():
    """Rewritten, a copy of another library's function is not that library's code any more:
    calls must reach the copy, not a definition the JIT linker finds first."""
    ir = textwrap.dedent("""\
        define linkonce_odr <8 x double> @helper(<8 x double> %x) {
          %y = call <8 x double> @llvm.log.v8f64(<8 x double> %x)
          ret <8 x double> %y
        }
        define <8 x double> @_srctrans_f(<8 x double> %x) {
          %y = call <8 x double> @helper(<8 x double> %x)
          ret <8 x double> %y
        }
        declare <8 x double> @llvm.log.v8f64(<8 x double>) #0
        """)
    out = vector_math.rewrite(ir, {"llvm.log.v8f64": "_ZGVeN8v_log"})
    private = re.search(r'define internal <8 x double> @("helper\.srctrans\.[0-9a-f]{12}")\(', out)
    assert private, out  # internal, under a name no other module uses
    assert f"call <8 x double> @{private.group(1)}(<8 x double> %x)" in out and "@helper(" not in out
    assert "define <8 x double> @_srctrans_f(" in out  # the module's own functions stay exported
    assert vector_math.rewrite(ir, {"llvm.log.v8f64": "_ZGVeN8v_log"}) == out  # the same name in every run


TWO_FILES = """
    import numpy as np
    import srctrans

    def l1(x, y):
        return np.sum(np.abs(x - y))

    by_rows = srctrans.vmap(l1, in_axes=(0, None))

    def through_a_global(xs, y):
        return np.sum(np.sin(by_rows(xs, y)))

    def total(x, y):
        return np.sum(x)
"""


def test_a_private_copy_is_not_what_a_later_module_calls(tmp_path):
    """The first file calls libmvec's sin and holds a private copy of np.sum's code for a vector;
    the second file's np.sum of a vector called that copy (LLVM's JIT linker resolves weak
    references with local symbols too): 'incompatible shape for array'. In a fresh process,
    where this order is the only one."""
    (tmp_path / "two_files.py").write_text(textwrap.dedent(TWO_FILES))
    script = """
        import numpy as np
        import srctrans
        import two_files as m

        rng = np.random.default_rng(4)
        xs, ys = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
        batched = srctrans.jit(srctrans.vmap(m.through_a_global, in_axes=(None, 0)))
        assert np.allclose(batched(xs, ys), [m.through_a_global(xs, y) for y in ys])
        print(srctrans.jit(m.total)(ys[0], ys[0]) == np.sum(ys[0]))
    """
    env = {"SRCTRANS_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    assert run_python(script, env).split()[-1] == "True"


COLD_WARM = """
    import json, sys
    import numpy as np
    import srctrans

    @srctrans.jit
    def draw(key):
        return srctrans.random.normal(key, (1000,)), srctrans.random.exponential(key, (1000,)), np.tanh(np.linspace(-3.0, 3.0, 1001))

    key = srctrans.random.PRNGKey(0)
    compiled = draw(key)
    srctrans.config.update("disable_jit", True)
    uncompiled = draw(key)
    print(json.dumps({
        "bits": [a.view(np.uint64).tolist() for a in compiled],
        "random_as_uncompiled": [bool(np.array_equal(a, b)) for a, b in zip(compiled[:2], uncompiled[:2])],
    }))
"""


@pytest.mark.slow
def test_the_same_bits_compiled_cold_and_loaded_from_the_cache(tmp_path):
    """A cold compile and the code Numba's cache loads give the same bits; random numbers are
    the uncompiled ones (the C library's log, never libmvec's). With libmvec, 13 of 1000
    normal draws loaded from the cache differed from the cold compile by one ulp."""
    (tmp_path / "cold_warm.py").write_text(textwrap.dedent(COLD_WARM))
    env = {"SRCTRANS_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    script = "import cold_warm"
    cold = json.loads(run_python(script, env).splitlines()[-1])
    warm = json.loads(run_python(script, env).splitlines()[-1])
    assert any((tmp_path / "cache").rglob("*.nbi"))  # the second process loaded the code
    assert cold["random_as_uncompiled"] == warm["random_as_uncompiled"] == [True, True]
    for a, b in zip(cold["bits"], warm["bits"]):
        assert a == b


def run_python(code: str, env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


CACHED = """
    import re, sys
    import numpy as np, numba
    import numba_backend.cpu
    from numba_backend import vector_math
    sys.path.insert(0, {folder!r})
    from _srctrans_cached_tanh import f
    x = np.linspace(-30, 30, 10001)
    assert np.allclose(f(x), np.tanh(x), rtol=1e-15, atol=0), "wrong values"
    asm = f.inspect_asm(f.signatures[0]) if f.signatures and not f.stats.cache_hits else ""
    print(vector_math.state["installed"], sum(f.stats.cache_hits.values()), bool(re.search(r"_ZGV\\w+_tanh", asm)))
"""


def test_switch_off_and_the_disk_cache(tmp_path):
    """SRCTRANS_NO_LIBMVEC=1 compiles scalar libm calls; the disk cache keeps the two kinds apart."""
    (tmp_path / "_srctrans_cached_tanh.py").write_text(
        "import numba\nimport numpy as np\n\n\n@numba.njit(cache=True)\ndef f(x):\n    return np.tanh(x)\n"
    )
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    off = {**env, "SRCTRANS_NO_LIBMVEC": "1"}
    script = CACHED.format(folder=str(tmp_path))
    # columns: libmvec in use, cache hits, compiled code calls _ZGV..._tanh
    assert run_python(script, env).split() == [str(IN_USE), "0", str(IN_USE)]
    assert run_python(script, env).split() == [str(IN_USE), "1", "False"]  # loaded, not compiled
    if IN_USE:  # code cached with libmvec is not what a switched-off process loads
        assert run_python(script, off).split() == ["False", "0", "False"]
    assert run_python(script, off).split() == ["False", "1", "False"]


def test_without_libmvec_everything_works_as_before():
    script = """
        import llvmlite.binding as ll
        import numpy as np, numba


        def missing(name):
            raise RuntimeError(f"could not load {name}")


        ll.load_library_permanently = missing  # as on a libc without libmvec
        from numba_backend import cpu, vector_math

        f = numba.njit(lambda x: np.tanh(x) + np.exp(x))
        x = np.linspace(-5, 5, 1001)
        assert np.allclose(f(x), np.tanh(x) + np.exp(x), rtol=1e-15, atol=1e-14)
        assert "_ZGV" not in f.inspect_asm(f.signatures[0])
        print(vector_math.state["installed"], vector_math.describe())
    """
    out = run_python(script, {"NUMBA_CACHE_DIR": "/nonexistent"})
    assert out.startswith("False scalar libm (libmvec (glibc's vector math library) was not found)"), out


@needs_libmvec
def test_the_users_own_numba_code_keeps_calling_libm():
    """Only code compiled from generated files changes: a plain numba.njit beside it does not."""

    plain = numba.njit(lambda a: np.tanh(a))
    mine = compiled("np.tanh(a)")
    x = np.linspace(-3.0, 3.0, 4096)
    np.testing.assert_allclose(plain(x), np.tanh(x), rtol=1e-15)
    mine(x)
    assert not vector_calls(plain)
    assert any(n.endswith("_tanh") for n in vector_calls(mine))
