"""py_loop_threads: THREADS (default 3) threads, each running loop() for
SECS seconds (default 2): a for loop whose body ends in an if, so its jump
back has no line of its own in 3.10+ (co_lines() says None) and the threads,
taking turns at the GIL, wait for it there."""
import sys
import threading
import time

SECS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
THREADS = int(sys.argv[2]) if len(sys.argv) > 2 else 3


def loop():
    end = time.time() + SECS
    total = 0
    while time.time() < end:
        for i in range(1000):
            if i % 3:
                total += i
    return total


threads = [threading.Thread(target=loop) for _ in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
