"""py_recurse: deep, fast recursion for SECS seconds (default 3): descend()
goes DEPTH (default 150) calls down, where fib(FIB) (default 12) recurses
quickly up and down, then the whole stack unwinds back to <module> and
starts again. Frames are pushed and freed all the time, at every depth.
Prints "ready" first."""
import sys
import time

SECS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 150
FIB = int(sys.argv[3]) if len(sys.argv) > 3 else 12


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def descend(n):
    if n == 0:
        return fib(FIB)
    return descend(n - 1) + 1


print("ready", flush=True)
end = time.time() + SECS
while time.time() < end:
    descend(DEPTH)
