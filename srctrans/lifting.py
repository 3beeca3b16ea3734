"""Lambdas and functions defined inside a transformed function, lifted to functions of their own.

JAX users write ``jvp(lambda w_: grad_loss(w_, X, y), (w,), (v,))[1]`` inside a jitted solver,
or a small ``def step(t): ...`` that reads the enclosing function's locals. Before the fence,
this pass turns each such lambda or ``def`` into a function of its own whose extra parameters
are the enclosing function's names it reads (lambda lifting), and rewrites its uses:

``h = lambda t: t * a`` ... ``h(x)``        ->  ``f_h(x, a)``
``(lambda t: t * a)(x)``                    ->  ``f_lambda(x, a)``
``srctrans.grad(lambda w: L(w, X))(w)``     ->  ``srctrans.grad(f_lambda)(w, X)``
``srctrans.vmap(lambda r: r @ W)(R)``       ->  ``srctrans.vmap(f_lambda, in_axes=(0, None))(R, W)``
``srctrans.jvp(lambda w: g(w, X), (w,), (v,))`` ->  ``srctrans.jvp(f_lambda, (w, X), (v,))``:
    more primals than tangents, the read names held constant there (:mod:`srctrans.nested_calls`
    gives them no tangent); an outer transformation still differentiates through them.

Python reads a closure's names when it is called, so passing them at each call is the same
program. The lifted function is a real function object (its text made here, run in the user's
module globals); :func:`srctrans.capture.capture` and :func:`srctrans.parse.parse_function` give
its node, whose expressions are the user's own nodes, so an error inside it names the user's
line. Every other use of such a function (given to ``map``, stored, returned) is refused at
the user's line.
"""

from __future__ import annotations

import ast
from collections import ChainMap
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from .analysis.names import NameGen, params_of, scan
from .errors import UnsupportedSyntaxError
from .faces import api_transformation, face, registered
from .fence import REJECTED
from .parse import ParsedFunction

# transformations given a lifted function first, then called: ``T(f_lambda, ...)(args, *free)``
_CALLED = ("grad", "value_and_grad", "jacfwd", "jacrev", "hessian", "jit", "vmap")
_HINT = "call it, or give it to srctrans.jvp / grad / vmap / jacfwd / jacrev / hessian; or define it at module level"


@dataclass
class Lifted:
    """What a lifted function is made of: the enclosing function's parse, its node (a ``def``
    whose parameters end with the enclosing names it reads), how many of its parameters are
    its own, and the lifted functions its body calls by name."""

    outer: ParsedFunction
    node: cst.FunctionDef
    free: tuple[str, ...]
    nparams: int
    text: str
    line: int
    positions: dict = field(default_factory=dict)
    names: dict[str, Any] = field(default_factory=dict)


def lifted_of(fn: Any) -> Lifted | None:
    return getattr(fn, "__srctrans_lifted__", None)


def lift(pf: ParsedFunction) -> tuple[ParsedFunction, dict[str, Any]]:
    """``pf`` with its lambdas and inner ``def``s lifted, and the names its body now reads for them."""
    own = lifted_of(pf.captured.fn)
    inherited = dict(own.names) if own is not None else {}
    body = pf.node.body
    if not inherited and not _has_functions(body):
        return pf, inherited
    lifter = _Lifter(pf, inherited)
    new_body = body.visit(lifter)
    node = pf.node.with_changes(body=new_body)
    lifter.check_uses(new_body)
    positions = ChainMap({node: pf.positions[pf.node]} if pf.node in pf.positions else {}, lifter.positions, pf.positions)
    return ParsedFunction(pf.captured, pf.module, node, positions), {**inherited, **lifter.made}


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class _All(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            found.append(n)
            return True

    node.visit(_All())
    return found


def _has_functions(node: cst.CSTNode) -> bool:
    found = []

    class _Find(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if isinstance(n, (cst.Lambda, cst.FunctionDef)):
                found.append(n)
            return not found

    node.visit(_Find())
    return bool(found)


class _Lifter(cst.CSTTransformer):
    def __init__(self, pf: ParsedFunction, inherited: dict[str, Any]) -> None:
        super().__init__()
        self.pf = pf
        names = scan(pf.node)
        self.bound = (names.local | frozenset(names.params) | frozenset(pf.captured.fn.__code__.co_freevars)) - frozenset(inherited)
        taken = set(names.all) | set(pf.captured.fn.__globals__) | set(inherited)
        self.gen = NameGen(taken)
        self.made: dict[str, Any] = {}  # lifted name -> function
        self.free: dict[str, tuple[str, ...]] = {name: lifted_of(fn).free for name, fn in inherited.items()}
        self.local: dict[str, str] = {}  # the user's name of an inner function -> its lifted name
        self.allowed: set[int] = set()  # ids of the names of lifted functions where they may stand
        self.kept: list[cst.Name] = []
        self.positions: dict[cst.CSTNode, Any] = {}
        self.stem = pf.captured.name
        self.naming: dict[cst.Lambda, str] = {}

    def on_leave(self, original, updated):
        result = super().on_leave(original, updated)
        if result is not original and isinstance(result, cst.CSTNode):  # a rewritten node keeps its place
            self._place(result, original)
        return result

    # --- the functions themselves -----------------------------------------------------------

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and isinstance(node.value, cst.Lambda):
            self.naming[node.value] = node.targets[0].target.value  # h = lambda ...: lifted as f_h

    def leave_Lambda(self, original: cst.Lambda, updated: cst.Lambda) -> cst.BaseExpression:
        name = self._lift(original, self.naming.get(original, "lambda"))
        out = cst.Name(name)
        self._place(out, original)
        return out

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        if original.decorators:
            raise self.pf.error(UnsupportedSyntaxError, original, "decorated functions defined inside a transformed function are not supported",
                                "define it at module level")
        user = original.name.value
        if user in self.local:
            raise self.pf.error(UnsupportedSyntaxError, original, f"{user} is defined twice inside the function", "give each function a name of its own")
        self.local[user] = self._lift(original, user)
        return cst.RemoveFromParent()

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
        """``h = lambda t: ...``: ``h`` names the lifted function; the line goes."""
        if (
            len(updated.targets) == 1
            and isinstance(updated.targets[0].target, cst.Name)
            and isinstance(original.value, cst.Lambda)
        ):
            user = updated.targets[0].target.value
            if user in self.local:
                raise self.pf.error(UnsupportedSyntaxError, original, f"{user} is defined twice inside the function",
                                    "give each function a name of its own")
            self.local[user] = updated.value.value
            return cst.RemoveFromParent()
        return updated

    def leave_SimpleStatementLine(self, original, updated):
        if not updated.body:
            return cst.RemoveFromParent()
        return updated

    def leave_IndentedBlock(self, original, updated):
        if not updated.body:  # a branch that only defined a function
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated

    def _lift(self, node: cst.Lambda | cst.FunctionDef, user: str) -> str:
        pf = self.pf
        p = node.params
        if p.posonly_params or p.kwonly_params or isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None:
            raise pf.error(UnsupportedSyntaxError, node, "a function defined inside a transformed function takes plain parameters only here",
                           "name each parameter, without *, / or **")
        if any(q.default is not None for q in p.params):
            raise pf.error(UnsupportedSyntaxError, node, "default values of a function defined inside a transformed function are not supported",
                           "pass the value as an argument at each call")
        inner = scan(node)
        free = tuple(sorted(n for n in inner.free if n in self.bound or n in self.local or n in self.free))
        calls = {n for n in free if n in self.local or n in self.free}
        if isinstance(node, cst.FunctionDef) and node.name.value in inner.free and node.name.value not in self.local:
            raise pf.error(UnsupportedSyntaxError, node, f"{node.name.value}, defined inside a transformed function, calls itself",
                           "define a recursive function at module level")
        names: dict[str, Any] = {}
        body_node = node
        if calls:  # it reads inner functions defined before it: their lifted functions, by name
            body_node = node.visit(_Rename(self, calls, names))
            free = tuple(sorted((set(free) - calls) | {n for c in calls for n in self._free_of(c)}))
        for inside in _walk(node):  # what would not compile as a function of its own: the fence's words
            if isinstance(inside, (cst.Nonlocal, cst.Global, cst.Await, cst.Yield)):
                what, hint = REJECTED[type(inside)]
                raise pf.error(UnsupportedSyntaxError, inside, f"{what} are not supported", hint)
        name = self.gen.fresh(f"{self.stem}_{user}", numbered=False)
        own = params_of(node)
        params = [*node.params.params, *(cst.Param(cst.Name(n)) for n in free)]
        where = pf.positions.get(node)
        if isinstance(node, cst.Lambda):
            value = body_node.body
            text = pf.module.code_for_node(value)
            if "\n" in text and not value.lpar:
                wrapped = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                if value in pf.positions:
                    self.positions[wrapped] = pf.positions[value]
                value = wrapped
            line = cst.SimpleStatementLine([cst.Return(value)])
            if where is not None:
                self.positions[line] = where
            fdef = cst.FunctionDef(cst.Name(name), cst.Parameters(params=params), cst.IndentedBlock([line]))
        else:
            fdef = body_node.with_changes(name=cst.Name(name), params=cst.Parameters(params=params), decorators=())
        local_positions = dict(self.positions)
        if where is not None:
            local_positions[fdef] = where
        fn = _function(pf, fdef, name)
        fn.__srctrans_lifted__ = Lifted(pf, fdef, free, len(own), cst.Module([fdef]).code, where.start.line if where else pf.captured.firstlineno,
                                        local_positions, names)
        self.made[name] = fn
        self.free[name] = free
        return name

    def _free_of(self, name: str) -> tuple[str, ...]:
        return self.free[self.local.get(name, name)]

    def _place(self, new: cst.CSTNode, old: cst.CSTNode) -> None:
        where = self.pf.positions.get(old) or self.positions.get(old)
        if where is not None:
            self.positions[new] = where

    # --- their uses ---------------------------------------------------------------------------

    def lifted_name(self, expr: cst.BaseExpression) -> str | None:
        if isinstance(expr, cst.Name):
            if expr.value in self.local:
                return self.local[expr.value]
            if expr.value in self.made or expr.value in self.free:
                return expr.value
        return None

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        lifted = self.lifted_name(updated.func)
        if lifted is not None:  # h(x) -> f_h(x, a)
            func = self._named(lifted, original.func)
            return updated.with_changes(func=func, args=self._with_free(updated.args, lifted))
        if self._transformation(updated.func) == "jvp" and updated.args:
            return self._jvp(original, updated)
        if isinstance(updated.func, cst.Call):  # T(h, ...)(x) -> T(f_h, ...)(x, a), any chain of them
            found = self._chain(updated.func)
            if found is not None:
                inner, lifted = found
                return updated.with_changes(func=inner, args=self._with_free(updated.args, lifted))
        return updated

    def _chain(self, call: cst.Call) -> tuple[cst.Call, str] | None:
        """``call`` = ``T1(T2(h, ...), ...)``, transformations that keep the arguments: the chain with
        ``h`` named by its lifted function (vmaps map none of the read names), and that name."""
        kind = self._transformation(call.func)
        if kind not in _CALLED or not call.args or call.args[0].keyword is not None:
            return None
        first = call.args[0].value
        lifted = self.lifted_name(first)
        if lifted is not None:
            first = self._named(lifted, first)
        elif isinstance(first, cst.Call):
            found = self._chain(first)
            if found is None:
                return None
            first, lifted = found
        else:
            return None
        call = call.with_changes(args=[call.args[0].with_changes(value=first), *call.args[1:]])
        if kind == "vmap":
            call = self._vmap_axes(call, lifted)
        return call, lifted

    def _named(self, lifted: str, where: cst.CSTNode) -> cst.Name:
        """The lifted function's name, standing where ``where`` stood (a use that is allowed)."""
        func = cst.Name(lifted)
        self.allowed.add(id(func))
        self.kept.append(func)  # (alive while the ids are read: no other node gets its id)
        self._place(func, where)
        return func

    def _with_free(self, args, lifted: str) -> list[cst.Arg]:
        free = self.free[lifted]
        if any(a.keyword is not None or a.star for a in args) and free:
            keep = [a for a in args if a.keyword is None and not a.star]
            rest = [a for a in args if a.keyword is not None or a.star]
            return [*keep, *(cst.Arg(cst.Name(n)) for n in free), *rest]
        out = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args]
        return out + [cst.Arg(cst.Name(n)) for n in free]

    def _jvp(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``jvp(h, (p,), (t,))`` -> ``jvp(f_h, (p, a), (t,))``: the read names as primals with no tangent."""
        first = updated.args[0].value
        lifted = self.lifted_name(first)
        if lifted is not None:
            first = self._named(lifted, first)
        elif isinstance(first, cst.Call) and (found := self._chain(first)) is not None:
            first, lifted = found  # jvp(grad(h), ...)
        else:
            return updated
        args = [updated.args[0].with_changes(value=first), *updated.args[1:]]
        free = self.free[lifted]
        if free:
            if len(args) < 2 or not isinstance(args[1].value, (cst.Tuple, cst.List)):
                raise self.pf.error(UnsupportedSyntaxError, original, "srctrans.jvp of a function defined inside needs its primals written out as a tuple",
                                    "write srctrans.jvp(h, (x, ...), (v, ...))")
            elements = [*args[1].value.elements, *(cst.Element(cst.Name(n)) for n in free)]
            elements = [e.with_changes(comma=cst.MaybeSentinel.DEFAULT) for e in elements]
            args[1] = args[1].with_changes(value=cst.Tuple(elements))
        return updated.with_changes(args=args)

    def _vmap_axes(self, call: cst.Call, lifted: str) -> cst.Call:
        """``vmap(h, in_axes=A)`` of a lifted function: the read names are not mapped (None)."""
        free = self.free[lifted]
        if not free:
            return call
        nparams = lifted_of(self.made.get(lifted) or self._inherited(lifted)).nparams
        axes: Any = 0
        index = None
        for k, arg in enumerate(call.args):
            if (arg.keyword is not None and arg.keyword.value == "in_axes") or (k == 1 and arg.keyword is None):
                index = k
                try:
                    axes = ast.literal_eval(self.pf.module.code_for_node(arg.value))
                except (ValueError, SyntaxError):
                    raise self.pf.error(UnsupportedSyntaxError, arg, "vmap of a function defined inside: in_axes must be a literal",
                                        "write its value (an int, None or a tuple of them)") from None
        if isinstance(axes, list):
            axes = tuple(axes)
        given = axes if isinstance(axes, tuple) else (axes,) * nparams
        value = cst.parse_expression(repr(tuple(given) + (None,) * len(free)))
        args = list(call.args)
        if index is None:
            args = [args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT), cst.Arg(value, keyword=cst.Name("in_axes")), *args[1:]]
        else:
            args[index] = args[index].with_changes(value=value)
        return call.with_changes(args=args)

    def _inherited(self, name: str) -> Any:
        own = lifted_of(self.pf.captured.fn)
        return own.names[name]

    def _transformation(self, expr: cst.BaseExpression) -> str | None:
        from .analysis.resolve import lookup

        if isinstance(expr, cst.Name):
            if expr.value in self.bound:
                return None
            found = lookup(self.pf.captured.fn, expr.value, self.pf.captured.closure)
            return _kind(found[1]) if found is not None else None
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value not in self.bound:
            found = lookup(self.pf.captured.fn, expr.value.value, self.pf.captured.closure)
            if found is not None:
                value = getattr(found[1], expr.attr.value, None)
                return _kind(value) if value is not None else None
        return None

    def check_uses(self, body: cst.CSTNode) -> None:
        """Refuse every other use of a lifted function, at the user's line."""
        lifter = self

        class _Uses(cst.CSTVisitor):
            def visit_Name(self, node: cst.Name) -> None:
                if id(node) in lifter.allowed:
                    return
                if node.value in lifter.made or node.value in lifter.local or node.value in lifter.free:
                    where = node if node in lifter.pf.positions else None
                    rng = lifter.positions.get(node)
                    if where is None and rng is not None:
                        raise UnsupportedSyntaxError(
                            "a function defined inside a transformed function can only be called or given to a transformation",
                            filename=lifter.pf.captured.filename, line=rng.start.line, col=rng.start.column,
                            source_line=lifter.pf.source_line(rng.start.line), hint=_HINT,
                        )
                    raise lifter.pf.error(UnsupportedSyntaxError, node,
                                          "a function defined inside a transformed function can only be called or given to a transformation", _HINT)

        body.visit(_Uses())


class _Rename(cst.CSTTransformer):
    """Inside a function being lifted: the inner functions defined before it that it reads, by
    their lifted names (its own lifting then passes them what they read)."""

    def __init__(self, lifter: _Lifter, calls: set[str], names: dict[str, Any]) -> None:
        super().__init__()
        self.lifter, self.calls, self.names = lifter, calls, names

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return False  # (``obj.h`` is not the function h)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)  # (nor is a keyword h=)

    def on_leave(self, original, updated):
        result = super().on_leave(original, updated)
        if result is not original and isinstance(result, cst.CSTNode):
            self.lifter._place(result, original)
        return result

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        if original.value not in self.calls:
            return updated
        lifted = self.lifter.local.get(original.value, original.value)
        self.names[lifted] = self.lifter.made.get(lifted) or self.lifter._inherited(lifted)
        return cst.Name(lifted)


def _kind(value: Any) -> str | None:
    if registered("vmap") and value is face("vmap"):
        return "vmap"
    return api_transformation(value)


def _function(pf: ParsedFunction, node: cst.FunctionDef, name: str):
    """The lifted function as a function object: its text run in the user's module globals."""
    text = cst.Module([node]).code
    namespace: dict[str, Any] = {}
    exec(compile(text, pf.captured.filename, "exec"), pf.captured.fn.__globals__, namespace)  # noqa: S102
    fn = namespace[name]
    fn.__qualname__ = f"{pf.captured.qualname}.{name}" if not pf.captured.qualname.endswith(">") else name
    fn.__module__ = pf.captured.module_name
    return fn
