"""counters probe, per thread: every thread of the target gets its own counts,
read by the kernel when the thread exits, stored per (pid, tid) and reported
in cpu.thread_counters. cpu probe, per function: each sample reads counters
with it (a group read), and the counts since the thread's previous sample are
charged to the sampled function (sample_counters, hotspots[].counters).

This machine may have no PMU, so the run counts the software stand-ins
(SONDE_COUNTERS_EVENTS=software: task-clock, context-switches, page-faults)
through the same code path the hardware events take (inherited counters,
exit reports in a ring, the root's own share at the end). task-clock stands in
for cycles: a thread's count must follow the CPU time it spent. With the same
setting the cpu probe's cpu-clock samples read task-clock and page-faults, as
cycles samples read instructions and cache-misses on a PMU."""
import json
import os
import shutil
import sqlite3
import subprocess

import cpu_common as cc

t = cc.Checks()
out = os.path.join(cc.TMP, "counters_threads")
shutil.rmtree(out, ignore_errors=True)
os.makedirs(cc.TMP, exist_ok=True)
env = dict(os.environ, SONDE_COUNTERS_EVENTS="software")
p = subprocess.run([cc.SONDE, "run", "-q", "-o", out, "--",
                    os.path.join(cc.WORKLOADS, "cpu_threads")],
                   capture_output=True, text=True, timeout=300, env=env)
t.check("sonde run exits with the target's status", p.returncode == 0, p.stderr[-500:])
db = sqlite3.connect(os.path.join(out, "profile.db"))
status = db.execute("SELECT status, reason FROM probes WHERE name='counters'").fetchone()
if not status or status[0] != "on":
    cc.skip("the counters probe cannot count software events here: %s"
            % (status[1] if status else "not recorded"))
if str(cc.meta(out, "counters_per_thread")) != "1":
    cc.skip("this kernel gives no per-thread exit reports (counters_per_thread = %s)"
            % cc.meta(out, "counters_per_thread"))

leader = int(cc.meta(out, "leader_pid"))
rows = db.execute("SELECT pid, tid, event, value, time_enabled_ns, time_running_ns"
                  " FROM counters").fetchall()
task_clock = {tid: v for pid, tid, ev, v, _, _ in rows if ev == "task-clock" and pid == leader}
t.check("the counters table has one task-clock row per thread: main and three workers",
        len(task_clock) == 4 and leader in task_clock, task_clock)
workers = {tid: v for tid, v in task_clock.items() if tid != leader}
t.check("every worker counts more task-clock than the main thread, which only waits",
        workers and min(workers.values()) > 5 * task_clock.get(leader, 0), task_clock)
t.check("the workers, which do the same work, count within a factor 2 of each other",
        workers and max(workers.values()) < 2 * min(workers.values()), workers)
t.check("each row is read once per event (no thread counted twice)",
        len(rows) == len({(r[0], r[1], r[2]) for r in rows}), len(rows))
t.check("no exit report was lost", str(cc.meta(out, "counters_reports_lost")) == "0")

# Ground truth: the kernel's rusage of the reaped process.
cpu_s = db.execute("SELECT user_s + sys_s FROM rusage WHERE pid = ?", (leader,)).fetchone()
total_s = sum(task_clock.values()) / 1e9
t.check("the threads' task-clock adds up to the process's CPU time (within 15%)",
        cpu_s and abs(total_s - cpu_s[0]) < 0.15 * cpu_s[0],
        "%.3f s counted, %s s rusage" % (total_s, cpu_s))

sampled = {tid for (tid,) in db.execute(
    "SELECT DISTINCT tid FROM samples WHERE source='cpu' AND pid = ?", (leader,))}
t.check("the counted workers are the threads the cpu probe sampled",
        not sampled or set(workers) <= sampled | {leader}, "%s vs %s" % (workers, sampled))

with open(os.path.join(out, "report.json")) as f:
    report = json.load(f)
threads = report["cpu"].get("thread_counters") or []
t.check("report.json lists every counted thread in cpu.thread_counters",
        len(threads) == 4 and report["cpu"].get("thread_counters_total") == 4, len(threads))
t.check("cpu.thread_counters starts with the busiest threads",
        threads and threads[0]["tid"] in workers and threads[-1]["tid"] == leader,
        [th["tid"] for th in threads])
t.check("each thread carries its counts by event, and no IPC without cycles",
        all(set(th["counts"]) == {"task-clock", "context-switches", "page-faults"}
            and th["ipc"] is None for th in threads))
t.check("threads are named", all(th["name"] == "cpu_threads" for th in threads),
        [th["name"] for th in threads])
t.check("without hardware events, cpu.counters is null and says software events stood in",
        report["cpu"].get("counters") is None
        and "software" in report.get("not_measured", {}).get("counters", ""))
with open(os.path.join(out, "report.md")) as f:
    md = f.read()
t.check("report.md has the per-thread table", "Counters per thread (4 of 4 threads)" in md)

# Per function: the counts read with each cpu sample.
if not str(cc.meta(out, "cpu_sample_counters") or "").startswith("task-clock"):
    note = db.execute("SELECT message FROM notes WHERE probe='cpu' AND message LIKE"
                      " '%read no counters%'").fetchone()
    print("the cpu samples read no counters here (%s): per-function checks skipped"
          % (note[0] if note else cc.meta(out, "cpu_event")))
else:
    sums = dict(db.execute("SELECT event, SUM(value) FROM sample_counters GROUP BY event"))
    t.check("sample_counters holds the sampling event and its group",
            set(sums) == {"cpu-clock", "task-clock", "page-faults"}, sums)
    t.check("every sample's group read was matched to its events",
            str(cc.meta(out, "cpu_sample_counters_unmatched")) == "0")
    # Each thread's time after its last sample on a CPU is charged to nothing,
    # so the sum may fall short (by a period per thread and CPU), never over.
    charged_s = sums.get("task-clock", 0) / 1e9
    t.check("the task-clock charged to samples adds up to the process's CPU time, "
            "none of it twice (70% to 110%)",
            cpu_s and 0.7 * cpu_s[0] < charged_s < 1.1 * cpu_s[0],
            "%.3f s charged, %s s rusage" % (charged_s, cpu_s))
    spin = [h for h in report["hotspots"] if h["function"] == "thread_spin"]
    t.check("thread_spin, the hot function, carries its share of the counts",
            spin and spin[0].get("counters", {}).get("task-clock", 0) > 0.8 * sums["task-clock"],
            spin[0].get("counters") if spin else report["hotspots"][:2])
    t.check("without cycles, hotspots carry no IPC", spin and spin[0].get("ipc") is None)
    src = report["hotspots_source"]
    t.check("hotspots_source lists the counters read with the samples",
            sorted(src.get("counters", [])) == ["cpu-clock", "page-faults", "task-clock"], src)
    path = [c for c in report["call_tree"] if c["path"][-1:] == ["worker"]]
    t.check("the call path into worker carries the counts too",
            path and path[0].get("counters", {}).get("task-clock", 0) > 0.8 * sums["task-clock"])
t.finish()
