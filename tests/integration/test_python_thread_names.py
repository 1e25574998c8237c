"""Python threads carry the names threading gave them, read from outside the
process, on every CPython 3.8-3.13 found (pyenv) and on Debian's static,
stripped /usr/bin/python3.11: in report.json's python.threads, in the
threads table, and in `sonde dump`: names given at creation ("loader",
"worker-2", "työ-3"), the default one ("Thread-N ..."), "MainThread", and a
name set half a second after the thread started ("renamed-late"); and that
names a reader must not trust are cut (1000 characters), masked (a tab) or
left to the kernel (an int as name, threading._active replaced).
Env: SONDE, SONDE_TEST_TMP. Exit 77 when no Python is found at all; a missing
version is skipped with its reason printed."""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import per_cpython  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "py_named_threads.py")
ODD = os.path.join(HERE, "..", "workloads", "py_odd_thread_names.py")


def expected(line):
    names = {int(tid): name for tid, name in json.loads(line)["threads"].items()}
    if "MainThread" not in names.values() or not any(
            re.match(r"Thread-\d+", n) for n in names.values()):
        return None
    return names


def check_run(sonde, tmp, label, exe):
    """sonde run: report.json's python.threads and the threads table."""
    run_dir = os.path.join(tmp, "py-names-%s" % re.sub(r"[ /]", "_", label))
    shutil.rmtree(run_dir, ignore_errors=True)
    r = subprocess.run([sonde, "run", "-q", "-o", run_dir, "--", exe, WORKLOAD, "2.5"],
                       capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        return ["sonde run exited %d: %s" % (r.returncode, r.stderr.strip()[-500:])]
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    want = expected(lines[-1]) if lines else None
    if not want:
        return ["the workload printed no thread names: %r" % r.stdout[-500:]]
    with open(os.path.join(run_dir, "report.json")) as f:
        report = json.load(f)
    got = {t["tid"]: t["name"] for t in report.get("python", {}).get("threads", [])}
    problems = []
    for tid, name in sorted(want.items()):
        if got.get(tid) != name:
            problems.append("report.json names thread %d %r, threading says %r"
                            % (tid, got.get(tid), name))
    db = sqlite3.connect(os.path.join(run_dir, "profile.db"))
    table = dict(db.execute("SELECT tid, name FROM threads"))
    for tid, name in sorted(want.items()):
        if table.get(tid) != name:
            problems.append("the threads table names thread %d %r, threading says %r"
                            % (tid, table.get(tid), name))
    return problems


def check_dump(sonde, exe):
    """sonde dump: each thread's line carries its threading name."""
    proc = subprocess.Popen([exe, WORKLOAD, "3"], stdout=subprocess.PIPE, text=True)
    try:
        want = expected(proc.stdout.readline())
        out = subprocess.run([sonde, "dump", str(proc.pid)], capture_output=True, text=True,
                             timeout=30)
    finally:
        proc.kill()
        proc.wait()
    if not want:
        return ["the workload printed no thread names"]
    if out.returncode != 0:
        return ["sonde dump exited %d: %s" % (out.returncode, out.stderr.strip())]
    problems = []
    for tid, name in sorted(want.items()):
        if not re.search(r'^Thread %d "%s" ' % (tid, re.escape(name)), out.stdout, re.M):
            problems.append("dump does not show thread %d as %r:\n%s" % (tid, name, out.stdout))
    return problems


def check_odd(sonde, exe, mode):
    """sonde dump on names a reader must not trust: a long one is cut, a
    control character shown as '?', a non-str or an unreadable threading
    leaves the kernel's name."""
    # With "hide" the threads stumble on the replaced _active as they end: quiet.
    proc = subprocess.Popen([exe, ODD, mode], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        want = json.loads(proc.stdout.readline())["threads"]
        out = subprocess.run([sonde, "dump", str(proc.pid)], capture_output=True, text=True,
                             timeout=30)
    finally:
        proc.kill()
        proc.wait()
    if out.returncode != 0:
        return ["sonde dump exited %d: %s" % (out.returncode, out.stderr.strip())]
    problems = []
    for tid, name in sorted(want.items()):
        m = re.search(r'^Thread %s "(.*)" ' % tid, out.stdout, re.M)
        shown = m.group(1) if m else None
        if name is not None and shown != name:
            problems.append("%s: thread %s shown as %r, not %r" % (mode, tid, shown, name))
        if name is None and (shown is None or shown == "12345" or "-" in shown):
            problems.append("%s: thread %s shown as %r, not by its kernel name"
                            % (mode, tid, shown))
    return problems


def check_one(sonde, tmp, label, minor, exe):
    return (check_dump(sonde, exe) + check_run(sonde, tmp, label, exe)
            + check_odd(sonde, exe, "show") + check_odd(sonde, exe, "hide"))


def main():
    return per_cpython(check_one, "threading's names (given, default, MainThread, not ASCII, "
                       "set after start) in report.json, the threads table and sonde dump; "
                       "odd ones cut, masked or left to the kernel")


if __name__ == "__main__":
    sys.exit(main())
