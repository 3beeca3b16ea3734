"""The per-example loop: a generated function that calls the unbatched function once per example.

Used for what the vectorized rewrite cannot express (a ``while`` whose trip count depends
on the example, side effects, operations without a batching rule). Batched parameters
arrive with the batch axis first; outputs go out with it first, like the rewrite's.
The first example is computed before the loop to size the outputs (for an empty batch,
on zeros: :func:`srctrans.runtime.batch_example`); with ``parallel`` the loop is a
``prange``, which Numba runs on every core (each example writes its own rows).
"""

from __future__ import annotations

import libcst as cst

from ..analysis.names import NameGen


def loop_function(
    callee: str,
    params: list[str],
    batched: list[bool],
    outputs: int | None,
    name: str,
    axis_size: int | None,
    parallel: bool,
    why: str,
) -> cst.FunctionDef:
    """``name(*params)``: ``callee`` applied to each example, results stacked on a new axis 0."""
    gen = NameGen(set(params) | {callee, "rt", "range"})
    n, i = gen.fresh("n", numbered=False), gen.fresh("i", numbered=False)
    first = next((p for p, b in zip(params, batched) if b), None)
    size = f"{first}.shape[0]" if first is not None else repr(axis_size)
    outs = [gen.fresh("out", numbered=False)] if outputs is None else [gen.fresh(f"out{k}", numbered=False) for k in range(outputs)]
    stacks = [gen.fresh(f"{o}_batch", numbered=False) for o in outs]
    inner = [gen.fresh(f"{o}_{i}", numbered=False) for o in outs]  # names of their own inside the loop (a prange body)
    example = ", ".join(f"rt.batch_example({p})" if b else p for p, b in zip(params, batched))
    each = ", ".join(f"{p}[{i}]" if b else p for p, b in zip(params, batched))
    target = outs[0] if outputs is None else ", ".join(outs) + ("," if len(outs) == 1 else "")
    target_i = inner[0] if outputs is None else ", ".join(inner) + ("," if len(inner) == 1 else "")
    loop = f"rt.prange(1, {n})" if parallel else f"range(1, {n})"
    lines = [
        f"def {name}({', '.join(params)}):",
        f"    # vmap by a loop over the examples: {why}",
        f"    {n} = {size}  # the batch size",
        f"    {target} = {callee}({example})  # the first example (zeros for an empty batch) sizes the results",
        *(f"    {s} = rt.batch_alloc({o}, {n})" for o, s in zip(outs, stacks)),
        f"    for {i} in {loop}:",
        f"        {target_i} = {callee}({each})",
        *(f"        {s}[{i}] = {o}" for o, s in zip(inner, stacks)),
        f"    return {', '.join(stacks)}" + ("," if outputs == 1 else ""),
    ]
    return cst.parse_statement("\n".join(lines) + "\n")  # type: ignore[return-value]
