"""The module py_fn_calls.py imports: Shaper.step is the function sonde is
asked to time (tests/integration/test_function_python.py). Its slow line is
the one that sums squares; the others are cheap."""
import time


def squares(n):
    return sum(i * i for i in range(n))


class Shaper:
    def __init__(self):
        self.total = 0

    def step(self, n):
        start = time.monotonic_ns()
        self.total += 1
        value = squares(n)  # the slow line
        self.total += value % 7
        return value, time.monotonic_ns() - start
