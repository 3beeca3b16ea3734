"""Flat loops for compiled elementwise expressions: ``h_bar * (1.0 - h * h)`` as one loop over memory.

Numba compiles an array expression (or a ufunc call) into a loop nest over the result's
shape in which every operand computes its own index, allowing at run time for any of its
axes to be broadcast (length 1). With two operands LLVM unswitches those checks and
vectorizes the loop; with four or more it gives up, and a fused line of generated code
ran slower than the same work split over several lines: ``a * b + c * (d - e)`` on five
(256, 128) arrays took 73 µs, against 17 µs as one plain loop.

:func:`install` puts a fast path in front of Numba's loop nest, for code compiled from
srctrans's generated files and its runtime helpers only: when every array operand and the
result are C-contiguous (known when compiling) and, at run time, every operand has the
result's shape, or the shape of its trailing axes (a bias row), the expression runs as
one loop over the rows with a contiguous inner loop: the operands are read at the same
offset as the result, or at the column for a trailing operand. Anything else (an operand
with a broadcast axis of length 1, a strided view, several results) takes Numba's own loop
nest, which the same function still contains. Each element is computed by the same
operations as in Numba's nest, so arithmetic gives the same results bit for bit. A line
that also calls ``np.tanh``, ``np.exp``... and that Numba's nest did not vectorize (four
operands or more) now is vectorized, so with libmvec in use (``vector_math``) it calls the
SIMD function, whose results may differ from the scalar one by a few ulp (within glibc's
4-ulp bound; NumPy's own SIMD loops differ from libm likewise).

It fails safe: with ``SRCTRANS_NO_FLAT_LOOPS=1`` in the environment, or if Numba's
``npyimpl`` changes shape, nothing is patched.
"""

from __future__ import annotations

import os

state = {"installed": False, "reason": "not installed yet"}

# (mangled) function names that get the fast path: generated files (cache.module_name_for)
# and the runtime helpers compiled into them; the user's own Numba code is left alone.
_OURS = ("_srctrans_", "numba_backend")


def _eligible(sig, ufunc) -> int | None:
    """The number of trailing axes the inner loop runs over, when the types allow a flat loop."""
    from numba.core import types

    ret = sig.return_type
    if ufunc.nout != 1 or not isinstance(ret, types.Array) or ret.layout != "C":
        return None
    inputs, outs = sig.args[: ufunc.nin], sig.args[ufunc.nin :]
    if any(not (isinstance(t, types.Array) and t.layout == "C" and t.ndim == ret.ndim) for t in outs):
        return None
    arrays = [t for t in inputs if isinstance(t, types.Array)]
    if not arrays or any(not isinstance(t, (types.Array, types.Number, types.Boolean)) for t in inputs):
        return None
    if any(t.layout != "C" or t.ndim > ret.ndim or t.ndim == 0 and ret.ndim != 0 for t in arrays):
        return None
    lower = {t.ndim for t in arrays if t.ndim < ret.ndim}
    if len(lower) > 1:  # operands of two different lower ranks: Numba's loop nest
        return None
    return lower.pop() if lower else ret.ndim


def _flat_kernel(original):
    from llvmlite import ir
    from numba.core import cgutils, cpu, types
    from numba.np import npyimpl

    def numpy_ufunc_kernel(context, builder, sig, args, ufunc, kernel_class):
        inner_ndim = _eligible(sig, ufunc) if isinstance(context, cpu.CPUContext) else None
        name = builder.function.name
        if inner_ndim is None or not any(tag in name for tag in _OURS):
            return original(context, builder, sig, args, ufunc, kernel_class)
        ret = sig.return_type
        arguments = [npyimpl._prepare_argument(context, builder, a, t) for a, t in zip(args, sig.args)]
        if len(arguments) == ufunc.nin:
            arguments.append(npyimpl._build_array(context, builder, ret, sig.args, arguments))
        elif context.enable_nrt:
            context.nrt.incref(builder, ret, args[ufunc.nin])
        inputs, output = arguments[: ufunc.nin], arguments[ufunc.nin]
        kernel = kernel_class(context, builder, npyimpl._ufunc_loop_sig([output.base_type], [a.base_type for a in inputs]))
        intp = context.get_value_type(types.intp)
        n = ret.ndim
        fits = cgutils.true_bit  # every operand has the result's shape, or its trailing axes' shape
        for a in inputs:
            if isinstance(a, npyimpl._ArrayHelper):
                for d in range(a.ndim):
                    fits = builder.and_(fits, builder.icmp_signed("==", a.shape[d], output.shape[n - a.ndim + d]))
        outer, inner = ir.Constant(intp, 1), ir.Constant(intp, 1)
        for d in range(n):
            if d < n - inner_ndim:
                outer = builder.mul(outer, output.shape[d])
            else:
                inner = builder.mul(inner, output.shape[d])

        def load(a, offset, column):
            if not isinstance(a, npyimpl._ArrayHelper):
                return a.load_data(None)
            ptr = builder.gep(a.data, [offset if a.ndim == n else column], inbounds=True)
            return context.data_model_manager[a.base_type].load_from_data_pointer(builder, ptr)

        with builder.if_else(fits, likely=True) as (flat, general):
            with flat:
                with cgutils.for_range(builder, outer, intp=intp) as row:
                    base = builder.mul(row.index, inner)
                    with cgutils.for_range(builder, inner, intp=intp) as col:
                        offset = builder.add(base, col.index)
                        value = kernel.generate(*(load(a, offset, col.index) for a in inputs))
                        ptr = builder.gep(output.data, [offset], inbounds=True)
                        builder.store(context.get_value_as_data(builder, output.base_type, value), ptr)
            with general:  # Numba's loop nest, as npyimpl.numpy_ufunc_kernel writes it
                indices = [a.create_iter_indices() for a in inputs]
                with cgutils.loop_nest(builder, output.shape, intp=intp, order="C") as loop_indices:
                    values = []
                    for i, (index, a) in enumerate(zip(indices, inputs)):
                        index.update_indices(loop_indices, i)
                        values.append(a.load_data(index.as_values()))
                    output.store_data(loop_indices, kernel.generate(*values))
        return npyimpl.impl_ret_new_ref(context, builder, ret, output.return_val)

    numpy_ufunc_kernel._srctrans_flat_loops = True
    return numpy_ufunc_kernel


def install() -> bool:
    """Give elementwise code of generated files flat loops; False (and ``state['reason']``) where it cannot."""
    if state["installed"]:
        return True
    if os.environ.get("SRCTRANS_NO_FLAT_LOOPS", "") not in ("", "0"):
        state["reason"] = "SRCTRANS_NO_FLAT_LOOPS is set"
        return False
    try:
        from numba.core import codegen
        from numba.np import npyimpl

        needed = ("numpy_ufunc_kernel", "_prepare_argument", "_build_array", "_ufunc_loop_sig", "_ArrayHelper")
        missing = [name for name in needed if not hasattr(npyimpl, name)]
        if missing:
            state["reason"] = f"numba.np.npyimpl has no {', '.join(missing)}"
            return False
        original = npyimpl.numpy_ufunc_kernel
        if not getattr(original, "_srctrans_flat_loops", False):
            npyimpl.numpy_ufunc_kernel = _flat_kernel(original)
        from .vector_math import tag_cache

        tag_cache(codegen.JITCPUCodegen, "srctrans-flat-loops")
    except Exception as err:  # fail safe: Numba's own loops
        state["reason"] = f"{type(err).__name__}: {err}"
        return False
    state["installed"] = True
    state["reason"] = "elementwise code of generated files runs as flat loops"
    return True
