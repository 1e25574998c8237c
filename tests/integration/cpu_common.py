"""Shared helpers for the cpu probe's integration tests: run sonde on a
workload, read its samples back as folded stacks."""
import collections
import os
import shutil
import sqlite3
import subprocess

from sonde_test import SONDE, WORKLOADS, Checks, skip  # noqa: F401 (the tests use them as cc.*)

TMP = os.environ.get("SONDE_TEST_TMP", "/tmp/sonde-test-runs")


def run(name, workload, *args, sonde_args=()):
    """Runs `sonde run -q -o DIR [sonde_args] -- workload args`; returns DIR."""
    out = os.path.join(TMP, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(TMP, exist_ok=True)
    cmd = [SONDE, "run", "-q", "-o", out, *sonde_args, "--",
           os.path.join(WORKLOADS, workload), *args]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=300)
    if proc.returncode != 0:
        print(proc.stdout, proc.stderr)
        raise SystemExit("FAIL: %s exited %d" % (" ".join(cmd), proc.returncode))
    db = sqlite3.connect(os.path.join(out, "profile.db"))
    status = db.execute("SELECT status, reason FROM probes WHERE name='cpu'").fetchone()
    if not status or status[0] != "on":
        skip("the cpu probe is off here: %s" % (status[1] if status else "not recorded"))
    db.close()
    return out


def stacks(out):
    """[(pid, tid, [(function, file, line, module, kind), ...] outermost first)]"""
    db = sqlite3.connect(os.path.join(out, "profile.db"))
    frames = {r[0]: r[1:] for r in db.execute(
        "SELECT id, function, file, line, module, kind FROM frames")}
    nodes = {r[0]: (r[1], r[2]) for r in db.execute(
        "SELECT id, parent, frame FROM stack_nodes")}
    result = []
    for node, pid, tid in db.execute(
            "SELECT node, pid, tid FROM samples WHERE source='cpu'"):
        st = []
        while node:
            parent, frame = nodes[node]
            st.append(frames[frame])
            node = parent
        st.reverse()
        result.append((pid, tid, st))
    db.close()
    return result


def meta(out, key):
    db = sqlite3.connect(os.path.join(out, "profile.db"))
    row = db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    db.close()
    return row[0] if row else None


def functions(stack):
    return [f[0] for f in stack]


def has_chain(fns, chain):
    """True when chain appears in fns as consecutive frames."""
    return any(fns[i:i + len(chain)] == chain for i in range(len(fns)))


def leaf_counts(samples):
    """Samples per innermost user (non-kernel) function."""
    c = collections.Counter()
    for _, _, st in samples:
        user = [f for f in st if f[4] != "kernel"]
        if user:
            c[user[-1][0]] += 1
    return c
