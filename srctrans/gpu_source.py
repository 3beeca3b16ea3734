"""Writing the CUDA form of a generated file: its array code on a GPU (``jit(..., target="cuda")``).

Every transformation writes its result as array code in one language (the generated file
of ``jit``, ``grad``, ``jvp``, ``vmap`` ...). :func:`cuda_source` rewrites such a file for
the GPU, as text (this module never imports Numba or CuPy):

- ``numpy`` is imported as the device's array library (``numba_backend.cuda_arrays.xp``:
  CuPy on a GPU, NumPy under Numba's CUDA simulator), and ``srctrans.runtime`` as the same
  helpers computing on device arrays. So matrix products, reductions, ``linalg``, indexing
  and the adjoint helpers run on the GPU through CuPy (cuBLAS, cuSOLVER, CUB), while
  Python's ``if``, ``for`` and ``while`` stay in host code, which launches kernels.
- every elementwise line (``t2_bar = t3_bar * (1.0 - t3 * t3)``: arithmetic, comparisons
  and elementwise NumPy functions of names and numbers) becomes a Numba CUDA kernel,
  written into the file above the function, with one thread per element of the result.
  The line in the function calls it through ``fused(kernel, expression)``: the expression,
  as a lambda, gives NumPy's result dtype and computes the line as written when no operand
  is an array on the device (numbers alone, say).

The result reads like the file it came from: the same functions, lines and origin
comments, with the fused lines' kernels above them.
"""

from __future__ import annotations

import hashlib
import json
import re

import libcst as cst

from .cache import HASH_PREFIX, META_PREFIX, read_header
from .version import __version__

# Elementwise NumPy (and math) functions a kernel computes one element at a time: the
# qualified function -> the scalar code, "{0}", "{1}" for its arguments. Functions whose
# scalar form differs from NumPy's (math.floor returns an int) are left to the array library.
SCALAR_FUNCTIONS: dict[str, str] = {
    **{f"numpy.{n}": f"math.{n}({{0}})" for n in (
        "sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt",
    )},
    "numpy.arcsin": "math.asin({0})",
    "numpy.arccos": "math.acos({0})",
    "numpy.arctan": "math.atan({0})",
    "numpy.arcsinh": "math.asinh({0})",
    "numpy.arccosh": "math.acosh({0})",
    "numpy.arctanh": "math.atanh({0})",
    "numpy.arctan2": "math.atan2({0}, {1})",
    "numpy.hypot": "math.hypot({0}, {1})",
    "numpy.abs": "abs({0})",
    "numpy.absolute": "abs({0})",
    "numpy.fabs": "abs({0})",
    "numpy.square": "({0} * {0})",
    "numpy.negative": "(-{0})",
    "numpy.power": "({0} ** {1})",
    "numpy.maximum": "maximum({0}, {1})",
    "numpy.minimum": "minimum({0}, {1})",
    "numpy.sign": "sign({0})",
    "numpy.where": "({1} if {0} else {2})",
    **{f"math.{n}": f"math.{n}({{0}})" for n in (
        "sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt",
        "asin", "acos", "atan", "asinh", "acosh", "atanh",
    )},
}
_ARITY = {name: max(int(d) for d in re.findall(r"\{(\d)\}", code)) + 1 for name, code in SCALAR_FUNCTIONS.items()}
_BINARY = {
    cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.Power: "**",
}
_COMPARE = {
    cst.LessThan: "<", cst.LessThanEqual: "<=", cst.GreaterThan: ">", cst.GreaterThanEqual: ">=",
    cst.Equal: "==", cst.NotEqual: "!=",
}
_HELPERS = ("ld", "maximum", "minimum", "sign")  # device functions of numba_backend.cuda_arrays kernels call
_KERNEL_NAMES = frozenset({*_HELPERS, "cuda", "math", "fused"})


class _NotElementwise(Exception):
    pass


def _modules(module: cst.Module) -> dict[str, str]:
    """Local name -> module for the file's ``import a.b as c`` and ``import a`` lines."""
    found: dict[str, str] = {}
    for st in module.body:
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        dotted = module.code_for_node(alias.name)
                        local = alias.asname.name.value if alias.asname else dotted.split(".")[0]
                        found[local] = dotted if alias.asname else dotted.split(".")[0]
    return found


class _Scalar:
    """An elementwise expression as scalar code: operands (names, in order) read once per element."""

    def __init__(self, modules: dict[str, str], taken: set[str]) -> None:
        self.modules = modules
        self.operands: list[str] = []
        self.locals: dict[str, str] = {}
        self.taken = taken
        self.operations = 0
        self.opaque: dict[str, cst.BaseExpression] = {}  # operand -> a value the host computes (X @ W)
        self.params: dict[str, str] = {}  # operand -> the kernel's parameter for it
        self.depth = 0

    def local(self, name: str) -> str:
        if name not in self.locals:
            self.operands.append(name)
            self.locals[name] = _fresh(f"{name}_i", self.taken)
            # a parameter that would hide a name the kernel reads (sign, cuda, math ...) gets another
            self.params[name] = _fresh(f"{name}_", self.taken) if name in _KERNEL_NAMES else name
        return self.locals[name]

    def text(self, node: cst.BaseExpression) -> str:
        self.depth += 1
        try:
            return self._text(node)
        finally:
            self.depth -= 1

    def _text(self, node: cst.BaseExpression) -> str:
        if self.depth > 1 and _opaque(node):  # computed on the host, then read like a name
            name = _fresh("v", self.taken)
            self.opaque[name] = node
            return self.local(name)
        if node.lpar or getattr(node, "rpar", None):
            inner = self.text(node.with_changes(lpar=[], rpar=[]))
            return inner if re.fullmatch(r"[\w.]+", inner) else f"({inner})"
        if isinstance(node, cst.Name):
            if node.value in ("True", "False"):
                return node.value
            if node.value in ("None",) or node.value in self.modules:
                raise _NotElementwise
            return self.local(node.value)
        if isinstance(node, (cst.Integer, cst.Float)):
            return node.value
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
            self.operations += 1
            sign = "-" if isinstance(node.operator, cst.Minus) else "+"
            return sign + self.text(node.expression)
        if isinstance(node, cst.BinaryOperation) and type(node.operator) in _BINARY:
            self.operations += 1
            return f"{self.text(node.left)} {_BINARY[type(node.operator)]} {self.text(node.right)}"
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1 and type(node.comparisons[0].operator) in _COMPARE:
            self.operations += 1
            target = node.comparisons[0]
            return f"{self.text(node.left)} {_COMPARE[type(target.operator)]} {self.text(target.comparator)}"
        if isinstance(node, cst.Call):
            name = self.qualified(node.func)
            code = SCALAR_FUNCTIONS.get(name or "")
            if code is None or len(node.args) != _ARITY[name] or any(a.keyword or a.star for a in node.args):
                raise _NotElementwise
            self.operations += 1
            return code.format(*(self.text(a.value) for a in node.args))
        raise _NotElementwise

    def lambda_body(self, node: cst.BaseExpression, module: cst.Module) -> str:
        """``node`` as the lambda's body: each value the host computes replaced by its operand's name."""
        body = node.visit(_SwapOpaque({id(v): k for k, v in self.opaque.items()})) if self.opaque else node
        return module.code_for_node(body.with_changes(lpar=[], rpar=[]))

    def argument(self, name: str) -> cst.BaseExpression:
        """The call's argument for operand ``name``: the name, or the value the host computes."""
        value = self.opaque.get(name)
        return cst.Name(name) if value is None else value.with_changes(lpar=[], rpar=[])

    def qualified(self, func: cst.BaseExpression) -> str | None:
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in self.modules:
            return f"{self.modules[func.value.value]}.{func.attr.value}"
        return None


def _opaque(node: cst.BaseExpression) -> bool:
    """A value inside an elementwise expression that the host computes first: a matrix product,
    an index, an attribute, a call of something not elementwise (a reduction)."""
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, cst.MatrixMultiply)
    return isinstance(node, (cst.Subscript, cst.Attribute, cst.Call)) and not _elementwise_call(node)


def _elementwise_call(node: cst.BaseExpression) -> bool:
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute) or not isinstance(node.func.value, cst.Name):
        return False
    return any(name.endswith("." + node.func.attr.value) for name in SCALAR_FUNCTIONS)


class _SwapOpaque(cst.CSTTransformer):
    """The values the host computes (by the identity of their nodes), replaced by their operands' names."""

    def __init__(self, names: dict[int, str]) -> None:
        super().__init__()
        self.names = names

    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) not in self.names

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        name = self.names.get(id(original))
        return cst.Name(name) if name is not None else updated


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _names(module: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    module.visit(Collect())
    return found


# calls whose arguments are numbers (a loop's bounds, a length), never fused
_SCALAR_CALLS = frozenset({"range", "len", "int", "float", "bool", "print", "isinstance", "min", "max", "abs", "round"})
MAX_OPERANDS = 8  # arrays one kernel reads at most (temporaries are inlined up to this)


class _Fuse(cst.CSTTransformer):
    """Each maximal elementwise expression in a function -> a call of a kernel, collected in ``kernels``.

    Expressions that index (``x[i + 1]``), test (``if trip == 0:``), bound a loop or are given
    to Python's own number functions are left as they are: they are numbers.
    """

    def __init__(self, module: cst.Module, modules: dict[str, str]) -> None:
        super().__init__()
        self.module = module
        self.modules = modules
        self.taken = _names(module) | {"cuda", "math", "fused", *_HELPERS}
        self.kernels: list[str] = []
        self.function: str | None = None
        self.numbers = 0  # > 0 inside an index, a test, a loop's iterable or a call of a builtin
        self.builtin_calls: set[int] = set()
        self.replace: dict[int, cst.Call] = {}
        self.target: str | None = None  # the name the current statement assigns
        self.origin: list[str] = []  # the last origin comments seen (the user's line)

    # --- where we are ------------------------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if self.function is not None:
            return False  # a nested function (a lambda's def) stays as it is
        self.function = node.name.value
        self.origin = []
        return True

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        if self.function == original.name.value:
            self.function = None
        return updated

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def _statement(self, node) -> None:
        comments = [ln.comment.value for ln in node.leading_lines if ln.comment is not None]
        if comments:
            self.origin = comments

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        self._statement(node)
        small = node.body[0] if len(node.body) == 1 else None
        self.target = None
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            self.target = small.targets[0].target.value
        elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            self.target = small.target.value
        return True

    def visit_If(self, node: cst.If) -> bool:
        self._statement(node)
        return True

    def visit_For(self, node: cst.For) -> bool:
        self._statement(node)
        return True

    def visit_While(self, node: cst.While) -> bool:
        self._statement(node)
        return True

    def visit_If_test(self, node: cst.If) -> None:
        self.numbers += 1

    def leave_If_test(self, node: cst.If) -> None:
        self.numbers -= 1

    def visit_While_test(self, node: cst.While) -> None:
        self.numbers += 1

    def leave_While_test(self, node: cst.While) -> None:
        self.numbers -= 1

    def visit_For_iter(self, node: cst.For) -> None:
        self.numbers += 1

    def leave_For_iter(self, node: cst.For) -> None:
        self.numbers -= 1

    def visit_SubscriptElement(self, node: cst.SubscriptElement) -> bool:
        self.numbers += 1
        return True

    def leave_SubscriptElement(self, original: cst.SubscriptElement, updated: cst.SubscriptElement):
        self.numbers -= 1
        return updated

    def visit_Call(self, node: cst.Call) -> bool:
        if isinstance(node.func, cst.Name) and node.func.value in _SCALAR_CALLS:
            self.numbers += 1
            self.builtin_calls.add(id(node))
        return True

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if id(original) in self.builtin_calls:
            self.numbers -= 1
        return updated

    # --- fusing ------------------------------------------------------------------------------

    def on_visit(self, node: cst.CSTNode) -> bool:
        if not super().on_visit(node):
            return False
        if self.function is None or self.numbers or not isinstance(node, cst.BaseExpression):
            return True
        call = self._kernel(node)
        if call is None:
            return True
        self.replace[id(node)] = call
        return False

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        found = self.replace.pop(id(original), None)
        if found is not None:
            return found.with_changes(lpar=original.lpar, rpar=original.rpar) if original.lpar else found
        return super().on_leave(original, updated)

    def _kernel(self, node: cst.BaseExpression) -> cst.Call | None:
        """The kernel for ``node`` if it is an elementwise expression of at least one name and operation."""
        if isinstance(node, (cst.Name, cst.Integer, cst.Float)):
            return None
        scalar = _Scalar(self.modules, {"cuda", "math", *_HELPERS, *self.modules, *_names(node)})
        try:
            code = scalar.text(node)
        except _NotElementwise:
            return None
        if not scalar.operations or not scalar.operands:
            return None
        base = self.target or f"{self.function}_value"
        kernel = _fresh(f"{base}_kernel", self.taken)
        call = _fresh(f"{base}_fused", self.taken)
        out, i = _fresh("out", scalar.taken), _fresh("i", scalar.taken)
        expression = scalar.lambda_body(node, self.module)
        params = ", ".join([out, *(scalar.params[n] for n in scalar.operands)])
        lines = ["@cuda.jit(cache=True)", f"def {kernel}({params}):"]
        lines += [f"    {c}" for c in self.origin]
        lines.append(f"    # {expression}, one thread per element")
        lines += [f"    {i} = cuda.grid(1)", f"    if {i} < {out}.shape[0]:"]
        lines += [f"        {scalar.locals[n]} = ld({scalar.params[n]}, {i})" for n in scalar.operands]
        lines.append(f"        {out}[{i}] = {code}")
        lines.append("")
        lines.append("")
        lines.append(f"{call} = fused({kernel}, lambda {', '.join(scalar.operands)}: {expression})")
        self.kernels.append("\n".join(lines))
        return cst.Call(cst.Name(call), [cst.Arg(scalar.argument(n)) for n in scalar.operands])


def _inline(module: cst.Module, modules: dict[str, str]) -> cst.Module:
    """Each function's elementwise temporaries read once put into the line that reads them
    (:func:`srctrans.passes.fuse.inline_temporaries`), so one kernel computes the chain."""
    from .passes.fuse import inline_temporaries

    def elementwise(st) -> bool:
        if not (isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and isinstance(st.body[0], cst.Assign)):
            return False
        assign = st.body[0]
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return False
        scalar = _Scalar(modules, set())
        try:
            scalar.text(assign.value)
        except _NotElementwise:
            return False
        return bool(scalar.operands)

    def fusible(stmts) -> set[int]:
        found: set[int] = set()
        for st in stmts:
            if elementwise(st):
                found.add(id(st))
            for block in _blocks(st):
                found |= fusible(block)
        return found

    body = []
    for st in module.body:
        if isinstance(st, cst.FunctionDef):
            stmts = list(st.body.body)
            stmts = inline_temporaries(stmts, fusible(stmts), MAX_OPERANDS)
            st = st.with_changes(body=st.body.with_changes(body=stmts))
        body.append(st)
    return module.with_changes(body=body)


def _blocks(st) -> list:
    from .passes.fuse import children

    return children(st)


class _Imports(cst.CSTTransformer):
    """``import numpy as np`` -> the device's array library; ``srctrans.runtime`` -> its device form."""

    def leave_Import(self, original: cst.Import, updated: cst.Import):
        return updated

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.Import):
            return updated
        (imp,) = updated.body
        if len(imp.names) != 1:
            return updated
        alias = imp.names[0]
        dotted = cst.Module([]).code_for_node(alias.name)
        local = alias.asname.name.value if alias.asname else dotted
        if dotted == "numpy":
            line = f"from numba_backend.cuda_arrays import xp as {local}  # NumPy's functions on device arrays (CuPy's on a GPU)"
        elif dotted == "srctrans.runtime":
            line = f"from numba_backend.cuda_arrays import runtime as {local}  # srctrans.runtime on device arrays"
        elif dotted == "srctrans":
            line = f"from numba_backend.cuda_arrays import srctrans_on_device as {local}  # srctrans.random draws on the host"
        elif dotted == "srctrans.random":
            line = f"from numba_backend.cuda_arrays import random_on_device as {local}  # srctrans.random draws on the host"
        else:
            return updated
        return cst.parse_statement(line + "\n").with_changes(leading_lines=updated.leading_lines)


def cuda_source(text: str, display: str, dep: str) -> str:
    """The CUDA form of the generated file ``text`` (named ``display`` in its header; ``dep``: the
    dependency hash :func:`srctrans.gpu.cuda_file` keeps it by)."""
    module = cst.parse_module(text)
    modules = _modules(module)
    fuse = _Fuse(module, modules)
    body = _inline(module, modules).visit(fuse)
    body = body.visit(_Imports())
    code = body.code
    header = read_header(text)
    meta = header[0] if header else {}
    # the original header's lines go; the new one says what this file is
    lines = code.split("\n")
    start = 0
    while start < len(lines) and (lines[start].startswith("#") or not lines[start].strip()):
        start += 1
    kept = [ln for ln in lines[:start] if ln.startswith("# ") and not ln.startswith(_STANDARD)]
    rest = "\n".join(lines[start:])
    imports_end = _after_imports(rest)
    kernels = fuse.kernels
    prelude = ["import math", "", "from numba import cuda", "", "from numba_backend.cuda_arrays import fused, ld, maximum, minimum, sign"]
    body_text = rest[:imports_end].rstrip("\n") + "\n" + "\n".join(prelude) + "\n"
    if kernels:
        body_text += "\n\n" + "\n\n\n".join(kernels) + "\n"
    body_text += "\n\n" + rest[imports_end:].lstrip("\n")
    body_hash = hashlib.sha256(body_text.encode()).hexdigest()[:16]

    head = [
        f"# Generated by srctrans {__version__} from {display}:{meta.get('entry', '?')} -- jit(target='cuda')",
        "# Do not edit: srctrans rewrites this file when the file it comes from changes.",
        "# show again: call the function, then srctrans.source(it)",
        "# host code as in the file it comes from, with NumPy's functions on device arrays;",
        f"# {len(kernels)} elementwise line{'s' if len(kernels) != 1 else ''} run as CUDA kernels, one thread per element",
        *kept,
        META_PREFIX + json.dumps(meta, sort_keys=True),
        f"{HASH_PREFIX}{dep}  body hash: {body_hash}",
    ]
    return "\n".join(head) + "\n\n" + body_text


_STANDARD = ("# Generated by", "# Do not edit", "# show again", META_PREFIX, HASH_PREFIX)


def _after_imports(text: str) -> int:
    """The offset just after the leading import and blank lines of ``text``."""
    offset = 0
    for line in text.split("\n"):
        if line.strip() and not line.startswith(("import ", "from ")):
            break
        offset += len(line) + 1
    return offset
