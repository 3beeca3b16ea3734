"""Expression text shared by the differentiating transformations: a node's code, an operand in
parentheses, a cotangent times a partial, a rule template filled in, number literals folded.

Reverse and forward mode both write derivatives as text from the rule table's templates
(:mod:`srctrans.rules.derivatives`); these are the small pieces of that writing they share.
"""

from __future__ import annotations

import libcst as cst

_CODE = cst.Module(body=[])


def code(node: cst.CSTNode) -> str:
    """The source text of a node."""
    return _CODE.code_for_node(node)


def fill_template(template: str, fill: dict[str, str]) -> str:
    """A rule template with its ``{param}`` holes filled (operands parenthesized; ``{g}`` as is)."""
    out = template
    for key, value in fill.items():
        out = out.replace("{" + key + "}", paren(value) if key != "g" else value)
    return fold_literals(out)


def _number(node: cst.BaseExpression) -> int | float | None:
    """The value of a number literal (``2``, ``1.0``, ``-3``), else None."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return node.evaluated_value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _number(node.expression)
        return None if inner is None else -inner
    return None


class _FoldLiterals(cst.CSTTransformer):
    """``2 * x ** (2 - 1.0)`` -> ``2 * x``: arithmetic on number literals done, ``** 1.0`` dropped."""

    _OPS = {cst.Add: lambda a, b: a + b, cst.Subtract: lambda a, b: a - b, cst.Multiply: lambda a, b: a * b}

    def leave_BinaryOperation(self, original, updated):
        left, right = _number(updated.left), _number(updated.right)
        if isinstance(updated.operator, cst.Power) and type(right) is float and right == 1.0:
            return updated.left  # x ** 1.0 is x for the float values a derivative reads
        fold = self._OPS.get(type(updated.operator))
        if fold is None or left is None or right is None:
            return updated
        value = fold(left, right)
        number = cst.parse_expression(repr(value))
        if value < 0:  # keep a negative number one operand: x ** (-1.0)
            return number.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return number


def fold_literals(text: str) -> str:
    """``text`` with the number arithmetic a rule template leaves (``x ** (2 - 1.0)``) done."""
    if "**" not in text:
        return text
    try:
        node = cst.parse_expression(text)
    except cst.ParserSyntaxError:
        return text
    folded = node.visit(_FoldLiterals())
    return text if folded.deep_equals(node) else cst.Module([]).code_for_node(folded)


def paren(text: str) -> str:
    """``text`` as an operand: parenthesized unless it is a name, a number or a call."""
    try:
        node = cst.parse_expression(text)
    except cst.ParserSyntaxError:
        return f"({text})"
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.Call, cst.Attribute, cst.Subscript)) or node.lpar:
        return text
    return f"({text})"


def times(g: str, partial: str, partial_first: bool = False) -> str:
    """``g`` times a partial derivative, simplified where the partial is 1, -1 or ``1.0 / ...``
    (``partial * g`` with ``partial_first``, as tangent files write it)."""
    if partial == "1.0":
        return g
    if partial == "-1.0":
        return f"-{g}"
    if partial.startswith("1.0 / "):
        return f"{g} / {paren(partial[6:])}"
    return f"{paren(partial)} * {g}" if partial_first else f"{g} * {paren(partial)}"
