# vmap method: a loop over the examples, because the vectorized rewrite stops at line 4: a while loop whose condition depends on batched values (a different trip count per example)

import srctrans.runtime as rt


def f(a):
    # a while loop whose trip count depends on the example: only the loop can batch it
    # batched_newton_while.py:3  x = a
    x = a
    # batched_newton_while.py:4  while abs(x * x - a) > 1e-10:
    while abs(x * x - a) > 1e-10:
        # batched_newton_while.py:5  x = 0.5 * (x + a / x)
        x = 0.5 * (x + a / x)
    # batched_newton_while.py:6  return x
    return x


def f_vmap(a):
    # vmap by a loop over the examples: the vectorized rewrite stops at line 4: a while loop whose condition depends on batched values (a different trip count per example)
    n = a.shape[0]  # the batch size
    out = f(rt.batch_example(a))  # the first example (zeros for an empty batch) sizes the results
    out_batch = rt.batch_alloc(out, n)
    for i in range(1, n):
        out_i = f(a[i])
        out_batch[i] = out_i
    return out_batch
