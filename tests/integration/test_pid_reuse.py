"""A pid the kernel hands out twice in one run names two processes: each has
its own row in processes (the later one under a key, pid + 4194304), its own
samples and exit record, and the report lists both."""
import collections
import json
import os
import sqlite3

import cpu_common as cc

STRIDE = 4194304

t = cc.Checks()
if os.geteuid() != 0:
    cc.skip("making the kernel give a pid again needs root (/proc/sys/kernel/ns_last_pid)")
out = cc.run("pid_reuse", "cpu_pid_reuse")
with open(os.path.join(out, "output.log"), errors="replace") as f:
    log = f.read()
said = [line.split(" out ", 1)[-1] for line in log.splitlines()
        if "reused" in line]
if not any(s.startswith("reused ") for s in said):
    cc.skip("the workload could not have its pid given again: %s" % said)
pid = int([s for s in said if s.startswith("reused ")][0].split()[1])
key = pid + STRIDE

db = sqlite3.connect(os.path.join(out, "profile.db"))
procs = db.execute("SELECT pid, start_ns, end_ns FROM processes WHERE pid % ? = ? ORDER BY pid",
                   (STRIDE, pid)).fetchall()
t.check("the two processes with the pid have a row each, the later one under its key",
        [p[0] for p in procs] == [pid, key], procs)
t.check("the first ended before the second started (within a clock tick)",
        len(procs) == 2 and procs[0][2] is not None and procs[0][2] <= procs[1][1] + 20_000_000,
        procs)

per_fn = collections.defaultdict(collections.Counter)
for p, _, st in cc.stacks(out):
    fns = cc.functions(st)
    for fn in ("first_child_spin", "second_child_spin"):
        if fn in fns:
            per_fn[fn][p] += 1
t.check("first_child_spin's samples are the first process's, all of them",
        set(per_fn["first_child_spin"]) == {pid} and sum(per_fn["first_child_spin"].values()) >= 5,
        dict(per_fn["first_child_spin"]))
t.check("second_child_spin's samples are the later process's, all of them",
        set(per_fn["second_child_spin"]) == {key} and sum(per_fn["second_child_spin"].values()) >= 5,
        dict(per_fn["second_child_spin"]))
exits = {r[0] for r in db.execute("SELECT pid FROM task_exits WHERE tid % ? = ?", (STRIDE, pid))}
t.check("each has its own exit record", exits == {pid, key}, exits)
threads = {r[0] for r in db.execute("SELECT pid FROM threads WHERE tid = ?", (pid,))}
t.check("each has its main thread", {pid, key} <= threads, threads)
notes = [r[0] for r in db.execute("SELECT text FROM notes WHERE probe = 'derive'")]
t.check("the recording notes the reuse", any("had a pid an earlier one had" in n for n in notes),
        notes)
db.close()

with open(os.path.join(out, "report.json")) as f:
    report = json.load(f)
listed = [p for p in report.get("processes", []) if p.get("pid") == key]
t.check("report.json lists the later process with its pid and its use",
        len(listed) == 1 and listed[0].get("os_pid") == pid and listed[0].get("pid_use") == 2,
        listed)
with open(os.path.join(out, "report.md")) as f:
    md = f.read()
t.check("report.md's process table says which process with the pid each row is",
        "| %d (process 2 with this pid) |" % pid in md)
t.finish()
