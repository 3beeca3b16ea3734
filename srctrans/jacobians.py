"""Jacobians and Hessians: ``jacfwd``, ``jacrev`` and ``hessian``, like JAX's.

``jacfwd`` pushes
every basis vector of the inputs at once through ``vmap`` of that tangent file (primals
unbatched, tangents batched along a basis axis), ``jacrev`` every basis cotangent of the
outputs through ``vmap`` of the vjp file; where vmap cannot vectorize a file it writes its
per-example loop (compiled under ``jit``), and a Python loop over basis vectors is the
last resort when vmap refuses the file. The results are arranged as JAX does:
``out.shape + in.shape`` for each pair of output and input leaves.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import faces
from .api import Grad, Jitted, grad, jit, vjp
from .batching import VMapped
from .boundary import differentiable, is_container, leaf_dtype, refuse_complex, zero_tangent
from .specialization import Specialization, unbuild
from .tangents import Tangents, forward_target, visible_params
from .tree import PyTreeDef, keystr, tree_flatten, tree_flatten_with_path, tree_map
from .variant import Transform

__all__ = ["hessian", "jacfwd", "jacrev"]


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
            if not differentiable(leaf):
                raise TypeError(
                    f"{who} requires floating-point inputs; argument {visible[k]}{keystr(path)} has dtype {leaf_dtype(leaf)}"
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
        """The file the last call ran: the vmap file (its header says vectorized or looped, and
        why), or the compiled Jacobian of a few numbers (:func:`_compiled_small_jacobian`)."""
        if state.get("small") is not None and state.get("small_ran"):
            return state["small"].source_path()
        if "vmapped" not in state:
            raise ValueError("call the Jacobian once so srctrans knows the shapes of its arguments")
        return state["vmapped"].source_path()

    jacobian._srctrans_jacobian = (fn, state)  # (what jacfwd/jacrev of this Jacobian reads)
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
    algebra = faces.face("algebra")
    special = algebra.derivative(fn, "jacfwd", argnums, has_aux)  # vmap, value_and_grad ...: the algebra's identities
    if special is not None:
        return special
    if getattr(fn, "_srctrans_jacobian", None) is not None:
        return _jacobian_of_jacobian(fn, argnums, has_aux, "jacfwd")
    state: dict[str, Any] = {"argnums": argnums, "has_aux": has_aux}

    def jacobian(*args):
        if not has_aux and state.get("small", True) is not None and _small_jacobian_call(args, argnums):
            if "small" not in state:  # made before the first call, so that every call gives the same bits
                target = fn._fn if isinstance(fn, Jitted) else fn
                state["small"] = _compiled_small_jacobian(fn, argnums, visible_params(target))
            small = state["small"]
            if small is not None:
                if state.get("small_ran"):
                    return small(*args)
                from .errors import SrcTransError

                try:
                    jac = small(*args)
                except (SrcTransError, TypeError):  # (it does not compile for f: the vmap file below serves)
                    state["small"] = None
                else:
                    state["small_ran"] = True
                    return jac
        structured = algebra.structured_grad(fn, args)
        if structured is not None:  # a grad of pytree arguments: its file for their structures
            return _of_structured(state, structured, args, lambda f: jacfwd(f, argnums=argnums, has_aux=has_aux))
        target, _ = (fn, None) if not isinstance(fn, Jitted) else (fn._fn, None)
        visible = visible_params(target)
        refuse_complex("jacfwd", visible, args)
        single, nums = _jacobian_args("jacfwd", argnums, visible, args)
        wrt = tuple(visible[k] for k in nums)
        if "runner" not in state:
            state["runner"] = Tangents(fn, wrt, has_aux)
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


SMALL = 64  # jit(jacfwd(f)) with respect to at most this many numbers: one compiled function


def _small_jacobian_call(args: tuple, argnums) -> bool:
    """Plain float arrays and numbers, the differentiated one of 1 to :data:`SMALL` entries."""
    if not isinstance(argnums, int) or not -len(args) <= argnums < len(args):
        return False
    for a in args:
        if type(a) is np.ndarray:
            if a.dtype.kind != "f":
                return False
        elif type(a) is not float:
            return False
    return 0 < int(np.size(args[argnums])) <= SMALL  # (an empty one: the vmap file's empty Jacobian)


def _compiled_small_jacobian(fn: Callable, argnums: int, visible: list[str]) -> Callable | None:
    """``jit(jacfwd(f))`` of a few numbers as one compiled function: a function calling
    ``srctrans.jacfwd(f)(...)`` inside, which :mod:`srctrans.nested_calls` writes as a loop over
    the basis vectors calling ``f``'s tangent file, compiled whole (the vmap file's Python
    around it cost ~170 us per call of a 3x3 Jacobian, the compiled function ~1 us). Built for
    ``jacfwd(jit(f))`` (what ``jit(jacfwd(f))`` is), without pytrees or ``has_aux``; None where
    it cannot be made (the vmap file serves)."""
    import sys

    from .nested_calls import function_from_text

    if not (isinstance(fn, Jitted) and fn._compile and not isinstance(fn, Grad)) or fn._transform.name != "jit":
        return None
    user = fn._fn
    if not inspect.isfunction(user) or any(p in ("srctrans", "jacobian_of") for p in visible):
        return None
    params = ", ".join(visible)
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in user.__name__).strip("_") + "_jacfwd"  # (a lambda: lambda_jacfwd)
    text = f"def {name}({params}):\n    return srctrans.jacfwd(jacobian_of, argnums={argnums % len(visible)})({params})\n"
    space: dict[str, Any] = {"__name__": user.__module__, "srctrans": sys.modules["srctrans"], "jacobian_of": user}
    made = function_from_text(text, name, f"jit(jacfwd({user.__qualname__}))", user, space)
    options = _jit_options(fn)
    try:
        return jit(made, **options)
    except (TypeError, ValueError):
        return None


def _of_structured(state: dict, structured: Callable, args: tuple, make: Callable) -> Any:
    """The Jacobian (``make``) of a grad's structured adjoint file, one per pytree structure."""
    made = state.setdefault("structured", {})
    if id(structured) not in made:
        made[id(structured)] = (structured, make(structured))
    state["vmapped"] = made[id(structured)][1]._srctrans_state.get("vmapped")
    return made[id(structured)][1](*args)


def _jacobian_of_jacobian(inner: Callable, argnums, has_aux: bool, who: str) -> Callable:
    """``jacfwd``/``jacrev`` of a Jacobian of ``f`` (any of the four pairs, and again for third
    derivatives): every derivative ``f^(n)(x)[e_i, e_j, ...]`` at once, by ``vmap`` over the tuples
    of basis vectors of the tangent file of ``f``'s tangent file (of its tangent file ...; forward
    over forward: the blocks are the same whichever mode JAX's pair names). Shape
    ``out.shape + in_1.shape + in_2.shape + ...`` (innermost Jacobian first), as JAX's."""
    fn, inner_state = inner._srctrans_jacobian
    if "chain" in inner_state:  # a Jacobian of a Jacobian already: one order more
        return _nth_jacobian(fn, (*inner_state["chain"], argnums), inner_state["has_aux"] or has_aux, who)
    return _nth_jacobian(fn, (inner_state["argnums"], argnums), inner_state["has_aux"] or has_aux, who)


def _nth_jacobian(fn: Callable, chain: tuple, has_aux: bool, who: str) -> Callable:
    """The Jacobian (``chain[-1]``) of ... of the Jacobian (``chain[0]``) of ``fn``; see :func:`_jacobian_of_jacobian`."""
    from .nesting import tangent_function

    if has_aux or not all(isinstance(nums, int) for nums in chain):
        raise TypeError(
            f"{who} of a Jacobian is supported for one argument number each (argnums=k) without has_aux; "
            "for more, differentiate srctrans.grad or srctrans.jvp of your function"
        )
    user, compiled = forward_target(fn)  # of a grad, its adjoint file (never the function it differentiates)
    state: dict[str, Any] = {"chain": chain, "has_aux": False}

    def jacobian(*args):
        visible = visible_params(user)
        refuse_complex(who, visible, args)
        nums = [_jacobian_args(who, k, visible, args)[1][0] for k in chain]
        if any(is_container(a) for a in args):
            return _nth_of_trees(fn, nums, compiled, state, args, who)
        if "vmapped" not in state:
            level = user
            for depth, k in enumerate(nums):
                level = tangent_function(level, len(visible) + depth, wrt=(visible[k],))
            vmapped = VMapped(level, (None,) * len(visible) + (0,) * len(nums), 0)
            state["vmapped"] = jit(vmapped) if compiled else vmapped
        wrt = [np.asarray(args[k]) for k in nums]
        dtype = np.result_type(*(leaf_dtype(args[k]) for k in nums))
        sizes = [w.size for w in wrt]
        # one row per tuple of basis vectors (i_1, i_2, ...), the first varying slowest
        rows = np.indices(sizes).reshape(len(sizes), -1)
        bases = [np.eye(n, dtype=dtype)[r].reshape((-1,) + w.shape) for n, r, w in zip(sizes, rows, wrt)]
        blocks = state["vmapped"](*args, *bases)
        for _ in nums:  # (out, t_1) -> ((out, t_1), (t_2, t_12)) -> ...: the last entry, every order
            blocks = blocks[1]
        if isinstance(blocks, (tuple, list, dict)):
            raise TypeError(f"{who} of a Jacobian of a function returning a pytree is not supported yet")
        blocks = np.asarray(blocks)
        shape = blocks.shape[1:]
        blocks = np.moveaxis(np.broadcast_to(blocks, (rows.shape[1],) + shape), 0, -1)
        return blocks.reshape(shape + sum((w.shape for w in wrt), ()))

    return _jacobian_wrapper(jacobian, fn, state, lambda f: _nth_jacobian(f, chain, has_aux, who))


def _nth_of_trees(fn: Callable, chain_nums: list[int], compiled: bool, state: dict, args: tuple, who: str):
    """:func:`_nth_jacobian` of a function of pytree arguments: the tangent files (one per order) of
    its file for these structures, which takes their leaves (of a grad: the adjoint file returning
    the gradient's leaves). Arranged as JAX's: the output's structure holding the first
    differentiated argument's, holding the second's ..."""
    from .nesting import tangent_function

    target = fn._fn if isinstance(fn, Jitted) else fn
    visible = visible_params(target)
    if isinstance(fn, Grad):
        if fn._with_value or fn._grad_args["has_aux"]:
            raise TypeError(f"{who} of a Jacobian of value_and_grad or of a grad with has_aux takes no pytrees yet")
        nums = tuple(visible.index(n) for n in fn._wrt)
        runner = Jitted(target, _transform=Transform("grad", (("wrt", fn._wrt), ("grads_only", True))), _compile=False)
        runner._wrt = fn._wrt
        out_tree = tree_flatten(args[nums[0]] if fn._single else tuple(args[k] for k in nums))[1]
    else:
        runner = Jitted(target, _compile=False)
        out_tree = None
    spec, call_args = runner._prepare(tuple(args), {})
    params = spec.gen.meta["params"]
    if any(m[0] not in ("arg", "leaf") for m in params) or (out_tree is None and spec.returns is not None):
        raise TypeError(f"{who} of a Jacobian of this function (a method, static arguments, a dict result) is not supported yet")
    names = list(inspect.signature(spec.python).parameters)
    positions = [[i for i, m in enumerate(params) if m[1] == visible[k]] for k in chain_nums]
    made = state.setdefault("trees", {})
    if id(spec) not in made:
        level, count = spec.python, len(names)
        for pos in positions:
            level = tangent_function(level, count, wrt=tuple(names[i] for i in pos))
            count += len(pos)
        vmapped = VMapped(level, (None,) * len(names) + (0,) * (count - len(names)), 0)
        made[id(spec)] = (spec, jit(vmapped) if compiled else vmapped)
    vmapped = made[id(spec)][1]
    state["vmapped"] = vmapped
    leaves = [[call_args[i] for i in pos] for pos in positions]
    sizes = [[int(np.size(x)) for x in level] for level in leaves]
    totals = [sum(s) for s in sizes]
    rows = np.indices(totals).reshape(len(totals), -1)  # one row per tuple of basis vectors, the first slowest
    bases = []
    for level, level_sizes, n, r in zip(leaves, sizes, totals, rows):
        eye = np.eye(n)[r]
        at = 0
        for x, size in zip(level, level_sizes):
            bases.append(eye[:, at:at + size].reshape((-1,) + np.shape(x)).astype(leaf_dtype(x)))
            at += size
    blocks = vmapped(*call_args, *bases)
    for _ in chain_nums:  # (out, t_1) -> ((out, t_1), (t_2, t_12)) -> ...: the last entry, every order
        blocks = blocks[1]
    flat, produced = tree_flatten(blocks)
    if out_tree is None:
        out_tree = produced
    if out_tree.num_leaves != len(flat):
        raise RuntimeError(f"{who}: the tangent file returned another structure than expected")  # never expected
    count = rows.shape[1]
    arranged = []
    for block in flat:
        block = np.asarray(block)
        out_shape = block.shape[1:]
        block = np.broadcast_to(block, (count,) + out_shape).reshape(tuple(totals) + out_shape)
        per_leaf = []
        for combo in itertools.product(*(range(len(level)) for level in leaves)):
            index, shape = [], ()
            for d, j in enumerate(combo):
                at = sum(sizes[d][:j])
                index.append(slice(at, at + sizes[d][j]))
                shape += np.shape(leaves[d][j])
            part = block[tuple(index)].reshape(shape + out_shape)
            per_leaf.append(np.moveaxis(part, list(range(len(shape), len(shape) + len(out_shape))), list(range(len(out_shape)))))
        arranged.append(per_leaf)
    level_trees = [tree_flatten(args[k])[1] for k in chain_nums]

    def nest(o: int, depth: int, at: int):
        if depth == len(level_trees):
            return arranged[o][at]
        width = int(np.prod([len(level) for level in leaves[depth + 1:]]))
        return level_trees[depth].unflatten([nest(o, depth + 1, at + j * width) for j in range(len(leaves[depth]))])

    return out_tree.unflatten([nest(o, 0, 0) for o in range(len(flat))])


def _jacfwd_batched(run: Tangents, fn: Callable, args: tuple, flat_in: list, state: dict):
    """``(blocks, out, aux)`` from one call of the vmap file of the tangent file."""
    spec, call_args = run.runner._prepare(tuple(args), {})
    n, offsets, tangents = _basis(flat_in, leaf_dtype)  # in the file's order: wrt, each flattened
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


def _jacfwd_loop(run: Tangents, args: tuple, nums: tuple, visible: list, in_trees: list, in_leaves: list):
    """``(blocks, out, aux)``, one tangent file call per basis vector from Python (the last resort)."""
    zeros = {visible[k]: tree_map(zero_tangent, args[k]) for k in nums}
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
                basis = np.zeros(shape, dtype=leaf_dtype(leaf))
                basis[idx] = 1.0
                leaves = [zero_tangent(x) for x in in_leaves[g]]
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
    algebra = faces.face("algebra")
    special = algebra.derivative(fn, "jacrev", argnums, has_aux)  # vmap, value_and_grad ...: the algebra's identities
    if special is not None:
        return special
    if getattr(fn, "_srctrans_jacobian", None) is not None:
        return _jacobian_of_jacobian(fn, argnums, has_aux, "jacrev")
    state: dict[str, Any] = {"argnums": argnums, "has_aux": has_aux}

    def jacobian(*args):
        structured = algebra.structured_grad(fn, args)
        if structured is not None:  # a grad of pytree arguments: its file for their structures
            return _of_structured(state, structured, args, lambda f: jacrev(f, argnums=argnums, has_aux=has_aux))
        target, compiled = forward_target(fn)
        visible = visible_params(target)
        refuse_complex("jacrev", visible, args)
        single, nums = _jacobian_args("jacrev", argnums, visible, args)
        if "primal" not in state:  # the function's own generated file (x.at[i].set(v) is NumPy there)
            state["primal"] = Jitted(fn, _compile=False) if inspect.isfunction(fn) else fn
        out = state["primal"](*args)
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
    return leaf_dtype(leaf) if differentiable(leaf) else np.dtype(np.float64)


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
    zeros = [zero_tangent(x) for x in out_leaves]
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
    algebra = faces.face("algebra")
    parts = fn if isinstance(fn, algebra.Outputs) else algebra.outputs_of(fn)
    if parts is not None:  # value_and_grad: the Hessian of each output
        return parts.map(lambda p, _: hessian(p, argnums=argnums))
    if isinstance(fn, Grad) or algebra.opaque(fn):
        # of a gradient, a Jacobian, a vmap: jacfwd(jacrev(.)) (a Jacobian of a Jacobian: third derivatives)
        return jacfwd(jacrev(fn, argnums=argnums), argnums=argnums)
    options = {k: v for k, v in fn._init_options.items() if not k.startswith("_")} if isinstance(fn, Jitted) else {}
    compiled = isinstance(fn, Jitted) and fn._compile
    user = fn._fn if isinstance(fn, Jitted) else fn
    inner = jit(grad(user, argnums=argnums), **options) if compiled else grad(user, argnums=argnums)
    plain = jacfwd(inner, argnums=argnums)
    state: dict[str, Any] = {}

    def hess(*args):
        if "vector" in state:  # a function of vector output: JAX's jacfwd(jacrev(f)), one Hessian per entry
            state["last"] = state["vector"]
            return state["vector"](*args)
        if not any(is_container(a) for a in args):
            state["last"] = plain
            try:
                return plain(*args)
            except TypeError as err:
                if "requires a scalar output" not in str(err):
                    raise
                state["vector"] = jacfwd(jacrev(fn, argnums=argnums), argnums=argnums)
                return hess(*args)
        return _hessian_of_trees(user, argnums, compiled, options, state, args)

    functools.update_wrapper(hess, getattr(user, "__wrapped__", user), updated=())
    hess._srctrans_jit = lambda opts: hessian(jit(user, **opts), argnums=argnums)
    hess._srctrans_state = plain._srctrans_state
    hess._srctrans_jacobian = (fn, {"chain": (argnums, argnums), "has_aux": False})  # jacfwd of it: f''' (any output)

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
    visible = visible_params(user)
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


faces.register(jacfwd=jacfwd, jacrev=jacrev, hessian=hessian)
