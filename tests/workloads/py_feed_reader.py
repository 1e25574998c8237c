"""A nightly job that pulls a feed from an upstream command and summarises it.

The upstream (a child process standing in for a slow export tool) prints
one CSV row about every 40 ms; the job reads its stdout line by line, so the
fetch stage waits on the pipe, then totals the rows (a stage that computes).

usage: py_feed_reader.py [ROWS] (default 40)
"""
import subprocess
import sys
import time

UPSTREAM = r"""
import sys, time
for i in range(int(sys.argv[1])):
    print("%d,item-%d,%d" % (i, i % 7, (i * 37) % 101), flush=True)
    time.sleep(0.04)
"""


def fetch_rows(n):
    proc = subprocess.Popen([sys.executable, "-c", UPSTREAM, str(n)],
                            stdout=subprocess.PIPE, text=True)
    rows = []
    for line in proc.stdout:
        rows.append(line.rstrip("\n").split(","))
    proc.wait()
    return rows


def summarise(rows, rounds=400000):
    totals = {}
    for r in range(rounds):
        row = rows[r % len(rows)]
        totals[row[1]] = totals.get(row[1], 0) + int(row[2])
    return totals


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    t = time.perf_counter()
    print("Starting fetch", flush=True)
    rows = fetch_rows(n)
    print("fetch done in %.2fs" % (time.perf_counter() - t), flush=True)
    t = time.perf_counter()
    print("Starting summarise", flush=True)
    totals = summarise(rows)
    print("summarise done in %.2fs" % (time.perf_counter() - t), flush=True)
    print(len(rows), sum(totals.values()))


if __name__ == "__main__":
    main()
