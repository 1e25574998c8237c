"""py_early: busy from its first line: early() spins for 0.2 s of wall time,
then later() for 0.6 s. A sampler that finds the interpreter late misses
early()."""
import time


def early():
    end = time.perf_counter() + 0.2
    while time.perf_counter() < end:
        pass


def later():
    end = time.perf_counter() + 0.6
    while time.perf_counter() < end:
        pass


early()
later()
