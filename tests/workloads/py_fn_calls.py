"""Calls pyfn_work.Shaper.step exactly N times (argv[1]) from two places
(run_loop, and run_fifth for each fifth call), with sizes that vary, and
writes the time each call measured itself (inside the function, ns) to
argv[2], one line each, so that a test can compare sonde's numbers with the
function's own (tests/integration/test_function_python.py)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyfn"))
import pyfn_work  # noqa: E402


def run_loop(shaper, i, took):
    took.append(shaper.step(20000 + 10000 * (i % 4))[1])


def run_fifth(shaper, i, took):
    took.append(shaper.step(20000 + 10000 * (i % 4))[1])


def main():
    n = int(sys.argv[1])
    shaper = pyfn_work.Shaper()
    took = []
    for i in range(n):
        if i % 5 == 4:
            run_fifth(shaper, i, took)
        else:
            run_loop(shaper, i, took)
    with open(sys.argv[2], "w") as f:
        f.write("".join("%d\n" % t for t in took))
    print("step called %d times" % n)


if __name__ == "__main__":
    main()
