"""Processes compiling the same function at once: all correct, the cache sound afterwards,
and a variant of the function (another value of a global) never runs another's code."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from srctrans.cache import readable_name

from .conftest import REPO

pytestmark = pytest.mark.slow

MODEL = """
import numpy as np

def step(x, w):
    acc = np.zeros_like(x)
    for i in range(x.shape[0]):
        acc[i] = np.tanh(x[i] * w) + np.sum(x) * 0.5
    return acc
"""

WORKER = """
import sys, numpy as np, srctrans, model
x = np.linspace(-1, 1, 7 + int(sys.argv[1]) % 2)
f = srctrans.jit(model.step)
np.testing.assert_allclose(f(x, 0.3), model.step(x, 0.3))
np.testing.assert_allclose(f(x.astype(np.float32), 0.3), model.step(x.astype(np.float32), 0.3), rtol=1e-5, atol=1e-6)
print("ok")
"""


def test_four_processes_compile_the_same_function(tmp_path):
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL))
    (tmp_path / "worker.py").write_text(textwrap.dedent(WORKER))
    env = {"PYTHONPATH": f"{REPO}:{tmp_path}", "PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen([sys.executable, "worker.py", str(i)], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(4)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    for (out, err), p in zip(results, procs):
        assert p.returncode == 0, err
        assert out.strip() == "ok"
    files = [p for p in (tmp_path / "__srctrans__").iterdir() if p.suffix == ".py"]
    assert [readable_name(p) for p in files] == ["model.step.jit.py"]
    # a fifth process loads what the four left behind
    again = subprocess.run([sys.executable, "worker.py", "5"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    index = list((tmp_path / "__srctrans__" / "__pycache__").glob("*.nbi"))
    assert index, "Numba's cache index was written"


SWEEP_MODEL = """
import os
import numpy as np

SCALE = float(os.environ["SCALE"])

def scaled(x):
    return x * SCALE + 1.0
"""

SWEEP_WORKER = """
import numpy as np, srctrans, sweepmodel
print(srctrans.jit(sweepmodel.scaled)(np.array([1.0, 2.0])).tolist())
"""


def test_processes_with_different_globals_never_share_compiled_code(tmp_path):
    """Eight processes at once, half with SCALE = 2.0 and half with 3.0: their generated files
    differ only in the dependency hash and Numba freezes SCALE into machine code, so each value
    needs a file (and Numba cache entries) of its own, cold and warm."""
    (tmp_path / "sweepmodel.py").write_text(textwrap.dedent(SWEEP_MODEL))
    (tmp_path / "worker.py").write_text(textwrap.dedent(SWEEP_WORKER))
    scales = ["2.0", "3.0"] * 4
    for _ in ("cold", "warm"):
        procs = [
            subprocess.Popen(
                [sys.executable, "worker.py"],
                cwd=tmp_path,
                env={"PYTHONPATH": f"{REPO}:{tmp_path}", "PATH": "/usr/bin:/bin", "SCALE": scale},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for scale in scales
        ]
        results = [p.communicate(timeout=300) for p in procs]
        for scale, (out, err), p in zip(scales, results, procs):
            assert p.returncode == 0, err
            assert out.strip() == str([float(scale) + 1.0, 2 * float(scale) + 1.0]), f"SCALE = {scale}"
    files = sorted(p.name for p in (tmp_path / "__srctrans__").glob("sweepmodel.scaled.jit*.py"))
    assert len(files) == 2, files
