"""Helpers for the Python-stack tests: the python samples of a recording with
their whole stacks, and a Python started outside sonde that says when it runs."""
import sqlite3
import subprocess


def python_samples(run_dir, pid=None):
    """[(pid, tid, [(function, line) outermost first], on_cpu, gil)] of the
    recording's python samples (of pid, when given)."""
    db = sqlite3.connect(run_dir + "/profile.db")
    try:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'frames'").fetchone():
            return []  # no stack recorded at all
        frames = {r[0]: (r[1], r[2]) for r in db.execute("SELECT id, function, line FROM frames")}
        nodes = {r[0]: (r[1], r[2]) for r in db.execute("SELECT id, parent, frame FROM stack_nodes")}
        paths = {}
        out = []
        rows = db.execute("SELECT pid, tid, node, on_cpu, gil FROM samples "
                          "WHERE source = 'python'").fetchall()
        for p, tid, node, on_cpu, gil in rows:
            if pid is not None and p != pid:
                continue
            if node not in paths:
                path, n = [], node
                while n:
                    parent, frame = nodes[n]
                    path.append(frames[frame])
                    n = parent
                paths[node] = path[::-1]
            out.append((p, tid, paths[node], on_cpu, gil))
        return out
    finally:
        db.close()


def meta(run_dir):
    db = sqlite3.connect(run_dir + "/profile.db")
    try:
        return dict(db.execute("SELECT key, value FROM meta").fetchall())
    finally:
        db.close()


def start_ready(argv, **kw):
    """Starts argv (a Python workload that prints "ready" once running) and
    waits for that line; returns the Popen."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, **kw)
    line = proc.stdout.readline()
    if "ready" not in line:
        proc.kill()
        proc.wait()
        raise RuntimeError("%s did not start: %r" % (argv, line))
    return proc
