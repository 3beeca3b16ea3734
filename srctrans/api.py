"""The public transformations, each a pipeline of passes ending in a generated file.

``jit`` is the first: the function, normalized, written to ``__srctrans__/`` and
compiled by Numba (``numba_backend``). Every transformed function shows its
generated file in its ``repr`` and through :func:`source` / :func:`source_path`.

Pytrees cross the boundary here, as in JAX: an argument that is a tuple, list, dict or
namedtuple is flattened at every call, its structure picks the specialization (one
generated file per structure, like static values), and the generated function takes its
leaves as parameters (``params["W"]`` -> ``params_W``). Gradients come back in the
arguments' structure; returned lists and dicts are rebuilt from the tuples the generated
function returns.
"""

from __future__ import annotations

import functools
import inspect
import threading
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import sharding as _sharding
from .capture import capture, unwrap
from .config import config
from .pipeline import StaticArgs, Transform, generate
from .specialization import (
    RESERVED,
    Specialization,
    code_names,
    compile_error,
    leaf_names,
    normalize_argnames,
    normalize_argnums,
    rebuild,
    unbuild,
)
from .statics import opaque
from .subclasses import plain, plain_leaves
from .tree import PyTreeDef, keystr, tree_flatten, tree_flatten_with_path

__all__ = ["grad", "jit", "source", "source_path", "value_and_grad", "vjp"]


class Jitted:
    """A function compiled through its generated file. Call it like the original."""

    _wrt: tuple[str, ...] | None = None  # the differentiated arguments (grad, vjp)

    def __init__(
        self,
        fn: Callable,
        *,
        target: str = "cpu",
        static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (),
        parallel: bool = False,
        fastmath: bool = False,
        cache: bool = True,
        boundscheck: bool = True,
        _transform: Transform | None = None,
        _compile: bool = True,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"jit expects a function, got {type(fn).__name__}")
        if target not in ("cpu", "cuda"):
            raise ValueError(f"jit(target={target!r}): target must be 'cpu' or 'cuda'")
        pyfn, kind, bound_args, bound_kwargs = unwrap(fn)
        self.__srctrans_function__ = fn
        self._fn = fn
        self._bound_args = bound_args
        self._bound_kwargs = bound_kwargs
        self._signature = inspect.signature(pyfn)
        params = list(self._signature.parameters.values())
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                break
        self._param_names = [p.name for p in params]
        self._pyfn = pyfn
        self._self_param = self._param_names[0] if kind == "method" and self._param_names else None
        self._taken: frozenset[str] | None = None
        static = set()
        for num in normalize_argnums(static_argnums, "static_argnums"):
            if not isinstance(num, int):
                raise TypeError(f"static_argnums must hold ints, got {num!r}")
            visible = self._param_names[len(bound_args):]
            if not -len(visible) <= num < len(visible):
                raise ValueError(
                    f"static_argnums={num} is out of range for {pyfn.__qualname__}, which takes {len(visible)} arguments"
                )
            static.add(visible[num])
        for name in normalize_argnames(static_argnames):
            if name not in self._param_names:
                raise ValueError(f"static_argnames: {pyfn.__qualname__} has no parameter named {name!r}")
            static.add(name)
        self._static = frozenset(static)
        self._options = {
            "target": target,
            "parallel": bool(parallel),
            "fastmath": bool(fastmath),
            "cache": bool(cache),
            "boundscheck": bool(boundscheck),
        }
        flags = tuple((k, v) for k, v in (("parallel", bool(parallel)), ("fastmath", bool(fastmath))) if v)
        if not boundscheck:  # the default checks indices, as NumPy does
            flags += (("boundscheck", False),)
        self._compile = _compile
        if _transform is None:
            self._transform = Transform("jit", flags)
        else:  # another transformation's file, compiled with these options when _compile
            self._transform = Transform(_transform.name, _transform.options + (flags if _compile else ()))
        self._specs: dict[tuple, Specialization] = {}
        self._simple: Specialization | None = None
        self._direct = self._compute_direct()
        self._fast: Callable | None = None
        self._fast_arity = -1
        self._method: Jitted | None = None
        self._init_options = dict(
            target=target, static_argnums=static_argnums, static_argnames=static_argnames,
            parallel=parallel, fastmath=fastmath, cache=cache, boundscheck=boundscheck,
            _transform=_transform, _compile=_compile,
        )
        functools.update_wrapper(self, pyfn)

    # --- specializations -------------------------------------------------------

    def _static_key(self, values: dict[str, Any]) -> tuple:
        key = []
        for name in sorted(values):
            try:
                hash(values[name])
            except TypeError:
                raise TypeError(
                    f"static argument {name!r} of {self.__qualname__} must be hashable, got {type(values[name]).__name__}"
                ) from None
            key.append((name, type(values[name]).__name__, values[name]))
        return tuple(key)

    def _specialization(
        self, static_values: dict[str, Any], trees: dict[str, PyTreeDef] | None = None, nones: frozenset = frozenset()
    ) -> Specialization:
        """The specialization for these static values, pytree structures and ``None`` arguments differentiated."""
        key = self._static_key(static_values)
        if trees or nones:
            key += (("pytrees", tuple(trees.items()) if trees else (), nones),)
        spec = self._specs.get(key)
        if spec is None:
            named = self._name_leaves(trees or {})
            transform = self._spec_transform(named, nones)
            gen = generate(self._fn, transform, StaticArgs(static_values, named, frozenset(self._wrt or ())))
            options = self._options
            if static_values and opaque(static_values):  # one file per type of value: nothing of it frozen on disk
                options = {**options, "cache": False}
            spec = Specialization(gen, options, named, self._layout(named, nones))
            self._specs[key] = spec
            if not self._static and not trees and not nones:
                self._simple = spec
        return spec

    def _name_leaves(self, trees: dict[str, PyTreeDef]) -> dict[str, tuple[PyTreeDef, list[str]]]:
        """Each pytree argument's leaf parameter names, after their paths, unused by the function."""
        if not trees:
            return {}
        if self._taken is None:
            self._taken = frozenset(code_names(self._pyfn.__code__)) | RESERVED
        taken = set(self._taken)
        return {name: (treedef, leaf_names(name, treedef, taken)) for name, treedef in trees.items()}

    def _spec_transform(self, named: dict, nones: frozenset) -> Transform:
        """The transformation for one specialization: ``wrt`` lists the leaves of pytree arguments."""
        if self._wrt is None or (not named and not nones):
            return self._transform
        wrt: list[str] = []
        for name in self._wrt:
            if name in named:
                wrt += named[name][1]
            elif name not in nones:
                wrt.append(name)
        if not wrt:
            raise ValueError(
                f"{self.__qualname__}: nothing to differentiate; the arguments "
                f"{', '.join(self._wrt)} hold no leaves (empty containers or None)"
            )
        t = self._transform
        options = (("wrt", tuple(wrt)),) + tuple(o for o in t.options if o[0] != "wrt")
        return Transform(t.name, options, tag=t.file_tag)

    def _layout(self, named: dict, nones: frozenset) -> list[tuple[str, Any]]:
        if self._wrt is None:
            return []
        return [(n, named[n][0] if n in named else None if n in nones else "one") for n in self._wrt]

    def _prepare(self, args: tuple, kwargs: dict, bound_args: tuple | None = None) -> tuple[Specialization, list]:
        """Bind the call's arguments; returns the specialization and the generated function's arguments."""
        args = (self._bound_args if bound_args is None else bound_args) + args
        if self._bound_kwargs:
            kwargs = {**self._bound_kwargs, **kwargs}
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{self.__qualname__}(): {err}") from None
        bound.apply_defaults()
        values = bound.arguments
        static_values = {name: values[name] for name in self._static}
        trees: dict[str, PyTreeDef] = {}
        flat: dict[str, list] = {}
        for name, value in values.items():
            if name in self._static or name == self._self_param:
                continue
            if _is_container(value):
                flat[name], trees[name] = tree_flatten(value)
                flat[name] = plain_leaves(flat[name], lambda i, name=name, value=value: self._label(name, value, i))
            elif type(value) is not np.ndarray and isinstance(value, np.ndarray):
                values[name] = plain(value, self._label(name))
        nones = frozenset(n for n in self._wrt or () if values.get(n, 0) is None)
        spec = self._specialization(static_values, trees, nones)
        call_args = []
        for source in spec.gen.meta["params"]:
            kind = source[0]
            if kind == "arg":
                call_args.append(values[source[1]])
            elif kind == "leaf":
                call_args.append(flat[source[1]][source[2]])
            elif kind == "attr":
                call_args.append(plain(getattr(values[source[1]], source[2]), f"attribute {source[2]!r} of {source[1]}"))
            # "cotangent" (vjp: the caller appends it) and "returns" are not parameters
        return spec, call_args

    def _label(self, name: str, value: Any = None, leaf: int | None = None) -> str:
        """``argument 'x' of f``, ``argument params['W'] of f``: how an error names an argument."""
        if leaf is None:
            return f"argument {name!r} of {self.__qualname__}"
        return f"argument {name}{keystr(tree_flatten_with_path(value)[0][leaf][0])} of {self.__qualname__}"

    def _compute_direct(self) -> bool:
        """Calls may skip argument binding: positional parameters only, nothing static or bound."""
        return (
            not self._static
            and not self._bound_args
            and not self._bound_kwargs
            and all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in self._signature.parameters.values())
        )

    def __call__(self, *args, **kwargs):
        if _sharding.live and _sharding.has_sharded(args, kwargs):  # sharded arrays: run per shard
            return _sharding.call(self, args, kwargs)
        fast = self._fast
        if fast is not None and not kwargs and len(args) == self._fast_arity and not config.disable_jit and not _any_tree(args, self._wrt):
            try:
                raw = fast(*args)
            except Exception as err:
                self._explain(self._simple, err)
                raise
            return self._result(self._simple, raw)
        spec = self._simple
        if spec is not None and not kwargs and self._direct and len(args) == spec.arity and not _any_tree(args, self._wrt):
            call_args = args
        else:
            spec, call_args = self._prepare(args, kwargs)
        return self._result(spec, self._run(spec, call_args))

    def _result(self, spec: Specialization, raw, args: tuple | None = None, kwargs: dict | None = None):
        """What the caller gets from the generated function's return value (grad picks its part,
        in the dtypes of the call's arguments ``args``, ``kwargs`` when given)."""
        return spec.rebuild(raw)

    @staticmethod
    def _explain(spec: Specialization, err: Exception) -> None:
        if hasattr(err, "generated_file"):
            raise compile_error(spec, err) from None
        spec.explain(err)

    def _run(self, spec: Specialization, call_args):
        try:
            if config.disable_jit or not self._compile:
                return spec.python(*call_args)
            compiled = spec.compiled
            if spec is self._simple and self._direct:  # later calls go straight to the dispatcher
                self._fast, self._fast_arity = compiled, spec.arity
            return compiled(*call_args)
        except Exception as err:
            self._explain(spec, err)
            raise

    # --- seeing ------------------------------------------------------------------

    def _any_spec(self) -> Specialization:
        if self._simple is not None:
            return self._simple
        if self._specs:
            return next(iter(self._specs.values()))
        if self._static:
            raise ValueError(
                f"{self.__qualname__} has static arguments; call it once so srctrans knows their values"
            )
        return self._specialization({})

    def source_path(self) -> Path:
        path = self._any_spec().gen.path
        if self._options.get("target") == "cuda" and self._compile:  # the file that runs: its CUDA form
            from .gpu import cuda_file

            return cuda_file(path)
        return path

    def source(self) -> str:
        return self.source_path().read_text()

    def __repr__(self) -> str:
        try:
            where = str(self.source_path())
        except Exception:  # repr must never fail
            where = "not generated yet"
        kind = self._transform.name if not self._compile or self._transform.name == "jit" else f"jit({self._transform.name})"
        return f"<srctrans.{kind} {self.__qualname__} -> {where}>"

    def __get__(self, obj, objtype=None):
        """``@jit`` on a method: the instance's attributes are read at every call."""
        if obj is None:
            return self
        if self._method is None:
            self._method = Jitted(types.MethodType(self._fn, obj), **self._init_options)
        return _BoundJitted(self._method, obj)


class _BoundJitted:
    """A jitted method bound to one instance (what ``instance.method`` gives for ``@jit`` methods)."""

    def __init__(self, template: Jitted, obj: Any) -> None:
        self._template = template
        self._obj = obj
        self.__srctrans_function__ = types.MethodType(template._fn.__func__, obj)

    def __call__(self, *args, **kwargs):
        spec, call_args = self._template._prepare(args, kwargs, (self._obj,))
        return self._template._result(spec, self._template._run(spec, call_args))

    def source_path(self) -> Path:
        return self._template.source_path()

    def source(self) -> str:
        return self._template.source()

    def __repr__(self) -> str:
        return repr(self._template)


class Grad(Jitted):
    """``grad``/``value_and_grad`` of a function: its generated adjoint file, run or compiled."""

    def __init__(self, fn: Callable, *, argnums, has_aux: bool, allow_int: bool, with_value: bool, jit_options: dict | None):
        if isinstance(fn, Grad):  # grad(grad(f)): differentiate the adjoint file of the inner grad
            from .nesting import adjoint_function

            fn = adjoint_function(fn)
        if isinstance(fn, Jitted):
            if jit_options is None and fn._compile:
                jit_options = {k: v for k, v in fn._init_options.items() if not k.startswith("_")}
            fn = fn._fn
        if not callable(fn):
            raise TypeError(f"grad expects a function, got {type(fn).__name__}")
        pyfn, _, bound_args, _ = unwrap(fn)
        visible = [p.name for p in inspect.signature(pyfn).parameters.values()][len(bound_args):]
        self._single = isinstance(argnums, int)
        nums = (argnums,) if self._single else tuple(argnums)
        if not nums:
            raise ValueError("argnums must name at least one argument")
        wrt = []
        for num in nums:
            if not isinstance(num, int):
                raise TypeError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
            if not -len(visible) <= num < len(visible):
                raise ValueError(
                    f"argnums={num} is out of range for {pyfn.__qualname__}, which takes {len(visible)} arguments"
                )
            wrt.append(visible[num])
        self._wrt = tuple(wrt)
        self._has_aux = bool(has_aux)
        self._allow_int = bool(allow_int)
        self._with_value = with_value
        options: tuple = ()
        if self._wrt != tuple(visible[:1]):
            options += (("wrt", self._wrt),)
        if self._has_aux:
            options += (("has_aux", True),)
        jit_options = dict(jit_options or {})
        if jit_options and calls_transformations(fn):
            # an adjoint file of its own: calls of vmapped functions become loops Numba compiles
            # (uncompiled, the vmap file of their vjp runs instead; see srctrans.nested_calls)
            options += (("compiled", True),)
        super().__init__(fn, **jit_options, _transform=Transform("grad", options), _compile=bool(jit_options))
        self._grad_args = dict(argnums=argnums, has_aux=has_aux, allow_int=allow_int, with_value=with_value)
        self._fast_wrt: tuple[bool, ...] | None = None  # for each parameter: differentiated?

    @property
    def __srctrans_function__(self):
        """What a function that calls this grad is transformed with (jit, grad, jvp, vmap): the
        adjoint file returning the gradient alone, never the function differentiated. Absent
        (``AttributeError``) where no such file returns what this grad returns yet:
        value_and_grad, has_aux, static arguments, ``argnums=(k,)`` (a tuple of one gradient)."""
        found = self.__dict__.get("_adjoint")
        if found is None:
            from .nesting import adjoint_function

            if not self._single and len(self._wrt) == 1:
                raise AttributeError("a grad with argnums=(k,) returns a tuple of one gradient")
            try:
                found = self.__dict__["_adjoint"] = adjoint_function(self)
            except TypeError as err:
                raise AttributeError(str(err)) from None
        return found

    @__srctrans_function__.setter
    def __srctrans_function__(self, value) -> None:
        pass  # Jitted.__init__ records the function differentiated; a caller reaches the adjoint file instead

    def _prepare(self, args, kwargs, bound_args=None):
        spec, call_args = super()._prepare(args, kwargs, bound_args)
        self._check_inputs(spec, call_args)
        return spec, call_args

    def _plain(self, args: tuple) -> bool:
        """Arguments the compiled function takes as they are: numbers and arrays, floats where differentiated."""
        if self._fast_wrt is None:
            self._fast_wrt = tuple(m[1] in self._wrt for m in self._simple.gen.meta["params"])
        for v, differentiated in zip(args, self._fast_wrt):
            t = type(v)
            if t is float:
                continue
            if t is np.ndarray:
                if v.dtype.kind == "c" or (differentiated and v.dtype.kind != "f"):
                    return False  # the full path refuses it, naming the argument
                continue
            if differentiated or not (t is int or t is bool):
                return False  # containers, None, integers to differentiate: the full path
        return True

    def _check_inputs(self, spec, call_args) -> None:
        params = [m for m in spec.gen.meta["params"] if m[0] in ("arg", "attr", "leaf")]
        for m, value in zip(params, call_args):
            if type(value) is float or m[0] == "attr" or value is None:
                continue
            try:
                dtype = value.dtype if type(value) is np.ndarray else _leaf_dtype(value)
            except ValueError:  # (a ragged list, passed as it is)
                continue
            if dtype.kind == "c":  # differentiated or not: met by a differentiated value, it would be wrong
                where = spec.leaf_path(m[1], m[2]) if m[0] == "leaf" else repr(m[1])
                how = "with respect to" if m[1] in self._wrt else "argument"
                raise TypeError(f"grad of {self.__qualname__} {how} {where}: {COMPLEX_REFUSED}")
            if self._allow_int or m[1] not in self._wrt or dtype.kind == "f":
                continue
            allow = "(pass allow_int=True to get zero gradients for integers)"
            if m[0] == "leaf":
                raise TypeError(
                    f"grad of {self.__qualname__} with respect to {m[1]!r} requires float leaves, "
                    f"got {dtype} at {spec.leaf_path(m[1], m[2])} {allow}"
                )
            raise TypeError(
                f"grad of {self.__qualname__} with respect to {m[1]!r} requires a float argument, got {dtype} {allow}"
            )

    def __call__(self, *args, **kwargs):
        if _sharding.live and _sharding.has_sharded(args, kwargs):  # sharded arrays: run per shard
            return _sharding.call(self, args, kwargs)
        fast = self._fast
        if fast is not None and not kwargs and len(args) == self._fast_arity and not config.disable_jit and self._plain(args):
            try:  # compiled, and called before: straight to the dispatcher
                raw = fast(*args)
            except Exception as err:
                self._explain(self._simple, err)
                raise
            return self._result(self._simple, raw, args, kwargs)
        spec = self._simple
        if spec is not None and not kwargs and self._direct and len(args) == spec.arity and not _any_tree(args, self._wrt):
            self._check_inputs(spec, args)
            call_args = args
        else:
            spec, call_args = self._prepare(args, kwargs)
        return self._result(spec, self._run(spec, call_args), args, kwargs)

    def _result(self, spec, raw, args: tuple | None = None, kwargs: dict | None = None):
        if self._has_aux:
            out, aux, grads = raw
            value = (out, spec.rebuild_aux(aux))
        else:
            out, grads = raw
            value = out
        grads = spec.group(grads)
        if args is not None:
            grads = _in_primal_dtypes(grads, self._primals(args, kwargs or {}))
        if self._single:
            grads = grads[0]
        if self._with_value:
            return value, grads
        return (grads, value[1]) if self._has_aux else grads

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self.__call__, obj)

    def _primals(self, args: tuple, kwargs: dict) -> list:
        """The differentiated arguments of a call, in the order of the gradients."""
        if not kwargs and self._direct and len(args) == len(self._param_names):
            names = self._param_names
            return [args[names.index(n)] for n in self._wrt]
        bound = self._signature.bind(*self._bound_args, *args, **{**self._bound_kwargs, **kwargs})
        return [bound.arguments.get(n) for n in self._wrt]


def _in_primal_dtypes(cotangents: tuple, primals: list) -> tuple:
    """Each cotangent (a gradient) in the dtype of the argument it belongs to, as in JAX: a float32
    argument gets a float32 gradient whatever precision the function computed in (a cast to
    float64 inside it, a float64 constant, or Numba's promotion of float32 arrays under jit)."""
    return tuple(tree_map(_in_dtype_of, c, p) if _is_container(p) else _in_dtype_of(c, p) for c, p in zip(cotangents, primals))


def _in_dtype_of(cotangent: Any, primal: Any) -> Any:
    dtype = getattr(primal, "dtype", None)
    if dtype is None or dtype.kind != "f" or getattr(cotangent, "dtype", None) == dtype:
        return cotangent  # Python numbers, integers (allow_int's zeros), and what already fits
    if isinstance(primal, np.ndarray):
        return np.asarray(cotangent, dtype=dtype)
    return dtype.type(cotangent)


def grad(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, allow_int: bool = False) -> Grad:
    """The gradient of a scalar-valued function, as a generated adjoint file.

    Like ``jax.grad``: ``argnums`` picks the arguments (an int gives one gradient,
    a tuple a tuple of them); ``has_aux=True`` means ``fn`` returns ``(value, aux)``
    and the result is ``(gradient, aux)``. ``jit(grad(f))`` compiles the adjoint.
    Arguments may be pytrees (dicts, lists, tuples, namedtuples of arrays and floats):
    the gradient has the argument's structure, ``grad(loss)({"W": W, "b": b}, x)`` is
    ``{"W": dW, "b": db}``.

    >>> import numpy as np, srctrans
    >>> def tanh(x):
    ...     y = np.exp(-2.0 * x)
    ...     return (1.0 - y) / (1.0 + y)
    >>> round(float(srctrans.grad(tanh)(1.0)), 7)   # doctest: +SKIP
    0.4199743
    """
    return Grad(fn, argnums=argnums, has_aux=has_aux, allow_int=allow_int, with_value=False, jit_options=None)


def value_and_grad(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, allow_int: bool = False) -> Grad:
    """Like :func:`grad`, returning ``(value, gradient)`` (``((value, aux), gradient)`` with ``has_aux``)."""
    return Grad(fn, argnums=argnums, has_aux=has_aux, allow_int=allow_int, with_value=True, jit_options=None)


def vjp(fn: Callable, *primals, has_aux: bool = False):
    """``(out, vjp_fn)``: ``vjp_fn(cotangent)`` gives one cotangent per primal, like ``jax.vjp``."""
    compiled = isinstance(fn, Jitted) and fn._compile
    target = fn._fn if isinstance(fn, Jitted) else fn
    pyfn, _, bound_args, _ = unwrap(target)
    visible = [p.name for p in inspect.signature(pyfn).parameters.values()][len(bound_args):]
    if len(primals) != len(visible):
        raise TypeError(f"vjp: {pyfn.__qualname__} takes {len(visible)} arguments, got {len(primals)} primals")
    options: tuple = (("wrt", tuple(visible)),) + ((("has_aux", True),) if has_aux else ())
    runner = Jitted(target, _transform=Transform("vjp", options), _compile=compiled)
    runner._wrt = tuple(visible)
    primals = tuple(_plain_tree(runner, n, p) for n, p in zip(visible, primals))  # (the primal too: plain arrays)

    def vjp_fn(cotangent):
        _refuse_complex("vjp", [*visible, "the cotangent"], [*primals, cotangent])
        spec, call_args = runner._prepare(tuple(primals), {})
        if spec.returns is not None:  # a dict or list result: the cotangent in the same structure
            struct = spec.returns["tuple"][0] if has_aux else spec.returns
            cotangent = unbuild(struct, cotangent)
        raw = runner._run(spec, [*call_args, cotangent])
        return _in_primal_dtypes(spec.group(raw[-1]), list(primals))  # one cotangent per primal, in its structure

    out = fn(*primals)
    if has_aux:
        out, aux = out
        return out, vjp_fn, aux
    return out, vjp_fn


# --- pytrees at the boundary -------------------------------------------------------------------


def _is_container(value: Any) -> bool:
    """Whether ``value`` is a pytree container passed as its leaves (``None`` is passed as it is)."""
    t = type(value)
    return t is tuple or t is list or t is dict or (isinstance(value, tuple) and hasattr(t, "_fields"))


def _plain_tree(fn: Jitted, name: str, value: Any) -> Any:
    """Argument ``name``'s ``value`` with its array subclasses refused or viewed as plain arrays
    (:func:`srctrans.subclasses.plain`)."""
    if not _is_container(value):
        return plain(value, fn._label(name))
    leaves, treedef = tree_flatten(value)
    kept = plain_leaves(leaves, lambda i: fn._label(name, value, i))
    return value if kept is leaves else treedef.unflatten(kept)


def _any_tree(args: tuple, wrt: tuple | None) -> bool:
    """Whether a call needs binding: a container argument, an array subclass (refused or passed
    as a plain array there, :mod:`srctrans.subclasses`) or (``wrt``: differentiating) a ``None``."""
    for a in args:
        if _is_container(a) or (a is None and wrt is not None) or (type(a) is not np.ndarray and isinstance(a, np.ndarray)):
            return True
    return False


def jit(
    fn: Callable | None = None,
    *,
    target: str = "cpu",
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    parallel: bool = False,
    fastmath: bool = False,
    cache: bool = True,
    boundscheck: bool = True,
):
    """Compile ``fn`` with Numba through a readable generated file.

    Use as ``jit(f)``, ``@jit`` or ``@jit(static_argnums=1)``. Like ``jax.jit``,
    a call with new argument types (dtype, ndim) compiles a new specialization,
    and static arguments (hashable) are written into the generated code, one
    file per distinct value. ``print`` runs on every call;
    ``SRCTRANS_DISABLE_JIT=1`` runs the generated Python instead. Array indices
    are checked (an ``IndexError`` as in NumPy); ``boundscheck=False`` skips the check.

    >>> import numpy as np, srctrans
    >>> def calc(x):
    ...     return x * x + x * 2.0
    >>> fast = srctrans.jit(calc)   # doctest: +SKIP
    >>> fast(np.arange(3.0))        # doctest: +SKIP
    array([0., 3., 8.])
    """
    options = dict(
        target=target,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        parallel=parallel,
        fastmath=fastmath,
        cache=cache,
        boundscheck=boundscheck,
    )
    if fn is None:
        return lambda f: jit(f, **options)
    if hasattr(fn, "_srctrans_jit"):  # a transformation that compiles its own files (vmap)
        return fn._srctrans_jit(options)
    if isinstance(fn, Grad):  # compile the adjoint file
        return Grad(fn._fn, **fn._grad_args, jit_options=options)
    return Jitted(fn, **options)


def calls_transformations(fn: Callable) -> bool:
    """Whether ``fn`` reads something of srctrans's, so its body may call a transformation."""
    from .nested_calls import reads_srctrans

    try:
        return reads_srctrans(capture(unwrap(fn)[0]))
    except Exception:  # noqa: BLE001 - a function srctrans cannot read fails later, with its own error
        return False


def _transformed(fn) -> Jitted:
    if isinstance(fn, (Jitted, _BoundJitted)) or hasattr(fn, "_srctrans_jit"):  # (vmap's objects have source_path too)
        return fn
    if isinstance(fn, functools.partial) and isinstance(fn.func, functools.partial):
        fn = fn.func
    if isinstance(fn, functools.partial) and isinstance(fn.func, Jitted):
        return fn.func
    raise TypeError(f"expected a function made by a srctrans transformation, got {fn!r}")


def source_path(fn) -> Path:
    """The path of the generated file behind a transformed function."""
    return _transformed(fn).source_path()


def source(fn) -> str:
    """The text of the generated file behind a transformed function."""
    return _transformed(fn).source()


# --- forward mode and second order: jvp, linearize, jacfwd, jacrev, hessian -------------------
#
# ``jvp`` runs the generated tangent file (srctrans.ad.forward) of the function, or of a
# grad's adjoint file (forward over reverse: Hessian-vector products). ``jacfwd`` pushes
# every basis vector of the inputs at once through ``vmap`` of that tangent file (primals
# unbatched, tangents batched along a basis axis), ``jacrev`` every basis cotangent of the
# outputs through ``vmap`` of the vjp file; where vmap cannot vectorize a file it writes its
# per-example loop (compiled under ``jit``), and a Python loop over basis vectors is the
# last resort when vmap refuses the file. The results are arranged as JAX does:
# ``out.shape + in.shape`` for each pair of output and input leaves.

from .tree import tree_map  # noqa: E402


def _forward_target(fn) -> tuple[Callable, bool]:
    """The function whose tangent file a forward transformation runs, and whether it compiles."""
    compiled = isinstance(fn, Jitted) and fn._compile
    if isinstance(fn, Grad):  # forward over reverse: the adjoint file, returning the gradient
        from .nesting import adjoint_function

        return adjoint_function(fn), compiled
    if isinstance(fn, Jitted):
        return fn._fn, compiled
    if not callable(fn):
        raise TypeError(f"expected a function, got {type(fn).__name__}")
    return fn, False


def _visible_params(target: Callable) -> list[str]:
    pyfn, _, bound_args, _ = unwrap(target)
    return [p.name for p in inspect.signature(pyfn).parameters.values()][len(bound_args):]


class _Tangents:
    """The tangent file of one function for one set of differentiated arguments, ready to call."""

    def __init__(self, fn: Callable, wrt: tuple[str, ...], has_aux: bool) -> None:
        target, compiled = _forward_target(fn)
        self.visible = _visible_params(target)
        self.wrt = wrt
        self.has_aux = has_aux
        options: tuple = (("wrt", wrt),) + ((("has_aux", True),) if has_aux else ())
        self.runner = Jitted(target, _transform=Transform("jvp", options), _compile=compiled)
        self.runner._wrt = wrt

    def __call__(self, primals: tuple, tangents: dict[str, Any]) -> tuple:
        """``(out, tangent_out)`` (``(out, tangent_out, aux)`` with ``has_aux``); ``tangents`` by argument name."""
        spec = self.runner._simple
        if (
            spec is not None and self.runner._direct and len(primals) == spec.arity
            and not _any_tree(primals, self.wrt) and spec.returns is None
        ):  # plain arrays and floats, seen before: no binding (jacfwd's loop)
            raw = self.runner._run(spec, [*primals, *(tangents[n] for n in self.wrt)])
            return (raw[0], raw[2], raw[1]) if self.has_aux else raw
        spec, call_args = self.runner._prepare(tuple(primals), {})
        flat: list[Any] = []
        for name, kind in spec.layout:
            if kind == "one":
                flat.append(tangents[name])
            elif kind is not None:
                flat.extend(tree_flatten(tangents[name])[0])
        raw = self.runner._run(spec, [*call_args, *flat])
        return self.finish(spec, raw)

    def finish(self, spec: Specialization, raw: Any) -> tuple:
        """The tangent file's raw result (tuples for returned lists and dicts) in the function's structure."""
        if self.has_aux:
            out, aux, out_dot = raw
            struct = spec.returns
            if isinstance(struct, dict) and len(struct.get("tuple", ())) == 2:
                out, out_dot = rebuild(struct["tuple"][0], out), rebuild(struct["tuple"][0], out_dot)
            return out, out_dot, spec.rebuild_aux(aux)
        out, out_dot = raw
        return spec.rebuild(out), spec.rebuild(out_dot)


_TANGENT_FILES: dict[tuple, _Tangents] = {}  # (fn, wrt, has_aux) -> its tangent file
_VISIBLE: dict[Any, list[str]] = {}  # fn -> its parameters, for jvp's fast path
_TANGENT_LOCK = threading.Lock()


def _tangents_for(fn: Callable, wrt: tuple[str, ...], has_aux: bool) -> _Tangents:
    try:
        key = (fn, wrt, has_aux)
        hash(key)
    except TypeError:
        return _Tangents(fn, wrt, has_aux)
    found = _TANGENT_FILES.get(key)
    if found is None:
        found = _Tangents(fn, wrt, has_aux)
        with _TANGENT_LOCK:
            _TANGENT_FILES[key] = found
    return found


def _fast_jvp(fn: Callable, primals: tuple, tangents: tuple, has_aux: bool):
    """``jvp`` for float and float-array arguments of a function seen before; None: take the full path."""
    try:
        visible = _VISIBLE.get(fn)
    except TypeError:
        return None
    if visible is None or len(primals) != len(visible):
        return None
    names: list[str] = []
    moving: list[Any] = []
    for name, p, t in zip(visible, primals, tangents):
        tp = type(p)
        if tp is float:
            if type(t) is not float:
                return None
            if t != 0.0:
                names.append(name)
                moving.append(t)
        elif tp is np.ndarray:
            if type(t) is not np.ndarray or t.shape != p.shape or t.dtype != p.dtype or p.dtype.kind != "f":
                return None
            if t.size and (t.item(0) != 0 or t.any()):  # (the first entry decides most calls)
                names.append(name)
                moving.append(t)
        else:
            return None
    if not moving:
        return None
    found = _TANGENT_FILES.get((fn, tuple(names), has_aux))
    runner = found.runner if found is not None else None
    if runner is None or runner._simple is None or not runner._direct or runner._simple.returns is not None:
        return None
    raw = runner._run(runner._simple, [*primals, *moving])
    if has_aux:
        return raw[0], _in_output_dtypes(raw[2], raw[0]), raw[1]
    return raw[0], _in_output_dtypes(raw[1], raw[0])


def _in_output_dtypes(tangent: Any, out: Any) -> Any:
    """A tangent in the dtypes of the output it belongs to, as in JAX (a float32 output's tangent
    is float32, not a Python float or, under jit, Numba's float64)."""
    return tree_map(_in_dtype_of, tangent, out) if _is_container(out) else _in_dtype_of(tangent, out)


COMPLEX_REFUSED = (
    "srctrans differentiates real values only, and this one is complex; "
    "pass its real and imaginary parts as two float arrays"
)


def _refuse_complex(who: str, names, values) -> None:
    """A ``TypeError`` naming the first complex leaf of ``values`` (differentiated or not: a complex
    value that meets a differentiated one gives wrong derivatives)."""
    for name, value in zip(names, values):
        for path, leaf in tree_flatten_with_path(value)[0]:
            if leaf is not None and (isinstance(leaf, complex) or getattr(leaf, "dtype", None) is not None and leaf.dtype.kind == "c"):
                raise TypeError(f"{who}: {name}{keystr(path)}: {COMPLEX_REFUSED}")


def _leaf_dtype(x: Any) -> np.dtype:
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    return np.asarray(x).dtype


def _differentiable(x: Any) -> bool:
    return _leaf_dtype(x).kind in "fc"


def _check_tangents(who: str, names: list[str], primals: tuple, tangents: tuple) -> None:
    """Tangents must match their primals leaf by leaf: structure, shape and (floats) dtype."""
    from .tree import tree_structure

    for name, p, t in zip(names, primals, tangents):
        ps, ts = tree_structure(p), tree_structure(t)
        if ps != ts:
            raise TypeError(f"{who}: the tangent of argument {name!r} has structure {ts!r}, its primal {ps!r}")
        for (path, pl), tl in zip(tree_flatten_with_path(p)[0], tree_flatten(t)[0]):
            where = name + keystr(path)
            if np.shape(pl) != np.shape(tl):
                raise ValueError(f"{who}: the tangent of {where} has shape {np.shape(tl)}, its primal {np.shape(pl)}")
            pd, td = _leaf_dtype(pl), _leaf_dtype(tl)
            if pd.kind == "c":
                raise TypeError(f"{who}: {where}: {COMPLEX_REFUSED}")
            if pd.kind == "f":
                if td != pd:
                    raise TypeError(f"{who}: the tangent of {where} has dtype {td}, its primal {pd}; they must be equal")
            elif td.kind not in "biuf" or np.any(np.asarray(tl) != 0):
                raise ValueError(
                    f"{who}: {where} is {pd}, which has no derivative; its tangent must be zeros, got a nonzero tangent"
                )


def _nonzero(t: Any) -> bool:
    """Whether a tangent leaf has an entry that is not zero (nan counts as not zero)."""
    return bool(np.any(t)) if isinstance(t, np.ndarray) else bool(t != 0)


def _with_defaults(target: Callable, visible: list[str], primals: tuple, tangents: tuple) -> tuple[tuple, tuple]:
    """Primals and tangents for every parameter: those left out are their defaults (the values
    bound at ``def`` time), with zero tangents. Unchanged when one left out has no default."""
    params = inspect.signature(unwrap(target)[0]).parameters
    missing = [params[n].default for n in visible[len(primals) :]]
    if any(d is inspect.Parameter.empty for d in missing):
        return primals, tangents
    return primals + tuple(missing), tangents + tuple(tree_map(_zero_tangent, d) for d in missing)


def _zero_tangent(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape, dtype=x.dtype if x.dtype.kind in "fc" else np.float64)
    if isinstance(x, np.generic):
        return np.zeros((), dtype=x.dtype if x.dtype.kind in "fc" else np.float64)[()]
    return 0.0


def _as_tangent(p: Any, t: Any) -> Any:
    """A tangent as the tangent file takes it: zeros of float type for integer primal leaves."""
    return tree_map(lambda pl, tl: tl if _differentiable(pl) else _zero_tangent(pl), p, t)


def jvp(fn: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False):
    """``(out, tangent_out)``: ``fn``'s value and its directional derivative along ``tangents``, like ``jax.jvp``.

    ``primals`` and ``tangents`` are tuples with one entry per argument, of the same pytree
    structure, shapes and (floating-point) dtypes. Integer arguments carry no derivative:
    their tangents must be zeros. Runs ``fn``'s generated tangent file (``f.jvp.py``),
    compiled when ``fn`` is a ``srctrans.jit``. ``jvp(srctrans.grad(f), (x,), (v,))[1]`` is
    the Hessian-vector product ``H(x) @ v`` (forward mode over the adjoint file). With
    ``has_aux=True``, ``fn`` returns ``(out, aux)`` and the result is ``(out, tangent_out, aux)``.

    An argument whose tangent is all zeros is not differentiated: the tangent file for the
    other arguments runs (one file per such set), so ``jvp(loss, (W, b, x), (tW, tb,
    zeros))`` costs what a jvp along ``W`` and ``b`` alone costs. This is JAX's symbolic zero
    for a value a function closes over; computing with the zeros instead would differ only
    where it gives nan (zero times an infinite partial derivative).

    >>> import numpy as np, srctrans
    >>> def f(x):
    ...     return np.sin(x) * x
    >>> out, t = srctrans.jvp(f, (np.array([0.5, 1.0]),), (np.array([1.0, 0.0]),))   # doctest: +SKIP
    >>> t                                                                            # doctest: +SKIP
    array([0.95885108, 0.        ])
    """
    if not isinstance(primals, (tuple, list)):
        raise TypeError(f"jvp: primals must be a tuple with one entry per argument, got {type(primals).__name__}")
    if not isinstance(tangents, (tuple, list)):
        raise TypeError(f"jvp: tangents must be a tuple with one entry per argument, got {type(tangents).__name__}")
    primals, tangents = tuple(primals), tuple(tangents)
    fast = _fast_jvp(fn, primals, tangents, has_aux) if len(primals) == len(tangents) else None
    if fast is not None:
        return fast
    target, _ = (fn, None) if not isinstance(fn, Jitted) else (fn._fn, None)
    visible = _visible_params(target)
    if len(tangents) == len(primals) < len(visible):  # fn(*primals), as JAX calls it: the rest take their defaults
        primals, tangents = _with_defaults(target, visible, primals, tangents)
    if len(primals) != len(visible):
        raise TypeError(f"jvp: the function takes {len(visible)} arguments ({', '.join(visible)}), got {len(primals)} primals")
    if len(tangents) != len(primals):
        raise TypeError(f"jvp: got {len(primals)} primals but {len(tangents)} tangents; give one tangent per argument")
    _check_tangents("jvp", visible, primals, tangents)
    wrt = tuple(
        n for n, p, t in zip(visible, primals, tangents)
        if any(_differentiable(x) and _nonzero(y) for x, y in zip(tree_flatten(p)[0], tree_flatten(t)[0]))
    )
    if not wrt:  # nothing varies
        out = fn(*primals)
        if has_aux:
            out, aux = out
            return out, tree_map(_zero_tangent, out), aux
        return out, tree_map(_zero_tangent, out)
    by_name = {n: _as_tangent(p, t) for n, p, t in zip(visible, primals, tangents)}
    result = _tangents_for(fn, wrt, has_aux)(primals, by_name)
    result = (result[0], _in_output_dtypes(result[1], result[0]), *result[2:])
    try:
        _VISIBLE[fn] = visible
    except TypeError:
        pass
    return result


def linearize(fn: Callable, *primals):
    """``(out, f_jvp)`` with ``f_jvp(*tangents) == jvp(fn, primals, tangents)[1]``, like ``jax.linearize``.

    Each call of ``f_jvp`` runs the tangent file again, primal computation included (there is
    no partial evaluation yet): use it for its interface, not to save work.
    """
    out = jvp(fn, primals, tuple(tree_map(_zero_tangent, p) for p in primals))[0]

    def f_jvp(*tangents):
        return jvp(fn, primals, tangents)[1]

    return out, f_jvp


def _argnums_of(argnums, visible: list[str], who: str) -> tuple[bool, tuple[int, ...]]:
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise ValueError(f"{who}: argnums must name at least one argument")
    for num in nums:
        if not isinstance(num, int):
            raise TypeError(f"{who}: argnums must be an int or a tuple of ints, got {argnums!r}")
        if not -len(visible) <= num < len(visible):
            raise ValueError(f"{who}: argnums={num} is out of range for a function of {len(visible)} arguments")
    return single, tuple(n % len(visible) for n in nums)


def _jacobian_args(who: str, argnums, visible: list[str], args: tuple) -> tuple[bool, tuple[int, ...]]:
    """A Jacobian's ``argnums`` checked against the call: one argument per parameter, floats differentiated."""
    single, nums = _argnums_of(argnums, visible, who)
    if len(args) != len(visible):
        raise TypeError(f"{who}: the function takes {len(visible)} arguments, got {len(args)}")
    _require_float_args(who, visible, args, nums)
    return single, nums


def _require_float_args(who: str, visible: list[str], args: tuple, nums: tuple[int, ...]) -> None:
    for k in nums:
        for path, leaf in tree_flatten_with_path(args[k])[0]:
            if not _differentiable(leaf):
                raise TypeError(
                    f"{who} requires floating-point inputs; argument {visible[k]}{keystr(path)} has dtype {_leaf_dtype(leaf)}"
                )


def _arrange(out_leaves_by_input: list[list[np.ndarray]], out_tree: PyTreeDef, out_leaves, in_trees, in_leaves, single: bool, out_first: bool):
    """Assemble Jacobian blocks: for each output leaf, the input pytrees of ``out.shape + in.shape`` arrays.

    ``out_leaves_by_input[k][o]`` is the block of input leaf ``k`` (all arguments' leaves in
    order) and output leaf ``o``, already shaped ``out.shape + in.shape``.
    """
    per_out = []
    for o in range(len(out_leaves)):
        groups, k = [], 0
        for treedef, leaves in zip(in_trees, in_leaves):
            blocks = [out_leaves_by_input[k + j][o] for j in range(len(leaves))]
            k += len(leaves)
            groups.append(treedef.unflatten(blocks))
        per_out.append(groups[0] if single else tuple(groups))
    return out_tree.unflatten(per_out)


def _jit_options(fn) -> dict | None:
    """The options of a compiled ``fn`` (a ``srctrans.jit``), for the vmap file it leads to; None: uncompiled."""
    if isinstance(fn, Jitted) and fn._compile:
        return {k: v for k, v in fn._init_options.items() if not k.startswith("_")}
    return None


def _basis(leaves: list, dtype_of: Callable) -> tuple[int, list[int], list[np.ndarray]]:
    """One basis vector per element of ``leaves``, all at once: leaf ``i`` gets ``(n,) + shape_i``.

    Row ``r`` of the stacked leaves is the ``r``-th basis vector of the flattened, concatenated
    leaves (ones on the diagonal of leaf ``i``'s block of rows, zeros elsewhere), as JAX's jacfwd
    builds its ``vmap``-ed standard basis. Returns ``(n, offsets, stacked leaves)``.
    """
    sizes = [int(np.size(x)) for x in leaves]
    n = sum(sizes)
    offsets, stacked, at = [], [], 0
    for leaf, size in zip(leaves, sizes):
        block = np.zeros((n, size), dtype=dtype_of(leaf))
        block[np.arange(at, at + size), np.arange(size)] = 1.0
        offsets.append(at)
        stacked.append(block.reshape((n,) + np.shape(leaf)))
        at += size
    return n, offsets, stacked


def _batched_file(state: dict, spec: Specialization, in_axes: tuple, jit_options: dict | None):
    """``vmap`` of one generated file (tangent or vjp), made once per specialization."""
    from .batching import VMapped

    vmaps = state.setdefault("vmaps", {})
    found = vmaps.get(id(spec))
    if found is None or found[0] is not spec:
        found = vmaps[id(spec)] = (spec, VMapped(spec.python, in_axes=in_axes, out_axes=0, jit_options=jit_options))
    state["vmapped"] = found[1]
    return found[1]


def _first(tree: Any) -> Any:
    """Example 0 of a batched value (a primal output or ``aux``, the same for every basis vector)."""
    return tree_map(lambda v: np.asarray(v)[0], tree)


def _jacobian_wrapper(jacobian: Callable, fn: Callable, state: dict, remake: Callable[[Callable], Callable]) -> Callable:
    """``jacobian`` with srctrans's hooks: ``jit(jacobian)`` (compile ``fn`` and the vmap file), ``source``."""
    functools.update_wrapper(jacobian, getattr(fn, "__wrapped__", fn), updated=())

    def _srctrans_jit(options: dict) -> Callable:
        return remake(jit(fn._fn if isinstance(fn, Jitted) and not isinstance(fn, Grad) else fn, **options))

    def source_path() -> Path:
        """The vmap file the last call ran (its header says vectorized or looped, and why)."""
        if "vmapped" not in state:
            raise ValueError("call the Jacobian once so srctrans knows the shapes of its arguments")
        return state["vmapped"].source_path()

    jacobian._srctrans_jit = _srctrans_jit
    jacobian._srctrans_state = state  # "vmapped": the VMapped that ran; "python_loop": the last resort taken
    jacobian.source_path = source_path
    jacobian.source = lambda: source_path().read_text()
    return jacobian


def jacfwd(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The Jacobian of ``fn`` by forward mode, like ``jax.jacfwd``: every input basis vector at once.

    Runs ``vmap`` of ``fn``'s generated tangent file over the standard basis of the inputs
    (primals unbatched, tangents batched): one vectorized call where every statement has a
    batching rule, else the file's per-example loop (compiled under ``jit``, as is the vmap
    file of ``jacfwd(jit(f))`` and ``jit(jacfwd(f))``). For an output leaf of shape ``S``
    and an input leaf of shape ``T`` the block has shape ``S + T``; outputs and inputs may be
    pytrees (the result nests the inputs' structure in the output's). ``argnums`` a tuple
    gives a tuple per output leaf. With ``has_aux`` the result is ``(jacobian, aux)``.
    """
    state: dict[str, Any] = {}

    def jacobian(*args):
        target, _ = (fn, None) if not isinstance(fn, Jitted) else (fn._fn, None)
        visible = _visible_params(target)
        _refuse_complex("jacfwd", visible, args)
        single, nums = _jacobian_args("jacfwd", argnums, visible, args)
        wrt = tuple(visible[k] for k in nums)
        if "runner" not in state:
            state["runner"] = _Tangents(fn, wrt, has_aux)
        run = state["runner"]
        in_trees, in_leaves = [], []
        for k in nums:
            leaves, treedef = tree_flatten(args[k])
            in_trees.append(treedef)
            in_leaves.append(leaves)
        flat_in = [x for leaves in in_leaves for x in leaves]
        result = None
        if not state.get("python_loop") and sum(int(np.size(x)) for x in flat_in) > 0:
            try:
                result = _jacfwd_batched(run, fn, args, flat_in, state)
            except Exception as err:
                # Last resort: vmap refused the tangent file (it writes its own per-example loop
                # for what it cannot vectorize, so this is rare); push one basis vector at a time
                # from Python below, and from now on for this Jacobian. A genuine error in the
                # function is raised again by that loop.
                result = None
                state["python_loop"] = f"{type(err).__name__}: {err}"
        if result is None:
            result = _jacfwd_loop(run, args, nums, visible, in_trees, in_leaves)
        blocks, out, aux = result
        out_leaves, out_tree = tree_flatten(out)
        jac = _arrange(blocks, out_tree, out_leaves, in_trees, in_leaves, single, True)
        return (jac, aux) if has_aux else jac

    return _jacobian_wrapper(jacobian, fn, state, lambda f: jacfwd(f, argnums=argnums, has_aux=has_aux))


def _jacfwd_batched(run: _Tangents, fn: Callable, args: tuple, flat_in: list, state: dict):
    """``(blocks, out, aux)`` from one call of the vmap file of the tangent file."""
    spec, call_args = run.runner._prepare(tuple(args), {})
    n, offsets, tangents = _basis(flat_in, _leaf_dtype)  # in the file's order: wrt, each flattened
    if len(call_args) + len(tangents) != len(inspect.signature(spec.python).parameters):
        raise TypeError("the tangent file takes other arguments than expected")  # the loop copes
    batched = _batched_file(state, spec, (None,) * len(call_args) + (0,) * len(tangents), _jit_options(fn))
    raw = batched(*call_args, *tangents)
    if run.has_aux:
        out, aux, out_dot = raw
        out, out_dot, aux = run.finish(spec, (_first(out), _first(aux), out_dot))
    else:
        out, out_dot = run.finish(spec, (_first(raw[0]), raw[1]))
        aux = None
    out_leaves = tree_flatten(out)[0]
    dots = [np.asarray(d) for d in tree_flatten(out_dot)[0]]
    blocks = []
    for leaf, at in zip(flat_in, offsets):
        shape, size = np.shape(leaf), int(np.size(leaf))
        per_out = []
        for ol, d in zip(out_leaves, dots):
            d = np.broadcast_to(d, (n,) + np.shape(ol))  # an output that does not vary: zeros, unbatched
            per_out.append(np.moveaxis(d[at : at + size], 0, -1).reshape(np.shape(ol) + shape))
        blocks.append(per_out)
    return blocks, out, aux


def _jacfwd_loop(run: _Tangents, args: tuple, nums: tuple, visible: list, in_trees: list, in_leaves: list):
    """``(blocks, out, aux)``, one tangent file call per basis vector from Python (the last resort)."""
    zeros = {visible[k]: tree_map(_zero_tangent, args[k]) for k in nums}
    blocks: list[list[np.ndarray]] = []
    out = aux = None
    if any(np.size(x) == 0 for leaves in in_leaves for x in leaves):  # an empty leaf: its block needs the value
        result = run(args, zeros)
        out, aux = result[0], (result[2] if run.has_aux else None)
    for g, k in enumerate(nums):
        for j, leaf in enumerate(in_leaves[g]):
            shape = np.shape(leaf)
            columns = []
            for idx in np.ndindex(*shape) if shape else [()]:
                basis = np.zeros(shape, dtype=_leaf_dtype(leaf))
                basis[idx] = 1.0
                leaves = [_zero_tangent(x) for x in in_leaves[g]]
                if not isinstance(leaf, np.ndarray):  # a scalar leaf keeps its type
                    basis = basis[()] if isinstance(leaf, np.generic) else float(basis)
                leaves[j] = basis
                tangents = dict(zeros)
                tangents[visible[k]] = in_trees[g].unflatten(leaves)
                result = run(args, tangents)
                out, t_out = result[0], result[1]
                if run.has_aux:
                    aux = result[2]
                columns.append([np.asarray(x) for x in tree_flatten(t_out)[0]])
            out_leaves = tree_flatten(out)[0]
            per_out = []
            for o, ol in enumerate(out_leaves):
                stacked = np.stack([c[o] for c in columns], axis=-1) if columns else np.zeros(np.shape(ol) + (0,))
                per_out.append(stacked.reshape(np.shape(ol) + shape))
            blocks.append(per_out)
    return blocks, out, aux


def jacrev(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The Jacobian of ``fn`` by reverse mode, like ``jax.jacrev``: every output basis cotangent at once.

    Runs ``vmap`` of ``fn``'s generated vjp file over the standard basis of the outputs
    (primals unbatched, cotangents batched), vectorized or looped as :func:`jacfwd`. Same
    shapes and structure as :func:`jacfwd` (``out.shape + in.shape``).
    """
    state: dict[str, Any] = {}

    def jacobian(*args):
        target, compiled = _forward_target(fn)
        visible = _visible_params(target)
        _refuse_complex("jacrev", visible, args)
        single, nums = _jacobian_args("jacrev", argnums, visible, args)
        out = fn(*args)
        aux = None
        if has_aux:
            out, aux = out
        out_leaves, out_tree = tree_flatten(out)
        in_trees, in_leaves = [], []
        for k in nums:
            leaves, treedef = tree_flatten(args[k])
            in_trees.append(treedef)
            in_leaves.append(leaves)
        blocks = None
        if not state.get("python_loop") and sum(int(np.size(x)) for x in out_leaves) > 0:
            try:
                if "runner" not in state:
                    wrt = tuple(visible[k] for k in nums)
                    # the variant of the vjp file that returns the cotangents alone (the value is known)
                    options: tuple = (("wrt", wrt),) + ((("has_aux", True),) if has_aux else ()) + (("grads_only", True),)
                    runner = Jitted(target, _transform=Transform("vjp", options), _compile=compiled)
                    runner._wrt = wrt
                    state["runner"] = runner
                blocks = _jacrev_batched(state, fn, args, out, out_leaves, out_tree, in_leaves)
            except Exception as err:
                # Last resort, as in jacfwd: vmap refused the vjp file; one vjp per basis
                # cotangent from Python, from now on for this Jacobian.
                blocks = None
                state["python_loop"] = f"{type(err).__name__}: {err}"
        if blocks is None:
            blocks = _jacrev_loop(fn, args, nums, has_aux, out, out_leaves, out_tree, in_leaves)
        jac = _arrange(blocks, out_tree, out_leaves, in_trees, in_leaves, single, False)
        return (jac, aux) if has_aux else jac

    return _jacobian_wrapper(jacobian, fn, state, lambda f: jacrev(f, argnums=argnums, has_aux=has_aux))


def _cotangent_dtype(leaf: Any) -> np.dtype:
    return _leaf_dtype(leaf) if _differentiable(leaf) else np.dtype(np.float64)


def _jacrev_batched(state: dict, fn: Callable, args: tuple, out: Any, out_leaves: list, out_tree: PyTreeDef, in_leaves: list):
    """The blocks from one call of the vmap file of the vjp file."""
    runner = state["runner"]
    spec, call_args = runner._prepare(tuple(args), {})
    n, offsets, cts = _basis(out_leaves, _cotangent_dtype)
    cotangent = out_tree.unflatten(cts)  # shaped like the result, as vjp_fn takes it; as the file takes it:
    if spec.returns is not None:  # a dict or list result, as tuples
        cotangent = unbuild(spec.returns["tuple"][0] if dict(runner._transform.options).get("has_aux") else spec.returns, cotangent)
    if len(call_args) + 1 != len(inspect.signature(spec.python).parameters):
        raise TypeError("the vjp file takes other arguments than expected")  # the loop copes
    batched = _batched_file(state, spec, (None,) * len(call_args) + (0,), _jit_options(fn))
    raw = batched(*call_args, cotangent)
    grads = spec.group(raw)  # one per differentiated argument, in its structure, batch axis first
    flat = [np.broadcast_to(np.asarray(x), (n,) + np.shape(leaf))
            for g, leaves in zip(grads, in_leaves) for x, leaf in zip(tree_flatten(g)[0], leaves)]
    n_in = sum(len(x) for x in in_leaves)
    if len(flat) != n_in:
        raise TypeError("the vjp file returned other cotangents than expected")
    blocks: list[list[np.ndarray]] = [[None] * len(out_leaves) for _ in range(n_in)]
    all_in = [x for leaves in in_leaves for x in leaves]
    for o, (ol, at) in enumerate(zip(out_leaves, offsets)):
        shape, size = np.shape(ol), int(np.size(ol))
        for m, leaf in enumerate(all_in):
            blocks[m][o] = np.array(flat[m][at : at + size]).reshape(shape + np.shape(leaf))
    return blocks


def _jacrev_loop(fn, args, nums, has_aux, out, out_leaves, out_tree, in_leaves):
    """The blocks from one vjp per basis cotangent, from Python (the last resort)."""
    vjp_fn = vjp(fn, *args, has_aux=has_aux)[1]
    n_in = sum(len(x) for x in in_leaves)
    blocks: list[list[np.ndarray]] = [[None] * len(out_leaves) for _ in range(n_in)]
    zeros = [_zero_tangent(x) for x in out_leaves]
    for o, ol in enumerate(out_leaves):
        shape = np.shape(ol)
        rows: list[list[np.ndarray]] = []
        for idx in np.ndindex(*shape) if shape else [()]:
            basis = np.zeros(shape, dtype=_cotangent_dtype(ol))
            basis[idx] = 1.0
            cts = list(zeros)
            cts[o] = basis if isinstance(ol, np.ndarray) else float(basis)
            got = vjp_fn(out_tree.unflatten(cts))
            flat = []
            for k in nums:
                flat.extend(np.asarray(x) for x in tree_flatten(got[k])[0])
            rows.append(flat)
        for m, leaf in zip(range(n_in), [x for leaves in in_leaves for x in leaves]):
            stacked = np.stack([r[m] for r in rows]) if rows else np.zeros((0,) + np.shape(leaf))
            blocks[m][o] = stacked.reshape(shape + np.shape(leaf))
    return blocks


def hessian(fn: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """The Hessian of a scalar-valued ``fn``: forward mode over its adjoint file, like ``jax.hessian``.

    ``jacfwd`` of ``grad(fn)`` (every basis vector at once through ``vmap`` of the tangent
    file of the adjoint file): shape ``in.shape + in.shape`` for one argument, ``H[i][j]``
    for a tuple ``argnums``. Compiled when ``fn`` is a ``srctrans.jit`` (or ``jit(hessian(f))``). Arguments may
    be pytrees (dicts, tuples, lists, namedtuples): the result has the gradient's structure,
    each leaf holding the arguments' structure of ``grad_leaf.shape + arg_leaf.shape`` blocks,
    as ``jax.hessian`` returns.
    """
    if isinstance(fn, Grad):
        raise TypeError("hessian expects the function itself, not its grad")
    options = {k: v for k, v in fn._init_options.items() if not k.startswith("_")} if isinstance(fn, Jitted) else {}
    compiled = isinstance(fn, Jitted) and fn._compile
    user = fn._fn if isinstance(fn, Jitted) else fn
    inner = jit(grad(user, argnums=argnums), **options) if compiled else grad(user, argnums=argnums)
    plain = jacfwd(inner, argnums=argnums)
    state: dict[str, Any] = {}

    def hess(*args):
        if not any(_is_container(a) for a in args):
            state["last"] = plain
            return plain(*args)
        return _hessian_of_trees(user, argnums, compiled, options, state, args)

    functools.update_wrapper(hess, getattr(user, "__wrapped__", user), updated=())
    hess._srctrans_jit = lambda opts: hessian(jit(user, **opts), argnums=argnums)
    hess._srctrans_state = plain._srctrans_state

    def source_path() -> Path:
        """The vmap file the last call ran (its header says vectorized or looped, and why)."""
        if "last" not in state:
            raise ValueError("call the Hessian once so srctrans knows the shapes of its arguments")
        return state["last"].source_path()

    hess.source_path = source_path
    hess.source = lambda: source_path().read_text()
    return hess


def _hessian_of_trees(user: Callable, argnums, compiled: bool, options: dict, state: dict, args: tuple):
    """``hessian`` of a function of pytree arguments: ``jacfwd`` of the adjoint file that takes their leaves.

    The adjoint file for these pytree structures (``f.grad....tree-*.py``) takes one parameter
    per leaf and returns the gradient's leaves; forward mode over it gives every block
    ``out_leaf.shape + in_leaf.shape``, arranged as JAX does: the gradient's structure, each
    leaf holding the inputs' structure (a tuple of them for a tuple ``argnums``).
    """
    visible = _visible_params(user)
    single, nums = _jacobian_args("hessian", argnums, visible, args)
    wrt = tuple(visible[k] for k in nums)
    if "leaf_grad" not in state:
        runner = Jitted(user, _transform=Transform("grad", (("wrt", wrt), ("grads_only", True))), _compile=False)
        runner._wrt = wrt
        state["leaf_grad"] = runner
    spec, call_args = state["leaf_grad"]._prepare(tuple(args), {})
    params = spec.gen.meta["params"]
    positions = tuple(i for i, source in enumerate(params) if source[0] in ("arg", "leaf") and source[1] in wrt)
    jacobians = state.setdefault("leaf_jacobians", {})
    key = id(spec)
    if key not in jacobians:  # one per pytree structure (and static values), as the adjoint files
        leaf_fn = jit(spec.python, **options) if compiled else spec.python
        jacobians[key] = (spec, jacfwd(leaf_fn, argnums=positions))
    leaf_jacobian = jacobians[key][1]
    state["last"] = leaf_jacobian
    by_out = leaf_jacobian(*call_args)  # per gradient leaf, a tuple with one block per input leaf
    if len(positions) == 1:
        by_out = (by_out,) if not isinstance(by_out, tuple) else by_out
        by_out = tuple((b,) if not isinstance(b, tuple) else b for b in by_out)
    elif not (isinstance(by_out, tuple) and by_out and isinstance(by_out[0], tuple)):
        by_out = (by_out,)
    in_trees, in_leaves = [], []
    for k in nums:
        leaves, treedef = tree_flatten(args[k])
        in_trees.append(treedef)
        in_leaves.append(leaves)
    out_leaves, out_tree = tree_flatten(args[nums[0]] if single else tuple(args[k] for k in nums))  # the gradient's
    if len(out_leaves) != len(by_out) or any(len(row) != len(positions) for row in by_out):
        raise RuntimeError("hessian: the adjoint file returned another structure than its arguments'")  # never expected
    blocks = [[by_out[o][k] for o in range(len(out_leaves))] for k in range(len(positions))]
    return _arrange(blocks, out_tree, out_leaves, in_trees, in_leaves, single, True)
