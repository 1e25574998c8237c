"""py_reexec: a supervisor that forks a worker which prepares for a second
(waits, as if loading its configuration), then execs the same Python to serve
(work() on the CPU for about 1 s), the way daemons and prefork servers
re-exec themselves. Before its exec the worker is a copy of the supervisor.
Usage: python py_reexec.py [serve]"""
import os
import sys
import time


def work(n):
    t = 0
    for i in range(n):
        t += i
    return t


def prepare():
    time.sleep(1.0)


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        work(10_000_000)
        sys.exit(0)
    pid = os.fork()
    if pid == 0:
        prepare()
        os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), "serve"])
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode")
             else status >> 8)
