"""The seed's gradients: d/dx tanh(x) at 1.0 is 0.4199743, and the second derivative -0.6396999.

``grad(grad(tanh))`` differentiates the generated adjoint file of ``grad(tanh)`` again:
both files are printed, and both compile with ``srctrans.jit``.

Run:  python examples/grad_tanh.py
"""

import numpy as np

import srctrans


def tanh(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


if __name__ == "__main__":
    dtanh = srctrans.grad(tanh)
    d2tanh = srctrans.grad(srctrans.grad(tanh))
    t = np.tanh(1.0)
    print(f"grad(tanh)(1.0)       = {dtanh(1.0):.7f}   (1 - tanh(1)^2          = {1.0 - t ** 2:.7f})")
    print(f"grad(grad(tanh))(1.0) = {d2tanh(1.0):.7f}  (-2 tanh(1) (1 - tanh(1)^2) = {-2.0 * t * (1.0 - t ** 2):.7f})")
    print(f"compiled:               {srctrans.jit(d2tanh)(1.0):.7f}")
    print(srctrans.source(dtanh))
    print(srctrans.source(d2tanh))
