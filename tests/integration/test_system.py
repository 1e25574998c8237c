"""The system probe: the machine around the target (disks, CPUs, run queue,
pressure) over the run, on by default. tests/workloads/io_journal.c appends
records to a journal and fsyncs after each one (planted), so the disk under
the test's scratch directory does work while it runs."""
import json
import os

from sonde_test import check, main, run_profile, scratch, skip

WORKLOADS = os.environ.get("SONDE_WORKLOADS", "")
JOURNAL = os.path.join(WORKLOADS, "io_journal")


def device_of(path):
    """The whole block device a path's file system lives on, or None (tmpfs)."""
    st = os.stat(path)
    link = "/sys/dev/block/%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
    if not os.path.exists(link):
        return None
    real = os.path.realpath(link)
    # a partition's directory sits inside its disk's
    if os.path.exists(os.path.join(real, "partition")):
        real = os.path.dirname(real)
    return os.path.basename(real)


@check("a run records the machine: CPU use, the run queue, pressure and a timeline, and the "
       "disk the program wrote to with its bytes and how busy it was")
def _():
    d = scratch("system-journal")
    p, run, r = run_profile("system-journal", [JOURNAL, d, "planted", "3000", "10"])
    assert p.returncode == 0, p.stderr[-2000:]
    sys_ = r.get("system")
    assert sys_, sorted(r)
    assert 0 <= sys_["cpu"]["busy_pct"] <= 100, sys_["cpu"]
    assert sys_["run_queue"]["max"] >= 1, sys_["run_queue"]
    assert len(sys_["timeline"]) >= 1, sys_["timeline"]
    with open(os.path.join(run, "report.md")) as f:
        md = f.read()
    assert "## System" in md and "runnable tasks" in md, md[-2000:]
    dev = device_of(d)
    if not dev:
        print("note: %s is on no block device (tmpfs): the disk is not checked" % d)
        return
    mine = [x for x in sys_["devices"] if x["device"] == dev]
    assert mine, (dev, [x["device"] for x in sys_["devices"]])
    # 3000 records fsync'd one by one: at least that many writes reach it
    assert mine[0]["writes"] >= 1000 and mine[0]["write_bytes"] > 0, mine[0]
    assert 0 < mine[0]["util_pct"] <= 100.5, mine[0]


@check("--probes without system leaves the section out")
def _():
    d = scratch("system-off")
    p, run, r = run_profile("system-off", [JOURNAL, d, "fixed", "100", "10"], "--probes", "proc")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "system" not in r, r.get("system")


if __name__ == "__main__":
    if not os.access(JOURNAL, os.X_OK):
        skip("the io_journal workload is not built (%s)" % JOURNAL)
    main()
