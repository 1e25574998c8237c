"""py_native: one Python function spends its time inside a C extension
(hashlib), another in pure Python, for about the given seconds of CPU time
(default 1.5: CPU time, not wall time, so a busy machine gets the same work
sampled). A profile should show the native hashing frames under `hashing`."""
import hashlib
import sys
import time


def hashing(data):
    for _ in range(20):
        hashlib.sha256(data).digest()


def pure(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
    data = b"x" * (4 << 20)
    end = time.process_time() + seconds
    while time.process_time() < end:
        hashing(data)
        pure(300000)


main()
