"""A Python thread that computes without pause, but shares its one CPU with a
busy loop (both pinned to one core with taskset: it runs about half the
time and waits in the run queue the rest), is never blocked: its python
samples are on the CPU (on_cpu 1) or queued for a CPU (on_cpu 2), hardly ever
blocked (0), and report.json's thread row says so (runq_pct, idle_pct). Before
run-queue wait had its own state, half its samples were off the CPU, read as
waits at its computing line. At the default rate (a clock read per sample)
and at 499 Hz (samples queued until their clock is read). The same for a
thread that computes in native code without the GIL (hashlib on 1 MiB
buffers): runnable, not blocked, though it holds no GIL; and for such a
thread beside a main thread that holds the GIL computing, where its shares
(on the CPU, queued, blocked: waiting for the GIL between two buffers) are
checked against its own schedstat. Exit 77 without taskset or a CPython."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, cpython_exes, db, main, run_profile, skip  # noqa: E402

SPIN = """
import time
end = time.monotonic() + 3.0
n = 0
while time.monotonic() < end:
    n += sum(range(200))
print(n > 0)
"""

HASH = """
import hashlib, os, threading, time
data = os.urandom(1 << 20)
def work():
    end = time.monotonic() + 3.0
    while time.monotonic() < end:
        hashlib.sha256(data).digest()  # releases the GIL for the whole buffer
t = threading.Thread(target=work, name="hasher")
t.start()
t.join()
print("done")
"""

# The hasher beside a main thread that computes holding the GIL; it prints
# its own truth: its CPU time, run-queue wait and the rest (blocked) as shares
# of its life, from its schedstat.
BESIDE = """
import hashlib, os, threading, time
data = os.urandom(1 << 20)
def stat():
    with open("/proc/self/task/%d/schedstat" % threading.get_native_id()) as f:
        a = f.read().split()
    return time.monotonic_ns(), int(a[0]), int(a[1])
def work():
    w0, c0, q0 = stat()
    end = time.monotonic() + 3.0
    while time.monotonic() < end:
        hashlib.sha256(data).digest()
    w1, c1, q1 = stat()
    wall = w1 - w0
    print("truth", 100 * (c1 - c0) / wall, 100 * (q1 - q0) / wall,
          100 * (wall - (c1 - c0) - (q1 - q0)) / wall)
t = threading.Thread(target=work, name="hasher")
t.start()
end = time.monotonic() + 3.0
n = 0
while time.monotonic() < end:
    n += sum(range(200))
t.join()
"""

TASKSET = shutil.which("taskset")
if not TASKSET:
    skip("taskset (util-linux) is not installed")
found, _ = cpython_exes()
if not found:
    skip("no CPython 3.8-3.13 found")
PYTHON = found[-1][1]
CPU = str(min(os.sched_getaffinity(0)))
LAST_STDOUT = [""]


def profile(name, *options, script=SPIN, thread=None):
    """(counts of on_cpu 0/1/2 of the main thread's python samples, or of the
    thread named thread, its row in report.json's python.threads), with a
    busy loop on the target's core."""
    hog = subprocess.Popen([TASKSET, "-c", CPU, "sh", "-c", "while :; do :; done"])
    try:
        p, d, r = run_profile(name, [TASKSET, "-c", CPU, PYTHON, "-c", script], "--probes",
                              "proc,python", *options)
    finally:
        hog.kill()
        hog.wait()
    if r is None:
        raise AssertionError("no report.json; stderr: " + p.stderr[-500:])
    LAST_STDOUT[0] = p.stdout
    threads = r["python"]["threads"]
    tid = threads[0]["pid"]
    if thread:
        named = [t for t in threads if t.get("name") == thread]
        assert named, f"no thread named {thread}: {threads}"
        tid = named[0]["tid"]
    con = db(d)
    rows = dict(con.execute("SELECT on_cpu, count(*) FROM samples WHERE source = 'python'"
                            " AND tid = ? GROUP BY on_cpu", (tid,)).fetchall())
    con.close()
    row = next(t for t in threads if t["tid"] == tid)
    return {k: rows.get(k, 0) for k in (0, 1, 2)}, row


def judge(counts, row):
    total = sum(counts.values())
    detail = f"on_cpu 0/1/2: {counts}, thread row {row}"
    print(detail)
    assert total >= 100, "too few samples: " + detail
    # Half the time queued: at least a fifth of the samples say so.
    assert counts[2] >= 0.2 * total, "run-queue samples missing: " + detail
    # It never blocks: the few 0s are rounding at the clock's reads.
    assert counts[0] <= 0.15 * total, "a computing thread called blocked: " + detail
    assert row["runq_pct"] >= 20 and row["idle_pct"] <= 15, "thread row: " + detail


@check("a computing thread queued for its CPU is on it or queued, not blocked, at the default rate")
def default_rate():
    judge(*profile("runq99"))


@check("the same at 499 Hz, where samples wait for their clock's read")
def high_rate():
    judge(*profile("runq499", "-r", "499"))


@check("a thread computing in native code without the GIL, queued for its CPU, is not blocked")
def without_gil():
    judge(*profile("runq-nogil", script=HASH, thread="hasher"))


@check("a thread computing without the GIL beside a thread that holds it: its shares on the "
       "CPU, queued and blocked agree with its own schedstat")
def beside_gil_holder():
    counts, row = profile("runq-beside", script=BESIDE, thread="hasher")
    truth = [line for line in LAST_STDOUT[0].splitlines() if line.startswith("truth ")]
    assert truth, "the workload printed no truth: " + LAST_STDOUT[0][-300:]
    cpu, runq, blocked = (float(x) for x in truth[0].split()[1:])
    detail = (f"truth cpu {cpu:.0f}% runq {runq:.0f}% blocked {blocked:.0f}%; "
              f"on_cpu 0/1/2 {counts}, thread row {row}")
    print(detail)
    assert sum(counts.values()) >= 100, "too few samples: " + detail
    # Before its runnable samples without the GIL could be queued beside a
    # GIL holder, runq read about 10% against a truth of about 50%.
    assert abs(row["runq_pct"] - runq) <= 20, "queued share: " + detail
    assert abs(row["idle_pct"] - blocked) <= 20, "blocked share: " + detail


main()
