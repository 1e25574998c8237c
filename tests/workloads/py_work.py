"""py_work: a fixed amount of pure-Python work done 30 frames deep (a chain
of calls, then a loop), timing itself: its last line is "elapsed_s=<s>"
(perf_counter around the work). Benchmarks compare that time with and
without a profiler; fixed work, not fixed time, makes a slowdown visible.
With "calls" the loop calls a small function every round (a call-heavy
program, where a tracing profiler such as cProfile pays per call).
Usage: python py_work.py [WORK [calls]]   (WORK: thousands of rounds, default 3000)"""
import sys
import time

WORK = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
CALLS = len(sys.argv) > 2 and sys.argv[2] == "calls"
DEPTH = 30


def step(acc, i):
    return (acc + i * i) % 1000003


def descend(depth, n):
    if depth > 1:
        return descend(depth - 1, n)
    return spin(n)


def spin(n):
    acc = 0
    if CALLS:
        for i in range(n):
            acc = step(acc, i)
        return acc
    for i in range(n):
        acc = (acc + i * i) % 1000003
    return acc


def main():
    t0 = time.perf_counter()
    total = 0
    for _ in range(WORK // 10):
        total += descend(DEPTH - 2, 10000)  # <module> + main + 27 descend + spin
    elapsed = time.perf_counter() - t0
    print(f"checksum={total}")
    print(f"elapsed_s={elapsed:.6f}")


main()
