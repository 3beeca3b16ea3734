"""Build the text of a generated file: parse, fence, resolve, normalize, transform, render.

The entry function and every user function it calls (transitively) go into one
module, callees first, so the file imports and runs on its own.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import libcst as cst

from .analysis.names import NameGen, scan
from .analysis.resolve import Binding, describe_value
from .capture import Captured, capture
from .emit import ModuleSpec, clean_signature, render
from .errors import SrcTransError, UnsupportedSyntaxError
from .fence import fence
from .lifting import lift
from .nested_calls import Nested, loop_node
from .nesting import function_copy
from .normal_form import (
    Unit,
    alias_callee,
    apply_defaults,
    at_line,
    binding_site,
    claim_name,
    desugared,
    entry_signature,
    module_functions,
    names_used,
    normalize,
    numpy_name,
    resolve_unit,
    resolver,
    rewrite_numpy,
    static_text,
)
from .parse import ParsedFunction, parse_function
from .passes.anf import anf
from .passes.leaves import tuples_alone as _tuples_alone
from .specialization import RESERVED, code_names, leaf_names
from .variant import Transform, display_source


def build(cap: Captured, transform, static: dict[str, Any], dep_hash: str, path: Path) -> tuple[str, dict, dict[str, Any]]:
    """Return ``(text, meta, bound values)`` for the generated file at ``path``."""

    entry_pf = parse_function(cap)
    units: list[Unit] = []
    by_fn: dict[int, Unit] = {}
    namespace: dict[str, tuple[str, Any, Unit]] = {}  # module-level name -> (kind, identity, first user)

    nested = Nested(transform.name, compiled=dict(transform.options).get("compiled", False))

    def add(pf: ParsedFunction, emit_name: str) -> Unit:
        is_entry = pf is entry_pf
        pf, lifted = lift(pf)  # lambdas and defs inside: functions of their own
        fence(pf)
        pf, introduced = nested.rewrite(pf, set(namespace), lifted)  # calls of srctrans.jvp ... as calls of generated files
        if lifted:
            read = scan(pf.node).free
            introduced = {**{name: fn for name, fn in lifted.items() if name in read}, **introduced}
        unit = Unit(pf, emit_name)
        unit.specialize = specializer(unit)
        by_fn[id(pf.captured.fn)] = unit
        units.append(unit)
        claim_name(namespace, emit_name, "function", pf.captured.fn, unit, pf.node)
        resolve_unit(unit, namespace, static if is_entry else {}, introduced, transform.name not in ("grad", "vjp", "jvp"))
        apply_defaults(unit, namespace, static if is_entry else {})
        for binding in list(unit.bindings.values()):  # (an alias adds a binding)
            if binding.kind != "callee":
                continue
            known = by_fn.get(id(binding.value))
            if known is None:
                add(parse_function(capture(binding.value)), binding.name)
            elif known.emit_name != binding.name:  # one function, two names (``clip = _impl``): one def, one name
                alias_callee(unit, binding, known.emit_name)
        primal_custom = transform.name not in ("grad", "vjp", "jvp")
        for dotted, fn in module_functions(unit, primal_custom).items():  # helpers.norm(x): a callee too, by its name
            known = by_fn.get(id(fn))
            if known is None:
                name = fn.__name__ if fn.__name__ not in namespace and fn.__name__ not in scan(unit.pf.node).all else (
                    NameGen(set(namespace) | scan(unit.pf.node).all).fresh(dotted.replace(".", "_"), numbered=False)
                )
                known = add(parse_function(capture(fn)), name)
            unit.aliases[dotted] = known.emit_name
            unit.bindings[known.emit_name] = Binding(known.emit_name, "callee", fn, "global")
        return unit

    clones: dict[tuple, tuple[Unit, Any]] = {}

    def specializer(caller: Unit):
        """The hook with which ``caller``'s leaves pass turns ``f(params, x)``, ``params`` a pytree
        part, into a call of ``f``'s version taking its leaves (:data:`srctrans.passes.leaves.Specialize`)."""

        def specialize(name: str, given: list, call: cst.Call):
            binding = caller.bindings.get(name)
            callee = by_fn.get(id(binding.value)) if binding is not None and binding.kind == "callee" else None
            if callee is None or callee.trees or callee.pf.captured.kind == "method":
                return None
            fn = callee.pf.captured.fn
            grad = nested.grads.get(id(fn))
            if grad is not None:  # srctrans.grad(f)(params, x) in the body: the grad file of these structures
                callee = _structured_grad(grad, fn, given)
                if callee is None:
                    return None
                fn = callee.pf.captured.fn
            try:
                params = list(inspect.signature(fn).parameters.values())
            except (TypeError, ValueError):
                return None
            by_name = {p.name: p for p in params}
            trees: dict[str, Any] = {}
            for i, (keyword, part) in enumerate(given):
                p = by_name.get(keyword) if keyword is not None else (params[i] if i < len(params) else None)
                if p is None or (keyword is None and p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)):
                    return None
                if part is not None:
                    if p.default is not p.empty or p.kind is p.KEYWORD_ONLY:
                        return None
                    trees[p.name] = part.tree
            key = (id(fn), tuple(sorted(trees.items(), key=lambda kv: kv[0])))
            if key not in clones:
                taken = code_names(fn.__code__) | RESERVED
                named = {p: (t, leaf_names(p, t, set(taken))) for p, t in trees.items()}
                clone = Unit(callee.pf, "", dict(callee.bindings), aliases=dict(callee.aliases),
                             defaults=dict(callee.defaults), trees=named)
                clone.specialize = specializer(clone)
                token = function_copy(fn, named)
                clone.emit_name = NameGen(set(namespace)).fresh(f"{callee.emit_name}_leaves", numbered=False)
                claim_name(namespace, clone.emit_name, "function", token, clone, callee.pf.node)
                clones[key] = (clone, token)
                by_fn[id(token)] = clone
                units.append(clone)
                try:  # (registered first: a recursive call finds it)
                    desugared(clone, numpy_name(namespace))
                except SrcTransError:
                    if not all(_tuples_alone(part) for _, part in given if part is not None):
                        raise
                    # the function reads a tuple or list other than through its entries: it gets the tuple
                    del clones[key], by_fn[id(token)], namespace[clone.emit_name]
                    units.remove(clone)
                    clones[key] = None
            if clones[key] is None:
                return None
            clone, token = clones[key]
            caller.bindings[clone.emit_name] = Binding(clone.emit_name, "callee", token, "global")
            out = []
            for i, (keyword, part) in enumerate(given):
                p = by_name[keyword] if keyword is not None else params[i]
                out.append(clone.trees[p.name][1] if part is not None else None)
            return clone.emit_name, out

        return specialize

    structured_grads: dict[tuple, Unit] = {}

    def _structured_grad(grad, fn, given: list) -> Unit | None:
        """The unit of ``grad``'s adjoint file for the pytree parts ``given`` to its call, arguments whole."""
        from .nesting import adjoint_function

        params = list(inspect.signature(fn).parameters.values())
        trees = {}
        for i, (keyword, part) in enumerate(given):
            if part is not None:
                p = next((q for q in params if q.name == keyword), None) if keyword is not None else (
                    params[i] if i < len(params) else None
                )
                if p is None:
                    return None
                trees[p.name] = part.tree
        key = (id(grad), tuple(sorted(trees.items(), key=lambda kv: kv[0])))
        if key not in structured_grads:
            try:
                structured = adjoint_function(grad, trees=trees)
            except TypeError:
                return None
            name = NameGen(set(namespace)).fresh(f"{fn.__name__}_grad_of_trees", numbered=False)
            structured_grads[key] = add(parse_function(capture(structured)), name)
        return structured_grads[key]

    entry = add(entry_pf, cap.name)
    if transform.name in ("grad", "vjp", "jvp"):
        entry.emit_name = f"{cap.name}_{transform.name}"
    np_name = numpy_name(namespace)

    params_meta: list[list[str]] = []
    for unit in units:
        node = clean_signature(desugared(unit, np_name), unit.emit_name)
        if unit is entry:  # pytree arguments as leaves, on the function as written (loops over them unrolled)
            node, params_meta = entry_signature(unit, node, static, flat_returns=transform.name == "anf")
        if unit is entry and transform.name in ("grad", "vjp", "jvp"):
            node = normalize(unit, node, namespace)
        elif transform.name == "anf":
            node = anf(node, frozenset(namespace))
        unit.node = node
    adjoints: list[cst.FunctionDef] = []
    vmap_note, vmap_meta = "", {}
    if transform.name == "vmap":  # srctrans.batching: the batched entry (after the entry itself when it loops over it)
        from .batching.generate import batch_entry

        adjoints, vmap_note, vmap_meta = batch_entry(entry, transform, np_name, namespace, static, by_fn)
    if transform.name in ("grad", "vjp", "jvp"):

        def add_function(fn) -> Unit:  # a function the adjoint calls as it is (custom_vjp fwd/bwd)
            unit = by_fn.get(id(fn))
            if unit is None:
                name = fn.__name__
                if name == "<lambda>":  # defvjp(lambda x: ..., lambda res, g: ...): a name of its own
                    name = NameGen(set(namespace)).fresh("custom_rule", numbered=False)
                unit = add(parse_function(capture(fn)), name)
            return unit

        if transform.name == "jvp":  # forward mode: tangent functions (srctrans.ad.forward)
            from .ad.forward import tangent_functions

            adjoints, tangents = tangent_functions(entry, by_fn, transform, np_name, params_meta, namespace, add_function)
            params_meta = params_meta + [["tangent", t] for t in tangents]
        else:
            adjoints = _adjoints(entry, by_fn, transform, np_name, params_meta, namespace, add_function)
        if transform.name == "vjp":
            params_meta = params_meta + [["cotangent"]]
        if transform.name == "grad" and dict(transform.options).get("structured"):
            entry.node, params_meta = _structured_entry(
                entry.pf, entry.node, params_meta, getattr(static, "trees", {}), dict(transform.options).get("wrt") or ()
            )
        for unit in units:
            if unit.node is None:  # added while differentiating: emitted as written
                unit.node = clean_signature(desugared(unit, np_name), unit.emit_name)

    for unit in units:  # NumPy calls Numba cannot be taught directly go through srctrans.runtime
        unit.node = rewrite_numpy(unit.node, unit, np_name)
    adjoints = [rewrite_numpy(a, entry, np_name) for a in adjoints]
    loops = _loops(nested, by_fn, np_name)
    every_unit = units
    if transform.name == "vmap" or clones or nested.standins:  # functions no emitted function calls are not written
        units = _called_units(entry, units, loops + adjoints)
    for unit in units:
        if id(unit.pf.captured.fn) in nested.standins:  # a grad called with no pytree parts, whose file failed
            raise nested.standins[id(unit.pf.captured.fn)]
    imports, literals, bound_notes, bound_meta, bound = [], [], [], {}, {}
    emitted = [u.node for u in units] + loops + adjoints
    used = set().union(*map(names_used, emitted))  # (one walk of what is written)
    if np_name in used and np_name not in namespace:
        imports.append("import numpy" if np_name == "numpy" else f"import numpy as {np_name}")
    if "rt" in used and "rt" not in namespace:
        imports.append("import srctrans.runtime as rt")
    if "math" in used and "math" not in namespace:
        imports.append("import math")
    seen: set[str] = set()
    for unit in every_unit:  # (a function not written may have a batched version that reads its names)
        for name, b in unit.bindings.items():
            if name in seen or b.kind in ("builtin", "callee", "vmapped"):
                continue
            seen.add(name)
            where = binding_site(unit, b)
            if b.kind == "import":
                imports.append(b.text)
            elif b.kind == "literal":
                literals.append((name, b.text, where))
            else:
                bound_notes.append(f"{name} ({where}): {describe_value(b.value)}")
                bound[name] = b.value
                original = b.text if b.origin == "default" else name  # (a default: its parameter's name)
                bound_meta[name] = [b.origin, original] if unit is entry else ["other", name]

    source = display_source(cap, path)
    title_fn = cap.dotted_name
    meta = {
        "entry": entry.emit_name,
        "functions": [u.emit_name for u in units] + [n.name.value for n in loops + adjoints],
        "params": params_meta,
        "bound": bound_meta,
        "fast": all(v[0] != "other" for v in bound_meta.values()),
        "sources": {u.pf.display_file: os.path.abspath(u.pf.captured.filename) for u in every_unit},
        **vmap_meta,
    }
    spec = ModuleSpec(
        title=f"{source}:{title_fn} -- {transform.label}",
        show_command=_show_command(source, title_fn, transform),
        transforms="; ".join(filter(None, [f"static arguments: {static_text(static)}" if static else "", vmap_note])),
        imports=imports,
        literals=literals,
        bound_notes=bound_notes,
        functions=[u.node for u in units[1:]] + loops + adjoints + [entry.node],
        meta=meta,
        dependency_hash=dep_hash,
    )
    return render(spec), meta, bound


def _structured_entry(pf, node: cst.FunctionDef, params_meta: list, trees: dict, wrt: tuple) -> tuple[cst.FunctionDef, list]:
    """The *structured* variant of a grad file for pytree arguments (:func:`srctrans.nesting.adjoint_function`):
    each pytree argument taken whole and read leaf by leaf with constant keys first thing, the
    gradient of one returned as a display of its structure. ``(node, meta["params"])``."""
    from .tree import DictKey, GetAttrKey, SequenceKey, tree_flatten_with_path

    params: list[cst.Param] = []
    meta: list[list] = []
    reads: list[cst.SimpleStatementLine] = []
    root_of: dict[str, str] = {}
    for m in params_meta:
        if m[0] == "leaf":
            root = m[1]
            if any(x == ["arg", root] for x in meta):
                continue
            params.append(cst.Param(cst.Name(root)))
            meta.append(["arg", root])
            treedef, names = trees[root]
            for path, leaf in tree_flatten_with_path(treedef.unflatten(names))[0]:
                root_of[leaf] = root
                expr: cst.BaseExpression = cst.Name(root)
                for key in path:
                    if isinstance(key, GetAttrKey):
                        expr = cst.Attribute(expr, cst.Name(key.name))
                    else:
                        index = key.idx if isinstance(key, SequenceKey) else key.key if isinstance(key, DictKey) else None
                        expr = cst.Subscript(expr, [cst.SubscriptElement(cst.Index(cst.parse_expression(repr(index))))])
                reads.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(leaf))], expr)]))
        elif m[0] == "arg":
            params.append(cst.Param(cst.Name(m[1])))
            meta.append(m)
        else:
            raise TypeError("a grad of a method cannot be differentiated again yet")
    if reads:
        reads[0] = reads[0].with_changes(
            leading_lines=[cst.EmptyLine(comment=cst.Comment("# the leaves of the pytree arguments"))]
        )
    body = list(node.body.body)
    last = body[-1]
    if not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[0], cst.Return)):  # pragma: no cover
        raise SrcTransError(f"{pf.captured.qualname}: the adjoint file does not end in a return")
    value = last.body[0].value
    given = [e.value for e in value.elements] if len(wrt) > 1 else [value]
    if len(given) != len(wrt):  # pragma: no cover - reverse mode returns one gradient per parameter
        raise SrcTransError(f"{pf.captured.qualname}: {len(given)} gradients for {len(wrt)} parameters")
    by_leaf = dict(zip(wrt, given))
    out: list[cst.BaseExpression] = []
    done: set[str] = set()
    for name in wrt:
        root = root_of.get(name)
        if root is None:
            out.append(by_leaf[name])
        elif root not in done:
            done.add(root)
            treedef, names = trees[root]
            out.append(_display(treedef, iter([by_leaf[n] for n in names])))
    result = out[0] if len(out) == 1 else cst.Tuple([cst.Element(e) for e in out])
    body[-1] = last.with_changes(body=[last.body[0].with_changes(value=result)])
    node = node.with_changes(params=cst.Parameters(params=params), body=node.body.with_changes(body=reads + body))
    return node, meta


def _display(treedef, values) -> cst.BaseExpression:
    """A display of structure ``treedef`` holding ``values`` (expressions, in flattening order)."""
    if treedef.is_leaf():
        return next(values)
    kind, aux = treedef.node_data()
    kids = [_display(c, values) for c in treedef.children()]
    if kind is type(None):
        return cst.Name("None")
    if kind is dict:
        return cst.Dict([cst.DictElement(cst.parse_expression(repr(k)), v) for k, v in zip(aux, kids)])
    if kind is list:
        return cst.List([cst.Element(k) for k in kids])
    if kind is tuple:
        elements = [cst.Element(k) for k in kids]
        if len(elements) == 1:
            elements[0] = elements[0].with_changes(comma=cst.Comma())
        return cst.Tuple(elements)
    raise TypeError(f"a grad of {kind.__name__} (namedtuple) arguments cannot be differentiated again yet")


def _loops(nested: Nested, by_fn: dict, np_name: str) -> list[cst.FunctionDef]:
    """The loops over the examples that calls of vmapped functions reach under jit (:mod:`srctrans.nested_calls`)."""
    from .analysis.callees import outputs_of

    out = []
    for name, (obj, _, base) in nested.loops.items():
        callee = by_fn[id(base)]
        out.append(loop_node(name, obj, callee.emit_name, np_name, outputs_of(callee.node)))
    return out


def _adjoints(entry: Unit, by_fn: dict, transform, np_name: str, params_meta, namespace, add_function) -> list[cst.FunctionDef]:
    """Differentiate the entry and, once each, every user function it calls (as ``name_vjp``).

    Returns the callees' adjoint functions; the entry's adjoint replaces ``entry.node``.
    """
    names: dict[tuple, str] = {}
    queue: list[tuple[Unit, tuple[str, ...], tuple]] = []

    def callee_vjp(fn, active: tuple[str, ...]) -> str | None:
        """The adjoint of user function ``fn`` for its parameters ``active`` (``f_vjp`` for all of
        them, ``f_vjp_W`` for ``W`` alone), queued to be written once."""
        unit = by_fn.get(id(fn))
        if unit is None:
            return None
        key = (id(fn), active)
        if key not in names:
            every = [p.name for p in inspect.signature(fn).parameters.values()]
            names[key] = f"{unit.emit_name}_vjp" if list(active) == every else f"{unit.emit_name}_vjp_{'_'.join(active)}"
            queue.append((unit, active, key))
        return names[key]

    def custom_names(obj) -> tuple[str, str]:
        fwd = add_function(getattr(obj.fwd, "__srctrans_function__", obj.fwd))
        bwd = add_function(getattr(obj.bwd, "__srctrans_function__", obj.bwd))
        return fwd.emit_name, bwd.emit_name

    entry.node = _differentiate(entry, entry.node, transform, np_name, params_meta, callee_vjp, custom_names=custom_names)
    out: list[cst.FunctionDef] = []
    done = 0
    while done < len(queue):
        unit, active, key = queue[done]
        done += 1
        node = normalize(unit, desugared(unit, np_name), namespace)
        node = clean_signature(node, names[key])
        params = [p.name.value for p in node.params.params]
        # a file another transformation reads (grads_only) has no in-place sinks and growable
        # tapes in its callees' adjoints too
        vjp = Transform("vjp", (("wrt", active),) + tuple(o for o in transform.options if o[0] in ("grads_only", "indexed")))
        out.append(
            _differentiate(
                unit, node, vjp, np_name, [["arg", p] for p in params], callee_vjp, always_tuple=True, custom_names=custom_names
            )
        )
    return out


def _differentiate(
    unit: Unit,
    node: cst.FunctionDef,
    transform,
    np_name: str,
    params_meta,
    callee_vjp=None,
    always_tuple=False,
    custom_names=None,
) -> cst.FunctionDef:
    """Reverse mode on one function already in A-normal form."""
    from .ad.refusals import NoRuleError, NotDifferentiable
    from .ad.reverse import reverse
    from .analysis.resolve import LOCAL
    from .errors import NoDerivativeError

    options = dict(transform.options)
    params = [m[1] for m in params_meta if m[0] == "arg"] + [
        p.name.value for p in node.params.params if p.name.value not in {m[1] for m in params_meta if m[0] == "arg"}
    ]
    wrt = tuple(options.get("wrt") or params[:1])
    resolve = resolver(unit, node, np_name, LOCAL)

    pf = unit.pf
    try:
        name = node.name.value if always_tuple else unit.emit_name
        return reverse(
            node,
            resolve,
            wrt,
            "grad" if transform.name == "grad" else "vjp",
            bool(options.get("has_aux")),
            name,
            np_name,
            callee_vjp,
            always_tuple,
            custom_names,
            grads_only=bool(options.get("grads_only")) and not always_tuple,
            # the next grad pushes and pops its tapes; vmap's batches preallocated ones (rt.batch_tape)
            growable=bool(options.get("grads_only")) and not options.get("indexed"),
            in_place=not options.get("grads_only"),  # no other transformation reads this file
        )
    except NoRuleError as err:
        raise at_line(pf, NoDerivativeError, err.line, f"no derivative rule for {err.what}",
                       "srctrans.custom_vjp will let you give one; until then, compute this outside the differentiated function") from None
    except NotDifferentiable as err:
        raise at_line(pf, UnsupportedSyntaxError, err.line, err.what, err.hint or None) from None


def _called_units(entry, units: list, others: list) -> list:
    """The entry's unit and the units some emitted function calls, in order."""
    used = set().union(*map(names_used, [entry.node, *others]))
    kept = {id(entry)}
    grew = True
    while grew:
        grew = False
        for unit in units:
            if id(unit) not in kept and unit.emit_name in used:
                kept.add(id(unit))
                used |= names_used(unit.node)
                grew = True
    return [u for u in units if id(u) in kept]


def _show_command(source: str, title_fn: str, transform) -> str:
    """The command line that prints this file again (vmap's depend on the call's shapes)."""
    if transform.name == "vmap":
        return "call the vmapped function, then srctrans.source(it)"
    options = dict(transform.options)
    wrt = f" --wrt {','.join(options['wrt'])}" if options.get("wrt") else ""
    return f"srctrans show {source}:{title_fn} --transform {transform.name}{wrt}"


# builtins the passes may write into a function that did not use them itself


