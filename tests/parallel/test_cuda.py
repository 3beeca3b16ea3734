"""The CUDA backend without a GPU: the simulator, PTX for a real architecture, and the error with neither.

- ``test_cuda_cases.py`` runs in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (Numba reads
  it when ``numba.cuda`` is first imported, so it cannot be switched on in this process
  without changing it for every other test module);
- every kernel file that run wrote is compiled to PTX for compute capability 9.0 with
  ``numba.cuda.compile_ptx`` here, without the simulator, so code only the simulator
  accepts (it runs device functions as Python) is caught;
- ``backend="cuda"`` with no GPU and no simulator is a clear error.

On a machine with a GPU, ``benchmarks/gpu_check.sh`` runs ``test_cuda_cases.py`` on it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CASES = "tests/parallel/test_cuda_cases.py"

pytestmark = pytest.mark.slow


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SRCTRANS_", "NUMBA_ENABLE_CUDASIM"))}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def simulator_run(tmp_path_factory):
    """``test_cuda_cases.py`` under the simulator, once; the kernel files it ran are logged."""
    pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install 'srctrans[cuda]')")
    folder = tmp_path_factory.mktemp("cuda_sim")
    log = folder / "kernels.txt"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={folder / 'tmp'}", CASES],
        cwd=REPO,
        env=_env(NUMBA_ENABLE_CUDASIM="1", SRCTRANS_CUDA_KERNEL_LOG=str(log)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    kernels = sorted({Path(p) for p in log.read_text().split()}) if log.exists() else []
    return proc, kernels


def test_cases_pass_on_the_simulator(simulator_run):
    proc, _ = simulator_run
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, tail
    assert " passed" in proc.stdout and "skipped" not in proc.stdout.splitlines()[-1], tail


def test_every_generated_kernel_compiles_to_ptx(simulator_run):
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        pytest.skip("this process runs the CUDA simulator, which cannot compile PTX")
    cuda = pytest.importorskip("numba.cuda")
    from numba_backend.cuda import compile_ptx_file

    _, kernels = simulator_run
    assert len(kernels) >= 15, kernels  # the stages of the cases above, the corpus sample, pmap of grad
    try:
        from numba.cuda.cudadrv.error import NvvmSupportError
    except ImportError:  # pragma: no cover - older numba-cuda
        NvvmSupportError = RuntimeError  # noqa: N806
    failures = []
    for path in kernels:
        try:
            ptx = compile_ptx_file(path, cc=(9, 0))
        except NvvmSupportError as err:
            pytest.skip(f"the CUDA PTX toolchain (NVVM) is not installed: {err}; pip install 'numba-cuda[cu12]'")
        except Exception as err:  # noqa: BLE001 - every failure is listed below
            failures.append(f"{path.name}: {type(err).__name__}: {str(err)[:400]}")
            continue
        assert ".target sm_90" in ptx and ".entry" in ptx, path.name
    assert not failures, "\n".join(failures)
    assert cuda is not None


def test_cuda_backend_without_gpu_or_simulator_is_a_clear_error(tmp_path):
    code = """
import numpy as np
import srctrans
from numba import cuda
if cuda.is_available():
    print("HAS-GPU")
    raise SystemExit(0)
from srctrans.parallel.devices import BackendUnavailableError
for attempt in (lambda: srctrans.devices("cuda"),
                lambda: srctrans.pmap(lambda x: x * 2.0, backend="cuda")(np.ones(4))):
    try:
        attempt()
    except BackendUnavailableError as err:
        print("ERROR:", err)
    else:
        print("NO ERROR")
"""
    pytest.importorskip("numba.cuda", reason="numba-cuda is not installed")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    if "HAS-GPU" in proc.stdout:
        pytest.skip("this machine has a GPU")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(("ERROR", "NO ERROR"))]
    assert len(lines) == 2 and all(ln.startswith("ERROR") for ln in lines), proc.stdout + proc.stderr
    assert all("no CUDA GPU" in ln and "NUMBA_ENABLE_CUDASIM=1" in ln for ln in lines), lines


# --- the scalarization pass alone (pure Python: no CUDA, no Numba) -----------------------------

LOGREG = '''
import numpy as np

def per_example_grad(w, x, y):
    z = np.dot(w, x)
    p = 1.0 / (1.0 + np.exp(-z))
    g = (p - y) * x
    return g, np.log(p)

def sorts(x):
    y = x * 2.0
    z = np.sort(y)
    return z

def grows(x):
    for k in range(3):
        x = np.concatenate((x, x))
    return x
'''


def _specs(*triples):
    from srctrans.parallel.kernels import ArgSpec

    return [ArgSpec(name, shape, "float64", batched) for name, shape, batched in triples]


def test_generated_kernel_reads_like_hand_written_cuda(tmp_path):
    from srctrans.parallel.kernels import kernel_file

    stage = tmp_path / "stages.py"
    stage.write_text(LOGREG)
    path, src = kernel_file(stage, "per_example_grad", _specs(("w", (3,), False), ("x", (3,), True), ("y", (), True)))
    text = path.read_text()
    assert path.parent == tmp_path and path.name.startswith("stages.per_example_grad.cuda-")
    assert text.startswith("# Generated by srctrans") and "# per example: w: float64[3] (same for every example), x: float64[3], y: float64" in text
    body = text.split("\n\n", 1)[1]
    for line in [
        "@cuda.jit(device=True)",
        "def per_example_grad_device(w, x, y, out0):",
        "    z = 0.0",
        "    for j in range(3):",
        "        z += w[j] * x[j]",
        "    p = 1.0 / (1.0 + math.exp(-z))",
        "    g = cuda.local.array((3,), float64)",
        "        g[j] = (p - y) * x[j]",
        "    return math.log(p),",
        "def per_example_grad_kernel(w, x, y, out0, out1):",
        "    i = cuda.grid(1)",
        "        out1[i], = per_example_grad_device(w, x[i], y[i], out0[i])",
    ]:
        assert line in body.splitlines(), line
    compile(text, str(path), "exec")  # valid Python
    assert src.outputs == [((3,), "float64"), ((), "float64")]
    again, _ = kernel_file(stage, "per_example_grad", _specs(("w", (3,), False), ("x", (3,), True), ("y", (), True)))
    assert again == path and again.read_text() == text  # deterministic


def test_what_cannot_be_scalarized_is_refused_with_its_line(tmp_path):
    from srctrans.errors import SrcTransError
    from srctrans.parallel.kernels import kernel_source

    stage = tmp_path / "stages.py"
    stage.write_text(LOGREG)
    with pytest.raises(SrcTransError) as err:
        kernel_source(stage, "sorts", _specs(("x", (4,), True)))
    assert err.value.line == 12 and "numpy.sort" in str(err.value) and "z = np.sort(y)" in str(err.value)
    with pytest.raises(SrcTransError) as err:
        kernel_source(stage, "grows", _specs(("x", (2,), True)))
    assert err.value.line == 17 and "numpy.concatenate" in str(err.value)
    with pytest.raises(ValueError, match="takes \\(w, x, y\\)"):
        kernel_source(stage, "per_example_grad", _specs(("x", (3,), True)))
