"""The seed's first gradient: d/dx tanh(x) at 1.0 is 0.4199743, from a generated adjoint.

Run:  python examples/grad_tanh.py
"""

import numpy as np

import srctrans


def tanh(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


if __name__ == "__main__":
    dtanh = srctrans.grad(tanh)
    print(f"grad(tanh)(1.0) = {dtanh(1.0):.7f}   (1 - tanh(1)^2 = {1.0 - np.tanh(1.0) ** 2:.7f})")
    print(srctrans.source(dtanh))
