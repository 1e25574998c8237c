#!/usr/bin/env python3
"""End to end: `sonde run` reports hardware counters (or says in one line why
not), and `sonde report DIR` regenerates every artifact from profile.db,
including the stack outputs (stacks.folded, flamegraph.svg) and hotspots for
stacks written with the documented schema."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys

from sonde_test import Checks

CHECKS = Checks()
check = CHECKS.check


def main():
    sonde = os.environ.get("SONDE")
    workloads = os.environ.get("SONDE_WORKLOADS")
    tmp = os.environ.get("SONDE_TEST_TMP")
    if not sonde or not workloads or not tmp:
        print("skip: SONDE, SONDE_WORKLOADS and SONDE_TEST_TMP must be set (run through ctest)")
        return 77
    demo = os.path.join(workloads, "demo")
    if not os.access(demo, os.X_OK):
        print(f"skip: the demo workload is not built ({demo})")
        return 77
    run_dir = os.path.join(tmp, "counters_and_stacks")
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(tmp, exist_ok=True)
    p = subprocess.run([sonde, "run", "-q", "-o", run_dir, "--", demo],
                       capture_output=True, text=True, timeout=300)
    check("sonde run exits with the target's status", p.returncode == 0, p.stderr[-500:])
    with open(os.path.join(run_dir, "report.json")) as f:
        report = json.load(f)

    counters = report.get("cpu", {}).get("counters")
    probes = {p["name"]: p for p in report.get("probes", [])}
    check("the counters probe is listed with its status", "counters" in probes)
    if isinstance(counters, dict):
        ipc = counters.get("ipc")
        check("cpu.counters has cycles, instructions and an IPC",
              counters.get("cycles", 0) > 0 and counters.get("instructions", 0) > 1e8
              and isinstance(ipc, float) and 0.05 < ipc < 10, json.dumps(counters))
        for key in ("cache_miss_rate", "branch_miss_rate"):
            v = counters.get(key)
            check(f"cpu.counters.{key} is a rate between 0 and 1 or null",
                  v is None or 0 <= v <= 1, str(v))
        with open(os.path.join(run_dir, "report.md")) as f:
            check("report.md reads the IPC", "instructions per cycle (IPC)" in f.read())
    else:
        why = report.get("not_measured", {}).get("counters", "")
        check("without counters, cpu.counters is null with a one-line reason",
              counters is None and why and "\n" not in why, why)
        check("the counters probe says why it is unavailable",
              probes.get("counters", {}).get("status") in ("unavailable", "off")
              and probes["counters"].get("reason"), json.dumps(probes.get("counters")))
        with open(os.path.join(run_dir, "report.md")) as f:
            check("report.md says counters were not measured",
                  "Hardware counters: not measured" in f.read())

    # Stacks with the documented schema, as a stack probe writes them.
    db = sqlite3.connect(os.path.join(run_dir, "profile.db"))
    db.executescript("""
      CREATE TABLE IF NOT EXISTS frames(id INTEGER PRIMARY KEY, function TEXT, file TEXT,
        line INTEGER, module TEXT, kind TEXT);
      CREATE TABLE IF NOT EXISTS stack_nodes(id INTEGER PRIMARY KEY, parent INTEGER,
        frame INTEGER, depth INTEGER);
      CREATE TABLE IF NOT EXISTS samples(t_ns INTEGER, pid INTEGER, tid INTEGER, node INTEGER,
        source TEXT, weight INTEGER, on_cpu INTEGER, gil INTEGER);""")
    fbase = db.execute("SELECT COALESCE(MAX(id), 0) FROM frames").fetchone()[0]
    nbase = db.execute("SELECT COALESCE(MAX(id), 0) FROM stack_nodes").fetchone()[0]
    names = ["sonde_test_outer", "sonde_test_leaf", "<b>sonde_test&amp</b>"]
    for i, name in enumerate(names):
        db.execute("INSERT INTO frames VALUES(?,?,?,?,?,?)",
                   (fbase + i + 1, name, "t.c", 10 + i, "/opt/t", "native"))
    db.execute("INSERT INTO stack_nodes VALUES(?,?,?,?)", (nbase + 1, 0, fbase + 1, 1))
    db.execute("INSERT INTO stack_nodes VALUES(?,?,?,?)", (nbase + 2, nbase + 1, fbase + 2, 2))
    db.execute("INSERT INTO stack_nodes VALUES(?,?,?,?)", (nbase + 3, nbase + 1, fbase + 3, 2))
    db.executemany("INSERT INTO samples VALUES(?,?,?,?,?,?,?,?)",
                   [(i, 1, 1, nbase + 2, "cpu", 1, 1, None) for i in range(5000)] +
                   [(i, 1, 1, nbase + 3, "cpu", 1, 1, None) for i in range(10)])
    db.commit()
    db.close()

    for name in ("report.md", "report.json"):
        os.unlink(os.path.join(run_dir, name))
    p = subprocess.run([sonde, "report", "-q", run_dir], capture_output=True, text=True,
                       timeout=120)
    check("sonde report succeeds", p.returncode == 0, p.stderr[-500:])
    for name in ("report.md", "report.json", "stacks.folded", "flamegraph.svg"):
        check(f"sonde report regenerates {name}", os.path.exists(os.path.join(run_dir, name)))
    with open(os.path.join(run_dir, "report.json")) as f:
        report = json.load(f)
    check("report.json lists the stack artifacts",
          {"stacks.folded", "flamegraph.svg"} <= set(report.get("artifacts", [])))
    top = {h["function"]: h for h in report.get("hotspots", [])}
    check("the injected leaf is a hotspot", "sonde_test_leaf" in top, json.dumps(list(top)))
    with open(os.path.join(run_dir, "stacks.folded")) as f:
        folded = f.read().splitlines()
    check("stacks.folded has the injected stack, outermost first",
          "sonde_test_outer;sonde_test_leaf 5000" in folded)
    with open(os.path.join(run_dir, "flamegraph.svg")) as f:
        svg = f.read()
    check("flamegraph.svg escapes names", "<b>sonde_test" not in svg
          and "&lt;b&gt;sonde_test&amp;amp&lt;/b&gt;" in svg)
    return CHECKS.tally()


if __name__ == "__main__":
    sys.exit(main())
