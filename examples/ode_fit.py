"""Fit an ODE parameter through a 1,000-step explicit-Euler Python loop with srctrans.value_and_grad.

y' = -k y + sin(t) is integrated by a plain Python loop; the loss compares the end
state with an observation made with k = 0.8. The loop stays a loop in the generated
adjoint (the values it needs go on tapes), where JAX would unroll it.

Run:  python examples/ode_fit.py
"""

from __future__ import annotations

import time

import numpy as np

import srctrans

STEPS = 1000
DT = 0.01


def end_state(k, y0):
    y = y0
    for i in range(STEPS):
        y = y + DT * (-k * y + np.sin(DT * i))
    return y


def loss(k, y0, observed):
    y = y0
    for i in range(STEPS):
        y = y + DT * (-k * y + np.sin(DT * i))
    return (y - observed) ** 2


def main() -> None:
    k_true, y0 = 0.8, 1.5
    observed = end_state(k_true, y0)
    value_and_grad = srctrans.value_and_grad(loss)
    k = 0.3
    start = time.perf_counter()
    for step in range(8):
        value, g = value_and_grad(k, y0, observed)
        print(f"step {step}  k {k:.8f}  loss {value:.3e}  dloss/dk {g: .3e}")
        if value < 1e-24:
            break
        k = k - 2.0 * value / g  # Gauss-Newton on the residual y(k) - observed
    print(f"fitted k = {k:.8f} (true {k_true}) in {time.perf_counter() - start:.2f} s")
    print(f"generated adjoint: {srctrans.source_path(value_and_grad)}")


if __name__ == "__main__":
    main()
