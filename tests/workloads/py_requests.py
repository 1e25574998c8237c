"""py_requests: a thread-per-request server in miniature: every 50 ms a new
thread named "req-N" (threading's name) handles one request, spinning for
0.2 s, then ends; glibc hands a finished thread's stack, and so its ident,
to the next one. Each thread writes "TID NAME" as it starts. Runs SECS
seconds (default 6)."""
import os
import sys
import threading
import time

SECS = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0


def handle():
    line = "%d %s\n" % (threading.get_native_id(), threading.current_thread().name)
    os.write(1, line.encode())  # one write: lines of two threads never interleave
    end = time.monotonic() + 0.2
    while time.monotonic() < end:
        sum(range(200))


end = time.monotonic() + SECS
n = 0
while time.monotonic() < end:
    threading.Thread(target=handle, name="req-%d" % n).start()
    n += 1
    time.sleep(0.05)
