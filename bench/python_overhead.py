#!/usr/bin/env python3
"""Python target slowdown under sonde's python probe, beside cProfile.

Runs a fixed-work Python workload (tests/workloads/py_work.py: pure-Python
loop 30 frames deep, timing itself) with no profiler, under `python -m
cProfile`, and under sonde at 99 Hz and 1 kHz (`--probes proc,python`, and
the default probes), interleaved, REPEAT times each; prints the median of the
workload's own time as a ratio to the baseline of the same run, sonde's cost
per stack read (meta python_sampling_ns / stacks read), and whether ticks
were missed: python_samples against rate x sampled span, with the polls
that came late (python_ticks_late) and the ticks they slept through
(python_ticks_missed).
Numbers, not pass/fail: record them in docs/performance-python.md.

usage: bench/python_overhead.py [--python PATH] [--repeat N] [--work N] [--calls] [--sonde PATH]
"""
import argparse
import glob
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOAD = os.path.join(ROOT, "tests", "workloads", "py_work.py")


def default_python():
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
    except OSError:
        root = ""
    exes = sorted(glob.glob(os.path.join(root or os.path.expanduser("~/.pyenv"), "versions",
                                         "3.12.*", "bin", "python3")))
    return exes[-1] if exes else "/usr/bin/python3"


def configs(sonde, py, out):
    """name -> argv prefix before [script, work]; sonde runs write to out."""
    s = [sonde, "run", "-q", "--force", "-o", out]
    return {
        "baseline": [py],
        "python -m cProfile": [py, "-m", "cProfile", "-o", out + ".prof"],
        "sonde -r 99 proc,python": s + ["-r", "99", "--probes", "proc,python", "--", py],
        "sonde -r 1000 proc,python": s + ["-r", "1000", "--probes", "proc,python", "--", py],
        "sonde -r 99 (defaults)": s + ["-r", "99", "--", py],
        "sonde -r 1000 (defaults)": s + ["-r", "1000", "--", py],
    }


def run_once(prefix, work, calls):
    extra = ["calls"] if calls else []
    p = subprocess.run(prefix + [WORKLOAD, str(work)] + extra, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"exit {p.returncode}: {p.stderr.strip()[:300]}")
    lines = [l for l in p.stdout.splitlines() if l.startswith("elapsed_s=")]
    if not lines:
        raise RuntimeError(f"no elapsed_s line: {p.stdout[-300:]}")
    return float(lines[-1].split("=")[1])


def sampling(out):
    """(us per stack read, samples, expected samples, late, missed) from a run's profile.db."""
    db = sqlite3.connect(os.path.join(out, "profile.db"))
    meta = dict(db.execute("SELECT key, value FROM meta"))
    n = int(meta.get("python_samples", 0))
    ns = int(meta.get("python_sampling_ns", 0))
    hz = int(meta.get("python_rate_hz", 99))
    late = int(meta.get("python_ticks_late", 0))
    missed = int(meta.get("python_ticks_missed", 0))
    first, last = db.execute("SELECT MIN(t_ns), MAX(t_ns) FROM samples"
                             " WHERE source = 'python'").fetchone()
    db.close()
    expected = (last - first) / 1e9 * hz + 1 if first is not None else 0
    reads = n - late
    return (ns / reads / 1e3 if reads > 0 else float("nan")), n, expected, late, missed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default=default_python())
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", type=int, default=3000, help="thousands of rounds (3000: ~1 s)")
    ap.add_argument("--sonde", default=os.path.join(ROOT, "build", "sonde"))
    ap.add_argument("--calls", action="store_true",
                    help="call a small function every round (call-heavy workload)")
    args = ap.parse_args()
    if not os.access(args.sonde, os.X_OK):
        sys.exit(f"bench: {args.sonde} is not built (run make)")
    tmp = tempfile.mkdtemp(prefix="sonde-pybench-")
    out = os.path.join(tmp, "run")
    cfg = configs(args.sonde, args.python, out)
    times = {k: [] for k in cfg}
    costs = {k: [] for k in cfg}
    counts = {k: [] for k in cfg}
    for _ in range(args.repeat):  # interleaved, so drift hits every configuration alike
        for name, prefix in cfg.items():
            times[name].append(run_once(prefix, args.work, args.calls))
            if name.startswith("sonde"):
                us, n, expected, late, missed = sampling(out)
                costs[name].append(us)
                counts[name].append((n, expected, late, missed))
    base = statistics.median(times["baseline"])
    ver = subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"],
                         capture_output=True, text=True).stdout.strip()
    print(f"workload: py_work.py {args.work}{' calls' if args.calls else ''} (30 frames deep), "
          f"CPython {ver}, "
          f"{args.repeat} interleaved runs each, medians; {os.cpu_count()} CPUs")
    print(f"{'configuration':28} {'target s':>9} {'ratio':>7} {'us/read':>8} "
          f"{'samples/expected':>17} {'late':>5} {'missed':>6}")
    for name in cfg:
        t = statistics.median(times[name])
        line = f"{name:28} {t:9.3f} {t / base:7.3f}"
        if costs[name]:
            got = statistics.median(c[0] for c in counts[name])
            exp = statistics.median(c[1] for c in counts[name])
            late = statistics.median(c[2] for c in counts[name])
            missed = max(c[3] for c in counts[name])
            line += (f" {statistics.median(costs[name]):8.1f} {got:8.0f}/{exp:<8.0f}"
                     f" {late:5.0f} {missed:6d}")
        print(line)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
