#!/usr/bin/env python3
"""Target slowdown under sonde's allocation tracker, next to heaptrack.

Two workloads that time themselves (elapsed_s=): build/workloads/alloc_churn
(pure malloc/free churn of 16-527 byte blocks, C) and
tests/workloads/py_records.py (ordinary allocation-heavy Python: dicts, lists,
strings). Each runs with no profiler and under each configuration,
interleaved, REPEAT times each; the median of the workload's own time is
printed as a ratio to the no-profiler baseline of the same run. Numbers, not
pass/fail: record them in docs/performance-memory.md.

In a Python target, sonde --memory wraps CPython's object allocators in the
process (pymalloc keeps serving objects, each is sampled). heaptrack sees
objects only with PYTHONMALLOC=malloc, so its Python runs get that setting;
"baseline PYTHONMALLOC=malloc" shows what the setting alone costs, and
"sonde run --memory, PYTHONMALLOC=malloc" is sonde seeing objects that way.

usage: bench/memory_overhead.py [--repeat N] [--churn M] [--rounds R]
                                [--python PATH] [--sonde PATH] [--only churn|python]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def configs(sonde, out, python):
    """name -> (argv prefix, extra environment)."""
    run = [sonde, "run", "-q", "--force", "-o", os.path.join(out, "run")]
    c = {"baseline": ([], {})}
    if python:
        c["baseline PYTHONMALLOC=malloc"] = ([], {"PYTHONMALLOC": "malloc"})
    c["sonde run (no --memory)"] = (run + ["--"], {})
    c["sonde run --memory"] = (run + ["--memory", "--"], {})
    if python:
        c["sonde run --memory, PYTHONMALLOC=malloc"] = (run + ["--memory", "--"],
                                                       {"PYTHONMALLOC": "malloc"})
    c["sonde run --memory=full"] = (run + ["--memory=full", "--"], {})
    if shutil.which("heaptrack"):
        c["heaptrack"] = (["heaptrack", "-o", os.path.join(out, "heaptrack")],
                          {"PYTHONMALLOC": "malloc"} if python else {})
    return c


def run_once(prefix, env_extra, argv):
    env = dict(os.environ)
    env.update(env_extra)
    p = subprocess.run(prefix + argv, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"exit {p.returncode}: {p.stderr.strip()[-300:]}")
    lines = [l for l in p.stdout.splitlines() if l.startswith("elapsed_s=")]
    if not lines:
        raise RuntimeError(f"no elapsed_s line: {p.stdout[-300:]} {p.stderr[-300:]}")
    return float(lines[-1].split("=")[1])


def bench(title, argv, cfg, repeat):
    times = {k: [] for k in cfg}
    skipped = {}
    for _ in range(repeat):  # interleaved: drift hits every configuration alike
        for name, (prefix, env) in cfg.items():
            if name in skipped:
                continue
            try:
                times[name].append(run_once(prefix, env, argv))
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                skipped[name] = str(e)
    base = statistics.median(times["baseline"])
    print(f"\n{title}: {' '.join(argv)}; {repeat} runs each, medians of the workload's own time")
    print(f"{'configuration':40} {'target s':>9} {'x baseline':>11} {'min-max s':>16}")
    meds = {}
    for name in cfg:
        if name in skipped:
            print(f"{name:40} skipped: {skipped[name]}")
            continue
        t = statistics.median(times[name])
        meds[name] = t
        print(f"{name:40} {t:9.3f} {t / base:10.2f}x {min(times[name]):7.3f}-{max(times[name]):<7.3f}")
    if "heaptrack" in meds and "sonde run --memory=full" in meds:
        print(f"heaptrack time / sonde full-mode time: "
              f"{meds['heaptrack'] / meds['sonde run --memory=full']:.2f}")
    return meds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--churn", type=int, default=2, help="millions of malloc/free pairs")
    ap.add_argument("--rounds", type=int, default=6, help="py_records rounds (50 000 records each)")
    ap.add_argument("--python", default=shutil.which("python3"))
    ap.add_argument("--sonde", default=os.path.join(ROOT, "build", "sonde"))
    ap.add_argument("--only", choices=("churn", "python"))
    args = ap.parse_args()
    churn = os.path.join(ROOT, "build", "workloads", "alloc_churn")
    for path in (args.sonde, churn):
        if not os.access(path, os.X_OK):
            sys.exit(f"bench: {path} is not built (run make)")
    out = tempfile.mkdtemp(prefix="sonde-membench-")
    try:
        if args.only != "python":
            bench("pure churn (C)", [churn, str(args.churn)], configs(args.sonde, out, False),
                  args.repeat)
        if args.only != "churn":
            script = os.path.join(ROOT, "tests", "workloads", "py_records.py")
            bench("Python dicts/lists", [args.python, script, str(args.rounds)],
                  configs(args.sonde, out, True), args.repeat)
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
