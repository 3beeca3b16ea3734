"""The normal form: a user's function, and every user function it calls, made ready for a transformation.

A :class:`Unit` is one function going into a generated file. Its names are resolved
(:func:`resolve_unit`: globals, callees, constants, aliases), its defaults applied, its NumPy calls
rewritten (:func:`rewrite_numpy`), then :func:`desugared` gives the desugared definition and
:func:`normalize` the A-normal form the differentiating transformations read (structured control
flow, indexed results, leaves of containers). :func:`entry_signature` gives the entry's
parameters with containers flattened into leaves. Errors found here point at the user's line
(:func:`at_line`).

:mod:`srctrans.build` drives this for a whole file; the transformations
(:mod:`srctrans.ad.forward`, :mod:`srctrans.batching.generate`) call it for the functions they write.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from .analysis.callees import loop_axes
from .analysis.names import NameGen, scan
from .analysis.resolve import Binding, bind, is_user_function, lookup
from .capture import capture
from .emit import with_origins
from .errors import SrcTransError, UnresolvedNameError, UnsupportedSyntaxError
from .parse import ParsedFunction, parse_function
from .passes.anf import anf
from .passes.desugar import desugar


@dataclass
class Unit:
    """One function going into the file."""

    pf: ParsedFunction
    emit_name: str
    bindings: dict[str, Binding] = field(default_factory=dict)
    node: cst.FunctionDef | None = None
    aliases: dict[str, str] = field(default_factory=dict)  # another name of a function in the file -> its name there
    defaults: dict[str, cst.BaseExpression] = field(default_factory=dict)  # parameter -> its default, as written in the file
    # a version of a function for pytree arguments of known structure (parameter -> (treedef, leaf names)):
    # those parameters are taken as their leaves, as the entry's are
    trees: dict[str, tuple[Any, list[str]]] | None = None
    # the build's hook that gives a call of a user function with pytree parts its version for them
    # (:data:`srctrans.passes.leaves.Specialize`)
    specialize: Any = None


class _SelfAttrs(cst.CSTTransformer):
    """``self.w`` -> ``self_w``: a method's attribute reads become parameters."""

    def __init__(self, self_name: str, names: dict[str, str]) -> None:
        super().__init__()
        self.self_name = self_name
        self.names = names

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if isinstance(updated.value, cst.Name) and updated.value.value == self.self_name:
            return cst.Name(self.names[updated.attr.value], lpar=updated.lpar, rpar=updated.rpar)
        return updated


class _NamesUsed(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def names_used(node: cst.CSTNode) -> set[str]:
    """Every name ``node`` mentions (read, written, called, as an attribute's base)."""
    v = _NamesUsed()
    node.visit(v)
    return v.names


def normalize(unit: Unit, node: cst.FunctionDef, namespace) -> cst.FunctionDef:
    """A desugared function as the transformations read it: structured, in A-normal form, and
    tuples indexed with constants as unpackings (:mod:`srctrans.passes.indexed_results`)."""
    from .analysis.callees import outputs_of
    from .passes.indexed_results import index_results, library_arity

    def arity(call: cst.Call) -> int | None:
        func = call.func
        binding = unit.bindings.get(func.value) if isinstance(func, cst.Name) else None
        if binding is None or binding.kind != "callee":
            return library_arity(resolve(func), call)
        try:
            return outputs_of(parse_function(capture(binding.value)).node)
        except Exception:  # noqa: BLE001 -- a callee srctrans cannot read is not unpacked here
            return None

    normal = anf(_structured(unit, node), frozenset(namespace))
    resolve = resolver(unit, normal, numpy_name(namespace), _NORMAL_LOCAL)
    return index_results(normal, arity)


_NORMAL_LOCAL = object()  # what ``normalize``'s resolver returns for the function's own names


def desugared(unit: Unit, np_name: str) -> cst.FunctionDef:
    """The unit's function as every transformation starts from it: origin comments, calls by
    one name per function, desugared (:mod:`srctrans.passes.desugar`)."""
    modules = frozenset(n for n, b in unit.bindings.items() if isinstance(b.value, types.ModuleType))
    node = desugar(_with_defaults(with_origins(unit.pf, unit.aliases), unit.defaults), np_name, modules)
    if unit.trees:
        node = _leaf_parameters(unit, node)
    return node


def _leaf_parameters(unit: Unit, node: cst.FunctionDef) -> cst.FunctionDef:
    """A version of a user function for pytree arguments (``unit.trees``): those parameters as leaves."""
    node, _, trees = _pytrees(unit, node, _Trees(unit.trees), returns=False)
    params: list[cst.Param] = []
    for p in node.params.params:
        if p.name.value in trees:
            params += [cst.Param(cst.Name(leaf)) for leaf in trees[p.name.value][1]]
        else:
            params.append(p.with_changes(comma=cst.MaybeSentinel.DEFAULT))
    notes = _pytree_notes(trees, None)
    return node.with_changes(params=node.params.with_changes(params=params), leading_lines=notes)


@dataclass(frozen=True)
class _Trees:
    """The pytree arguments of a function's version for them: every one passed as leaves."""

    trees: dict

    @property
    def differentiated(self) -> frozenset[str]:
        return frozenset(self.trees)


def apply_defaults(unit: Unit, namespace, static: dict[str, Any]) -> None:
    """Each default of the unit's function as the file writes it: a literal, or a name the
    loader binds to the value (``def helper(x, eps=2.0)`` although ``EPS`` is 5.0 by now;
    ``def inner(x, k=3.0)`` for a factory's ``k=k``). Static parameters have no default in
    the file (they are not parameters there)."""
    from .analysis.resolve import literal_text

    taken = set(namespace) | scan(unit.pf.node).all
    for param, value in unit.pf.captured.defaults.items():
        if param in static:
            continue
        text = literal_text(value)
        if text is not None:
            unit.defaults[param] = cst.parse_expression(text)
            continue
        name = NameGen(taken).fresh(f"{unit.emit_name}_{param}_default", numbered=False)
        taken.add(name)
        unit.bindings[name] = Binding(name, "bound", value, "default", param)
        claim_name(namespace, name, "bound", value, unit, unit.pf.node)
        unit.defaults[param] = cst.Name(name)


def _with_defaults(node: cst.FunctionDef, defaults: dict[str, cst.BaseExpression]) -> cst.FunctionDef:
    """``node`` with each parameter's default replaced by ``defaults[parameter]``."""

    def param(p: cst.Param) -> cst.Param:
        if p.default is None or p.name.value not in defaults:
            return p
        return p.with_changes(default=defaults[p.name.value])

    params = node.params
    return node.with_changes(
        params=params.with_changes(
            posonly_params=[param(p) for p in params.posonly_params],
            params=[param(p) for p in params.params],
            kwonly_params=[param(p) for p in params.kwonly_params],
        )
    )


def _structured(unit: Unit, node: cst.FunctionDef) -> cst.FunctionDef:
    """``break``, ``continue`` and early returns as flags and branches (reverse mode replays neither)."""
    from .cache import ORIGIN_RE
    from .passes.control import JumpError, structure

    try:
        return structure(node)
    except JumpError as err:
        line = None
        for ll in getattr(err.node, "leading_lines", ()):
            m = ORIGIN_RE.match(ll.comment.value) if ll.comment is not None else None
            if m:
                line = int(m["line"])
        raise at_line(unit.pf, UnsupportedSyntaxError, line, err.message, err.hint) from None


def at_line(pf: ParsedFunction, cls, line: int | None, message: str, hint: str | None):
    if line is None:
        return cls(message, filename=pf.captured.filename, hint=hint)
    text = pf.captured.file_text.splitlines()[line - 1] if line <= len(pf.captured.file_text.splitlines()) else ""
    col = len(text) - len(text.lstrip())
    return cls(message, filename=pf.captured.filename, line=line, col=col, source_line=text, hint=hint)


_PY_DTYPES = {id(float): "float64", id(int): "int64", id(bool): "bool_", id(complex): "complex128"}


class _RewriteCalls(cst.CSTTransformer):
    def __init__(self, resolve, targets: dict[int, str], np_name: str = "np") -> None:
        super().__init__()
        self.np_name = np_name
        self.resolve = resolve
        self.targets = targets
        self.changed = False

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        func = updated.func
        if isinstance(func, cst.Attribute) and func.attr.value == "astype" and updated.args:
            # x.astype(float): Numba wants a NumPy type; Python's float, int, bool and complex are those
            dtype = _PY_DTYPES.get(id(self.resolve(updated.args[0].value)))
            if dtype is not None:
                self.changed = True
                arg = updated.args[0].with_changes(value=cst.Attribute(cst.Name(self.np_name), cst.Name(dtype)))
                return updated.with_changes(args=[arg, *updated.args[1:]])
        helper = self.targets.get(id(self.resolve(updated.func)))
        if helper is None:
            return updated
        self.changed = True
        return updated.with_changes(func=cst.Attribute(cst.Name("rt"), cst.Name(helper)))


def rewrite_numpy(node: cst.FunctionDef, unit: Unit, np_name: str) -> cst.FunctionDef:
    """``np.matmul(a, b)`` -> ``rt.matmul(a, b)`` for the calls listed in ``srctrans.runtime.NUMPY_REWRITES``."""
    import importlib

    from . import runtime

    targets: dict[int, str] = {}
    for qualified, helper in runtime.NUMPY_REWRITES.items():
        module, _, attr = qualified.rpartition(".")
        obj = getattr(importlib.import_module(module), attr, None)
        if obj is not None:
            targets[id(obj)] = helper
    resolve = resolver(unit, node, np_name, None)
    return node.visit(_RewriteCalls(resolve, targets, np_name))


_PASS_BUILTINS = frozenset({"len", "range", "slice", "min"})


def resolver(unit: Unit, node: cst.FunctionDef, np_name: str, local_marker: Any):
    """What a name or dotted name in ``node`` refers to; ``local_marker`` for the function's own names."""
    import numpy

    names = scan(node)
    local = names.local | frozenset(names.params)

    def resolve(expr: cst.BaseExpression):
        if isinstance(expr, cst.Name):
            if expr.value in local:
                return local_marker
            b = unit.bindings.get(expr.value)
            if b is not None:
                return b.value
            if expr.value in _PASS_BUILTINS:  # brought in by a pass (len, range, slice)
                import builtins

                return getattr(builtins, expr.value)
            if expr.value == "rt":  # srctrans.runtime, brought in by desugar (x.at[i].set(v))
                from . import runtime

                return runtime
            return numpy if expr.value == np_name else None  # numpy, brought in by desugar
        if isinstance(expr, cst.Attribute):
            base = resolve(expr.value)
            if base is None or base is local_marker:
                return base
            return getattr(base, expr.attr.value, None)
        return None

    return resolve


def static_text(static: dict[str, Any]) -> str:
    from .statics import key_text

    return ", ".join(f"{k}={key_text(v, fingerprints=False)}" for k, v in sorted(static.items()))


def binding_site(unit: Unit, b: Binding) -> str:
    if b.origin == "static":
        return "static argument"
    mod = unit.pf.captured.module_name
    if b.origin == "closure":
        return f"closure value of {unit.pf.captured.qualname}"
    if b.origin == "default":
        return f"default of {unit.pf.captured.qualname}'s parameter {b.text}"
    return f"global of {mod}"


def module_functions(unit: Unit, primal_custom: bool) -> dict[str, Any]:
    """``{"helpers.norm": norm}``: the unit's reads of a function of the user's own through a
    module it imports (``import helpers``), which Numba cannot call there. ``primal_custom``:
    a ``custom_vjp``/``custom_jvp`` there is the function it wraps (as in :func:`resolve_unit`)."""
    from .library import is_distribution, source_for

    modules = {n: b.value for n, b in unit.bindings.items() if isinstance(b.value, types.ModuleType) or is_distribution(b.value)}
    if not modules:
        return {}
    found: dict[str, Any] = {}

    class Reads(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            parts, base = [node.attr.value], node.value
            while isinstance(base, cst.Attribute):
                parts.append(base.attr.value)
                base = base.value
            if not isinstance(base, cst.Name) or base.value not in modules:
                return True
            value = modules[base.value]
            for part in reversed(parts):
                value = getattr(value, part, None)
            value = source_for(value) or value  # stats.norm.logpdf: srctrans.library's source of it
            if primal_custom and _custom_rule(value):
                value = value.fun
            if is_user_function(value) and not _custom_rule(value):
                found[".".join([base.value, *reversed(parts)])] = value
            return False

    unit.pf.node.visit(Reads())
    return found


def alias_callee(unit: Unit, binding: Binding, name: str) -> None:
    """``unit`` calls a function of the file by ``binding.name``; the file calls it ``name``."""
    taken = unit.bindings.get(name)
    if (taken is not None and taken.value is not binding.value) or name in scan(unit.pf.node).local:
        raise unit.pf.error(
            SrcTransError,
            unit.pf.node,
            f"{unit.pf.captured.qualname} calls the function {name!r} as {binding.name!r} and gives {name!r} another meaning",
            f"call it by one name, {name!r} or {binding.name!r}, in every function the transformation reaches",
        )
    unit.aliases[binding.name] = name
    unit.bindings[name] = Binding(name, "callee", binding.value, binding.origin)


def claim_name(namespace, name: str, kind: str, identity: Any, unit: Unit, node: cst.CSTNode) -> None:
    prior = namespace.get(name)
    if prior is None:
        namespace[name] = (kind, identity, unit)
        return
    if prior[1] is identity or (kind == prior[0] == "literal" and prior[1] == identity):
        return
    raise unit.pf.error(
        SrcTransError,
        node,
        f"the name {name!r} means different things in {prior[2].pf.captured.qualname} and {unit.pf.captured.qualname}",
        "rename one of them so every function in the generated file agrees on it",
    )


def resolve_unit(
    unit: Unit, namespace, static: dict[str, Any], introduced: dict[str, Any] | None = None, primal_custom: bool = False
) -> None:
    """Bind each free name of the unit; ``introduced``: names a rewrite gave generated functions.
    ``primal_custom``: a function with a derivative of the user's (``srctrans.custom_vjp``,
    ``custom_jvp``) is called as the function it wraps, a callee written into the file (what
    jit and vmap need; the derivative transformations read its rule instead)."""
    pf = unit.pf
    cap = pf.captured
    names = scan(pf.node)
    closure = cap.closure
    for name, node in names.free.items():
        if introduced and name in introduced:  # a generated function; a vmapped one (jit) becomes a loop
            kind = "vmapped" if loop_axes(introduced[name]) is not None else "callee"
            unit.bindings[name] = b = Binding(name, kind, introduced[name], "generated")
            claim_name(namespace, name, "function", b.value, unit, node)
            continue
        found = lookup(cap.fn, name, closure)
        if found is None:
            raise pf.error(
                UnresolvedNameError,
                node,
                f"name {name!r} is not defined",
                "define it before calling the transformed function, or pass it as an argument",
            )
        origin, value = found
        if origin == "builtin":
            unit.bindings[name] = Binding(name, "builtin", value, "builtin")
            continue
        b = bind(name, value, origin, cap.module_name)
        if primal_custom and _custom_rule(value) and is_user_function(value.fun):  # jit, vmap: the function itself
            b = Binding(name, "callee", value.fun, origin)
        unit.bindings[name] = b
        if b.kind == "callee":
            claim_name(namespace, name, "function", b.value, unit, node)
        else:
            claim_name(namespace, name, b.kind, value, unit, node)
    for name, value in (introduced or {}).items():  # the functions the loops of vmapped ones call
        if name not in unit.bindings:
            unit.bindings[name] = Binding(name, "callee", value, "generated")
            claim_name(namespace, name, "function", value, unit, pf.node)
    for name, value in static.items():  # a literal, an import, a callee (a function of yours) or bound
        b = bind(name, value, "static", cap.module_name)
        unit.bindings[name] = b
        claim_name(namespace, name, "function" if b.kind == "callee" else b.kind, b.value, unit, pf.node)


def _custom_rule(value: Any) -> bool:
    from .ad.custom import custom_vjp
    from .ad.custom_jvp import custom_jvp

    return isinstance(value, (custom_vjp, custom_jvp))


def numpy_name(namespace) -> str:
    import numpy

    for name, (_kind, identity, _) in namespace.items():
        if identity is numpy:
            return name
    for candidate in ("np", "numpy", "np_"):
        if candidate not in namespace:
            return candidate
    return "np__"  # pragma: no cover


def entry_signature(unit: Unit, node: cst.FunctionDef, static: dict[str, Any], flat_returns: bool = False):
    """Drop static parameters, turn a method's ``self`` into its attribute reads and a pytree
    argument into its leaves; returned list and dict displays become tuples.

    Returns the node and ``meta["params"]``: one entry per parameter of the generated
    function, ``["arg", name]``, ``["attr", self_name, attr]`` or ``["leaf", name, i]`` (leaf
    ``i``, in flattening order, of argument ``name``), then ``["returns", structure]`` when the
    function returns lists or dicts (:func:`srctrans.passes.leaves.results`; ``flat_returns``: any
    nested structure, as one flat tuple, for a pmap's stages). Pytree arguments
    come as ``static.trees`` (:class:`srctrans.variant.StaticArgs`).
    """
    pf = unit.pf
    node, returns, trees = _pytrees(unit, node, static, flat_returns=flat_returns)
    params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
    meta: list[list] = []
    new_params: list[cst.Param] = []
    self_name = None
    if pf.captured.kind == "method" and params:
        self_name = params[0].name.value
    names = scan(pf.node)
    leaf_names = {n for _, leaves in trees.values() for n in leaves}
    for i, p in enumerate(params):
        pname = p.name.value
        if pname in static:
            continue
        if i == 0 and self_name is not None:
            attrs = names.attributes_of.get(self_name, {})
            gen = NameGen(names.all | set(unit.bindings) | leaf_names)
            mapping = {a: gen.fresh(f"{self_name}_{a}", numbered=False) for a in sorted(attrs)}
            if _bare_use(node, self_name):
                raise pf.error(
                    UnsupportedSyntaxError,
                    params[0],
                    f"{self_name} is used other than to read its attributes",
                    f"read the attributes you need (e.g. {self_name}.w) and pass other objects as arguments",
                )
            node = node.visit(_SelfAttrs(self_name, mapping))
            for attr, new in mapping.items():
                new_params.append(cst.Param(cst.Name(new)))
                meta.append(["attr", self_name, attr])
            continue
        if pname in trees:
            for j, leaf in enumerate(trees[pname][1]):
                new_params.append(cst.Param(cst.Name(leaf)))
                meta.append(["leaf", pname, j])
            continue
        new_params.append(p.with_changes(star=cst.MaybeSentinel.DEFAULT, comma=cst.MaybeSentinel.DEFAULT))
        meta.append(["arg", pname])
    fixed = [q.with_changes(comma=cst.MaybeSentinel.DEFAULT) for q in new_params]
    if trees:  # leaves have no defaults, and the API passes every argument
        fixed = [q.with_changes(default=None, equal=cst.MaybeSentinel.DEFAULT) for q in fixed]
    node = node.with_changes(
        params=cst.Parameters(params=fixed)
    )
    if returns is not None:
        meta.append(["returns", returns])
    return node.with_changes(leading_lines=_pytree_notes(trees, returns)), meta


def _pytrees(
    unit: Unit, node: cst.FunctionDef, static: dict[str, Any], returns: bool = True, flat_returns: bool = False
) -> tuple[cst.FunctionDef, Any, dict]:
    """Reads of pytree arguments become reads of their leaves; returned lists and dicts, tuples.

    Returns the node, the structure returned (or None) and the pytree arguments passed as
    leaves. A tuple or list argument read other than leaf by leaf (``np.zeros(shape)``,
    ``for v in values``) is passed as it is, as before pytrees (Numba types it), unless it
    is differentiated or holds a dict. Both passes first run on the user's own node, so
    that what they refuse is located there.
    """
    from .passes.leaves import check_leaves, check_results, leaves, part_of, results

    pf = unit.pf
    trees = dict(getattr(static, "trees", None) or {})
    differentiated = getattr(static, "differentiated", frozenset())

    def error(at: cst.CSTNode, message: str, hint: str) -> SrcTransError:
        return pf.error(UnsupportedSyntaxError, at, message, hint)

    b = unit.bindings.get("len")
    len_builtin = b is not None and b.kind == "builtin"
    builtins = frozenset(n for n in ("len", "enumerate") if getattr(unit.bindings.get(n), "kind", None) == "builtin")
    while trees:
        parts = {name: part_of(name, treedef, names) for name, (treedef, names) in trees.items()}
        try:
            check_leaves(pf.node, parts, len_builtin, error, builtins, unit.specialize)
            break
        except UnsupportedSyntaxError as err:
            name = getattr(err, "pytree_argument", None)
            if name not in trees or name in differentiated or _holds_dict(trees[name][0]):
                raise
            del trees[name]  # passed whole
    if trees:
        node = _free_leaf_names(node, {n for _, names in trees.values() for n in names})
        node = leaves(node, parts, len_builtin, error, scan(pf.node).all, builtins, unit.specialize)
    if not returns:
        return node, None, trees
    check_results(pf.node, error)
    node, returns = results(node, error, flat=flat_returns)
    return node, returns, trees


def _holds_dict(treedef) -> bool:
    data = treedef.node_data()
    return data is not None and (data[0] is dict or any(_holds_dict(c) for c in treedef.children()))


def _free_leaf_names(node: cst.FunctionDef, leaf_names: set[str]) -> cst.FunctionDef:
    """Rename temporaries (made by earlier passes) that happen to be named like a leaf parameter.

    The API picks leaf names that no name of the user's function uses; only generated
    temporaries can take one.
    """
    names = scan(node)
    clash = leaf_names & names.all
    if not clash:
        return node
    if clash - names.local:  # pragma: no cover - the API's names avoid the user's
        raise SrcTransError(f"leaf parameter names {sorted(clash)} collide with names of the function")
    gen = NameGen(names.all | leaf_names)
    mapping = {n: gen.fresh(n, numbered=False) for n in sorted(clash)}

    class Rename(cst.CSTTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
            return updated.with_changes(value=mapping[updated.value]) if updated.value in mapping else updated

    return node.visit(Rename())


class _Shown:
    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _pytree_notes(trees: dict, returns: Any) -> list[cst.EmptyLine]:
    """Comments above the generated ``def``: which parameters are whose leaves, what is returned."""
    from .passes.leaves import describe_structure

    lines = []
    for name, (treedef, names) in trees.items():
        shown = repr(treedef.unflatten([_Shown(n) for n in names]))
        lines.append(f"# {name} = {shown}: a pytree argument, passed as its leaves")
    if returns is not None and "flat" in returns:
        lines.append(f"# returns {describe_structure(returns['flat'])}, as one flat tuple of its leaves (srctrans rebuilds it)")
    elif returns is not None:
        lines.append(f"# returns {describe_structure(returns)}, as tuples (srctrans rebuilds the lists and dicts)")
    return [cst.EmptyLine(comment=cst.Comment(line)) for line in lines]


def _bare_use(node: cst.FunctionDef, name: str) -> bool:
    class V(cst.CSTVisitor):
        found = False

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            if isinstance(n.value, cst.Name) and n.value.value == name:
                return False
            return True

        def visit_Name(self, n: cst.Name) -> None:
            if n.value == name:
                V.found = True

    v = V()
    node.body.visit(v)
    return V.found
