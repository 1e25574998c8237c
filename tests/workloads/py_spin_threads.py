"""py_spin_threads: N Python threads (default 8) computing for SECS seconds
(default 10), or, with N = 0, a Python that only sleeps for SECS seconds (an
idle service). Usage: python py_spin_threads.py [N [SECS]]"""
import sys
import threading
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 8
SECS = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0


def crunch(seed):
    end = time.monotonic() + SECS
    acc = seed
    while time.monotonic() < end:
        for i in range(2000):
            acc = (acc * 31 + i) % 1000003
    return acc


def main():
    if N == 0:
        time.sleep(SECS)
        return
    threads = [threading.Thread(target=crunch, args=(i,), name="crunch-%d" % i) for i in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
