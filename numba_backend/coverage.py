"""What Numba does not compile: srctrans rule keys whose generated files stop with ``CompileError``
under ``srctrans.jit`` (their gradients run uncompiled). Checked by tests/rules/test_peer_coverage.py.
"""

from __future__ import annotations

NOT_COMPILED: dict[str, str] = {}
