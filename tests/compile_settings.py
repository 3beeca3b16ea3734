"""How the suite compiles (tests/conftest.py applies it before Numba is imported).

Users compile at Numba's default: LLVM's -O3, for the optimizer and for the machine code. The
suite compiles some thousands of functions, so unless ``NUMBA_OPT`` is set it optimizes at -O1
and generates machine code at -O0 (LLVM's fast instruction selection and register allocation):
together about half of LLVM's time at -O3. The optimizer still runs, loop vectorization
included (tests/numba_backend/test_vector_math.py reads the vectorized code), and the numbers
are the same (without fastmath LLVM may not reorder floating-point arithmetic):
tests/test_opt_level.py checks a gradient bit for bit under these settings and at -O3.
``NUMBA_OPT=3 python -m pytest ...`` runs the suite as users compile.
"""

from __future__ import annotations

import os


def use_suite_settings() -> None:
    if "NUMBA_OPT" in os.environ:  # chosen by whoever runs the suite: compile as asked
        return
    os.environ["NUMBA_OPT"] = "1"
    fast_machine_code()


def fast_machine_code() -> None:
    """Numba's JIT target machine at -O0 (the optimizer's level is ``NUMBA_OPT``'s). Before the
    first compile: Numba creates its target machine once."""
    try:
        from numba.core import codegen
    except ImportError:  # (no Numba: nothing compiles)
        return

    options_of = codegen.JITCPUCodegen._customize_tm_options

    def at_o0(self, options):
        options_of(self, options)
        options["opt"] = 0

    codegen.JITCPUCodegen._customize_tm_options = at_o0
