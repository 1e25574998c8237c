"""The syscalls probe (--focus io): every system call of the target, as
`strace -c` counts them, with call sites, errors and files, and the findings
a person would draw from them. tests/workloads/log_writer.c logs each
request with its own write(2), fsyncs every 20 000 lines and looks for an
override file that is not there; tests/workloads/py_tiny_reads.py reads a
file line by line unbuffered (one byte per read). Both print what they did."""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

from sonde_test import (check, main, probe_status, run_profile, scratch, skip, sonde,
                        wait_for)

WORKLOADS = os.environ.get("SONDE_WORKLOADS", "")
LOG_WRITER = os.path.join(WORKLOADS, "log_writer")
HERE = os.path.dirname(os.path.abspath(__file__))
TINY_READS = os.path.join(HERE, "..", "workloads", "py_tiny_reads.py")
REQUESTS = 100000

_runs = {}


def writer_run():
    if "c" not in _runs:
        d = scratch("syscalls-writer")
        p, run, r = run_profile("syscalls-writer", [LOG_WRITER, d, str(REQUESTS)], "--focus", "io")
        assert p.returncode == 0, p.stderr[-2000:]
        if "syscalls" not in r:
            skip("the syscalls probe cannot run here: %s" % (probe_status(run, "syscalls"),))
        own = json.loads(p.stdout.strip().splitlines()[-1])
        _runs["c"] = (run, r, own)
    return _runs["c"]


def calls_of(r, name):
    return next((c for c in r["syscalls"]["by_time"] if c["call"] == name), None)


def exact_or_lost(r, got, want):
    """The counts are exact unless records were lost (said in the report: on a
    machine far busier than its cores sonde may read its rings too late)."""
    lost = r["syscalls"]["lost_calls"]
    if lost:
        return want - lost <= got <= want
    return got == want


@check("a C program's write(2) calls are counted exactly at their call site, with the file "
       "they went to, and each call's failures by errno")
def _():
    run, r, own = writer_run()
    assert r["syscalls"]["kernel_calls"] >= r["syscalls"]["calls"], r["syscalls"]
    writes = calls_of(r, "write")
    assert writes, [c["call"] for c in r["syscalls"]["by_time"]]
    site = writes["sites"][0]
    assert "log_line" in site["location"], writes["sites"]
    assert exact_or_lost(r, site["calls"], own["writes"]), (site, own, r["syscalls"]["lost_calls"])
    fsync = calls_of(r, "fsync")
    assert fsync and exact_or_lost(r, fsync["calls"], own["fsyncs"]), fsync
    assert "main" in fsync["sites"][0]["location"], fsync
    errs = [e for e in r["syscalls"]["errors_by_errno"]
            if e["call"] == "openat" and e["error"] == "ENOENT"]
    assert errs and exact_or_lost(r, errs[0]["calls"], own["missing_opens"]), \
        (r["syscalls"]["errors_by_errno"], own, r["syscalls"]["lost_calls"])
    log = [f for f in r["syscalls"]["files"] if f["path"].endswith("/access.log")]
    assert log and exact_or_lost(r, log[0]["writes"], own["writes"]), r["syscalls"]["files"]
    assert log[0]["write_bytes"] <= own["write_bytes"], (log, own)
    with open(os.path.join(run, "report.md")) as f:
        md = f.read()
    assert "## System calls" in md and "log_writer.c:log_line" in md, md[-3000:]


@check("the write count agrees with strace -c's within 1%")
def _():
    strace = shutil.which("strace")
    if not strace:
        print("note: strace is not installed: not compared")
        return
    run, r, own = writer_run()
    d = scratch("syscalls-strace")
    out = os.path.join(d, "strace.txt")
    subprocess.run([strace, "-c", "-f", "-o", out, LOG_WRITER, d, str(REQUESTS)],
                   stdout=subprocess.DEVNULL, check=True, timeout=600)
    with open(out) as f:
        m = re.search(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?write\s*$", f.read(), re.M)
    assert m, "no write line in strace -c's table"
    theirs = int(m.group(1))
    ours = calls_of(r, "write")["calls"]
    lost = r["syscalls"]["lost_calls"]
    assert abs(ours - theirs) <= 0.01 * theirs + lost, (ours, theirs, lost)


@check("the storm of tiny writes is a finding at the call site, with C advice; the failing "
       "open is one too")
def _():
    run, r, own = writer_run()
    storm = [f for f in r["findings"] if f["id"] == "io.syscall_storm"]
    assert storm, [f["id"] for f in r["findings"]]
    assert "log_line" in storm[0]["location"], storm[0]
    assert "setvbuf" in storm[0]["next_step"], storm[0]["next_step"]
    assert "access.log" in storm[0]["evidence"], storm[0]["evidence"]
    errs = [f for f in r["findings"] if f["id"] == "io.syscall_errors"]
    assert errs and "override_present" in errs[0]["location"], \
        [(f["id"], f["location"]) for f in r["findings"]]


@check("a Python program's tiny unbuffered reads are a finding at its Python line, with "
       "Python advice, the count and the mean size")
def _():
    d = scratch("syscalls-python")
    data = os.path.join(d, "requests.log")
    p, run, r = run_profile("syscalls-python", [sys.executable, TINY_READS, data, "5000"],
                            "--focus", "io")
    assert p.returncode == 0, p.stderr[-2000:]
    own = json.loads(p.stdout.strip().splitlines()[-1])
    storm = [f for f in r["findings"] if f["id"] == "io.syscall_storm"]
    assert storm, [(f["id"], f["title"]) for f in r["findings"]]
    f = storm[0]
    assert "py_tiny_reads.py:count_statuses" in f["location"], f["location"]
    assert "f.read(65536)" in f["next_step"], f["next_step"]
    assert data in f["evidence"], f["evidence"]
    n = int(f["title"].split()[2])
    # one read per byte, one at the end of the file, and the two that found its size
    lost = r["syscalls"]["lost_calls"]
    assert own["bytes"] - lost <= n <= own["bytes"] + 10, (n, own, lost)
    assert "of 1 byte each" in f["title"], f["title"]


FEED_READER = os.path.join(HERE, "..", "workloads", "py_feed_reader.py")


@check("a phase that waits on its upstream's pipe is I/O-bound in read(2) on that pipe, "
       "at the Python function that reads it")
def _():
    p, run, r = run_profile("syscalls-phase", [sys.executable, FEED_READER, "40"],
                            "--focus", "io")
    assert p.returncode == 0, p.stderr[-2000:]
    if probe_status(run, "python")[0] != "on":
        print("  (the python probe is off here: %s)" % (probe_status(run, "python"),))
        return
    said = [(f["title"], f["location"]) for f in r["findings"]]
    said += [(a["title"], f["location"]) for f in r["findings"] for a in f.get("also", [])]
    fetch = [(t, loc) for t, loc in said if t.startswith("Phase fetch ")]
    assert fetch, said
    title, loc = fetch[0]
    assert "I/O-bound" in title and "in read(2) on pipe:" in title, title
    assert "py_feed_reader.py:fetch_rows" in loc, loc


@check("a slow flush names the file it flushed")
def _():
    run, r, own = writer_run()
    sync = [f for f in r["findings"] if f["id"] == "io.slow_sync"]
    if not sync:
        print("  (fsync was quick here: no slow-flush finding to check)")
        return
    assert "(access.log)" in sync[0]["title"] and "access.log" in sync[0]["evidence"], sync[0]


@check("attached to a running program, the system-call table covers the attached span")
def _():
    d = scratch("syscalls-attach")
    target = subprocess.Popen([LOG_WRITER, d, "100000000"], stdout=subprocess.DEVNULL)
    try:
        wait_for(lambda: os.path.exists(os.path.join(d, "access.log")), "the log to appear")
        run = os.path.join(d, "run")
        p = sonde("attach", "-q", "--focus", "io", "-d", "1", "-o", run, str(target.pid),
                  timeout=600)
        assert p.returncode == 0, p.stderr[-2000:]
        assert target.poll() is None, "the attached program did not survive"
    finally:
        target.kill()
        target.wait(timeout=60)
    with open(os.path.join(run, "report.json")) as f:
        r = json.load(f)
    writes = calls_of(r, "write")
    assert writes and writes["calls"] > 0, r.get("syscalls")
    assert "log_line" in writes["sites"][0]["location"], writes["sites"]


@check("where the tracepoints are not permitted, one line says so and the rest of the run "
       "carries on")
def _():
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        print("note: needs root and setpriv to run sonde as another user: not checked")
        return
    d = scratch("syscalls-nobody")
    os.chmod(d, 0o1777)
    for path in (os.environ["SONDE"], LOG_WRITER):
        if subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                           "test", "-x", path]).returncode:
            print("note: user 65534 cannot reach %s: not checked" % path)
            return
    run = os.path.join(d, "run")
    p = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                        os.environ["SONDE"], "run", "-q", "--focus", "io", "-o", run, "--",
                        LOG_WRITER, d, "1000"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    status, reason = probe_status(run, "syscalls")
    if status == "on":
        print("note: an unprivileged user may trace system calls here: not checked")
        return
    assert status == "unavailable" and reason and "\n" not in reason, (status, reason)
    assert "root" in reason, reason
    lines = [ln for ln in p.stderr.splitlines() if "syscalls probe off" in ln]
    assert len(lines) == 1, p.stderr
    db = sqlite3.connect(os.path.join(run, "profile.db"))
    writes = db.execute("SELECT count(*) FROM output_lines WHERE line LIKE '%writes%'").fetchone()
    db.close()
    assert writes[0] == 1, "the program's output was not recorded"


if __name__ == "__main__":
    if not os.access(LOG_WRITER, os.X_OK):
        skip("the log_writer workload is not built (%s)" % LOG_WRITER)
    main()
