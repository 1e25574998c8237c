"""Observability gaps: a run that was hard to attribute says what would fix
it, in one line each, in the target's language: a native program whose worker
threads all carry the process's name is told to name them with
pthread_setname_np; a stripped program is told its share of samples without
symbols, and its addresses are grouped by function; a Python program that logs no stages is told how to log phase
markers; and a program that names its threads and logs timestamped markers
(tests/workloads/py_pipeline.py) gets none of these."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, main, run_profile, scratch, workload  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PIPELINE = os.path.join(HERE, "..", "workloads", "py_pipeline.py")


def gaps(r):
    return {g["id"]: g["text"] for g in r.get("observability_gaps") or []}


@check("three worker threads with the process's own name: one gap, with the C advice")
def _():
    p, d, r = run_profile("gaps-threads", [workload("cpu_threads")])
    assert p.returncode == 0 and r, p.stderr[-500:]
    g = gaps(r)
    assert "gap.thread_names" in g and "pthread_setname_np" in g["gap.thread_names"], g
    assert "3 of 3" in g["gap.thread_names"], g
    with open(os.path.join(d, "report.md")) as f:
        assert "## Observability gaps" in f.read()


@check("a stripped program: the share of samples without symbols and the module named; "
       "its addresses group into one row per function (the unwind table's entry), not "
       "one row per address")
def _():
    if not shutil.which("strip"):
        print("skip: no strip here")
        return
    exe = os.path.join(scratch("gaps-stripped"), "spin_stripped")
    shutil.copy(workload("cpu_spin"), exe)
    subprocess.run(["strip", exe], check=True)
    p, d, r = run_profile("gaps-symbols", [exe, "1"])
    assert p.returncode == 0 and r, p.stderr[-500:]
    g = gaps(r)
    assert "gap.symbols" in g and "spin_stripped" in g["gap.symbols"], g
    rows = [h for h in r["hotspots"] if h["function"].startswith("spin_stripped+0x")]
    assert rows and rows[0]["self_pct"] > 80, r["hotspots"][:4]
    assert all(h["self_pct"] < 5 for h in rows[1:]), r["hotspots"][:4]


@check("a Python program that runs for seconds and logs no stage gets the Python advice "
       "for phase markers")
def _():
    code = "import time\nt = time.time()\nwhile time.time() - t < 3.5: sum(range(1000))\n"
    p, d, r = run_profile("gaps-phases", [sys.executable, "-c", code])
    assert p.returncode == 0 and r, p.stderr[-500:]
    g = gaps(r)
    assert "gap.no_phases" in g and "log.info" in g["gap.no_phases"], g


@check("a program that names its threads and logs timestamped phase markers has no such gap")
def _():
    p, d, r = run_profile("gaps-none", [sys.executable, PIPELINE])
    assert p.returncode == 0 and r, p.stderr[-500:]
    g = gaps(r)
    for gap in ("gap.thread_names", "gap.no_phases", "gap.marker_times"):
        assert gap not in g, g


if __name__ == "__main__":
    main()
