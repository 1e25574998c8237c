#!/usr/bin/env python3
"""What the updates printed while the command runs (interim findings, after
each phase) cost the target.

Runs tests/workloads/py_pipeline.py (a batch job that logs its stages and
times them itself) under `sonde run -q` (no updates) and `sonde run` (an
update after each phase), interleaved, REPEAT times each, and prints the
median of the pipeline's own total time under each, as a ratio to the -q runs
measured in the same session, and the number of updates printed. Numbers, not
pass/fail: record them in docs/performance.md.

usage: bench/interim_cost.py [--repeat N] [--sonde PATH] [--python PATH]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIPELINE = os.path.join(ROOT, "tests", "workloads", "py_pipeline.py")


def own_total(stdout):
    for line in stdout.splitlines():
        if line.startswith("durations "):
            return sum(float(kv.split("=")[1]) for kv in line.split()[1:])
    raise RuntimeError("no durations line: " + stdout[-300:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sonde", default=os.path.join(ROOT, "build", "sonde"))
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    out = tempfile.mkdtemp(prefix="sonde-interim-")
    times = {"sonde run -q (no updates)": [], "sonde run (updates)": []}
    updates = []
    for _ in range(a.repeat):
        for name in times:
            quiet = ["-q"] if "-q" in name else []
            p = subprocess.run([a.sonde, "run", *quiet, "--force", "-o", out, "--",
                                a.python, PIPELINE], capture_output=True, text=True)
            if p.returncode != 0:
                raise SystemExit(p.stderr[-500:])
            times[name].append(own_total(p.stdout))
            if not quiet:
                updates.append(p.stderr.count("sonde: after phase "))
    base = statistics.median(times["sonde run -q (no updates)"])
    for name, v in times.items():
        print("%-28s median %.3f s  ratio %.3f" % (name, statistics.median(v),
                                                   statistics.median(v) / base))
    print("updates per run: %s" % updates)


if __name__ == "__main__":
    main()
