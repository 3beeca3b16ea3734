"""Golden CUDA forms: what jit(target="cuda") makes of representative adjoint files.

The inputs are the golden adjoints (``grad_expected/``); each is rewritten by
:func:`srctrans.gpu_source.cuda_source` (pure text: no GPU, no Numba) and compared with
``cuda_expected/``. Regenerate after a deliberate change with ``pytest tests/golden --update-golden``.
"""

from __future__ import annotations

import ast
import difflib
from pathlib import Path

import pytest

from srctrans.gpu import dependency_hash
from srctrans.gpu_source import cuda_source

from .test_golden import _body

HERE = Path(__file__).parent
CASES = ["branches", "euler", "mlp", "rnn", "tanh"]


@pytest.mark.parametrize("case", CASES)
def test_golden_cuda_form(case, request):
    text = (HERE / "grad_expected" / f"{case}.grad.py").read_text()
    body = _body(cuda_source(text, f"{case}.grad.py", dependency_hash(text)))
    ast.parse(body)  # valid Python
    expected_path = HERE / "cuda_expected" / f"{case}.cuda.py"
    if request.config.getoption("--update-golden"):
        old = expected_path.read_text() if expected_path.exists() else ""
        if old != body:
            expected_path.write_text(body)
            print("".join(difflib.unified_diff(old.splitlines(True), body.splitlines(True), str(expected_path), "new")))
    assert body == expected_path.read_text(), f"the CUDA form differs from {expected_path}"


def test_every_elementwise_line_of_a_loop_body_is_one_kernel():
    """y = y + dt * f(y) in a loop: the temporaries read once go into one kernel per line."""
    body = (HERE / "cuda_expected" / "euler.cuda.py").read_text()
    assert body.count("@cuda.jit(cache=True)") >= 2
    host = body[body.rindex("\ndef ") :]  # the host function, after its kernels
    code = [ln for ln in host.split("# --- backward")[0].splitlines() if not ln.strip().startswith("#")]
    assert any("y = y_fused(y, t1, i)" in ln for ln in code) and not any("np.sin" in ln for ln in code)
