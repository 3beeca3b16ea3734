def f(x, n):
    # control.py:5  total = 0.0
    total = 0.0
    # control.py:6  i = 0
    i = 0
    # control.py:7  while i < n and total < 10.0:
    cond = i < n
    if cond:
        cond = total < 10.0
    while cond:
        # control.py:8  i += 1
        i += 1
        # control.py:9  if i % 3 == 0:
        t1 = i % 3
        t2 = t1 == 0
        if t2:
            # control.py:10  continue
            cond = i < n
            if cond:
                cond = total < 10.0
            continue
        else:
            # control.py:11  elif i % 5 == 0 or x > 100.0:
            t3 = i % 5
            t4 = t3 == 0
            t5 = not t4
            if t5:
                t4 = x > 100.0
            if t4:
                # control.py:12  total = total + 2.0 * x
                t6 = 2.0 * x
                total = total + t6
            else:
                # control.py:14  total += x if x > 0 else -x
                t7 = x > 0
                if t7:
                    t8 = x
                else:
                    t8 = -x
                total += t8
        cond = i < n
        if cond:
            cond = total < 10.0
    # control.py:15  for k in range(n - 1):
    t9 = n - 1
    for k in range(t9):
        # control.py:16  total = total - 0.5 * k
        t10 = 0.5 * k
        total = total - t10
    # control.py:17  return total
    return total
