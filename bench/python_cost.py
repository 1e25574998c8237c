#!/usr/bin/env python3
"""sonde's own cost while it samples Python, in two cases from the hardening
issue: N busy Python threads at -r 999 (sonde's CPU time as a share of the
target's, and the share of the Python samples it took: python_samples over
each thread's sampled span times the rate), and an idle Python (a sleeping
process) at the default rate (sonde's CPU as a share of one core). sonde's
CPU (/proc/PID/task/*/schedstat) and the target's (utime + stime) are read every 0.1 s
while the target runs, and compared over the steady part of the run (from
--settle seconds after the target started to its end: sonde's start-up and
its report are not sampling). Several sonde binaries (before and after a
change) run interleaved, REPEAT times each; medians are printed.
Numbers, not pass/fail: record them in docs/performance.md.

usage: bench/python_cost.py [--repeat N] [--seconds S] [--idle-seconds S] [--threads N]
       [--python PATH] [--probes P] [--sonde PATH[,PATH...]]
"""
import argparse
import glob
import os
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOAD = os.path.join(ROOT, "tests", "workloads", "py_spin_threads.py")


def default_python():
    exes = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12.*/bin/python3")))
    return exes[-1] if exes else "/usr/bin/python3"


def cpu_ns(pid):
    total = 0
    for f in glob.glob("/proc/%d/task/*/schedstat" % pid):
        try:
            with open(f) as fh:
                total += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def process_cpu_ns(pid):
    """utime + stime of a process, its exited threads included (clock ticks)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1e9 / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0


def children(pid):
    """pid's children: its children file, or (a kernel without
    CONFIG_PROC_CHILDREN) every process whose parent it is."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return f.read().split()
    except FileNotFoundError:
        pass
    except OSError:
        return []
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    kids.append(d)
        except (OSError, ValueError, IndexError):
            pass
    return kids


def alive(pid):
    """pid runs (not a zombie, not reaped)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def target_pid(pid):
    """sonde's child that is not a zombie (the target), or None."""
    for k in children(pid):
        if alive(int(k)):
            return int(k)
    return None


def run_once(sonde, out, args, command, settle_s):
    """One run; sonde's CPU and the target's over the steady part (from
    settle_s after the target started to its last reading alive)."""
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.Popen([sonde, "run", "-q", "-o", out] + args + ["--"] + command,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    readings = []  # (mono_s, sonde cpu ns, target cpu ns) while the target runs
    tp = None
    while p.poll() is None:
        tp = tp or target_pid(p.pid)  # found once: without a children file a look is a scan
        if tp and alive(tp):
            readings.append((time.monotonic(), cpu_ns(p.pid), process_cpu_ns(tp)))
        time.sleep(0.1)
    if p.returncode != 0:
        raise RuntimeError("sonde exited %d: %s" % (p.returncode, p.stderr.read()[-300:]))
    steady = [r for r in readings if r[0] >= readings[0][0] + settle_s]
    if len(steady) < 2:
        raise RuntimeError("too short a run to measure")
    (t0, s0, c0), (t1, s1, c1) = steady[0], steady[-1]
    db = sqlite3.connect(os.path.join(out, "profile.db"))
    meta = dict(db.execute("SELECT key, value FROM meta"))
    rate = int(meta.get("python_rate_hz", 99))
    expected = 0.0
    for n, first, last in db.execute("SELECT COUNT(*), MIN(t_ns), MAX(t_ns) FROM samples"
                                     " WHERE source = 'python' GROUP BY tid"):
        expected += (last - first) * rate / 1e9 + 1
    db.close()
    samples = int(meta.get("python_samples", 0))
    return {"sonde_cpu_s": (s1 - s0) / 1e9, "target_cpu_s": (c1 - c0) / 1e9, "wall_s": t1 - t0,
            "taken": samples / expected if expected else 0.0,
            "us_per_sample": int(meta.get("python_sampling_ns", 0)) / 1e3 / max(samples, 1)}


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--idle-seconds", type=float, default=30.0)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--settle", type=float, default=2.0,
                    help="seconds after the target's start not counted (sonde's start-up)")
    ap.add_argument("--python", default=default_python())
    ap.add_argument("--probes", default="proc,python")
    ap.add_argument("--sonde", default=os.path.join(ROOT, "build", "sonde"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="sonde-cost-")
    cases = [("%d busy threads, -r 999" % args.threads, ["-r", "999"],
              [args.python, WORKLOAD, str(args.threads), str(args.seconds)]),
             ("idle Python, default rate", [],
              [args.python, WORKLOAD, "0", str(args.idle_seconds)])]
    sondes = args.sonde.split(",")
    res = {}
    print("load average at start %s, %d cores" % (loadavg(), os.cpu_count()), flush=True)
    for rep in range(args.repeat):
        for name, extra, cmd in cases:
            for s in sondes:
                r = run_once(s, os.path.join(tmp, "run"), extra + ["--probes", args.probes], cmd,
                             args.settle)
                res.setdefault((name, s), []).append(r)
                print("  run %d %s [%s]: sonde %.3f s CPU, target %.2f s CPU, wall %.1f s, "
                      "%.0f%% of samples, %.0f us/sample" % (
                          rep + 1, name, s, r["sonde_cpu_s"], r["target_cpu_s"], r["wall_s"],
                          100 * r["taken"], r["us_per_sample"]), flush=True)
    print("load average at end %s" % loadavg())
    print()
    print("| case | sonde | sonde CPU / target CPU | sonde CPU / wall (share of a core) |"
          " samples taken | us per sample |")
    print("|---|---|---|---|---|---|")
    for (name, s), rs in res.items():
        med = lambda f: statistics.median(f(r) for r in rs)  # noqa: E731
        ratio = "-"  # an idle target's CPU is too small to divide by
        if med(lambda r: r["target_cpu_s"]) >= 0.05:
            ratio = "%.1f%%" % (100 * med(lambda r: r["sonde_cpu_s"] / r["target_cpu_s"]))
        print("| %s | %s | %s | %.2f%% | %.0f%% | %.0f |" % (
            name, s, ratio,
            100 * med(lambda r: r["sonde_cpu_s"] / r["wall_s"]), 100 * med(lambda r: r["taken"]),
            med(lambda r: r["us_per_sample"])))


if __name__ == "__main__":
    main()
