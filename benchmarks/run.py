"""Run srctrans's benchmarks and print side-by-side tables.

    python benchmarks/run.py                      # every case
    python benchmarks/run.py --only latency       # one case (comma-separate several)
    python benchmarks/run.py --repeats 20 --plot bench.png

Benchmarks report; they never fail a build: a case that breaks prints its error
and the run goes on (exit status 0). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # harness, cases
sys.path.insert(1, os.path.dirname(HERE))  # srctrans and numba_backend from this checkout

import harness  # noqa: E402
from cases import (  # noqa: E402
    dask_overhead,
    elementwise,
    forward,
    gradients,
    latency,
    long_functions,
    loops,
    pmap,
    programs,
    random_numbers,
    vmap,
)

CASES = {
    elementwise.NAME: elementwise,
    latency.NAME: latency,
    gradients.NAME: gradients,
    forward.NAME: forward,
    loops.NAME: loops,
    vmap.NAME: vmap,
    random_numbers.NAME: random_numbers,
    pmap.NAME: pmap,
    dask_overhead.NAME: dask_overhead,
    long_functions.NAME: long_functions,
    programs.NAME: programs,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--repeats", type=int, default=10, help="timed calls per implementation, in one process (default 10)"
    )
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per latency figure (default 5)")
    parser.add_argument("--plot", metavar="OUT.png", help="also draw a bar chart (needs matplotlib)")
    parser.add_argument("--only", metavar="NAME", help=f"run only these cases, comma-separated: {', '.join(CASES)}")
    args = parser.parse_args(argv)

    names = list(CASES)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in CASES]
        if unknown:
            parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")

    harness.print_environment(harness.environment())
    started = time.perf_counter()
    results = []
    for name in names:
        print()
        print(f"== {name} " + "=" * max(0, 70 - len(name)))
        case = CASES[name]
        count = args.runs if name in (latency.NAME, long_functions.NAME) else args.repeats
        case_start = time.perf_counter()
        try:
            if name == gradients.NAME:  # its first-call figures: fresh processes, at most 3 (JAX's take ~6 s each)
                result = case.run(count, runs=min(args.runs, 3))
            elif name == programs.NAME:  # its first calls: fresh processes, at most 2 (each compiles from scratch)
                result = case.run(count, runs=min(args.runs, 2))
            else:
                result = case.run(count)
        except Exception:
            print(f"case {name} failed:")
            traceback.print_exc(file=sys.stdout)
            continue
        harness.print_table(result)
        print(f"({name}: {time.perf_counter() - case_start:.0f} s)")
        results.append(result)
    print()
    print(f"total {time.perf_counter() - started:.0f} s")
    if args.plot:
        harness.plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
