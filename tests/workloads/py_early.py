"""py_early: busy from its first line: early() spins for 0.1 s of wall time,
then later() for 0.3 s. A sampler that finds the interpreter late misses
early()."""
import time


def early():
    end = time.perf_counter() + 0.1
    while time.perf_counter() < end:
        pass


def later():
    end = time.perf_counter() + 0.3
    while time.perf_counter() < end:
        pass


early()
later()
