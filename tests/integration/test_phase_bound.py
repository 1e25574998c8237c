"""Phases that wait and phases that compute (tests/workloads/py_nightly_report.py,
a nightly report job talking to tests/workloads/py_inventory_service.py,
started apart as a real service would be): in --mode planted the extract
phase asks for 300 items one request at a time and the match phase scans the
catalogue for each sale; phase.io_bound names InventoryClient._get (merged
into the off-CPU finding there when that one is made) and phase.cpu_bound
names Matcher._normalize, each phase as long as the job logged it within
10%. In --mode fixed (batched requests, an index built once) neither is
found. The same for a native program (tests/workloads/io_journal.c): an
fsync per record is an I/O-bound ingest phase at write_record, with advice
about fsync; an insertion sort a CPU-bound index phase at build_index; the
fixed journal has neither (the I/O part skipped, with the reason, where
fsync does not wait for a disk)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, cpython_exes, fsync_ms, main, run_profile, scratch, skip, workload  # noqa: E402,E501

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "..", "workloads", "py_nightly_report.py")
SERVICE = os.path.join(HERE, "..", "workloads", "py_inventory_service.py")

pythons, missing = cpython_exes()
pythons = [(label, exe) for label, exe in pythons if "pyenv" in label]
# The oldest (no qualified names before 3.11) and the newest.
TRIED = [pythons[0], pythons[-1]] if len(pythons) > 1 else pythons
if not TRIED:
    print("  (no pyenv CPython 3.8-3.13: %s; the native checks only)" % "; ".join(missing))


class Service:
    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, SERVICE], stdout=subprocess.PIPE,
                                     text=True)
        self.port = self.proc.stdout.readline().strip()  # printed once it serves
        assert self.port.isdigit(), "the inventory service did not start"
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def by_id(r, pattern):
    """The findings with this id, or merged with one."""
    return [f for f in r["findings"] if f["id"] == pattern or
            any(a["id"] == pattern for a in f.get("also") or [])]


def profile(name, exe, port, mode):
    p, d, r = run_profile(name, [exe, JOB, "--port", port, "--mode", mode])
    assert p.returncode == 0 and r, (p.returncode, p.stderr[-1500:])
    return r


def method(label, cls, name):
    """How a method is named: Class.method on every version (co_qualname from
    3.11 on, the source's class before)."""
    return ":%s.%s:" % (cls, name)


def check_logged_durations(r):
    for ph in r["phases"]:
        logged = ph["logged_duration_s"]
        if logged and logged >= 0.5:
            assert abs(ph["duration_s"] - logged) <= 0.1 * logged, ph


for label, exe in TRIED:
    @check(f"{label}: one request per item is an I/O-bound extract phase at "
           "InventoryClient._get, the catalogue scan a CPU-bound match phase at "
           "Matcher._normalize")
    def _(exe=exe, label=label):
        with Service() as svc:
            r = profile("phase-planted", exe, svc.port, "planted")
        check_logged_durations(r)
        io = by_id(r, "phase.io_bound")
        assert io, [(f["id"], f["title"], f["location"]) for f in r["findings"]]
        assert method(label, "InventoryClient", "_get") in io[0]["location"], io[0]
        assert "py_nightly_report.py" in io[0]["location"], io[0]
        own = [f for f in io if f["id"] == "phase.io_bound"]
        if own:
            assert "extract" in own[0]["title"], own[0]
        else:
            assert any("extract" in a["title"] for a in io[0]["also"]), io[0]
        cpu = by_id(r, "phase.cpu_bound")
        assert cpu, [(f["id"], f["title"], f["location"]) for f in r["findings"]]
        assert method(label, "Matcher", "_normalize") in cpu[0]["location"], cpu[0]
        assert "phase match" in cpu[0]["evidence"] or "match" in cpu[0]["title"], cpu[0]
        # The advice speaks Python.
        assert "dict" in cpu[0]["next_step"] or "lru_cache" in cpu[0]["next_step"], cpu[0]


@check("a native journal: an fsync per record is an I/O-bound ingest phase at write_record "
       "(fsync named, advice about fsync), an insertion sort a CPU-bound index phase at "
       "build_index")
def _():
    d = scratch("journal")
    ms = fsync_ms(d)
    p, _, r = run_profile("journal-planted", [workload("io_journal"), d, "planted"])
    assert p.returncode == 0 and r, (p.returncode, p.stderr[-1500:])
    check_logged_durations(r)
    cpu = by_id(r, "phase.cpu_bound")
    assert cpu and ":build_index:" in cpu[0]["location"], r["findings"]
    if ms < 1.0:
        print("  (fsync here takes %.2f ms, no disk wait: the I/O-bound check is skipped)" % ms)
        return
    # On a busy machine the measure above counts the wait for a CPU after
    # each fsync too; the run's own ingest phase says how long it was blocked.
    ingest = [ph for ph in r["phases"] if ph["name"] == "ingest"]
    blocked = (ingest[0]["duration_s"] - ingest[0]["cpu_s"] - ingest[0]["runq_wait_s"]
               if ingest else 0)
    if blocked < 1.0:
        print("  (the ingest phase was blocked %.2f s, under a phase finding's 1 s: fsync did "
              "not wait for a disk here; the I/O-bound check is skipped)" % blocked)
        return
    io = by_id(r, "phase.io_bound")
    assert io and ":write_record:" in io[0]["location"], r["findings"]
    own = [f for f in io if f["id"] == "phase.io_bound"]
    if own:
        assert "ingest" in own[0]["title"] and "fsync" in own[0]["next_step"], own[0]


@check("the fixed journal (an fsync per 500 records, qsort) has neither finding")
def _():
    d = scratch("journal")
    p, _, r = run_profile("journal-fixed", [workload("io_journal"), d, "fixed"])
    assert p.returncode == 0 and r, (p.returncode, p.stderr[-1500:])
    for pattern in ("phase.io_bound", "phase.cpu_bound"):
        assert not by_id(r, pattern), [(f["id"], f["title"]) for f in r["findings"]]


@check(f"{TRIED[-1][0] if TRIED else 'CPython'}: the same job with batched requests and an "
       "index built once has neither finding")
def _():
    if not TRIED:
        print("  (skipped: no pyenv CPython)")
        return
    with Service() as svc:
        r = profile("phase-fixed", TRIED[-1][1], svc.port, "fixed")
    for pattern in ("phase.io_bound", "phase.cpu_bound"):
        assert not by_id(r, pattern), [(f["id"], f["title"]) for f in r["findings"]]
    assert {ph["name"] for ph in r["phases"]} >= {"extract", "match", "write"}, r["phases"]


if __name__ == "__main__":
    main()
