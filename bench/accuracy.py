#!/usr/bin/env python3
"""Attribution accuracy, quiet and under load: the known-split workloads
(tests/workloads/py_split.py on every installed CPython, cpu_split for native
code) under `sonde run` at each rate, alone and with N busy loops beside them
(N = the number of cores), REPEAT runs each, interleaved. For each cell it
prints the median over runs of the worst attribution error (the largest
|sonde's share - the workload's own CPU-clock share| over the three functions,
in points), for the view the report uses (hotspots_source: stitched `mixed`
samples by default) and for the python probe's own on-CPU samples, with the
samples behind them and the python probe's tick coverage.
Numbers, not pass/fail: record them in docs/performance.md.

With --austin PATH (Austin built from source: its repository's
`autoreconf --install && ./configure && make`; no pip here), every Python
target also runs under `austin -s -i INTERVAL` at the same rate, interleaved
with sonde, and gets a row of its own ("[austin]"): its shares weigh each
sample by the CPU time Austin gives it (its cpu mode), as its own reports do.

usage: bench/accuracy.py [--repeat N] [--rates 99,1000] [--seconds S] [--only WORDS]
       [--loads 0,N] [--probes P] [--sonde PATH[,PATH...]] [--austin PATH]
(several sonde binaries, e.g. before and after a change, run interleaved and
get a row each)
"""
import argparse
import json
import os
import subprocess
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from sonde_test import cpythons  # noqa: E402
from split_common import (PY_SPLIT, busy_loops, run_split, stop_busy_loops,  # noqa: E402
                          worst_error_pts)


def targets(workloads):
    out = [(label, [exe, PY_SPLIT]) for label, _, exe, _ in cpythons() if exe]
    out.append(("native cpu_split", [os.path.join(workloads, "cpu_split")]))
    return out


def austin_shares(path, functions):
    """Each function's share of the CPU time in Austin's collapsed output
    (`P..;T..;file:function:line;... MICROSECONDS` lines), over the samples
    with one of functions on their stack; (shares, samples) or (None, 0)."""
    weight = dict.fromkeys(functions, 0)
    total = samples = 0
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("#") or ";" not in line:
                continue
            stack, _, value = line.rstrip("\n").rpartition(" ")
            try:
                us = int(value)
            except ValueError:
                continue
            names = {fr.rsplit(":", 2)[1] for fr in stack.split(";")[2:] if fr.count(":") >= 2}
            hit = [fn for fn in functions if fn in names]
            for fn in hit:
                weight[fn] += us
            if hit:
                total += us
                samples += 1
    if not total:
        return None, 0
    return {fn: w / total for fn, w in weight.items()}, samples


def run_austin(austin, out_file, command, rate_hz, timeout=300):
    """`austin -s -i US -o OUT COMMAND`; (truth, {"report": (shares, n)})."""
    p = subprocess.run([austin, "-s", "-i", "%dus" % (1000000 // rate_hz), "-o", out_file]
                       + command, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("austin exited %d: %s" % (p.returncode, p.stderr.strip()[-400:]))
    truth = json.loads(p.stdout.strip().splitlines()[-1])["shares"]
    return truth, {"report": austin_shares(out_file, truth)}, {}


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rates", default="99,1000")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--loads", default="0,%d" % os.cpu_count())
    ap.add_argument("--only", default="", help="comma-separated words a target's label must hold")
    ap.add_argument("--probes", default=None, help="sonde --probes (default: sonde's defaults)")
    ap.add_argument("--sonde", default=os.path.join(ROOT, "build", "sonde"),
                    help="sonde binaries, comma-separated, run in turn")
    ap.add_argument("--austin", default=None,
                    help="an austin binary, run in turn on the Python targets")
    args = ap.parse_args()
    sondes = args.sonde.split(",")
    tools = sondes + ([args.austin] if args.austin else [])
    workloads = os.path.join(ROOT, "build", "workloads")
    tgts = [t for t in targets(workloads)
            if not args.only or any(w in t[0] for w in args.only.split(","))]
    rates = [int(r) for r in args.rates.split(",")]
    loads = [int(n) for n in args.loads.split(",")]
    tmp = tempfile.mkdtemp(prefix="sonde-accuracy-")
    cells = {}  # (label, rate, load) -> list of run results
    print("load average at start %s, %d cores" % (loadavg(), os.cpu_count()), flush=True)
    for rep in range(args.repeat):
        for load in loads:
            loops = busy_loops(load)
            time.sleep(0.2)
            try:
                for label, cmd in tgts:
                    for rate, tool in ((r, b) for r in rates for b in tools):
                        out = os.path.join(tmp, "run")
                        is_austin = tool == args.austin
                        if is_austin and "native" in label:
                            continue
                        tag = ("%s [austin]" % label if is_austin else label
                               if len(sondes) == 1 else "%s [%s]" % (label, tool))
                        try:
                            if is_austin:
                                truth, views, meta = run_austin(
                                    tool, out + ".austin", cmd + [str(args.seconds)], rate)
                            else:
                                truth, views, meta = run_split(tool, out,
                                                               cmd + [str(args.seconds)], rate,
                                                               args.probes)
                        except RuntimeError as e:
                            print("  %s %d Hz load %d: %s" % (tag, rate, load, e), flush=True)
                            continue
                        r = {"truth": truth}
                        for v, (sh, n) in views.items():
                            if sh:
                                r[v] = (worst_error_pts(sh, truth), n)
                                r[v + "_signed"] = [(sh[f] - t) * 100 for f, t in truth.items()]
                        for k in ("python_samples", "python_ticks_missed"):
                            if k in meta:
                                r[k] = int(meta[k])
                        cells.setdefault((tag, rate, load), []).append(r)
                        print("  run %d %s %d Hz load %d: %s" % (
                            rep + 1, tag, rate, load,
                            ", ".join("%s %.1f pts (%d samples)" % (v, r[v][0], r[v][1])
                                      for v in ("report", "python") if v in r)), flush=True)
            finally:
                stop_busy_loops(loops)
    print("load average at end %s" % loadavg())
    print()
    print("| target | rate | busy loops | report: median worst error (pts), runs | "
          "mean signed error per function | python on-CPU: median worst error | "
          "samples (report) | python ticks read |")
    print("|---|---|---|---|---|---|---|---|")
    for (label, rate, load), rs in cells.items():
        def med(v):
            xs = [r[v][0] for r in rs if v in r]
            return ("%.1f (%s)" % (statistics.median(xs), " ".join("%.1f" % x for x in xs))
                    if xs else "-")
        n = [r["report"][1] for r in rs if "report" in r]
        signed = [r["report_signed"] for r in rs if "report_signed" in r]
        mean = ("/".join("%+.1f" % statistics.mean(col) for col in zip(*signed))
                if signed else "-")
        read = [r["python_samples"] / (r["python_samples"] + r.get("python_ticks_missed", 0))
                for r in rs if r.get("python_samples")]
        print("| %s | %d Hz | %d | %s | %s | %s | %s | %s |" % (
            label, rate, load, med("report"), mean, med("python"),
            int(statistics.median(n)) if n else "-",
            "%.0f%%" % (100 * statistics.median(read)) if read else "-"))


if __name__ == "__main__":
    main()
