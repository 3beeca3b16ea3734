#!/usr/bin/env bash
# The CUDA backend on a real NVIDIA GPU, in one prepared run of at most 5 minutes.
#
#   bash benchmarks/gpu_check.sh            (from anywhere; it works in the repository root)
#
# 1. the GPU and the CUDA toolchain Numba sees (installs numba-cuda[cu12] if it is missing);
# 2. the CUDA test cases without the simulator: pmap(backend="cuda") equals vmap, the runner's
#    map/reduce/put/get, a spread of the corpus, and srctrans.random inside generated kernels
#    (tests/parallel/test_cuda_cases.py, tests/random/test_random_cuda.py); every kernel they
#    run is compiled by Numba for this GPU's architecture;
# 3. the batched-gradient benchmark: per-example gradients of logistic regression,
#    N = 100,000 examples of D = 20 features (benchmarks/cases/gpu.py).
# Each step has its own time limit; the script goes on after a failing step and exits non-zero.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
unset NUMBA_ENABLE_CUDASIM
export SRCTRANS_CUDA_TESTS=gpu
status=0
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }

step "1/3 the GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "nvidia-smi: not found"
python -c "import numba_cuda" 2>/dev/null || timeout 45 python -m pip install -q "numba-cuda[cu12]" || status=1
timeout 30 python -c "
from numba import cuda
print('numba-cuda sees a GPU:', cuda.is_available())
raise SystemExit(0 if cuda.is_available() and cuda.detect() else 3)
"
if [ $? != 0 ]; then
    echo "gpu_check: no usable GPU (see above); nothing else to check here"
    exit 2
fi

step "2/3 the CUDA tests on the GPU (no simulator)"
timeout 160 python -m pytest -q -p no:cacheprovider -W ignore::RuntimeWarning \
    tests/parallel/test_cuda_cases.py tests/random/test_random_cuda.py -k "not under_the_simulator" -rs || status=1

step "3/3 per-example gradients of logistic regression, N=100000, D=20"
timeout 75 python benchmarks/cases/gpu.py --n 100000 --d 20 --repeats 10 || status=1

echo; echo "gpu_check: $([ $status = 0 ] && echo ok || echo FAILED) ($(date -u +%H:%M:%S))"
exit $status
