"""Acceptance on a machine with a PMU: cpu_walk's shuffled walk (cache misses)
is the top call path, and its samples show the lower IPC and the higher miss
rate (per-function counters read with each cycles sample); sampling on
cache-misses (--event) puts most misses there too; every thread gets its own
hardware counts. Skipped, with the reason, where perf_event_open has no
hardware counters (most VMs) or the kernel cannot read a group with each
sample (before Linux 6.12)."""
import json
import os
import sqlite3

import cpu_common as cc

t = cc.Checks()
out = cc.run("counters_functions", "cpu_walk", "2")
db = sqlite3.connect(os.path.join(out, "profile.db"))
event = cc.meta(out, "cpu_event")
if event != "cycles":
    reason = db.execute("SELECT reason FROM probes WHERE name='counters'").fetchone()
    cc.skip("no hardware counters here: the cpu probe samples %s (%s)"
            % (event, reason[0] if reason and reason[0] else "cycles refused"))
if not cc.meta(out, "cpu_sample_counters"):
    note = db.execute("SELECT message FROM notes WHERE probe='cpu' AND message LIKE"
                      " '%read no counters%'").fetchone()
    cc.skip(note[0] if note else "the cycles samples read no counters")
with open(os.path.join(out, "report.json")) as f:
    report = json.load(f)


def path_to(name):
    rows = [c for c in report["call_tree"] if c["path"][-1:] == [name]]
    return rows[0] if rows else {}


shuffled, ordered = path_to("shuffled_walk"), path_to("ordered_walk")
t.check("walk is the top hotspot", report["hotspots"][0]["function"] == "walk",
        report["hotspots"][:2])
t.check("the shuffled walk is the heaviest call path into walk",
        shuffled.get("total_pct", 0) > 1.5 * ordered.get("total_pct", 0),
        "%s vs %s" % (shuffled.get("total_pct"), ordered.get("total_pct")))
t.check("both walks carry an IPC and a miss rate",
        all(isinstance(p.get(k), float) for p in (shuffled, ordered)
            for k in ("ipc", "cache_misses_per_kinstr")), (shuffled, ordered))
t.check("the shuffled walk retires fewer instructions per cycle",
        (shuffled.get("ipc") or 9) < 0.8 * (ordered.get("ipc") or 0),
        "%s vs %s" % (shuffled.get("ipc"), ordered.get("ipc")))
t.check("the shuffled walk misses the caches more often",
        (shuffled.get("cache_misses_per_kinstr") or 0)
        > 2 * (ordered.get("cache_misses_per_kinstr") or 9e9),
        "%s vs %s" % (shuffled.get("cache_misses_per_kinstr"),
                      ordered.get("cache_misses_per_kinstr")))
walk = report["hotspots"][0]
t.check("walk's hotspot row carries its IPC", isinstance(walk.get("ipc"), float), walk)
for f in report["findings"]:
    if "waits for memory: IPC" in f["title"]:
        t.check("a memory-bound hot function is located in cpu_walk.c",
                "cpu_walk.c" in f["location"], f["location"])
with open(os.path.join(out, "report.md")) as f:
    t.check("report.md shows the IPC column", "| IPC | misses / 1k instr |" in f.read())

threads = report["cpu"].get("thread_counters") or []
t.check("the main thread has its own hardware counts",
        threads and threads[0]["counts"].get("cycles", 0) > 0
        and isinstance(threads[0]["ipc"], float), threads[:1])

# Where the misses are, by sampling on them.
out = cc.run("counters_functions_misses", "cpu_walk", "2", sonde_args=("--event", "cache-misses"))
with open(os.path.join(out, "report.json")) as f:
    report = json.load(f)
shuffled, ordered = path_to("shuffled_walk"), path_to("ordered_walk")
t.check("sampling on cache-misses puts most misses in the shuffled walk",
        shuffled.get("samples", 0) > 2 * ordered.get("samples", 0),
        "%s vs %s" % (shuffled.get("samples"), ordered.get("samples")))
t.check("report.json says the samples count cache-misses",
        report["hotspots_source"].get("event") == "cache-misses")
with open(os.path.join(out, "report.md")) as f:
    t.check("report.md says the samples count cache-misses, not time",
            "of the cache-misses event (--event)" in f.read())
t.finish()
