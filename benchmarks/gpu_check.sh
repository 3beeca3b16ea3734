#!/usr/bin/env bash
# The CUDA backends on a real NVIDIA GPU, in one prepared run of at most 8 minutes.
#
#   bash benchmarks/gpu_check.sh            (from anywhere; it works in the repository root)
#
# 1. the GPU and the CUDA toolchain Numba sees: a trivial kernel compiled and launched
#    (numba-cuda 0.30 fails to compile with NumPy 2.5: install NumPy < 2.5 beside it);
# 2. the jit(target="cuda") tests without the simulator: array code, gradients and batches
#    (tests/gpu/test_jit_cuda_cases.py);
# 3. jit(target="cuda") beside JAX on the same GPU: x * x + x * 2.0 on 5000^2, per-example
#    gradients of a 2-layer MLP for 10^5 examples, vmap(grad) of an Euler loop for 10^4
#    initial conditions, a 4096^2 layer's gradient (benchmarks/cases/gpu_jit.py);
# 4. the pmap(backend="cuda") tests (tests/parallel/test_cuda_cases.py) and srctrans.random
#    inside generated kernels, without the simulator;
# 5. pmap's per-example gradients of logistic regression, N = 100,000 (benchmarks/cases/gpu.py).
# Each step has its own time limit; the script goes on after a failing step and exits non-zero.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
unset NUMBA_ENABLE_CUDASIM
export SRCTRANS_CUDA_TESTS=gpu
PY=$(command -v python3 || command -v python)
status=0
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }

step "1/5 the GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "nvidia-smi: not found"
timeout 60 "$PY" -c "
import numpy as np, numba
from numba import cuda
print('numpy', np.__version__, 'numba', numba.__version__)
print('numba-cuda sees a GPU:', cuda.is_available())
@cuda.jit
def twice(x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] *= 2.0
x = cuda.to_device(np.arange(4.0))
twice[1, 32](x)
assert (x.copy_to_host() == np.arange(4.0) * 2).all()
print('a kernel compiled and ran')
try:
    import cupy
    print('cupy', cupy.__version__)
except ImportError:
    print('cupy: not installed (jit(target=\"cuda\") needs it)')
"
if [ $? != 0 ]; then
    echo "gpu_check: no usable GPU toolchain (see above); nothing else to check here"
    exit 2
fi

step "2/5 jit(target='cuda') tests on the GPU (no simulator)"
timeout 100 "$PY" -m pytest -q -p no:cacheprovider -W ignore::RuntimeWarning tests/gpu/test_jit_cuda_cases.py -rs || status=1

step "3/5 jit(target='cuda') beside JAX"
timeout 220 "$PY" benchmarks/cases/gpu_jit.py --repeats 20 ${GPU_JIT_JSON:+--json "$GPU_JIT_JSON"} || status=1

step "4/5 pmap(backend='cuda') and srctrans.random tests on the GPU"
timeout 110 "$PY" -m pytest -q -p no:cacheprovider -W ignore::RuntimeWarning \
    tests/parallel/test_cuda_cases.py tests/random/test_random_cuda.py -k "not under_the_simulator" -rs || status=1

step "5/5 pmap: per-example gradients of logistic regression, N=100000, D=20"
timeout 50 "$PY" benchmarks/cases/gpu.py --n 100000 --d 20 --repeats 10 || status=1

echo; echo "gpu_check: $([ $status = 0 ] && echo ok || echo FAILED) ($(date -u +%H:%M:%S))"
exit $status
