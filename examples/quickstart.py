"""srctrans quickstart: compile plain NumPy code through a readable generated file.

Run:  python examples/quickstart.py
"""

import os
import time

import numpy as np

import srctrans


def calc(x):
    return x * x + x * 2.0


def best_of(fn, x, repeats=7):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    fast = srctrans.jit(calc)
    x = np.random.default_rng(0).standard_normal((4000, 4000))

    start = time.perf_counter()
    result = fast(x)  # the first call writes the file and compiles it (or loads Numba's cache)
    first = time.perf_counter() - start
    np.testing.assert_allclose(result, calc(x))

    t_numpy = best_of(calc, x)
    t_jit = best_of(fast, x)
    print(f"calc(x) on a {x.shape[0]}x{x.shape[1]} float64 array")
    print(f"  NumPy          {t_numpy * 1e3:8.1f} ms")
    print(f"  srctrans.jit   {t_jit * 1e3:8.1f} ms   ({t_numpy / t_jit:.1f}x faster; first call {first:.2f} s)")
    print()
    print(f"generated file: {srctrans.source_path(fast)}")
    print("-" * 72)
    print(srctrans.source(fast), end="")
    print("-" * 72)
    print(f"see it again with:  srctrans show {os.path.relpath(__file__)}:calc")


if __name__ == "__main__":
    main()
