import numpy as np
import srctrans.runtime as rt


def f_grad_stage0(w, x):
    # pmap(grad(f)): the adjoint file has the forward pmean and its adjoint, a pmean of the adjoint
    # staged_grad_through_pmean.py:8  t = np.tanh(x * w)
    # staged_grad_through_pmean.f.grad_grads_only_indexed.py:15  t1 = x * w
    t1 = x * w
    # staged_grad_through_pmean.f.grad_grads_only_indexed.py:16  t = np.tanh(t1)
    t = np.tanh(t1)
    return t,


def f_grad_stage1(t, m):
    # staged_grad_through_pmean.py:10  return np.sum((t - m) ** 2)
    # staged_grad_through_pmean.f.grad_grads_only_indexed.py:20  t2 = t - m
    t2 = t - m
    # staged_grad_through_pmean.f.grad_grads_only_indexed.py:21  t3 = t2 ** 2
    t3 = t2 ** 2
    # staged_grad_through_pmean.f.grad_grads_only_indexed.py:22  out = np.sum(t3)
    out = np.sum(t3)
    # --- backward ---
    # staged_grad_through_pmean.py:10  return np.sum((t - m) ** 2)
    # staged_grad_through_pmean.f.grad_grads_only_indexed.py:25  out_bar = rt.grad_seed(out)
    out_bar = rt.grad_seed(out)
    # staged_grad_through_pmean.f.grad_grads_only_indexed.py:26  t3_bar = rt.sum_grad(out_bar, t3, None, False)
    t3_bar = rt.sum_grad(out_bar, t3, None, False)
    # staged_grad_through_pmean.f.grad_grads_only_indexed.py:27  t2_bar = t3_bar * (2 * t2)
    t4 = 2 * t2
    t2_bar = t3_bar * t4
    # staged_grad_through_pmean.f.grad_grads_only_indexed.py:28  t_bar = rt.unbroadcast(t2_bar, t)
    t_bar = rt.unbroadcast(t2_bar, t)
    # staged_grad_through_pmean.f.grad_grads_only_indexed.py:29  m_bar = rt.unbroadcast(-t2_bar, m)
    t5 = -t2_bar
    m_bar = rt.unbroadcast(t5, m)
    return t_bar, m_bar


def f_grad_stage2(w, x, t, t_bar, t6):
    # staged_grad_through_pmean.py:9  m = pmean(t, "i")
    t_bar = t_bar + t6
    # pmap(grad(f)): the adjoint file has the forward pmean and its adjoint, a pmean of the adjoint
    # staged_grad_through_pmean.py:8  t = np.tanh(x * w)
    # staged_grad_through_pmean.f.grad_grads_only_indexed.py:34  t1_bar = t_bar * (1.0 - t * t)
    t7 = t * t
    t8 = 1.0 - t7
    t1_bar = t_bar * t8
    # staged_grad_through_pmean.f.grad_grads_only_indexed.py:35  w_bar = rt.unbroadcast(t1_bar * x, w)
    t9 = t1_bar * x
    w_bar = rt.unbroadcast(t9, w)
    # staged_grad_through_pmean.f.grad_grads_only_indexed.py:36  return w_bar
    return w_bar,


def f_grad_pmap(run, w, x):
    """f_grad over the devices of `run`: 3 stages of per-example code, the collectives between them."""
    # stage 1 of 3: map over the examples
    t, = run.map(f_grad_stage0, (w, x), batched=(False, True))
    # combine: pmean over all the examples (staged_grad_through_pmean.py:9)
    m = run.reduce("sum", t) / t.n
    # stage 2 of 3: map over the examples again
    t_bar, m_bar = run.map(f_grad_stage1, (t, m), batched=(True, False))
    # combine: pmean over all the examples (staged_grad_through_pmean.py:9)
    t6 = run.reduce("sum", m_bar) / m_bar.n
    # stage 3 of 3: map over the examples again
    w_bar, = run.map(f_grad_stage2, (w, x, t, t_bar, t6), batched=(False, True, True, True, False))
    return w_bar,
