"""sonde's own cost while it samples Python, kept down without losing
samples: an idle Python is sampled at every tick while sonde wakes only a
few times a second (batches, filled from stacks that provably did not
change), a Python that starts computing after a long idle is sampled within a
few ticks (the watch on its threads wakes sonde), and busy threads that did
not hold the GIL keep their stacks instead of being walked, every sample
still in the right function. One CPython (the newest found), 2-3 s each.
Exit 77 when no Python is found."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, cpythons, db, main, run_profile, skip  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SPIN = os.path.join(HERE, "..", "workloads", "py_spin_threads.py")
BURST = os.path.join(HERE, "..", "workloads", "py_idle_burst.py")

found = [exe for label, _, exe, _ in cpythons() if exe and label.startswith("pyenv")]
if not found and os.access("/usr/bin/python3.11", os.X_OK):
    found.append("/usr/bin/python3.11")
if not found:
    skip("no CPython 3.8-3.13 found (pyenv versions or /usr/bin/python3.11)")
PY = found[-1]


def profile(name, command, *options):
    p, d, _ = run_profile(name, command, "--probes", "proc,python", *options)
    if p.returncode != 0:
        raise AssertionError(f"sonde exited {p.returncode}: {p.stderr[-400:]}")
    con = db(d)
    meta = dict(con.execute("SELECT key, value FROM meta"))
    return p, con, meta


def leaves(con, where=""):
    """(t_ns, tid, leaf function) of every python sample."""
    return con.execute("SELECT s.t_ns, s.tid, f.function FROM samples s JOIN stack_nodes n"
                       " ON n.id = s.node JOIN frames f ON f.id = n.frame"
                       " WHERE s.source = 'python' " + where + " ORDER BY s.t_ns").fetchall()


@check("an idle Python is sampled at every tick while sonde wakes only a few times a second")
def idle_batches():
    _, con, meta = profile("pyidle", [PY, SPIN, "0", "3"])
    if not meta.get("python_batches") and os.geteuid() != 0:
        print("note: no batches (perf events refused to a non-root user): not checked")
        return
    assert meta.get("python_batches", 0) >= 1, meta
    assert meta.get("python_stacks_filled", 0) > 0, meta
    rows = leaves(con)
    span_s = (rows[-1][0] - rows[0][0]) / 1e9
    expected = span_s * int(meta["python_rate_hz"]) + 1
    assert len(rows) >= 0.9 * expected, f"{len(rows)} samples over {span_s:.2f} s ({expected:.0f} ticks)"
    assert len(rows) <= expected + 2, f"{len(rows)} samples over {span_s:.2f} s: ticks sampled twice"
    ts = [r[0] for r in rows]
    assert len(set(ts)) == len(ts), "two samples of one thread at one tick"
    print(f"{len(rows)} samples for {expected:.0f} ticks, {meta['python_stacks_filled']} filled "
          f"in {meta['python_batches']} batches")


@check("a Python that starts computing after a long idle is sampled within a few ticks of its start")
def burst_after_idle():
    p, con, meta = profile("pyburst", [PY, BURST, "2", "0.25"])
    if not meta.get("python_batches") and os.geteuid() != 0:
        print("note: no batches (perf events refused to a non-root user): not checked")
        return
    truth = json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else None
    rows = leaves(con)
    hits = [r for r in rows if r[2] == "burst"]
    assert hits, f"burst() never sampled; meta {meta}"
    if truth:
        wall_s = truth["burst_end"] - truth["burst_start"]
        expected = wall_s * int(meta["python_rate_hz"])
        assert len(hits) >= 0.6 * expected, (
            f"{len(hits)} samples in burst() over its {wall_s:.3f} s ({expected:.0f} ticks); meta {meta}")
        print(f"burst(): {len(hits)} samples over {wall_s:.3f} s ({expected:.0f} ticks)")


@check("busy threads that did not hold the GIL keep their stacks, every sample still in its function")
def kept_stacks():
    _, con, meta = profile("pykept", [PY, SPIN, "4", "2"], "-r", "499")
    assert meta.get("python_stacks_kept", 0) > 0, meta
    names = dict(con.execute("SELECT tid, name FROM threads"))
    rows = [r for r in leaves(con) if (names.get(r[1]) or "").startswith("crunch")]
    assert rows, "no sample of a crunch thread"
    # A thread's stack is crunch() (or time.monotonic, which it calls) all
    # its life but its first and last moments (starting, returning).
    inside = [r for r in rows if r[2] in ("crunch", "monotonic")]
    assert len(inside) >= 0.97 * len(rows), (
        f"{len(rows) - len(inside)} of {len(rows)} crunch-thread samples elsewhere: "
        f"{sorted(set(r[2] for r in rows))}")
    print(f"{meta['python_stacks_kept']} of {meta['python_samples']} samples kept, "
          f"{len(inside)} of {len(rows)} crunch-thread samples in crunch()")


main()
