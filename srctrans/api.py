"""The first public transformations: ``jit``, and the grad family (``grad``,
``value_and_grad``, ``vjp``), each a pipeline of passes ending in a generated file.

``jit`` is the first: the function, normalized, written to ``__srctrans__/`` and
compiled by Numba (``numba_backend``). Every transformed function shows its
generated file in its ``repr`` and through :func:`source` / :func:`source_path`.
Forward mode is :mod:`srctrans.tangents`, the Jacobians :mod:`srctrans.jacobians`,
``vmap`` :mod:`srctrans.batching.api`; they build on :class:`Jitted` and :class:`Grad`.

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
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import faces
from . import sharding as _sharding
from .boundary import COMPLEX_REFUSED, any_tree, in_primal_dtypes, is_container, leaf_dtype, refuse_complex
from .capture import capture, unwrap
from .config import config
from .parallel.propagate import sharded_call
from .pipeline import generate
from .specialization import (
    RESERVED,
    Specialization,
    code_names,
    compile_error,
    leaf_names,
    normalize_argnames,
    normalize_argnums,
    unbuild,
)
from .statics import opaque
from .subclasses import plain, plain_leaves
from .tree import PyTreeDef, keystr, tree_flatten, tree_flatten_with_path
from .variant import StaticArgs, Transform

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
            if is_container(value):
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
            return sharded_call(self, args, kwargs)
        fast = self._fast
        if fast is not None and not kwargs and len(args) == self._fast_arity and not config.disable_jit and not any_tree(args, self._wrt):
            try:
                raw = fast(*args)
            except Exception as err:
                self._explain(self._simple, err)
                raise
            return self._result(self._simple, raw)
        spec = self._simple
        if spec is not None and not kwargs and self._direct and len(args) == spec.arity and not any_tree(args, self._wrt):
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
                dtype = value.dtype if type(value) is np.ndarray else leaf_dtype(value)
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
            return sharded_call(self, args, kwargs)
        fast = self._fast
        if fast is not None and not kwargs and len(args) == self._fast_arity and not config.disable_jit and self._plain(args):
            try:  # compiled, and called before: straight to the dispatcher
                raw = fast(*args)
            except Exception as err:
                self._explain(self._simple, err)
                raise
            return self._result(self._simple, raw, args, kwargs)
        spec = self._simple
        if spec is not None and not kwargs and self._direct and len(args) == spec.arity and not any_tree(args, self._wrt):
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
            grads = in_primal_dtypes(grads, self._primals(args, kwargs or {}))
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
    from .faces import face

    algebra = face("algebra")

    special = algebra.grad(fn, argnums, has_aux, with_value=False)  # of a vmap, a Jacobian: no one file
    if special is not None:
        return special
    return Grad(fn, argnums=argnums, has_aux=has_aux, allow_int=allow_int, with_value=False, jit_options=None)


def value_and_grad(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, allow_int: bool = False) -> Grad:
    """Like :func:`grad`, returning ``(value, gradient)`` (``((value, aux), gradient)`` with ``has_aux``)."""
    from .faces import face

    algebra = face("algebra")

    special = algebra.grad(fn, argnums, has_aux, with_value=True)
    if special is not None:
        return special
    return Grad(fn, argnums=argnums, has_aux=has_aux, allow_int=allow_int, with_value=True, jit_options=None)


def vjp(fn: Callable, *primals, has_aux: bool = False):
    """``(out, vjp_fn)``: ``vjp_fn(cotangent)`` gives one cotangent per primal, like ``jax.vjp``."""
    from .faces import face

    algebra = face("algebra")

    special = algebra.vjp(fn, primals, has_aux)  # vmap, a Jacobian, value_and_grad: no one file
    if special is not None:
        return special
    structured = algebra.structured_grad(fn, primals)  # a grad of pytree arguments: its file for their structures
    if structured is not None:
        return vjp(structured, *primals, has_aux=has_aux)
    compiled = isinstance(fn, Jitted) and fn._compile
    if isinstance(fn, Grad):  # vjp of a gradient: of its adjoint file, never of the function it differentiates
        try:
            target = fn.__srctrans_function__
        except AttributeError as err:
            raise TypeError(f"vjp of this grad is not supported yet: {err}") from None
    else:
        target = fn._fn if isinstance(fn, Jitted) else fn
    pyfn, _, bound_args, _ = unwrap(target)
    params = list(inspect.signature(pyfn).parameters.values())[len(bound_args):]
    visible = [p.name for p in params]
    defaults: tuple = ()
    if len(primals) < len(visible) and all(p.default is not p.empty for p in params[len(primals):]):
        defaults = tuple(p.default for p in params[len(primals):])  # fn(*primals), as JAX calls it: constants
    if len(primals) + len(defaults) != len(visible):
        raise TypeError(f"vjp: {pyfn.__qualname__} takes {len(visible)} arguments, got {len(primals)} primals")
    wrt = tuple(visible[: len(primals)])
    options: tuple = (("wrt", wrt),) + ((("has_aux", True),) if has_aux else ())
    runner = Jitted(target, _transform=Transform("vjp", options), _compile=compiled)
    runner._wrt = wrt
    primals = tuple(_plain_tree(runner, n, p) for n, p in zip(visible, primals))  # (the primal too: plain arrays)

    def vjp_fn(cotangent):
        refuse_complex("vjp", [*visible, "the cotangent"], [*primals, cotangent])
        spec, call_args = runner._prepare(tuple(primals) + defaults, {})
        if spec.returns is not None:  # a dict or list result: the cotangent in the same structure
            struct = spec.returns["tuple"][0] if has_aux else spec.returns
            cotangent = unbuild(struct, cotangent)
        raw = runner._run(spec, [*call_args, cotangent])
        return in_primal_dtypes(spec.group(raw[-1]), list(primals))  # one cotangent per primal, in its structure

    out = fn(*primals)
    if has_aux:
        out, aux = out
        return out, vjp_fn, aux
    return out, vjp_fn


def _plain_tree(fn: Jitted, name: str, value: Any) -> Any:
    """Argument ``name``'s ``value`` with its array subclasses refused or viewed as plain arrays
    (:func:`srctrans.subclasses.plain`)."""
    if not is_container(value):
        return plain(value, fn._label(name))
    leaves, treedef = tree_flatten(value)
    kept = plain_leaves(leaves, lambda i: fn._label(name, value, i))
    return value if kept is leaves else treedef.unflatten(kept)


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


faces.register(jit=jit, grad=grad, value_and_grad=value_and_grad, vjp=vjp, Jitted=Jitted, Grad=Grad)
