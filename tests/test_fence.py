"""The fence: one test per rejected construct, each asserting the reported location."""

from __future__ import annotations

import pytest

import srctrans

# (construct, the offending statement inside `def f(x):`, text expected in the message,
#  column (1-based, as printed) where the caret starts). Lambdas and defs inside are lifted
#  (tests/test_lifting.py, with what cannot be: nonlocal, recursion, defaults)
CASES = [
    ("yield", "    yield x", "generators (yield)", 5),
    ("global", "    global G", "global statements", 5),
    ("try", "    try:\n        x = 1\n    except Exception:\n        pass", "try/except", 5),
    ("with", "    with open('a') as fh:\n        pass", "with statements", 5),
    ("class", "    class C:\n        pass", "classes defined inside", 5),
    ("del", "    del x", "del statements", 5),
    ("import", "    import math", "imports inside", 5),
    ("from-import", "    from math import sin", "imports inside", 5),
    ("generator expression", "    return sum(v for v in x)", "generator expressions", 16),
    ("dict comprehension", "    return {k: k for k in x}", "dict comprehensions", 12),
    ("set comprehension", "    return {k for k in x}", "set comprehensions", 12),
    ("walrus", "    if (n := len(x)) > 1:\n        pass", "assignment expressions", 9),
    ("match", "    match x:\n        case 1:\n            pass", "match statements", 5),
    ("star unpacking", "    a, *rest = x", "star unpacking", 8),
    ("star call", "    return max(*x)", "star arguments", 16),
    ("attribute write", "    x.attr = 1", "writes to attributes", 5),
]


@pytest.mark.parametrize("what,body,message,col", CASES, ids=[c[0] for c in CASES])
def test_rejected_construct_is_located(make_module, what, body, message, col):
    mod = make_module(f"G = 1\n\n\ndef f(x):\n{body}\n    return x\n")
    with pytest.raises(srctrans.UnsupportedSyntaxError) as info:
        srctrans.jit(mod.f)(1.0)
    err = info.value
    assert message in err.message
    assert err.filename == mod.__file__
    assert err.line == 5
    assert err.col + 1 == col
    text = str(err)
    first, shown, caret = text.splitlines()[:3]
    assert first.startswith(f"{mod.__file__}:5:{col}: ")
    assert shown.strip() == body.splitlines()[0].strip()
    assert caret.index("^") - 4 == col - 1 - (len(body.splitlines()[0]) - len(body.splitlines()[0].lstrip()))


def test_async_function(make_module):
    mod = make_module("async def f(x):\n    return await x\n")
    with pytest.raises(srctrans.UnsupportedSyntaxError, match="async functions are not supported") as info:
        srctrans.jit(mod.f)(1.0)
    assert (info.value.line, info.value.col) == (1, 0)


def test_star_parameters(make_module):
    mod = make_module("def f(*xs):\n    return xs\n")
    with pytest.raises(srctrans.UnsupportedSyntaxError, match=r"\*args and \*\*kwargs parameters") as info:
        srctrans.jit(mod.f)(1.0)
    assert info.value.line == 1


def test_method_calling_method_of_self(make_module):
    mod = make_module(
        """
        class M:
            def helper(self, x):
                return x

            def f(self, x):
                return self.helper(x)
        """
    )
    with pytest.raises(srctrans.UnsupportedSyntaxError, match="calls to methods of self") as info:
        srctrans.jit(mod.M().f)(1.0)
    assert info.value.line == 7


def test_errors_carry_a_hint(make_module):
    mod = make_module("def f(x):\n    global G\n    return x\n")
    with pytest.raises(srctrans.UnsupportedSyntaxError) as info:
        srctrans.jit(mod.f)(1.0)
    assert "pass the value in as an argument" in str(info.value)
