"""The ``vmap`` step of a build: the batched entry function, vectorized or looped.

:func:`batch_entry` is called by :func:`srctrans.build.build` for ``Transform("vmap")``.
The transform's options say, per parameter of the generated entry (pytree leaves
included), whether it is batched and its rank, and the method: ``"vectorize"``,
``"loop"`` or ``"auto"`` (the rewrite when every statement has a rule, else the loop).
"""

from __future__ import annotations

import types

import libcst as cst

from ..rules.batching import Info


def batch_entry(entry, transform, np_name: str, namespace, static) -> tuple[list[cst.FunctionDef], str, dict]:
    """Replace ``entry.node`` by the batched entry; returns the functions emitted before it, a note, meta."""
    from ..ad.reverse import _LOCAL
    from ..build import _at_line, _entry_signature, _resolver, _structured
    from ..emit import clean_signature, with_origins
    from ..errors import UnsupportedSyntaxError
    from ..passes.anf import anf
    from ..passes.desugar import desugar
    from .loop import loop_function, outputs_of
    from .vectorize import NoBatchRule, vectorize

    options = dict(transform.options)
    method = options.get("method", "auto")
    flags = options["batched"]
    ranks = options["ndim"]
    axis_size = options.get("axis_size")
    plain = entry.node
    params = [p.name.value for p in plain.params.params]
    if len(params) != len(flags):
        raise TypeError(f"vmap: {entry.emit_name} takes {len(params)} arguments after flattening, in_axes gives {len(flags)}")
    name = f"{entry.emit_name}_vmap"
    unit = entry
    pf = unit.pf
    modules = frozenset(n for n, b in unit.bindings.items() if isinstance(b.value, types.ModuleType))

    why = "method='loop' was asked for"
    if options.get("reason") == "numba":
        why = "Numba could not compile the vectorized rewrite (jit with method='auto')"
    meta: dict = {}
    if method != "loop":
        normal = anf(_structured(unit, desugar(with_origins(pf), np_name, modules)), frozenset(namespace))
        normal = clean_signature(normal, entry.emit_name)
        normal, _ = _entry_signature(unit, normal, static)
        normal = _return_display(normal)
        info = {p: Info(bool(b), r) for p, b, r in zip(params, flags, ranks)}
        try:
            resolve = _resolver(unit, normal, np_name, _LOCAL)
            node, unbatched = vectorize(normal, info, resolve, _LOCAL, np_name, name, axis_size, options.get("axis_name"))
        except NoBatchRule as err:
            if method == "vectorize":
                raise _at_line(pf, UnsupportedSyntaxError, err.line, f"vmap cannot vectorize this: {err.what}",
                               "use vmap(..., method='loop') (or 'auto') to loop over the examples instead") from None
            where = f"line {err.line}: " if err.line else ""
            why = f"the vectorized rewrite stops at {where}{err.what}"
        else:
            entry.node = node
            entry.emit_name = name
            meta["vmap"] = {"method": "vectorize", "unbatched_outputs": unbatched}
            return [], "vmap method: vectorized (every statement has a batching rule)", meta
    else:
        normal = anf(_structured(unit, desugar(with_origins(pf), np_name, modules)), frozenset(namespace))
        normal, _ = _entry_signature(unit, clean_signature(normal, entry.emit_name), static)
        normal = _return_display(normal)
        resolve = _resolver(unit, normal, np_name, _LOCAL)
    _refuse_collectives(normal, resolve, pf, why)
    outputs = outputs_of(normal)
    wrapper = loop_function(entry.emit_name, params, list(flags), outputs, name, axis_size, bool(options.get("parallel")), why)
    entry.node = wrapper
    entry.emit_name = name
    meta["vmap"] = {"method": "loop", "unbatched_outputs": []}
    return [plain], f"vmap method: a loop over the examples, because {why}", meta


def _refuse_collectives(node: cst.FunctionDef, resolve, pf, why: str) -> None:
    """A collective (``psum(x, "i")`` ...) in a function vmap loops over cannot see the other
    examples: refuse it at its line, with the reason the function is looped over."""
    from ..build import _at_line
    from ..cache import ORIGIN_RE
    from ..errors import UnsupportedSyntaxError
    from ..rules.batching import BATCHING
    from .vectorize import code, rule_key

    found: list[tuple[cst.Call, int | None]] = []

    class Calls(cst.CSTVisitor):
        line: int | None = None

        def visit_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> None:
            self._mark(n)

        def visit_If(self, n: cst.If) -> None:
            self._mark(n)

        def visit_For(self, n: cst.For) -> None:
            self._mark(n)

        def visit_While(self, n: cst.While) -> None:
            self._mark(n)

        def _mark(self, n) -> None:
            for ll in n.leading_lines:
                m = ORIGIN_RE.match(ll.comment.value) if ll.comment is not None else None
                if m:
                    self.line = int(m["line"])

        def visit_Call(self, call: cst.Call) -> None:
            try:
                obj = resolve(call.func)
            except Exception:  # noqa: BLE001 -- a name the resolver does not know is no collective
                return
            key = rule_key(obj) if obj is not None else None
            if key is not None and BATCHING[key].kind == "collective":
                found.append((call, self.line))

    node.body.visit(Calls())
    if not found:
        return
    call, line = found[0]
    looping = "method='loop' was asked for" in why
    raise _at_line(
        pf, UnsupportedSyntaxError, line,
        f"{code(call)} needs every example of the batch at once, but vmap calls this function "
        f"one example at a time here: {why}",
        "use vmap(..., method='auto') so that the vectorized rewrite gives the collective the whole batch"
        if looping else "change what stops the vectorized rewrite (above), or compute the collective outside this function",
    )


def _return_display(node: cst.FunctionDef) -> cst.FunctionDef:
    """``out = (a, b)`` then ``return out`` (a returned dict or list, as tuples) -> ``return a, b``."""
    body = list(node.body.body)
    if len(body) < 2 or not all(isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 for st in body[-2:]):
        return node
    assign, ret = body[-2].body[0], body[-1].body[0]
    if not (isinstance(ret, cst.Return) and isinstance(ret.value, cst.Name) and isinstance(assign, cst.Assign)):
        return node
    target = assign.targets[0].target
    if not (len(assign.targets) == 1 and isinstance(target, cst.Name) and target.value == ret.value.value):
        return node
    if not isinstance(assign.value, cst.Tuple) or not assign.value.elements:
        return node
    from ..analysis.names import scan

    class Reads(cst.CSTVisitor):
        count = 0

        def visit_Name(self, n: cst.Name) -> None:
            if n.value == target.value:
                Reads.count += 1

    for st in body[:-2]:
        st.visit(Reads())
    if Reads.count or target.value in scan(node).params:
        return node
    new_ret = body[-1].with_changes(body=[cst.Return(assign.value.with_changes(lpar=[], rpar=[]))],
                                    leading_lines=[*body[-2].leading_lines, *body[-1].leading_lines])
    return node.with_changes(body=node.body.with_changes(body=[*body[:-2], new_ret]))
