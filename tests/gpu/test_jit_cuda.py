"""jit(target="cuda") without a GPU: the cases under the simulator, their kernels compiled to PTX.

- ``test_jit_cuda_cases.py`` runs in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (Numba reads
  it when ``numba.cuda`` is first imported);
- every CUDA file that run wrote is loaded here, without the simulator, and each of its
  kernels compiled to PTX for compute capability 9.0, for float64, float32 and int64
  operands and numbers: code only the simulator accepts is caught;
- ``target="cuda"`` with no GPU and no simulator is a clear error, and a target that does
  not exist is a ValueError naming it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import srctrans

from ..cuda_simulator import assert_passed, env, run_cases

CASES = "tests/gpu/test_jit_cuda_cases.py"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def simulator_run(tmp_path_factory):
    pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install 'srctrans[cuda]')")
    return run_cases(CASES, tmp_path_factory.mktemp("jit_cuda_sim"))


def test_cases_pass_on_the_simulator(simulator_run):
    assert_passed(simulator_run[0])


def test_every_kernel_compiles_to_ptx(simulator_run):
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        pytest.skip("this process runs the CUDA simulator, which cannot compile PTX")
    pytest.importorskip("numba.cuda")
    from numba_backend.cuda_jit import compile_ptx_kernels

    try:
        from numba.cuda.cudadrv.error import NvvmSupportError
    except ImportError:  # pragma: no cover - older numba-cuda
        NvvmSupportError = RuntimeError  # noqa: N806
    _, files = simulator_run
    assert len(files) >= 8, files  # one CUDA file per case
    kernels = 0
    for path in files:
        try:
            ptx = compile_ptx_kernels(path, cc=(9, 0))
        except NvvmSupportError as err:
            pytest.skip(f"the CUDA PTX toolchain (NVVM) is not installed: {err}; pip install 'numba-cuda[cu12]'")
        assert all(".target sm_90" in p and ".entry" in p for p in ptx.values()), path.name
        kernels += len(ptx)
    assert kernels >= 5 * 12, kernels  # (five signatures each)


def test_a_target_that_does_not_exist_is_named():
    with pytest.raises(ValueError, match="target='tpu'.*'cpu' or 'cuda'"):
        srctrans.jit(lambda x: x, target="tpu")


def test_cuda_target_without_gpu_or_simulator_is_a_clear_error(tmp_path):
    code = """
import numpy as np
import srctrans
from numba import cuda
if cuda.is_available():
    print("HAS-GPU")
    raise SystemExit(0)
from srctrans.parallel.devices import BackendUnavailableError
try:
    srctrans.jit(lambda x: x * 2.0, target="cuda")(np.ones(4))
except BackendUnavailableError as err:
    print("ERROR:", err)
else:
    print("NO ERROR")
"""
    pytest.importorskip("numba.cuda", reason="numba-cuda is not installed")
    (tmp_path / "no_gpu.py").write_text(code)
    proc = subprocess.run([sys.executable, "no_gpu.py"], cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=120)
    if "HAS-GPU" in proc.stdout:
        pytest.skip("this machine has a GPU")
    assert "ERROR: jit(target='cuda'): no CUDA GPU" in proc.stdout and "NUMBA_ENABLE_CUDASIM=1" in proc.stdout, proc.stdout + proc.stderr


def test_device_get_of_host_values_is_the_identity():
    x = np.arange(3.0)
    out = srctrans.device_get({"a": x, "b": (1.0, x)})
    assert out["a"] is x and out["b"][1] is x
