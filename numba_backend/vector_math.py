"""SIMD transcendental functions for compiled loops, from glibc's vector math library.

LLVM vectorizes a loop over ``np.tanh``/``np.exp``/``np.log``/``math.sin``...
into calls of vector intrinsics (``llvm.tanh.v8f64``), but without a vector
library the code generator splits each call back into one scalar libm call
per element (10-25 ns each: ``np.tanh`` on 512k numbers took 8.7 ms compiled
against NumPy's 0.4 ms). Numba would name Intel's SVML there; llvmlite from
PyPI has no SVML, and its LLVM 22 has no ``-vector-library`` option any more
(``llvmlite.binding.set_option`` with it changes nothing), so that route is closed.

:func:`install` therefore does the job of LLVM's ``replace-with-veclib`` pass:
after Numba optimizes a module, every call of a vector intrinsic that glibc's
libmvec implements at that width for the target's instruction set becomes a
call of the libmvec function (``llvm.tanh.v8f64`` -> ``_ZGVeN8v_tanh``, names
of the x86-64 vector function ABI). Everything else is left alone. glibc
bounds libmvec's error by 4 ulp; measured against long double, float64 results
are within 3.3 ulp (NumPy's and scalar libm's within 1), float32 within 3.7
(NumPy's 2.9). tests/numba_backend/test_vector_math.py checks the bound and
that special values (±0, subnormals, overflow, ±inf, nan) equal NumPy's.

It fails safe: off x86-64 Linux, without libmvec, with
``SRCTRANS_NO_LIBMVEC=1`` in the environment, or if Numba's code library
changes shape, nothing is patched and compiled code calls libm as before.
Code that calls libmvec gets its own key in Numba's disk cache, so caches
made without it are compiled again once, and never loaded where it is off.
The patch applies only to code compiled from srctrans's generated files (with
the helpers inlined into it): the user's own ``numba.njit`` functions in the same
process keep calling libm.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys

# LLVM intrinsic name -> libmvec base name, for the intrinsics LLVM's loop vectorizer
# forms from NumPy's ufuncs and the math module (double and float versions).
_FUNCTIONS = {
    "exp": "exp",
    "exp2": "exp2",
    "exp10": "exp10",
    "log": "log",
    "log2": "log2",
    "log10": "log10",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "pow": "pow",
    "atan2": "atan2",
}
_BINARY = {"pow", "atan2"}

# x86-64 vector function ABI: ISA letter and the target feature it needs, by vector
# width in bits (the argument travels in one xmm/ymm/zmm register).
_ISA = {128: ("b", "sse2"), 256: ("d", "avx2"), 512: ("e", "avx512f")}

_GENERATED = "_srctrans_"  # in the (mangled) names of functions of generated files: cache.module_name_for
_INTRINSIC = re.compile(r"^llvm\.(\w+?)\.v(\d+)(f64|f32)$")

state = {"installed": False, "reason": "not installed yet", "library": None}
_symbols: dict[str, bool] = {}


def _features(codegen) -> set[str]:
    text = getattr(codegen, "_tm_features", "") or ""
    return {f[1:] for f in text.split(",") if f.startswith("+")}


def vector_name(intrinsic: str, features: set[str]) -> str | None:
    """The libmvec function that computes ``intrinsic`` (``llvm.tanh.v8f64``) on this target, or None."""
    m = _INTRINSIC.match(intrinsic)
    if m is None or m.group(1) not in _FUNCTIONS:
        return None
    lanes, kind = int(m.group(2)), m.group(3)
    bits = lanes * (64 if kind == "f64" else 32)
    if bits not in _ISA:
        return None
    letter, feature = _ISA[bits]
    if feature != "sse2" and feature not in features:
        return None
    base = _FUNCTIONS[m.group(1)] + ("f" if kind == "f32" else "")
    name = f"_ZGV{letter}N{lanes}{'vv' if m.group(1) in _BINARY else 'v'}_{base}"
    return name if _resolves(name) else None


def _resolves(name: str) -> bool:
    if name not in _symbols:
        import llvmlite.binding as ll

        _symbols[name] = bool(ll.address_of_symbol(name))
    return _symbols[name]


def rewrite(ir: str, renames: dict[str, str]) -> str:
    """``ir`` with each intrinsic of ``renames`` replaced by its vector function.

    Declarations lose their attribute groups (an intrinsic's ``speculatable``
    and ``memory(none)`` are not promises an ordinary function makes); calls
    keep their fast-math flags.

    The copies of other libraries' functions that Numba linked into the module
    (``linkonce_odr``: an overload, a ufunc loop) become private ones
    (:func:`_private_copies`): rewritten here, they are no longer the code their
    own library holds, and a call of one must reach this copy. As ``linkonce_odr`` symbols, the JIT linker resolved
    them to the library's unpatched definition when that was already loaded (a
    cold compile, which compiles it first) and to this copy when it was not (the
    same code loaded from Numba's cache): two results for one program.
    """
    ir = _private_copies(ir)
    for intrinsic, name in renames.items():
        quoted = re.escape(intrinsic)
        linked = re.search(rf"^declare [^\n]*@{re.escape(name)}\(", ir, flags=re.M)  # a callee calls it already

        def declare(m, name=name, linked=linked):
            return "" if linked else f"declare {m.group(1)}@{name}({m.group(2)})"

        ir = re.sub(rf"^declare (.*?)@{quoted}\((.*?)\)[^\n]*$", declare, ir, flags=re.M)
        ir = re.sub(rf"@{quoted}\(", f"@{name}(", ir)
    return ir


_LINKED = re.compile(r'^define linkonce_odr [^@\n]*@("(?:[^"\\]|\\.)*"|[-\w$.]+)\(', re.M)


def _private_copies(ir: str) -> str:
    """``ir`` with each ``linkonce_odr`` definition made ``internal`` under a name of its own
    (``@name`` -> ``@"name.srctrans.<digest>"``, the digest of the module's text).

    Internal alone is not enough: LLVM's JIT linker (RuntimeDyld) enters a module's local
    symbols in the table it resolves other modules' weak references with, so a later module's
    copy of the same overload called this module's private copy, compiled for this module
    alone (np.sum of a vector raised 'incompatible shape for array' after another generated
    file had summed vectors). Under a name of its own nothing else can reach it; two copies
    with one name come from one text, so they are the same code."""
    names = [m.group(1) for m in _LINKED.finditer(ir)]
    if not names:
        return ir
    digest = hashlib.sha1(ir.encode()).hexdigest()[:12]
    for name in names:
        bare = name[1:-1] if name.startswith('"') else name
        private = f'@"{bare}.srctrans.{digest}"'
        ir = re.sub(rf"@{re.escape(name)}(?![-\w$.])", private.replace("\\", "\\\\"), ir)
    return re.sub(r"^define linkonce_odr ", "define internal ", ir, flags=re.M)


def _patch(library_class, jit_codegen_class) -> None:
    import llvmlite.binding as ll

    original = library_class._optimize_final_module
    if getattr(original, "_srctrans_vector_math", False):
        return

    def _optimize_final_module(self):
        original(self)
        if not isinstance(self._codegen, jit_codegen_class):  # ahead-of-time objects would need -lmvec
            return
        module = self._final_module
        if not any(_GENERATED in fn.name for fn in module.functions if not fn.is_declaration):
            return  # the user's own Numba code, compiled beside srctrans, keeps calling libm
        features = _features(self._codegen)
        renames = {}
        for fn in module.functions:
            if fn.is_declaration and fn.name.startswith("llvm."):
                name = vector_name(fn.name, features)
                if name is not None:
                    renames[fn.name] = name
        if renames:
            rewritten = ll.parse_assembly(rewrite(str(module), renames))
            rewritten.name = module.name
            rewritten.verify()
            self._final_module = rewritten

    _optimize_final_module._srctrans_vector_math = True
    library_class._optimize_final_module = _optimize_final_module


def tag_cache(codegen_class, tag: str) -> None:
    """Numba's disk cache keys compiled code by ``magic_tuple()`` (triple, CPU, features): add
    ``tag`` to it, so that caches made before a patch of code generation are compiled again
    once, and a process with the patch turned off does not load code made with it."""
    original = codegen_class.magic_tuple
    tags = getattr(original, "_srctrans_tags", ())
    if tag in tags:
        return

    def magic_tuple(self):
        return (*original(self), tag)

    magic_tuple._srctrans_tags = (*tags, tag)
    codegen_class.magic_tuple = magic_tuple


def describe() -> str:
    """One line for reports: which library compiled loops call for exp/log/tanh/sin..."""
    if state["installed"]:
        return f"SIMD, glibc's {state['library']}"
    return f"scalar libm ({state['reason']})"


def install() -> bool:
    """Load libmvec and route vector intrinsics to it; False (and ``state['reason']``) where it cannot."""
    if state["installed"]:
        return True
    if os.environ.get("SRCTRANS_NO_LIBMVEC", "") not in ("", "0"):
        state["reason"] = "SRCTRANS_NO_LIBMVEC is set"
        return False
    try:
        import llvmlite.binding as ll
        from numba.core import codegen

        triple = ll.get_process_triple()
        if not (sys.platform.startswith("linux") and triple.startswith("x86_64")):
            state["reason"] = f"libmvec's x86-64 ABI does not apply to {triple}"
            return False
        for candidate in ("libmvec.so.1", "libmvec.so"):
            try:
                ll.load_library_permanently(candidate)
            except RuntimeError:
                continue
            state["library"] = candidate
            break
        else:
            state["reason"] = "libmvec (glibc's vector math library) was not found"
            return False
        if not _resolves("_ZGVbN2v_exp"):
            state["reason"] = f"{state['library']} lacks _ZGVbN2v_exp"
            return False
        library_class = codegen.CPUCodeLibrary
        for cls, method in ((library_class, "_optimize_final_module"), (codegen.JITCPUCodegen, "magic_tuple")):
            if not callable(getattr(cls, method, None)):
                state["reason"] = f"numba.core.codegen.{cls.__name__} has no {method}"
                return False
        tag_cache(codegen.JITCPUCodegen, "srctrans-libmvec")
        _patch(library_class, codegen.JITCPUCodegen)
    except Exception as err:  # fail safe: compiled code keeps calling libm
        state["reason"] = f"{type(err).__name__}: {err}"
        return False
    state["installed"] = True
    state["reason"] = f"vector intrinsics call {state['library']}"
    return True
