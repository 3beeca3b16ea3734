"""Record known-answer vectors from JAX for ``srctrans.random``.

Run from the repository root, with JAX installed (``pip install 'jax[cpu]'``)::

    python tests/random/record_jax_vectors.py

It writes ``tests/random/jax_vectors.json``.  The tests read only that file and
never need JAX.  Every case is a call ``fn(key, *args, **kwargs)`` described in
plain JSON, so the test replays the same call against ``srctrans.random``.

Cases are recorded twice where dtypes matter: in JAX's default 32-bit mode
("x32": float32, int32) and with ``jax_enable_x64`` ("x64": float64, int64).
Dtypes are always passed explicitly, so each case means the same thing to both
libraries whatever their defaults.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_vectors.json")

# Keys are given by seed or by raw uint32 data.
KEYS = [{"seed": 0}, {"seed": 42}, {"data": [0x12345678, 0x9ABCDEF0]}]


# ---- JSON encoding shared with the test (which has its own decoder) ----------

def enc_array(a):
    a = np.asarray(a)
    if a.dtype.kind == "f":
        data = [float(v) for v in a.reshape(-1)]
    elif a.dtype.kind == "b":
        data = [bool(v) for v in a.reshape(-1)]
    else:
        data = [int(v) for v in a.reshape(-1)]
    return {"__array__": data, "dtype": str(a.dtype), "shape": list(a.shape)}


def dec(v):
    if isinstance(v, dict) and "__array__" in v:
        return np.array(v["__array__"], dtype=v["dtype"]).reshape(v["shape"])
    if isinstance(v, list):
        return tuple(dec(x) for x in v)
    return v


def make_key(jr, spec):
    if "seed" in spec:
        return jr.PRNGKey(spec["seed"])
    return np.array(spec["data"], dtype=np.uint32)


def cases_for_mode(mode):
    """The calls to record in ``mode`` ("x32" or "x64")."""
    fdt = "float32" if mode == "x32" else "float64"
    idt = "int32" if mode == "x32" else "int64"
    cs = []

    def add(fn, key, *args, **kwargs):
        cs.append({"fn": fn, "mode": mode, "key": key,
                   "args": [enc_array(a) if isinstance(a, np.ndarray) else a for a in args],
                   "kwargs": {k: enc_array(v) if isinstance(v, np.ndarray) else v
                              for k, v in kwargs.items()}})

    seeds = [0, 1, 42, 2 ** 31 - 1, 123456789]
    if mode == "x64":
        seeds += [-1, -12345, 2 ** 32 + 7, 2 ** 63 - 1, -(2 ** 63)]
    for s in seeds:
        add("key", None, s)

    for k in KEYS:
        for num in (2, 3, [2, 3]):
            add("split", k, num)
        for d in (0, 1, 7, 2 ** 31, 2 ** 32 - 1):
            add("fold_in", k, d)
        for shape in ([], [5], [2, 3]):
            add("bits", k, shape, "uint32")
        add("bits", k, [7], "uint8")
        add("bits", k, [7], "uint16")
        if mode == "x64":
            add("bits", k, [], "uint64")
            add("bits", k, [5], "uint64")
            add("bits", k, [2, 3], "uint64")
        for shape in ([], [7], [3, 4]):
            add("uniform", k, shape, fdt)
        add("uniform", k, [10], fdt, -2.5, 3.0)
        add("uniform", k, [2, 3], fdt, np.array([0.0, 10.0, 100.0], fdt),
            np.array([1.0, 20.0, 1000.0], fdt))
        add("uniform", k, [10], "float16")
        for shape in ([], [7], [3, 4]):
            add("normal", k, shape, fdt)
        add("randint", k, [10], 0, 10, idt)
        add("randint", k, [10], -5, 5, idt)
        add("randint", k, [10], 3, 3, idt)
        add("randint", k, [10], -(2 ** 31), 2 ** 31 - 1, idt)
        add("randint", k, [10], 0, 2 ** 31 - 1, "uint32")
        add("randint", k, [2, 3], 0, np.array([10, 1000, 2 ** 30], idt), idt)
        add("randint", k, [6], 0, 256, "uint8")
        add("randint", k, [6], -128, 127, "int8")
        add("randint", k, [6], -1000, 1000, "int16")
        if mode == "x64":
            add("randint", k, [10], -(2 ** 62), 2 ** 62, "int64")
            add("randint", k, [10], 0, 2 ** 63 - 1, "uint64")
        for n in (1, 10):
            add("permutation", k, n)
        x = np.arange(12, dtype=idt).reshape(3, 4)
        add("permutation", k, x)
        add("permutation", k, x, axis=1)
        add("permutation", k, x, axis=1, independent=True)
        add("permutation", k, np.arange(7, dtype=fdt) * 1.5)

    # Longer streams: float conversions, both log1p branches, erfinv tails, and
    # a permutation long enough to take two rounds of sorting.
    add("bits", KEYS[0], [1000], "uint32")
    add("permutation", KEYS[0], 2000)
    add("uniform", {"seed": 7}, [1024], fdt)
    add("normal", {"seed": 7}, [4096], fdt)
    add("exponential", {"seed": 7}, [512], fdt)

    # Samplers built on the above (compared to a tolerance).
    for k in KEYS[:2]:
        add("exponential", k, [7], fdt)
        add("gumbel", k, [7], fdt)
        add("bernoulli", k, np.array(0.3, fdt), [10])
        add("bernoulli", k, np.array([0.1, 0.5, 0.9], fdt))
        add("categorical", k, np.array([[0.0, 1.0, 2.0, -1.0], [3.0, 0.0, 0.0, 0.5]], fdt))
        add("categorical", k, np.array([0.0, 1.0, 2.0, -1.0], fdt), shape=[6])
        add("categorical", k, np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 0.5]], fdt), axis=0,
            shape=[4, 3])
        add("categorical", k, np.array([0.0, 1.0, 2.0, -1.0, 0.5], fdt), shape=[3],
            replace=False)
        add("truncated_normal", k, -1.0, 2.0, [7], fdt)
        add("gamma", k, np.array([0.5, 1.0, 3.0, 20.0], fdt), dtype=fdt)
        add("gamma", k, np.array(0.3, fdt), [50], fdt)
        add("loggamma", k, np.array([0.01, 0.5, 3.0], fdt), dtype=fdt)
        add("beta", k, np.array(2.0, fdt), np.array(3.0, fdt), [5], fdt)
        add("multivariate_normal", k, np.array([1.0, 2.0], fdt),
            np.array([[2.0, 0.5], [0.5, 1.0]], fdt), [4], fdt)
        if mode == "x64":
            # Default integer dtype of choice/randint is int64 only with x64.
            add("choice", k, 10, [5])
            add("choice", k, 10, [5], replace=False)
            add("choice", k, np.arange(20, dtype=idt).reshape(4, 5), [3], axis=1)
            add("choice", k, 5, [8], p=np.array([0.1, 0.2, 0.3, 0.0, 0.4], fdt))
            add("choice", k, 5, [3], replace=False,
                p=np.array([0.1, 0.2, 0.3, 0.0, 0.4], fdt))

    # erfinv itself, on points that reach every branch of the polynomial.
    dt = np.dtype(fdt)
    pts = [0.0, 1e-30, 1e-8, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9966, 0.9995, 0.99999,
           1 - 1e-7, 1 - 1e-9, 1 - 1e-12, 1 - 1e-15, 1.0]
    pts = np.array(pts + [-p for p in pts], dtype=dt)
    pts = np.concatenate([pts, np.nextafter(dt.type(1), dt.type(0), dtype=dt)[None],
                          np.linspace(-1, 1, 201, dtype=dt)[1:-1]])
    add("_erfinv", None, pts)
    return cs


def run_case(jax, jr, case):
    fn, args = case["fn"], [dec(a) for a in case["args"]]
    kwargs = {k: dec(v) for k, v in case["kwargs"].items()}
    for name in ("shape",):
        if name in kwargs and isinstance(kwargs[name], list):
            kwargs[name] = tuple(kwargs[name])
    if fn == "key":
        out = jr.PRNGKey(args[0])
    elif fn == "_erfinv":
        out = jax.lax.erf_inv(args[0])
    else:
        out = getattr(jr, fn)(make_key(jr, case["key"]), *args, **kwargs)
    return np.asarray(out)


def main():
    import jax
    import jax.random as jr

    info = {
        "jax_version": jax.__version__,
        "jaxlib_version": __import__("jaxlib").__version__,
        "jax_threefry_partitionable": bool(jax.config.jax_threefry_partitionable),
        "jax_default_prng_impl": str(jax.config.jax_default_prng_impl),
        "platform": jax.default_backend(),
        "numpy_version": np.__version__,
        "python": sys.version.split()[0],
    }
    all_cases = []
    for mode in ("x32", "x64"):
        jax.config.update("jax_enable_x64", mode == "x64")
        for case in cases_for_mode(mode):
            case["out"] = enc_array(run_case(jax, jr, case))
            all_cases.append(case)
    with open(OUT, "w") as f:
        json.dump({"info": info, "cases": all_cases}, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(all_cases)} cases to {OUT}", info)


if __name__ == "__main__":
    main()
