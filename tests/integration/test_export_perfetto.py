"""`sonde export DIR --format perfetto` writes the run's timeline in
Perfetto's native protobuf, read back here by a small reader of our own
(perfetto_reader.py: the packets, sequence, interning, tracks and nesting
checked against the format's rules), and holding what trace.json holds: the
same slices on the same threads, the same counter values, the same names.
A CUDA launch's arrow to its kernel becomes a flow between the two slices
(GPU rows added to a copy of the recording: no GPU here). Workload:
tests/workloads/py_spin_threads.py (two Python threads computing)."""
import collections
import json
import os
import shutil
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfetto_reader import read_perfetto  # noqa: E402
from sonde_test import check, main, run_profile, scratch, skip, sonde  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "py_spin_threads.py")
PYTHON = shutil.which("python3")
HOSTILE = "<img src=x onerror=alert(1)>"

if not PYTHON:
    skip("no python3 on PATH")
_, RUN, REPORT = run_profile("export-perfetto", [PYTHON, WORKLOAD, "2", "1"], expect_rc=0)


def export(run, fmt):
    out = os.path.join(scratch("export-perfetto-" + fmt), "out")
    p = sonde("export", run, "--format", fmt, "-o", out, "-q")
    assert p.returncode == 0, (fmt, p.returncode, p.stderr)
    with open(out, "rb") as f:
        return f.read()


def both(run):
    return json.loads(export(run, "trace"))["traceEvents"], read_perfetto(export(run, "perfetto"))


def ns(us):
    return round(us * 1000)


def thread_of(tracks, uuid):
    t = tracks[uuid]
    if t["kind"] == "thread":
        return t["pid"], t["tid"]
    return tracks[t["parent"]]["pid"], 0


_pair = {}


def pair():
    if not _pair:
        _pair["v"] = both(RUN)
    return _pair["v"]


@check("perfetto: the trace follows the format's rules and holds trace.json's slices, thread "
       "for thread")
def _():
    events, pf = pair()
    want = collections.Counter((e["pid"], e["tid"], e["name"], e["cat"], ns(e["ts"]),
                                ns(e["ts"]) + ns(e["dur"]))
                               for e in events if e["ph"] == "X")
    got = collections.Counter(thread_of(pf["tracks"], u) + (name, cat, b, e)
                              for u, name, cat, b, e, _, _ in pf["slices"])
    assert want, "trace.json has no slices"
    assert got == want, (list((want - got).items())[:5], list((got - want).items())[:5])


@check("perfetto: every process and thread is named as in trace.json")
def _():
    events, pf = pair()
    procs = {t["pid"]: t["name"] for t in pf["tracks"].values() if t["kind"] == "process"}
    threads = {(t["pid"], t["tid"]): t["name"] for t in pf["tracks"].values()
               if t["kind"] == "thread"}
    for e in events:
        if e["ph"] != "M":
            continue
        if e["name"] == "process_name":
            assert procs.get(e["pid"]) == e["args"]["name"], (e, procs)
        elif e["name"] == "thread_name" and e["tid"]:
            assert threads.get((e["pid"], e["tid"])) == e["args"]["name"], (e, threads)


@check("perfetto: each counter of trace.json is a counter track of its process with the same "
       "values")
def _():
    events, pf = pair()
    want = collections.Counter()
    for e in events:
        if e["ph"] == "C":
            for k, v in e["args"].items():
                want[(e["pid"], e["name"] + " " + k, ns(e["ts"]), round(v, 6))] += 1
    tracks = pf["tracks"]
    got = collections.Counter((tracks[tracks[u]["parent"]]["pid"], tracks[u]["name"], ts,
                               round(v, 6)) for u, ts, v in pf["counters"])
    assert want, "trace.json has no counters"
    assert got == want, (list((want - got).items())[:5], list((got - want).items())[:5])


@check("perfetto: a CUDA launch's arrow joins the call's slice to its kernel's, and a hostile "
       "kernel name is kept as text")
def _():
    d = os.path.join(scratch("export-perfetto-gpu"), "run")
    shutil.copytree(RUN, d)
    pid = REPORT["target"]["pids"][0]
    con = sqlite3.connect(os.path.join(d, "profile.db"))
    con.executescript(
        "CREATE TABLE gpu_kernels(pid INTEGER, device INTEGER, stream INTEGER, corr INTEGER,"
        " start_ns INTEGER, end_ns INTEGER, name TEXT, grid_x INTEGER, grid_y INTEGER,"
        " grid_z INTEGER, block_x INTEGER, block_y INTEGER, block_z INTEGER, registers INTEGER,"
        " smem_static INTEGER, smem_dynamic INTEGER);"
        "CREATE TABLE gpu_copies(pid INTEGER, device INTEGER, stream INTEGER, corr INTEGER,"
        " start_ns INTEGER, end_ns INTEGER, bytes INTEGER, async INTEGER, src_device INTEGER,"
        " dst_device INTEGER, kind TEXT, src_kind TEXT, dst_kind TEXT);"
        "CREATE TABLE gpu_api(pid INTEGER, tid INTEGER, corr INTEGER, start_ns INTEGER,"
        " end_ns INTEGER, ret INTEGER, name TEXT);")
    con.execute("INSERT INTO gpu_kernels VALUES(?, 0, 7, 42, 200000000, 230000000, ?, 1, 1, 1,"
                " 256, 1, 1, 16, 0, 0)", (pid, HOSTILE))
    con.execute("INSERT INTO gpu_api VALUES(?, ?, 42, 100000000, 100500000, 0,"
                " 'cudaLaunchKernel')", (pid, pid))
    con.commit()
    con.close()
    _, pf = both(d)
    launch = [s for s in pf["slices"] if s[1] == "cudaLaunchKernel"]
    kernel = [s for s in pf["slices"] if s[1] == HOSTILE]
    assert len(launch) == 1 and len(kernel) == 1, (launch, kernel)
    assert launch[0][5] and launch[0][5] == kernel[0][6], (launch, kernel)
    gpu = pf["tracks"][kernel[0][0]]
    assert gpu["kind"] == "thread" and gpu["tid"] == 7 and gpu["name"] == "stream 7", gpu
    assert (kernel[0][3], kernel[0][4]) == (200000000, 230000000), kernel


@check("--format help lists perfetto")
def _():
    p = sonde("export", "--format", "help")
    assert p.returncode == 0 and "perfetto" in p.stdout, (p.returncode, p.stdout)


if __name__ == "__main__":
    main()
