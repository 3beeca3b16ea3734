"""The ``vmap`` step of a build: the batched entry function, vectorized or looped.

:func:`batch_entry` is called by :func:`srctrans.build.build` for ``Transform("vmap")``.
The transform's options say, per parameter of the generated entry (pytree leaves
included), whether it is batched and its rank, and the method: ``"vectorize"``,
``"loop"`` or ``"auto"`` (the rewrite when every statement has a rule, else the loop).
"""

from __future__ import annotations

import libcst as cst

from ..rules.batching import Info


def batch_entry(entry, transform, np_name: str, namespace, static, by_fn=None) -> tuple[list[cst.FunctionDef], str, dict]:
    """Replace ``entry.node`` by the batched entry; returns the functions emitted before it, a note, meta.

    ``by_fn``: the build's units of your functions the entry calls (by ``id`` of the function),
    whose batched versions the rewrite writes into the same file when it calls them with
    batched arguments.
    """
    from ..analysis.callees import outputs_of
    from ..analysis.resolve import LOCAL
    from ..errors import UnsupportedSyntaxError
    from ..normal_form import at_line, resolver
    from .loop import loop_function
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

    why = "method='loop' was asked for"
    if options.get("reason") == "numba":
        why = "Numba could not compile the vectorized rewrite (jit with method='auto')"
    meta: dict = {}
    if method != "loop":
        normal = _normal_form(unit, np_name, namespace, static)
        info = {p: Info(bool(b), r) for p, b, r in zip(params, flags, ranks)}
        callees = _Callees(by_fn or {}, np_name, namespace, options.get("axis_name"), name)
        try:
            resolve = resolver(unit, normal, np_name, LOCAL)
            node, unbatched = vectorize(
                normal, info, resolve, LOCAL, np_name, name, axis_size, options.get("axis_name"), callees
            )
        except NoBatchRule as err:
            if method == "vectorize":
                raise at_line(pf, UnsupportedSyntaxError, err.line, f"vmap cannot vectorize this: {err.what}",
                               "use vmap(..., method='loop') (or 'auto') to loop over the examples instead") from None
            where = f"line {err.line}: " if err.line else ""
            why = f"the vectorized rewrite stops at {where}{err.what}"
        else:
            entry.node = node
            entry.emit_name = name
            meta["vmap"] = {"method": "vectorize", "unbatched_outputs": unbatched}
            return callees.made, "vmap method: vectorized (every statement has a batching rule)", meta
    else:
        normal = _normal_form(unit, np_name, namespace, static)
        resolve = resolver(unit, normal, np_name, LOCAL)
    _refuse_collectives(normal, resolve, pf, why)
    outputs = outputs_of(normal)
    wrapper = loop_function(entry.emit_name, params, list(flags), outputs, name, axis_size, bool(options.get("parallel")), why)
    entry.node = wrapper
    entry.emit_name = name
    meta["vmap"] = {"method": "loop", "unbatched_outputs": []}
    return [plain], f"vmap method: a loop over the examples, because {why}", meta


def _normal_form(unit, np_name: str, namespace, static=None) -> cst.FunctionDef:
    """``unit``'s function as the rewrite reads it: desugared, structured, in A-normal form,
    a returned display returned directly; with ``static``, the entry's signature too."""
    from ..emit import clean_signature
    from ..normal_form import desugared, entry_signature, normalize

    normal = normalize(unit, desugared(unit, np_name), namespace)
    normal = clean_signature(normal, unit.emit_name)
    if static is not None:
        normal, _ = entry_signature(unit, normal, static)
    return return_display(normal)


class _Callees:
    """The batched versions of your functions that the vectorized entry calls with batched arguments.

    ``per(w, x)`` called with a batched ``x`` becomes ``per_vmap_u1_b1(w, x)``: ``per``
    vectorized for those arguments (``u``nbatched or ``b``atched, and one example's rank),
    written into the same file before the entry, once per combination; a tuple it returns
    is unpacked by the caller. A function that writes into an array, cannot be vectorized,
    or calls itself with batched arguments is refused (:class:`Unbatchable`); the entry
    then loops over the examples, as before.
    """

    def __init__(self, by_fn: dict, np_name: str, namespace, axis_name, entry_name: str) -> None:
        self.by_fn = by_fn
        self.np_name = np_name
        self.namespace = namespace
        self.axis_name = axis_name
        self.taken = {entry_name}
        self.made: list[cst.FunctionDef] = []
        self.found: dict[tuple, tuple[str, Info]] = {}
        self.busy: set[int] = set()

    def __call__(self, fn, infos: list[Info]) -> tuple[str, Info]:
        from ..rules.batching import Unbatchable

        key = (id(fn), tuple(infos))
        if key in self.found:
            return self.found[key]
        unit = self.by_fn.get(id(fn))
        label = getattr(fn, "__name__", "a function")
        if unit is None or id(fn) in self.busy:
            raise Unbatchable(f"{label} called with batched arguments" + (" from itself" if unit is not None else ""))
        if any(i.length is not None for i in infos):
            raise Unbatchable(f"{label} called with a tuple of batched values")
        normal = _normal_form(unit, self.np_name, self.namespace)
        effect = _side_effect(normal)
        if effect:
            raise Unbatchable(f"{label} {effect} (called with batched arguments, it runs one example at a time)")
        tag = "_".join(("b" if i.batched else "u") + ("" if i.rank is None else str(i.rank)) for i in infos)
        name = f"{unit.emit_name}_vmap_{tag}"
        while name in self.taken or name in self.namespace:
            name += "_"
        node, out = self._rewritten(fn, unit, normal, infos, name, label)
        self.taken.add(name)
        self.made.append(node)
        self.found[key] = (name, out)
        return self.found[key]

    def unbatched_result(self, fn, infos: list[Info]) -> Info:
        """What is known of the result of your function ``fn`` called with unbatched arguments
        (``Wn = norm_rows(W)``, run once for every example as written): unbatched, and its rank
        where the rewrite's analysis of ``fn`` finds one (``W @ x`` then needs no loop)."""
        from ..rules.batching import Unbatchable

        unknown = Info(False, None)
        key = ("unbatched", id(fn), tuple(infos))
        if key in self.found:
            return self.found[key][1]
        unit = self.by_fn.get(id(fn))
        if unit is None or id(fn) in self.busy:
            return unknown
        try:  # (the rewrite is read for the result's rank only, and not written)
            _, out = self._rewritten(fn, unit, _normal_form(unit, self.np_name, self.namespace), infos, "_", "")
        except Unbatchable:
            out = unknown
        # (the rewrite's return broadcasts an unbatched result: its rank is one example's all the same)
        out = Info(False, out.rank) if out.length is None else unknown
        self.found[key] = ("", out)
        return out

    def _rewritten(self, fn, unit, normal: cst.FunctionDef, infos: list[Info], name: str, label: str) -> tuple[cst.FunctionDef, Info]:
        """``normal`` vectorized for arguments ``infos`` as function ``name``, and what is known of
        its result; :class:`Unbatchable`, saying why, where the rewrite cannot express it."""
        from ..analysis.resolve import LOCAL
        from ..normal_form import resolver
        from ..rules.batching import Unbatchable
        from .vectorize import NoBatchRule, vectorize

        params = normal.params
        if params.star_arg is not cst.MaybeSentinel.DEFAULT or params.kwonly_params or params.star_kwarg:
            raise Unbatchable(f"{label} takes *args, keyword-only or **kwargs parameters")
        names = [p.name.value for p in params.params]
        if len(names) != len(infos):
            raise Unbatchable(f"{label} called with {len(infos)} of its {len(names)} arguments")
        returned: list[Info] = []
        self.busy.add(id(fn))
        try:
            resolve = resolver(unit, normal, self.np_name, LOCAL)
            node, _ = vectorize(
                normal, dict(zip(names, infos)), resolve, LOCAL, self.np_name, name, None, self.axis_name, self, returned
            )
        except NoBatchRule as err:
            where = f" (line {err.line})" if err.line else ""
            raise Unbatchable(f"{label}{where}: {err.what}") from None
        finally:
            self.busy.discard(id(fn))
        last = normal.body.body[-1] if normal.body.body else None
        ret = last.body[-1] if isinstance(last, cst.SimpleStatementLine) and last.body else None
        if not isinstance(ret, cst.Return) or not returned:
            raise Unbatchable(f"{label} does not end with its return (called with batched arguments)")
        if isinstance(ret.value, cst.Tuple):  # unpacked by the caller: each element's info
            out = Info(True, None, len(returned), tuple(returned))
        elif len(returned) == 1:
            out = returned[0]
        else:
            raise Unbatchable(f"{label} returns in several places (called with batched arguments)")
        if not _known_leaves(out):
            raise Unbatchable(f"{label} returns a tuple whose elements are not known (called with batched arguments)")
        return node, out


def _known_leaves(info: Info) -> bool:
    """Every leaf of a returned value is an array (or number) whose rank vmap follows, not a tuple it cannot see into."""
    if info.elements is not None:
        return all(_known_leaves(e) for e in info.elements)
    return info.length is None


def _side_effect(node: cst.FunctionDef) -> str:
    """What in ``node`` does more than compute its result: a write into an array, a call made
    for its effect, an ``out=`` argument; "" when nothing does. A function with such an effect
    is not vectorized as a callee: a masked select would run it for both branches."""

    class Effects(cst.CSTVisitor):
        found = ""

        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            if isinstance(n.target, (cst.Subscript, cst.Attribute)):
                Effects.found = Effects.found or "writes into an array"

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            if not isinstance(n.target, cst.Name):
                Effects.found = Effects.found or "writes into an array"

        def visit_Expr(self, n: cst.Expr) -> None:
            if isinstance(n.value, cst.Call):
                Effects.found = Effects.found or "makes a call for its effect"

        def visit_Arg(self, n: cst.Arg) -> None:
            if n.keyword is not None and n.keyword.value == "out":
                Effects.found = Effects.found or "writes into an out= array"

    Effects.found = ""
    node.body.visit(Effects())
    return Effects.found


def _refuse_collectives(node: cst.FunctionDef, resolve, pf, why: str) -> None:
    """A collective (``psum(x, "i")`` ...) in a function vmap loops over cannot see the other
    examples: refuse it at its line, with the reason the function is looped over."""
    from ..cache import ORIGIN_RE
    from ..errors import UnsupportedSyntaxError
    from ..normal_form import at_line
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
    raise at_line(
        pf, UnsupportedSyntaxError, line,
        f"{code(call)} needs every example of the batch at once, but vmap calls this function "
        f"one example at a time here: {why}",
        "use vmap(..., method='auto') so that the vectorized rewrite gives the collective the whole batch"
        if looping else "change what stops the vectorized rewrite (above), or compute the collective outside this function",
    )


def return_display(node: cst.FunctionDef) -> cst.FunctionDef:
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
