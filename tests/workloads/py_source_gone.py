"""py_source_gone: methods whose source cannot be read (the script removes
itself first, as a deployed .pyc or a deleted checkout would look): before
3.11 their class comes from the frame's self or cls, not the source."""
import os
import sys
import time

if len(sys.argv) > 1:
    os.remove(__file__)  # the copy sonde runs; never the workload itself


class Base:
    def spin(self, seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            sum(i for i in range(100))


class Worker(Base):
    def step(self, seconds):
        end = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < end:
            n += 1
        return n

    @classmethod
    def make(cls, seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
        return cls()


Worker.make(0.8).step(0.8)
Base().spin(0.5)
