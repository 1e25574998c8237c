#!/usr/bin/env python3
"""What counting every system call costs the program: sonde's syscalls probe
against `strace -c`, on tests/workloads/log_writer (N requests, each logged
with its own write(2), an fsync every 20 000), a system-call storm. The workload times its own loop (elapsed_s in its last line), so
sonde's and strace's start-up and reports are not counted. Runs are
interleaved (alone, sonde, strace, alone, ...), REPEAT times each; the
medians, the slowdowns (median / alone's median - 1) and their ratio are
printed. The acceptance: strace's slowdown at least 5 times sonde's.
Numbers, not pass/fail: record them in docs/performance.md.

usage: bench/syscall_cost.py [--repeat N] [--requests N] [--sonde PATH]
       [--workload PATH] [--probes LIST]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def elapsed(cmd, out_dir):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit("%s failed (%d): %s" % (cmd[0], p.returncode, p.stderr[-800:]))
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1])["elapsed_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--sonde", default=os.path.join(ROOT, "build", "sonde"))
    ap.add_argument("--workload", default=os.path.join(ROOT, "build", "workloads",
                                                       "log_writer"))
    ap.add_argument("--probes", default="cpu,syscalls",
                    help="sonde's probes (default cpu,syscalls: the syscalls probe needs "
                         "the cpu probe's stacks)")
    a = ap.parse_args()
    strace = shutil.which("strace")
    work = tempfile.mkdtemp(prefix="sonde-syscall-cost-")
    base = [a.workload, work, str(a.requests)]
    runs = {"alone": [], "sonde": [], "strace": []}
    try:
        for i in range(a.repeat):
            runs["alone"].append(elapsed(base, work))
            run_dir = os.path.join(work, "run%d" % i)
            runs["sonde"].append(elapsed([a.sonde, "run", "-q", "--probes", a.probes, "-o",
                                          run_dir, "--"] + base, work))
            if strace:
                runs["strace"].append(elapsed([strace, "-c", "-f", "-o",
                                               os.path.join(work, "strace.txt")] + base, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    alone = statistics.median(runs["alone"])
    print("log_writer %d requests, %d runs each, load average %s at the end"
          % (a.requests, a.repeat, load))
    slow = {}
    for name, v in runs.items():
        if not v:
            print("%-7s not run (not installed)" % name)
            continue
        med = statistics.median(v)
        slow[name] = med / alone - 1
        print("%-7s median %.3f s (%s)  slowdown %+.1f%%" % (
            name, med, " ".join("%.3f" % x for x in v), 100 * slow[name]))
    if "strace" in slow and slow.get("sonde", 0) > 0:
        print("strace's slowdown / sonde's: %.1f" % (slow["strace"] / slow["sonde"]))


if __name__ == "__main__":
    main()
