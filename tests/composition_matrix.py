"""The composition matrix: every base function users write x every composition of depth <= 3.

A *composition* is a tuple of layers, outermost first: ``("jit", "vmap", "grad")`` is
``jit(vmap(grad(f)))``. Each case is checked one layer at a time against that layer's own
meaning applied to the (separately checked) composition under it:

- ``grad``, ``value_and_grad``, ``jacfwd``, ``jacrev``, ``hessian``, ``jvp``, ``vjp``: central
  differences of the inner composition with respect to argument 0 (pytrees leaf by leaf, in
  JAX's layout: the output's structure holding the input's);
- ``vmap`` and ``pmap``: the stacking of the inner composition's per-example results;
- ``jit``: the inner composition itself (to the last bits where the math is the same).

In compiled mode every case is also compared with the same case run as Python
(``disable_jit``): the generated files compiled and uncompiled must agree.

Run as a script for the whole matrix and its numbers (the test file runs it as Python, plus a
compiled sample)::

    python -m tests.composition_matrix [--compiled] [--backend cpu|cuda|dask] [--only pmap] [--max-depth 2]
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import os
import sys
import tempfile
import textwrap
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import srctrans

CODE = '''
import numpy as np
import srctrans


def predict(params, x):
    W1, b1, W2, b2 = params
    return np.tanh(x @ W1 + b1) @ W2 + b2


def mlp(params, x, y):
    return np.mean((predict(params, x) - y) ** 2)


def dense(layer, x):
    return np.tanh(x @ layer["W"] + layer["b"])


def dict_mlp(params, x, y):
    h = dense(params["hidden"], x)
    return np.sum((h @ params["out"] - y) ** 2)


def euler(x, dt):
    rhs = lambda s: np.sin(s) - 0.5 * s ** 3
    state = x
    for _ in range(4):
        state = state + dt * rhs(state)
    return np.sum(state ** 2)


def branchy(x):
    if np.sum(x) > 0.0:
        y = x * 2.0
    else:
        y = x ** 2
    r = np.where(x > 0.1, x ** 2, -x)
    return np.sum(y * r) + x[0] * x[2]


def system(x):
    return np.array([x[0] * x[1], np.sin(x[2]), x[0] ** 2 + x[2] * x[1]])


def noisy(x, key):
    noise = srctrans.random.normal(key, x.shape)
    return np.sum(np.sin(x) * noise)


def updated(x):
    y = x.at[1].set(x[0] * 2.0)
    y = y.at[2].add(x[1] ** 2)
    return np.sum(y ** 2)


def scalar_loop(x):
    acc = x
    for _ in range(3):
        acc = np.sin(acc) * x + 0.5 * acc
    return acc
'''

_RNG = np.random.default_rng(7)


def _params():
    r = np.random.default_rng(3)
    return (r.normal(size=(3, 4)) * 0.5, r.normal(size=4) * 0.1, r.normal(size=(4, 2)) * 0.5, r.normal(size=2) * 0.1)


def _dict_params():
    r = np.random.default_rng(4)
    return {"hidden": {"W": r.normal(size=(3, 4)) * 0.5, "b": r.normal(size=4) * 0.1}, "out": r.normal(size=(4, 2)) * 0.5}


@dataclass(frozen=True)
class Base:
    name: str
    args: tuple
    in_axes: tuple  # which arguments vmap and pmap map over (0) or share (None)
    float_args: bool = True  # every argument takes a tangent (jvp, vjp)
    numpy_runs: bool = True  # False: the code means something only to srctrans (``x.at[i]``); the oracle runs jit(f)


BASES = {
    b.name: b
    for b in (
        Base("mlp", (_params(), np.array([0.3, -0.2, 0.5]), np.array([0.1, -0.4])), (None, 0, 0)),
        Base("dict_mlp", (_dict_params(), np.array([0.3, -0.2, 0.5]), np.array([0.1, -0.4])), (None, 0, 0)),
        Base("euler", (np.array([0.4, -0.3, 0.8]), 0.1), (0, None)),
        Base("branchy", (np.array([0.4, 0.3, 0.8]),), (0,)),
        Base("system", (np.array([0.3, 0.5, 0.7]),), (0,)),
        Base("noisy", (np.array([0.4, -0.3, 0.8]), srctrans.random.key(0)), (0, None), float_args=False),
        Base("updated", (np.array([0.4, -0.3, 0.8]),), (0,), numpy_runs=False),
        Base("scalar_loop", (0.7,), (0,)),
    )
}

DERIVATIVES = {"grad": 1, "value_and_grad": 1, "jacfwd": 1, "jacrev": 1, "hessian": 2, "jvp": 1, "vjp": 1}
LAYERS = ("jit", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian", "vmap", "pmap", "jvp", "vjp")
VMAP_SIZE = 3
PMAP_SIZE = 2  # as in JAX, one example per device


# ---------------------------------------------------------------- pytrees (the oracle's own)


def flatten(tree):
    """Leaves (arrays) and a function rebuilding the tree from new leaves; dicts in key order."""
    if isinstance(tree, (tuple, list)):
        parts = [flatten(t) for t in tree]
        leaves = [leaf for p in parts for leaf in p[0]]
        kind = type(tree)

        def rebuild(new, parts=parts, kind=kind):
            out, at = [], 0
            for p in parts:
                out.append(p[1](new[at:at + len(p[0])]))
                at += len(p[0])
            return kind(out)

        return leaves, rebuild
    if isinstance(tree, dict):
        keys = sorted(tree)
        leaves, rebuild_list = flatten([tree[k] for k in keys])
        return leaves, lambda new: dict(zip(keys, rebuild_list(new)))
    return [tree], lambda new: new[0]


def structure(tree):
    if isinstance(tree, (tuple, list)):
        return (type(tree).__name__, tuple(structure(t) for t in tree))
    if isinstance(tree, dict):
        return ("dict", tuple((k, structure(tree[k])) for k in sorted(tree)))
    return ("leaf", np.shape(tree))


def assert_close(got, want, rtol, atol, what):
    if structure(got) != structure(want):
        raise Mismatch(f"{what}: structure {structure(got)} != {structure(want)}")
    for g, w in zip(flatten(got)[0], flatten(want)[0]):
        if not np.allclose(g, w, rtol=rtol, atol=atol):
            err = np.max(np.abs(np.asarray(g, float) - np.asarray(w, float)))
            raise Mismatch(f"{what}: differs by {err:.3g}\n got {np.asarray(g)!r}\nwant {np.asarray(w)!r}")


class Mismatch(AssertionError):
    pass


# ---------------------------------------------------------------- the oracle, layer by layer


def _with_arg0(args, leaves, rebuild):
    return (rebuild(leaves),) + tuple(args[1:])


def numeric_jacobian(fn, args, eps=1e-6):
    """d fn(*args) / d args[0], in JAX's layout (output structure holding argument-0 structure)."""
    in_leaves, in_rebuild = flatten(args[0])
    in_leaves = [np.asarray(leaf, dtype=float) for leaf in in_leaves]
    out0 = fn(*args)
    out_leaves, out_rebuild = flatten(out0)
    blocks = [[np.zeros(np.shape(o) + leaf.shape) for leaf in in_leaves] for o in out_leaves]
    for i, leaf in enumerate(in_leaves):
        for k in np.ndindex(leaf.shape):
            sides = []
            for sign in (1.0, -1.0):
                moved = [np.array(x) for x in in_leaves]
                moved[i][k] += sign * eps
                moved = [m if m.ndim else float(m) for m in moved]
                sides.append(flatten(fn(*_with_arg0(args, moved, in_rebuild)))[0])
            for o in range(len(out_leaves)):
                blocks[o][i][(Ellipsis,) + k] = (np.asarray(sides[0][o]) - np.asarray(sides[1][o])) / (2 * eps)
    return out_rebuild([in_rebuild(row) for row in blocks])


def _tangent_like(tree, seed):
    leaves, rebuild = flatten(tree)
    r = np.random.default_rng(seed)
    return rebuild([r.normal(size=np.shape(x)) if np.ndim(x) else float(r.normal()) for x in leaves])


def _contract_out(jac, cotangent, arg0):
    """sum over output entries of cotangent * jacobian: the vjp with respect to argument 0."""
    out_leaves = flatten(cotangent)[0]
    _, jac_rebuild = flatten(arg0)
    rows = flatten(jac)[0]
    n_in = len(flatten(arg0)[0])
    total = None
    for o, ct in enumerate(out_leaves):
        row = rows[o * n_in:(o + 1) * n_in]
        part = [np.tensordot(np.asarray(ct), r, axes=np.ndim(ct)) for r in row]
        total = part if total is None else [a + b for a, b in zip(total, part)]
    return jac_rebuild([t if np.ndim(t) else float(t) for t in total])


@dataclass
class Level:
    """What a composition takes and gives at one depth: example arguments and the output's structure."""
    args: tuple
    out: object  # structure()
    orders: int = 0
    pmapped: bool = False


def batch(base: Base, args, size):
    out = []
    for a, axis in zip(args, base.in_axes):
        if axis is None:
            out.append(a)
            continue
        leaves, rebuild = flatten(a)
        out.append(rebuild([np.stack([np.asarray(x) * (1.0 + 0.1 * k) + 0.05 * k for k in range(size)]) for x in leaves]))
    return tuple(out)


def example(base: Base, args, k):
    return tuple(a if axis is None else flatten(a)[1]([x[k] for x in flatten(a)[0]]) for a, axis in zip(args, base.in_axes))


def stack_results(results):
    leaves = [flatten(r)[0] for r in results]
    return flatten(results[0])[1]([np.stack([row[i] for row in leaves]) for i in range(len(leaves[0]))])


def _is_scalar(out):
    return out == ("leaf", ())


def valid(base: Base, comp: tuple[str, ...], plain) -> bool:
    """Whether JAX allows ``comp`` of ``base`` (and this matrix covers it)."""
    level = Level(base.args, structure(_base_output(base, plain)))
    for depth, layer in enumerate(reversed(comp)):
        outermost = depth == len(comp) - 1
        if layer in ("jvp", "vjp") and not outermost:
            return False  # they return values, not functions
        if layer in ("jvp", "vjp") and not base.float_args:
            return False
        if layer in ("grad", "value_and_grad") and not _is_scalar(level.out):
            return False
        if layer == "pmap" and level.pmapped:
            return False
        if level.pmapped and layer != "jit":
            return False  # pmap is outermost, or under one jit
        if layer == "jit" and depth and comp[len(comp) - depth] == "jit":
            return False
        level = advance(base, level, layer)
        if level.orders > 3:
            return False
    return True


def _base_output(base, plain):
    if base.numpy_runs:
        return plain(*base.args)
    was = srctrans.config.disable_jit
    srctrans.config.update("disable_jit", True)
    try:
        return srctrans.jit(plain)(*base.args)
    finally:
        srctrans.config.update("disable_jit", was)


def advance(base, level, layer):
    args, out = level.args, level.out
    orders = level.orders + DERIVATIVES.get(layer, 0)
    arg0 = structure(args[0])

    def jac(o, i):
        if o[0] == "leaf":
            return _shift(i, o[1], front=True)
        if o[0] == "dict":
            return ("dict", tuple((k, jac(v, i)) for k, v in o[1]))
        return (o[0], tuple(jac(v, i) for v in o[1]))

    if out is None:  # only the arguments wanted
        pass
    elif layer == "grad":
        out = arg0
    elif layer == "value_and_grad":
        out = ("tuple", (out, arg0))
    elif layer in ("jacfwd", "jacrev"):
        out = jac(out, arg0)
    elif layer == "hessian":
        out = jac(jac(out, arg0), arg0)
    if layer in ("vmap", "pmap"):
        size = VMAP_SIZE if layer == "vmap" else PMAP_SIZE
        args = batch(base, args, size)
        out = None if out is None else _shift(out, (size,), front=True)
    return Level(args, out, orders, level.pmapped or layer == "pmap")


def _shift(s, shape, front=False):
    if s[0] == "leaf":
        return ("leaf", tuple(shape) + s[1]) if front else ("leaf", s[1] + tuple(shape))
    if s[0] == "dict":
        return ("dict", tuple((k, _shift(v, shape, front)) for k, v in s[1]))
    return (s[0], tuple(_shift(v, shape, front) for v in s[1]))


def compositions(base: Base, plain, max_depth=3):
    out = []
    for depth in range(1, max_depth + 1):
        for comp in itertools.product(LAYERS, repeat=depth):
            if valid(base, comp, plain):
                out.append(comp)
    return out


# ---------------------------------------------------------------- building and checking


@dataclass
class Matrix:
    module: object
    backend: str = "cpu"
    built: dict = field(default_factory=dict)

    def function(self, base: Base, comp: tuple[str, ...]):
        """The srctrans composition (outermost layer first), built once."""
        key = (base.name, comp)
        if key not in self.built:
            if not comp:
                plain = getattr(self.module, base.name)
                self.built[key] = plain if base.numpy_runs else srctrans.jit(plain)
            else:
                inner = self.function(base, comp[1:])
                self.built[key] = self._apply(comp[0], inner, base)
        return self.built[key]

    def _apply(self, layer, inner, base):
        if layer == "jit":
            return srctrans.jit(inner)
        if layer == "vmap":
            return srctrans.vmap(inner, in_axes=base.in_axes)
        if layer == "pmap":
            return srctrans.pmap(inner, in_axes=base.in_axes, backend=self.backend)
        if layer == "jvp":
            def jvp_layer(*args):
                tangents = tuple(_tangent_like(a, 11 + i) if i == 0 else _zeros_like(a) for i, a in enumerate(args))
                return srctrans.jvp(inner, args, tangents)[1]
            return jvp_layer
        if layer == "vjp":
            def vjp_layer(*args):
                out, pullback = srctrans.vjp(inner, *args)
                return pullback(_tangent_like(out, 13))[0]
            return vjp_layer
        return getattr(srctrans, layer)(inner)

    def reference(self, base: Base, comp: tuple[str, ...], args):
        """What the outer layer means, applied to the srctrans composition under it."""
        layer, rest = comp[0], comp[1:]
        inner = self.function(base, rest)
        if layer == "jit":
            return inner(*args)
        if layer in ("vmap", "pmap"):
            size = VMAP_SIZE if layer == "vmap" else PMAP_SIZE
            return stack_results([inner(*example(base, args, k)) for k in range(size)])
        if layer == "grad":
            return numeric_jacobian(inner, args)
        if layer == "value_and_grad":
            return (inner(*args), numeric_jacobian(inner, args))
        if layer in ("jacfwd", "jacrev"):
            return numeric_jacobian(inner, args)
        if layer == "hessian":
            try:  # central differences of srctrans's own (checked) first derivative
                first = self.function(base, ("jacrev",) + rest)
                first(*args)
            except Exception:  # noqa: BLE001 - then differences of differences
                return numeric_jacobian(lambda *a: numeric_jacobian(inner, a, eps=1e-4), args, eps=1e-4)
            return numeric_jacobian(first, args)
        if layer == "jvp":
            t = _tangent_like(args[0], 11)
            jac = numeric_jacobian(inner, args)
            out_leaves, out_rebuild = flatten(inner(*args))
            t_leaves = flatten(t)[0]
            rows = flatten(jac)[0]
            n = len(t_leaves)
            return out_rebuild([sum(np.tensordot(rows[o * n + i], np.asarray(t_leaves[i]), axes=np.ndim(t_leaves[i]))
                                    for i in range(n)) for o in range(len(out_leaves))])
        if layer == "vjp":
            out = inner(*args)
            return _contract_out(numeric_jacobian(inner, args), _tangent_like(out, 13), args[0])
        raise ValueError(layer)


def _zeros_like(tree):
    leaves, rebuild = flatten(tree)
    return rebuild([np.zeros_like(x) if np.ndim(x) else 0.0 for x in leaves])


@dataclass
class Outcome:
    base: str
    comp: tuple
    status: str  # "pass", "wrong", "refused", "crash"
    seconds: float
    detail: str = ""

    @property
    def name(self):
        text = base_call = self.base
        for layer in reversed(self.comp):
            text = f"{layer}({text})"
        del base_call
        return text


PACKAGE = Path(srctrans.__file__).resolve().parent


def is_refusal(e: Exception) -> bool:
    """A clear refusal: srctrans's own error, or a TypeError/ValueError/NotImplementedError that
    srctrans raised on purpose, whose message names no srctrans source file. Anything else
    (raised inside NumPy, Numba or a generated file; an error naming srctrans's own code)
    is a crash."""
    if str(PACKAGE) in str(e):
        return False
    if isinstance(e, srctrans.SrcTransError):
        return True
    if not isinstance(e, (TypeError, ValueError, NotImplementedError)):
        return False
    frames = traceback.extract_tb(e.__traceback__)
    return bool(frames) and Path(frames[-1].filename).resolve().is_relative_to(PACKAGE)


def run_case(matrix: Matrix, base: Base, comp, uncompiled=None) -> Outcome:
    level = Level(base.args, None)
    for layer in reversed(comp):
        level = advance(base, level, layer)
    args = level.args
    derivative_orders = sum(DERIVATIVES.get(layer, 0) for layer in comp)
    tol = dict(rtol=1e-5, atol=1e-6 * (10 ** max(0, derivative_orders - 1)))
    start = time.perf_counter()
    try:
        got = matrix.function(base, comp)(*args)
    except Exception as e:  # noqa: BLE001 - a refusal, or a crash
        status = "refused" if is_refusal(e) else "crash"
        detail = f"{type(e).__name__}: {_first_line(e)}"
        if status == "crash":
            detail += "\n" + "".join(traceback.format_exception(e, limit=-4))
        return Outcome(base.name, comp, status, time.perf_counter() - start, detail)
    seconds = time.perf_counter() - start
    try:
        want = matrix.reference(base, comp, args)
        if comp[0] == "jit":
            tol = dict(rtol=1e-12, atol=1e-14)
        assert_close(got, want, what="against the layer's meaning", **tol)
        if uncompiled is not None:
            assert_close(got, uncompiled, rtol=1e-12, atol=1e-14, what="compiled against uncompiled")
    except Mismatch as e:
        return Outcome(base.name, comp, "wrong", seconds, str(e))
    except Exception as e:  # noqa: BLE001 - the reference's inner composition failed
        return Outcome(base.name, comp, "unchecked", seconds, f"reference: {type(e).__name__}: {_first_line(e)}")
    return Outcome(base.name, comp, "pass", seconds)


def _first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


def load_module(folder: Path, name="matrix_user"):
    (folder / f"{name}.py").write_text(textwrap.dedent(CODE))
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))


def all_cases(module, only=None, bases=None, max_depth=3):
    for base in BASES.values():
        if bases and base.name not in bases:
            continue
        plain = getattr(module, base.name)
        for comp in compositions(base, plain, max_depth):
            if only and only not in comp:
                continue
            yield base, comp


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compiled", action="store_true", help="compile (and compare with the uncompiled run)")
    parser.add_argument("--backend", default="cpu", choices=("cpu", "cuda", "dask"))
    parser.add_argument("--only", help="only compositions containing this layer")
    parser.add_argument("--bases", nargs="*")
    parser.add_argument("--max-depth", type=int, default=3, help="compositions of at most this many layers")
    parser.add_argument("--json", help="write the outcomes here")
    parser.add_argument("--folder", help="where the user module (and its __srctrans__) goes")
    ns = parser.parse_args(argv)
    os.environ.setdefault("SRCTRANS_CPU_DEVICES", str(PMAP_SIZE))
    folder = Path(ns.folder or tempfile.mkdtemp(prefix="matrix-"))
    folder.mkdir(parents=True, exist_ok=True)
    module = load_module(folder)
    if ns.backend == "dask":
        from srctrans import distributed

        distributed.connect(n_workers=2, env={"SRCTRANS_CACHE_DIR": str(folder / "workers")})
    cases = list(all_cases(module, ns.only, ns.bases, ns.max_depth))
    outcomes = []
    start = time.perf_counter()
    for base, comp in cases:
        uncompiled = None
        if ns.compiled:
            srctrans.config.update("disable_jit", True)
            try:
                uncompiled = Matrix(module, ns.backend).function(base, comp)(*_args(base, comp))
            except Exception:  # noqa: BLE001 - the compiled run reports it
                uncompiled = None
            srctrans.config.update("disable_jit", False)
        else:
            srctrans.config.update("disable_jit", True)
        outcome = run_case(_matrix(module, ns.backend), base, comp, uncompiled)
        outcomes.append(outcome)
        print(f"{outcome.status:9s} {outcome.seconds:7.2f}s  {outcome.name}  {outcome.detail.splitlines()[0] if outcome.detail else ''}", flush=True)
    total = time.perf_counter() - start
    counts = {s: sum(o.status == s for o in outcomes) for s in ("pass", "wrong", "refused", "crash", "unchecked")}
    print(f"\n{len(outcomes)} compositions ({ns.backend}, {'compiled' if ns.compiled else 'as Python'}): {counts}; {total:.0f} s")
    if ns.json:
        Path(ns.json).write_text(json.dumps([o.__dict__ | {"name": o.name} for o in outcomes], indent=1))
    return 0 if counts["wrong"] == 0 else 1


_MATRICES: dict = {}


def _matrix(module, backend):
    return _MATRICES.setdefault((id(module), backend), Matrix(module, backend))


def _args(base, comp):
    level = Level(base.args, None)
    for layer in reversed(comp):
        level = advance(base, level, layer)
    return level.args


if __name__ == "__main__":
    sys.exit(main())
