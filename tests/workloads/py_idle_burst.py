"""py_idle_burst: a Python idle for IDLE seconds (asleep), then computing in
burst() for BURST seconds of CPU time, then idle for 0.3 s more. The last
line of output is JSON: the burst's start and end (time.monotonic()).
Usage: python py_idle_burst.py [IDLE [BURST]]"""
import json
import sys
import time

IDLE = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
BURST = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2


def burst():
    acc, end = 0, time.process_time() + BURST
    while time.process_time() < end:
        for i in range(500):
            acc = (acc * 31 + i) % 1000003
    return acc


def main():
    time.sleep(IDLE)
    t0 = time.monotonic()
    burst()
    t1 = time.monotonic()
    time.sleep(0.3)
    print(json.dumps({"burst_start": t0, "burst_end": t1}))


if __name__ == "__main__":
    main()
