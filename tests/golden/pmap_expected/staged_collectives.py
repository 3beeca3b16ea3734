def f_stage0(x, lo, hi):
    # staged_collectives.py:10  scaled = (x - lo) / (hi - lo)
    num = x - lo
    den = hi - lo
    scaled = num / den
    return scaled,


def f_stage1(scaled, hi, every, i):
    # staged_collectives.py:13  return every @ scaled + i, hi
    t1 = every @ scaled
    t2 = t1 + i
    return t2, hi


def f_pmap(run, x):
    """f over the devices of `run`: 2 stages of per-example code, the collectives between them."""
    # combine: pmin over all the examples (staged_collectives.py:8)
    lo = run.reduce("min", x)
    # combine: pmax over all the examples (staged_collectives.py:9)
    hi = run.reduce("max", x)
    # stage 1 of 2: map over the examples
    scaled, = run.map(f_stage0, (x, lo, hi), batched=(True, False, False))
    # combine: all_gather over all the examples (staged_collectives.py:11)
    every = run.reduce("gather", scaled)
    # axis_index (staged_collectives.py:12): each example's index in the whole batch
    i = run.example_indices(x)
    # stage 2 of 2: map over the examples again
    t2, hi = run.map(f_stage1, (scaled, hi, every, i), batched=(True, False, False, True))
    return t2, hi
