"""Attribution against ground truth for the known-split workloads
(tests/workloads/py_split.py, cpu_split.c), shared by
test_python_split_under_load.py and bench/accuracy.py: run sonde on one, read
which share of its samples each of the three functions got, compare with the
shares the workload measured with its own CPU clock, and keep N busy loops
running beside it."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PY_SPLIT = os.path.join(HERE, "..", "workloads", "py_split.py")


def busy_loops(n):
    """Starts n CPU-bound processes (plain C-speed spins in a shell-free
    Python one-liner); returns them for stop_busy_loops()."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(n)]


def stop_busy_loops(procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def _stack_names(db):
    """node -> set of function names on its stack."""
    # A compiler's clone of a C function keeps its name before a dot
    # (decode_block.constprop.0); Python names have no such suffix to drop.
    frames = {r[0]: (r[1] if r[2] == "python" else (r[1] or "").split(".")[0])
              for r in db.execute("SELECT id, function, kind FROM frames")}
    nodes = {r[0]: (r[1], r[2]) for r in db.execute("SELECT id, parent, frame FROM stack_nodes")}
    memo = {0: frozenset()}

    def names(node):
        chain, n = [], node
        while n not in memo:
            chain.append(n)
            n = nodes[n][0] if n in nodes else 0
        acc = memo[n]
        for c in reversed(chain):
            acc = memo[c] = acc | {frames.get(nodes[c][1], "")} if c in nodes else acc
        return memo.get(node, acc)
    return names


def shares(db, functions, source, where=""):
    """Each function's share of the samples of `source` (and `where`) that
    have one of `functions` on their stack (counting weight 1 per sample);
    (shares, samples) or (None, 0) without any."""
    names = _stack_names(db)
    counts = {f: 0 for f in functions}
    total = 0
    for node, n in db.execute("SELECT node, COUNT(*) FROM samples WHERE source = ? %s"
                              " GROUP BY node" % where, (source,)):
        on = names(node)
        hit = [f for f in functions if f in on]
        for f in hit:
            counts[f] += n
        total += n if hit else 0
    if not total:
        return None, 0
    return {f: c / total for f, c in counts.items()}, total


def worst_error_pts(measured, truth):
    """The largest |measured - truth| over the functions, in points."""
    return max(abs(measured.get(f, 0.0) - t) * 100.0 for f, t in truth.items())


def run_split(sonde, out_dir, command, rate_hz, probes=None, timeout=300):
    """`sonde run -q -o OUT -r RATE [--probes P] -- COMMAND` on a split
    workload; returns (truth, views, meta) where views maps a view name to
    (shares, samples): "report" is what the report's hotspots count
    (hotspots_source), "python" the on-CPU python samples; raises
    RuntimeError when the run fails."""
    shutil.rmtree(out_dir, ignore_errors=True)
    args = [sonde, "run", "-q", "-o", out_dir, "-r", str(rate_hz)]
    if probes:
        args += ["--probes", probes]
    p = subprocess.run(args + ["--"] + command, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("sonde run exited %d: %s" % (p.returncode, p.stderr.strip()[-400:]))
    truth = json.loads(p.stdout.strip().splitlines()[-1])["shares"]
    with open(os.path.join(out_dir, "report.json")) as f:
        report = json.load(f)
    src = (report.get("hotspots_source") or {}).get("source")
    db = sqlite3.connect(os.path.join(out_dir, "profile.db"))
    views = {}
    if src:
        views["report"] = shares(db, truth, src, "AND on_cpu = 1" if src == "python" else "")
    views["python"] = shares(db, truth, "python", "AND on_cpu = 1")
    meta = dict(db.execute("SELECT key, value FROM meta"))
    db.close()
    return truth, views, meta
