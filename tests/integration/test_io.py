"""The I/O section (report.json `io`, docs/syscalls.md): each process's
read and write bytes and calls, the tree's throughput over the run, and the
same on trace.json's timeline. A shell runs tests/workloads/log_writer (one
write(2) per log line; it prints what it did) and then cat twice over the
log: the kernel adds each reaped command's I/O to the shell's own
/proc/PID/io, and sonde must count it once, at the command."""
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, main, run_profile, scratch, skip  # noqa: E402

WORKLOADS = os.environ.get("SONDE_WORKLOADS", "")
LOG_WRITER = os.path.join(WORKLOADS, "log_writer")
# About 1 s of writing on the faster VM (0.35 s at 100 000: under load its
# /proc readings then caught one interval of it, and the I/O counter none)
REQUESTS = 300000

_run = {}


def shell_run():
    if not _run:
        if not os.access(LOG_WRITER, os.X_OK):
            skip("the log_writer workload is not built (%s)" % LOG_WRITER)
        d = scratch("io-shell")
        own = os.path.join(d, "own.json")
        script = ("%s %s %d > %s; cat %s/access.log > /dev/null; cat %s/access.log > /dev/null"
                  % (LOG_WRITER, d, REQUESTS, own, d, d))
        p, run, r = run_profile("io-shell", ["sh", "-c", script])
        assert p.returncode == 0 and r, p.stderr[-2000:]
        with open(own) as f:
            did = json.loads(f.read().strip().splitlines()[-1])
        _run.update(run=run, r=r, did=did)
    return _run["run"], _run["r"], _run["did"]


def rows(r):
    return {p["command"].split()[0].rsplit("/", 1)[-1]: p for p in r["io"]["processes"]}


@check("each command's bytes are its own, and the shell that reaped them is not charged "
       "with them again")
def _():
    run, r, did = shell_run()
    log = did["write_bytes"]
    by = rows(r)
    writer, shell = by["log_writer"], by.get("sh")
    # the kernel's exit records count bytes in whole KiB
    assert writer["write_bytes"] >= log - 1024, (writer, log)
    cats = [p for p in r["io"]["processes"] if "cat" in p["command"].split()[0]]
    assert len(cats) == 2 and all(c["read_bytes"] >= log - 1024 for c in cats), cats
    # the log written once and copied twice to /dev/null; the shell itself moves almost nothing
    assert 3 * (log - 1024) <= r["io"]["write_bytes"] <= 3 * log * 1.05 + (64 << 10), \
        (r["io"], log)
    assert shell is None or shell["write_bytes"] + shell["read_bytes"] < 0.01 * log, shell


@check("the writer's write calls are counted to within 1%")
def _():
    run, r, did = shell_run()
    writer = rows(r)["log_writer"]
    db = sqlite3.connect(os.path.join(run, "profile.db"))
    exits = db.execute("SELECT count(*) FROM task_exits WHERE pid = ?",
                       (writer["pid"],)).fetchone()[0] if db.execute(
        "SELECT 1 FROM sqlite_master WHERE name = 'task_exits'").fetchone() else 0
    if not exits and writer["write_calls"] is None:
        print("  (no exit records nor /proc/PID/io calls here: the calls are not counted)")
        return
    # the log's lines, its JSON line; the kernel's exit record counts in 1024s
    assert abs(writer["write_calls"] - did["writes"]) <= 0.01 * did["writes"], \
        (writer, did)


@check("the tree's throughput over the run adds up to its bytes, and report.md shows it")
def _():
    run, r, did = shell_run()
    tl = r["io"]["timeline"]
    assert len(tl) >= 2, tl
    written, prev = 0.0, None
    for p in tl:
        step = p["t_s"] - (prev if prev is not None else 2 * tl[0]["t_s"] - tl[1]["t_s"])
        written += p["write_mb_s"] * 1e6 * step
        prev = p["t_s"]
    total = r["io"]["write_bytes"]
    assert abs(written - total) <= 0.02 * total, (written, total)
    busiest = r["io"]["busiest"]
    assert busiest and busiest["write_mb_s"] > 0, busiest
    with open(os.path.join(run, "report.md")) as f:
        md = f.read()
    section = md[md.index("## I/O"):md.index("## Processes")]
    assert "| write calls |" in section and "| pid | command | read | read calls |" in section \
        and "| written MB/s |" in section, section


@check("trace.json puts each process's CPU and I/O and the machine's counters on the timeline")
def _():
    run, r, did = shell_run()
    with open(os.path.join(run, "trace.json")) as f:
        events = json.load(f)["traceEvents"]
    writer = rows(r)["log_writer"]["pid"]
    io = [e for e in events if e["ph"] == "C" and e["name"] == "I/O" and e["pid"] == writer]
    cpu = [e for e in events if e["ph"] == "C" and e["name"] == "CPU" and e["pid"] == writer]
    assert io and max(e["args"]["write_MB_s"] for e in io) > 0, io[:5]
    assert cpu and max(e["args"]["cores"] for e in cpu) > 0, cpu[:5]
    probes = {p["name"]: p for p in r.get("probes", [])}
    if probes.get("system", {}).get("status") != "on":
        print("  (the system probe is off here: %s)" % probes.get("system", {}).get("reason"))
        return
    machine = [e for e in events if e["ph"] == "M" and e["args"].get("name") == "machine"]
    assert machine, "no machine process"
    names = {e["name"] for e in events if e["ph"] == "C" and e["pid"] == machine[0]["pid"]}
    assert {"CPUs", "tasks"} <= names, names


if __name__ == "__main__":
    main()
