"""The fence: refuse, up front and with a location, what the transformations do not handle.

A read-only visitor over the function's node. It raises an
:class:`~srctrans.errors.UnsupportedSyntaxError` at the first unsupported
construct, naming ``file:line:col``, showing the line with a caret and saying
what to do instead. Better a clear "not supported" than a wrong answer.
"""

from __future__ import annotations

import libcst as cst

from .errors import UnsupportedSyntaxError
from .parse import ParsedFunction

# node type -> (what it is, what to do instead)
REJECTED: dict[type, tuple[str, str]] = {
    cst.Yield: ("generators (yield)", "return an array or a tuple instead"),
    cst.Await: ("await", "srctrans transforms synchronous numeric code"),
    cst.Global: ("global statements", "pass the value in as an argument and return the new value"),
    cst.Nonlocal: ("nonlocal statements", "pass the value in as an argument and return the new value"),
    cst.Try: ("try/except", "check the condition with if, or move the try outside the transformed function"),
    cst.TryStar: ("try/except*", "move the try outside the transformed function"),
    cst.With: ("with statements", "move the with block outside the transformed function"),
    cst.ClassDef: ("classes defined inside a transformed function", "define the class at module level"),
    cst.Del: ("del statements", "rebind the name instead"),
    cst.Import: ("imports inside a transformed function", "import at module level"),
    cst.ImportFrom: ("imports inside a transformed function", "import at module level"),
    cst.GeneratorExp: ("generator expressions", "use a list comprehension or a for loop"),
    cst.DictComp: ("dict comprehensions", "use a for loop"),
    cst.SetComp: ("set comprehensions", "use a for loop"),
    cst.NamedExpr: ("assignment expressions (:=)", "assign on a line of its own"),
    cst.Match: ("match statements", "use if/elif"),
    cst.Lambda: ("lambdas inside a transformed function", "define a function at module level and call it"),
    cst.FunctionDef: ("functions defined inside a transformed function", "define the function at module level"),
    cst.StarredElement: ("star unpacking (*args)", "pass the arguments one by one, or as a tuple"),
}


class _Fence(cst.CSTVisitor):
    def __init__(self, pf: ParsedFunction, self_name: str | None) -> None:
        self.pf = pf
        self.self_name = self_name

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = REJECTED.get(type(node))
        if kind is not None:
            what, hint = kind
            raise self.pf.error(UnsupportedSyntaxError, node, f"{what} are not supported", hint)
        if getattr(node, "asynchronous", None) is not None:
            raise self.pf.error(UnsupportedSyntaxError, node, "async code is not supported")
        return super().on_visit(node)

    def visit_Param(self, node: cst.Param) -> None:
        if node.star in ("*", "**"):
            raise self.pf.error(UnsupportedSyntaxError, node, "*args and **kwargs parameters are not supported", "name each parameter")

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check_target(target.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._check_target(node.target)

    def _check_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Attribute):
            raise self.pf.error(
                UnsupportedSyntaxError,
                target,
                "writes to attributes are not supported",
                "return the new value instead of storing it on an object",
            )
        if isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._check_target(el.value)

    def visit_Call(self, node: cst.Call) -> None:
        for arg in node.args:
            if arg.star:
                raise self.pf.error(UnsupportedSyntaxError, arg, "star arguments (*args, **kwargs) in calls are not supported", "pass the arguments one by one")
        func = node.func
        if (
            self.self_name is not None
            and isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == self.self_name
        ):
            raise self.pf.error(
                UnsupportedSyntaxError,
                func,
                f"calls to methods of {self.self_name} are not supported",
                "call a module-level function, passing the attributes it needs",
            )


def fence(pf: ParsedFunction) -> None:
    """Raise :class:`UnsupportedSyntaxError` at the first construct srctrans cannot transform."""
    node = pf.node
    self_name = None
    if pf.captured.kind == "method" and isinstance(node, cst.FunctionDef) and node.params.params:
        self_name = node.params.params[0].name.value
    visitor = _Fence(pf, self_name)
    if isinstance(node, cst.FunctionDef):
        if node.asynchronous is not None:
            raise pf.error(UnsupportedSyntaxError, node, "async functions are not supported")
        node.params.visit(visitor)
        node.body.visit(visitor)
    else:
        node.params.visit(visitor)
        node.body.visit(visitor)
