"""A commit per row (tests/workloads/py_ingest.py, an access-log ingester
that stores each hit in SQLite): in planted mode HitStore.add commits after
every insert and the job spends its time waiting for the disk; the report's
findings name that line (file:HitStore.add:line of the commit) once, with
the fdatasync it waits in and advice to commit many rows in one transaction,
not the SQLite library's address it waits through. In fixed mode (batches of
500 in one transaction each) no finding is about a commit per row. Skips where an fsync
does not wait for a disk (tmpfs)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, fsync_ms, main, probe_status, run_profile, scratch, skip  # noqa: E402,E501

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "..", "workloads", "py_ingest.py")
ROWS = "800"


def commit_line():
    with open(JOB) as f:
        lines = f.read().splitlines()
    add = lines.index("    def add(self, hit):")
    return next(i + 1 for i in range(add, len(lines)) if "self.db.commit()" in lines[i])


def at_store(findings):
    return [f for f in findings if ":HitStore." in f.get("location", "")]


RUNS = {}


def run(mode):
    if mode not in RUNS:
        d = scratch("ingest-" + mode)
        if mode == "planted" and fsync_ms(d) < 0.05:
            skip("an fsync in %s does not wait for a disk here" % d)
        p, run_dir, r = run_profile("ingest-run-" + mode, [sys.executable, JOB,
                                                           os.path.join(d, "access.log"),
                                                           os.path.join(d, "hits.db"), ROWS, mode])
        assert p.returncode == 0 and r, p.stderr[-600:]
        status = probe_status(run_dir, "offcpu")
        if not status or status[0] != "on":
            skip("the offcpu probe is off here: %s" % (status and status[1]))
        RUNS[mode] = r
    return RUNS[mode]


@check("a commit per row is one finding at HitStore.add's commit line, naming fdatasync and "
       "advising one transaction for many rows")
def _():
    r = run("planted")
    found = at_store(r["findings"])
    assert len(found) == 1, [(f["id"], f["location"]) for f in r["findings"]]
    f = found[0]
    assert f["location"].endswith("py_ingest.py:HitStore.add:%d" % commit_line()), f["location"]
    assert "fdatasync" in f["evidence"] or "fsync" in f["evidence"], f["evidence"]
    assert "transaction" in f["next_step"], f["next_step"]
    assert f is r["findings"][0], [(g["id"], g["location"]) for g in r["findings"]]


@check("no finding names the SQLite library's code instead of the program's line")
def _():
    r = run("planted")
    bad = [f["location"] for f in r["findings"] if "libsqlite3" in f.get("location", "")]
    assert not bad, bad


@check("batched inserts, one transaction each, give no finding of a commit per row: none at "
       "HitStore.add or add_many, none advising one transaction for many rows")
def _():
    r = run("fixed")
    # The few commits left (the table's creation, one per 500 rows) may still
    # be where the short job waits; they are not a commit per row.
    found = [f for f in r["findings"] if ":HitStore.add" in f.get("location", "") or
             "transaction" in f.get("next_step", "")]
    assert not found, [(f["id"], f["location"], f["title"]) for f in found]


main()
