"""A sonde killed with SIGKILL in the middle of a run leaves a recording that
`sonde report` renders, with CPU samples up to about a second before the kill:
the cpu probe writes its samples as it goes and the recorder commits once a
second."""
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import cpu_common as cc  # noqa: E402
from sonde_test import SONDE, scratch, sonde, workload  # noqa: E402

t = cc.Checks()
check = t.check

KILLS = int(os.environ.get("SONDE_TEST_KILLS", "4"))  # the issue asks for 10 by hand
# The recorder commits once a second and the cpu probe writes every 500 ms;
# the rest is room for a loaded machine (and a sanitized sonde).
BOUND_S = 1.0
MARGIN_S = 2.0


def origin_ns(db_path, read_only=True):
    """CLOCK_MONOTONIC of the recording's t = 0, once it was committed. After
    the kill the recording is opened read-write: a reader of a WAL left by a
    killed writer may have to recover it, which a read-only one cannot."""
    try:
        db = sqlite3.connect("file:%s?mode=ro" % db_path if read_only else db_path,
                             uri=read_only, timeout=5)
        row = db.execute("SELECT value FROM meta WHERE key='cpu_clock_origin_ns'").fetchone()
        db.close()
        return int(row[0]) if row else None
    except sqlite3.Error:
        return None


def cpu_samples(db_path):
    """How many cpu samples the recording has committed."""
    try:
        db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True, timeout=1)
        row = db.execute("SELECT count(*) FROM samples WHERE source='cpu'").fetchone()
        db.close()
        return row[0]
    except sqlite3.Error:
        return 0


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def kill_once(i, delay_s):
    d = os.path.join(scratch("cpu-killed-%d" % i), "run")
    db_path = os.path.join(d, "profile.db")
    p = subprocess.Popen([os.path.abspath(SONDE), "run", "-q", "-o", d, "--",
                          workload("cpu_spin"), "60"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # From the first cpu sample committed on: the first look at libc's and
    # the kernel's symbols (seconds under ASan on a loaded machine) holds the
    # first samples back, as docs/cpu.md says; after it, samples come steadily.
    deadline = time.monotonic() + 120
    while (origin_ns(db_path) is None or not cpu_samples(db_path)) \
            and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.1)
    # Steadily: a second commit with more samples (under make check beside
    # busy loops the first commit came once, then a first look at symbols
    # held the next ones back for seconds).
    first = cpu_samples(db_path)
    while cpu_samples(db_path) <= first and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.1)
    time.sleep(delay_s)
    targets = children(p.pid)
    kill_ns = time.monotonic_ns()
    p.send_signal(signal.SIGKILL)
    p.wait()
    for t in targets:  # the target, left running by its killed profiler
        try:
            os.kill(t, signal.SIGKILL)
        except ProcessLookupError:
            pass
    origin = origin_ns(db_path, read_only=False)
    check("killed run %d: the recording names its clock origin" % i, origin is not None)
    if origin is None:
        return
    r = sonde("report", d, timeout=300)
    check("killed run %d: sonde report renders the recording" % i, r.returncode == 0,
          r.stderr[-500:])
    db = sqlite3.connect(db_path)
    last = db.execute("SELECT max(t_ns), count(*) FROM samples WHERE source='cpu'").fetchone()
    db.close()
    late_s = (kill_ns - origin - last[0]) / 1e9 if last[0] is not None else None
    print("killed run %d %.1f s after the first sample: %d cpu samples, the last %s s before the kill"
          % (i, delay_s, last[1], "%.2f" % late_s if late_s is not None else "-"))
    check("killed run %d: cpu samples up to about %.0f s before the kill (%.1f s margin)"
          % (i, BOUND_S, MARGIN_S),
          late_s is not None and late_s <= BOUND_S + MARGIN_S, "last sample %s s before"
          % late_s)
    report = os.path.join(d, "report.json")
    if os.path.exists(report):
        with open(report) as f:
            hot = json.load(f).get("hotspots") or []
        check("killed run %d: the report's top hotspot is the workload's loop" % i,
              hot and hot[0].get("function") == "main", str(hot[:1]))


def main():
    seed = int(os.environ.get("SONDE_TEST_SEED", time.time()))
    rng = random.Random(seed)
    print("seed %d" % seed)
    for i in range(KILLS):
        kill_once(i, rng.uniform(1.0, 5.0))
    t.finish()


if __name__ == "__main__":
    main()
