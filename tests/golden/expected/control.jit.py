def f(x, n):
    # control.py:5  total = 0.0
    total = 0.0
    # control.py:6  i = 0
    i = 0
    # control.py:7  while i < n and total < 10.0:
    while i < n and total < 10.0:
        # control.py:8  i += 1
        i += 1
        # control.py:9  if i % 3 == 0:
        if i % 3 == 0:
            # control.py:10  continue
            continue
        # control.py:11  elif i % 5 == 0 or x > 100.0:
        elif i % 5 == 0 or x > 100.0:
            # control.py:12  total = total + 2.0 * x
            total = total + 2.0 * x
        else:
            # control.py:14  total += x if x > 0 else -x
            total += x if x > 0 else -x
    # control.py:15  for k in range(n - 1):
    for k in range(n - 1):
        # control.py:16  total = total - 0.5 * k
        total = total - 0.5 * k
    # control.py:17  return total
    return total
