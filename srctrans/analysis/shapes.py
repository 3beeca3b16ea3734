"""Which operands of an elementwise operation have the shape of its result, by source alone.

NumPy's broadcasting is associative, commutative and idempotent, and a number
broadcasts to anything. So the shape of a value made by elementwise operations alone
is the broadcast of the shapes of the opaque values it was made from (parameters,
results of other operations, values a loop carries round): its *atoms*. Two values with
the same atoms have the same shape, whatever shapes the caller passes. Reverse mode
uses this to drop ``unbroadcast`` where it can only return its argument, and with it
the saved values it read just for their shape: ``y = y + dt * f(y)`` keeps nothing on
a tape for ``dt * f(y)``.

:func:`same_shapes` maps each binary elementwise statement of a function in A-normal
form (``id`` of the ``Assign`` or ``AugAssign``) to what each operand's adjoint needs:
``None`` when the operand has the result's shape, or the name of a value that has the
operand's shape and is already at hand (``y`` for ``t = np.sin(y)``). Operands missing
from the map keep the general ``unbroadcast``. A full reduction (``np.sum(x)``, see
:data:`srctrans.rules.shapes.NUMBER_RESULTS`) is a number: it has no atoms at all.

A range loop's variable is a number. The walk follows the function's blocks in order;
a name assigned inside a branch or a loop gets fresh atoms after it (and, in a loop
body, before its first assignment there: the value the loop carries round is opaque).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import libcst as cst

Atoms = frozenset
# kind_of(value) -> (kind, {parameter: argument}) or None (not an operation); the kind is
# "elementwise", "number" (its result is one number, as np.sum(x)) or "other"
KindOf = Callable[[cst.BaseExpression], "tuple[str, dict[str, cst.BaseExpression]] | None"]


def operation_kind(rule, key: str, args: dict, texts: dict[str, str]):
    """(kind, args) of one operation for :func:`same_shapes`: ``"elementwise"``, ``"number"``
    (its result is one number: a full reduction, its parameters in ``NUMBER_RESULTS`` at their
    defaults; ``texts`` gives each parameter's argument as source) or ``"other"``."""
    from ..rules.shapes import NUMBER_RESULTS

    if rule.kind == "elementwise":
        return "elementwise", args
    keep = NUMBER_RESULTS.get(key)
    defaults = {p.name: p.default for p in rule.params}
    if keep is not None and all(texts.get(p, defaults.get(p)) == defaults.get(p) for p in keep):
        return "number", args
    return "other", args


def _is_number(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary))


def _assigned(stmt) -> set[str]:
    names: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            names.update(_target_names(n.target))

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            names.update(_target_names(n.target))

        def visit_For(self, n: cst.For) -> None:
            names.update(_target_names(n.target))

    stmt.visit(V())
    return names


def _target_names(target) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _target_names(el.value)]
    return []  # y[i] = ...: a write in place keeps y's shape


def same_shapes(body: list, kind_of: KindOf, counts: Callable[[cst.For], bool]) -> dict[int, dict[str, str | None]]:
    """``counts(loop)``: the loop's variable is a number (``for i in range(n)``)."""
    counter = itertools.count()
    out: dict[int, dict[str, str | None]] = {}
    owner: dict[Atoms, str] = {}  # a single fresh atom -> the name that holds it

    def fresh(env: dict[str, Atoms], name: str) -> None:
        atoms = Atoms({next(counter)})
        env[name] = atoms
        owner[atoms] = name

    def atoms_of(expr: cst.BaseExpression, env: dict[str, Atoms]) -> Atoms | None:
        if _is_number(expr):
            return Atoms()
        if isinstance(expr, cst.Name):
            if expr.value not in env:  # a parameter, global or constant: opaque, never reassigned yet
                fresh(env, expr.value)
            return env[expr.value]
        return None

    def witness(atoms: Atoms, env: dict[str, Atoms]) -> str | None:
        name = owner.get(atoms)
        return name if name is not None and env.get(name) == atoms else None

    def small(node, env: dict[str, Atoms]) -> None:
        sid = id(node)
        if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
            operator = getattr(cst, type(node.operator).__name__.replace("Assign", ""))()
            node = cst.Assign([cst.AssignTarget(node.target)], cst.BinaryOperation(node.target, operator, node.value))
        if not isinstance(node, cst.Assign):
            return
        names = [n for t in node.targets for n in _target_names(t.target)]
        target = node.targets[0].target
        found = kind_of(node.value) if isinstance(target, cst.Name) else None
        result: Atoms | None = None
        if found is not None and found[0] == "number":
            result = Atoms()  # broadcasts like a literal number
        elif found is not None:
            kind, args = found
            parts = {p: atoms_of(e, env) for p, e in args.items()}
            if kind == "elementwise" and all(a is not None for a in parts.values()):
                result = Atoms().union(*parts.values())
                if len(parts) > 1:
                    needs = {}
                    for p, a in parts.items():
                        w = None if a == result else witness(a, env)
                        same = isinstance(args[p], cst.Name) and w == args[p].value
                        if a == result or (w is not None and not same):
                            needs[p] = w
                    if needs:
                        out[sid] = needs
        elif isinstance(target, cst.Name) and (isinstance(node.value, cst.Name) or _is_number(node.value)):
            result = atoms_of(node.value, env)  # a plain copy, or a number
        for n in names:
            fresh(env, n)
        if result is not None and isinstance(target, cst.Name):
            env[target.value] = result
            if len(result) == 1:
                owner.setdefault(result, target.value)

    def block(stmts: list, env: dict[str, Atoms]) -> None:
        for stmt in stmts:
            if isinstance(stmt, cst.SimpleStatementLine):
                for node in stmt.body:
                    small(node, env)
            elif isinstance(stmt, cst.If):
                block(stmt.body.body, dict(env))
                if stmt.orelse is not None:
                    block(stmt.orelse.body.body, dict(env))
                for n in sorted(_assigned(stmt)):
                    fresh(env, n)
            elif isinstance(stmt, (cst.For, cst.While)):
                for n in sorted(_assigned(stmt)):
                    fresh(env, n)  # the values the loop carries round
                inner = dict(env)
                if isinstance(stmt, cst.For) and isinstance(stmt.target, cst.Name) and counts(stmt):
                    inner[stmt.target.value] = Atoms()
                block(stmt.body.body, inner)
                for n in sorted(_assigned(stmt)):
                    fresh(env, n)

    block(body, {})
    return out

