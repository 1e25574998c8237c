"""py_regions.py: a Python program that names its regions with the sonde
module (python/sonde, on PYTHONPATH), with its own clock around each, for
test_regions. Writes to argv[1] one line per region: "name a b c d", the
region's opening ran between a and b (CLOCK_MONOTONIC) and its closing
between c and d. Regions on the main thread: "prepare" (a with block,
60 ms busy), then "fit" (a decorated function, 120 ms busy)."""
import sys
import time

import sonde


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def spin_ms(ms):
    until = now_ns() + ms * 1000000
    x = 1.0
    while now_ns() < until:
        x = x * 1.0000001 + 1e-9
    return x


class Clocked(object):
    """Readings around a region's opening and closing."""

    def __init__(self):
        self.t = []


@sonde.region("fit")
def fit(clock):
    clock.t.append(now_ns())
    spin_ms(120)
    clock.t.append(now_ns())


def main():
    prepare, fitted = [], Clocked()
    prepare.append(now_ns())
    with sonde.region("prepare"):
        prepare.append(now_ns())
        spin_ms(60)
        prepare.append(now_ns())
    prepare.append(now_ns())
    start = now_ns()
    fit(fitted)
    end = now_ns()
    fit_t = [start, fitted.t[0], fitted.t[1], end]
    with open(sys.argv[1], "w") as f:
        f.write("prepare %d %d %d %d\n" % tuple(prepare))
        f.write("fit %d %d %d %d\n" % tuple(fit_t))
        f.write("active %d 0 0 0\n" % int(sonde.active))


main()
