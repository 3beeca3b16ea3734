"""The suite compiles at LLVM's -O1 with machine code at -O0 (tests/compile_settings.py); users
compile at Numba's default -O3. The same generated files give the same numbers, to the bit."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # compiles in two processes

USER = '''
import numpy as np


def loss(w, x):
    s = 0.0
    h = np.tanh(x @ w)
    for i in range(h.shape[0]):
        s = s + np.exp(-h[i] * h[i]) / (1.0 + i) + np.log1p(h[i] ** 2)
    return s + 0.5 * np.sum(w * w)
'''

SUITE = """
from tests.compile_settings import fast_machine_code

fast_machine_code()
"""

RUN = '''
import json
import numpy as np
import numba
import srctrans
from opt_user import loss

w = np.linspace(-1.0, 1.0, 6)
x = np.cos(np.arange(24.0)).reshape(4, 6)
value, grad = srctrans.jit(srctrans.value_and_grad(loss))(w, x)
print(json.dumps({"opt": numba.config.OPT, "value": float(value).hex(), "grad": [float(g).hex() for g in grad]}))
'''


def test_a_gradient_is_the_same_at_O1_and_O3(tmp_path, python):
    (tmp_path / "opt_user.py").write_text(USER)
    results = {}
    for name, level, prelude in (("1", "1", ""), ("suite", "1", SUITE), ("3", "3", "")):
        env = {"NUMBA_OPT": level, "SRCTRANS_CACHE_DIR": str(tmp_path / f"cache_{name}")}
        done = python(prelude + RUN, tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout.strip().splitlines()[-1])
        assert str(out["opt"]) == level
        results[name] = out
    for name in ("1", "suite"):
        assert results[name]["value"] == results["3"]["value"], name
        assert results[name]["grad"] == results["3"]["grad"], name
    assert np.isfinite(float.fromhex(results["3"]["value"]))
