#!/usr/bin/env python3
"""Target slowdown under sonde (and under perf record, for comparison).

Runs a fixed-work workload (build/workloads/cpu_work, which times itself) with
no profiler and under each configuration, interleaved, REPEAT times each, and
prints the median of the workload's own time as a ratio to the baseline
measured in the same run, plus sonde's own CPU per second of target.
Numbers, not pass/fail: record them in docs/performance.md.

usage: bench/overhead.py [--repeat N] [--work M] [--sonde PATH] [--workload PATH]
                        [--args ...] [--config NAME ...]
(--workload build/workloads/offcpu_wait --args 2 2 300 switches about 500 times
a second: the worst case for the offcpu probe.)
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def configs(sonde, out):
    """name -> (argv prefix, kind). kind 'sonde' runs get sonde's own CPU measured."""
    c = {
        "baseline": ([], None),
        "sonde (defaults)": ([sonde, "run", "-q", "--force", "-o", out, "--"], "sonde"),
        "sonde --probes proc": ([sonde, "run", "-q", "--force", "-o", out, "--probes", "proc", "--"], "sonde"),
    }
    help_text = subprocess.run([sonde, "run", "--help"], capture_output=True, text=True).stdout
    if "offcpu" in help_text:
        # the cpu probe alone, to see what the offcpu probe's switch events cost
        c["sonde --probes proc,cpu"] = ([sonde, "run", "-q", "--force", "-o", out, "--probes", "proc,cpu", "--"], "sonde")
        c["sonde --probes proc,cpu,offcpu"] = ([sonde, "run", "-q", "--force", "-o", out, "--probes", "proc,cpu,offcpu", "--"], "sonde")
    if "--rate" in help_text:
        c["sonde -r 99"] = ([sonde, "run", "-q", "--force", "-o", out, "-r", "99", "--"], "sonde")
        c["sonde --probes cpu -r 1000"] = ([sonde, "run", "-q", "--force", "-o", out, "--probes", "cpu", "-r", "1000", "--"], "sonde")
        c["sonde -r 1000"] = ([sonde, "run", "-q", "--force", "-o", out, "-r", "1000", "--"], "sonde")
    if shutil.which("perf"):
        pdata = os.path.join(out + "-perf.data")
        c["perf record -F 99 -g"] = (["perf", "record", "-q", "-F", "99", "-g", "-o", pdata, "--"], "perf")
        c["perf record -F 1000 -g"] = (["perf", "record", "-q", "-F", "1000", "-g", "-o", pdata, "--"], "perf")
    return c


def run_once(prefix, workload, work, extra=None):
    """Returns (workload's own seconds, CPU seconds of the whole invocation)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(prefix + [workload, *(extra or [str(work)])], capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(prefix[:3])}: exit {p.returncode}: {p.stderr.strip()[:300]}")
    lines = [l for l in p.stdout.splitlines() if l.startswith("elapsed_s=")]
    if not lines:
        raise RuntimeError(f"no elapsed_s line from the workload: {p.stdout[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(lines[-1].split("=")[1]), cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", type=int, default=600, help="millions of iterations (600: about 1 s)")
    ap.add_argument("--sonde", default=os.path.join(ROOT, "build", "sonde"))
    ap.add_argument("--workload", default=os.path.join(ROOT, "build", "workloads", "cpu_work"))
    ap.add_argument("--args", nargs="+", help="the workload's arguments instead of --work")
    ap.add_argument("--config", action="append", help="only these configurations (by name)")
    args = ap.parse_args()
    for path in (args.sonde, args.workload):
        if not os.access(path, os.X_OK):
            sys.exit(f"bench: {path} is not built (run make)")
    out = tempfile.mkdtemp(prefix="sonde-bench-")
    cfg = configs(args.sonde, os.path.join(out, "run"))
    if args.config:
        cfg = {k: v for k, v in cfg.items() if k in args.config or k == "baseline"}
    times = {k: [] for k in cfg}
    cpus = {k: [] for k in cfg}
    skipped = {}
    for _ in range(args.repeat):  # interleaved, so drift hits every configuration alike
        for name, (prefix, _kind) in cfg.items():
            if name in skipped:
                continue
            try:
                t, cpu = run_once(prefix, args.workload, args.work, args.args)
            except RuntimeError as e:
                skipped[name] = str(e)
                continue
            times[name].append(t)
            cpus[name].append(cpu)
    base = statistics.median(times["baseline"])
    base_cpu = statistics.median(cpus["baseline"])
    what = " ".join(args.args) if args.args else f"{args.work} (fixed work)"
    print(f"workload: {os.path.basename(args.workload)} {what}, {args.repeat} runs each, medians")
    print(f"{'configuration':28} {'target s':>9} {'slowdown':>9} {'profiler CPU s per target s':>28}")
    for name in cfg:
        if name in skipped:
            print(f"{name:28} skipped: {skipped[name]}")
            continue
        t = statistics.median(times[name])
        own = (statistics.median(cpus[name]) - base_cpu) / t if name != "baseline" else 0.0
        print(f"{name:28} {t:9.3f} {100 * (t / base - 1):+8.2f}% {own:28.4f}")
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
