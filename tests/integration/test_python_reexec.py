"""A Python found as a forked copy of its parent and then exec'ing the same
Python again (a worker that re-execs itself, as daemons and prefork servers
do) is looked for again after its exec and sampled in the code it runs then,
on every CPython 3.8-3.13 found: the worker's work() gets samples under its
pid, and a note says the sampled process exec'd. (A machine so loaded that
sonde first sees the worker after its exec does not test this: said, not
failed.)
Env: SONDE, SONDE_TEST_TMP. Exit 77 when no CPython 3.8-3.13 is found."""
import os
import shutil
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REEXEC = os.path.join(HERE, "..", "workloads", "py_reexec.py")

sys.path.insert(0, HERE)
from sonde_test import per_cpython  # noqa: E402


def check_one(sonde, tmp, label, minor, exe):
    run_dir = os.path.join(tmp, "reexec-%s" % label.replace(" ", "_").replace("/", "_"))
    shutil.rmtree(run_dir, ignore_errors=True)
    r = subprocess.run([sonde, "run", "-q", "-o", run_dir, "--probes", "proc,python", "--",
                        exe, REEXEC], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return ["sonde run exited %d: %s" % (r.returncode, r.stderr.strip()[-500:])]
    db = sqlite3.connect(os.path.join(run_dir, "profile.db"))
    leader = int(db.execute("SELECT value FROM meta WHERE key = 'leader_pid'").fetchone()[0])
    found = [row[0] for row in db.execute(
        "SELECT text FROM notes WHERE probe = 'python' AND kind = 'found'")]
    execs = db.execute("SELECT count(*) FROM notes WHERE probe = 'python' AND kind = 'exec'"
                       ).fetchone()[0]
    work = dict(db.execute(
        "SELECT s.pid, count(*) FROM samples s JOIN stack_nodes n ON n.id = s.node"
        " JOIN frames f ON f.id = n.frame WHERE s.source = 'python' AND f.function = 'work'"
        " GROUP BY s.pid").fetchall())
    work.pop(leader, None)
    if not execs:
        if sum(work.values()) >= 5:
            print("note %s: sonde first saw the worker after its exec (a loaded machine):"
                  " the re-exec was not tested" % label)
            return []
        return ["no note of an exec and work() in %r samples outside the leader %d;"
                " python notes: %r" % (work, leader, found)]
    if sum(work.values()) < 5:
        return ["the worker exec'd (noted) but its work() got %r samples; python notes: %r"
                % (work, found)]
    return []


if __name__ == "__main__":
    sys.exit(per_cpython(check_one, "the re-exec'd worker is sampled in work()"))
