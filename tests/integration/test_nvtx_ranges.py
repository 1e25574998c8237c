"""NVTX ranges: a C program annotated with NVTX (tests/workloads/nvtx/
nvtx_ranges.c, header-only nvtx3) runs under sonde, which points
NVTX_INJECTION64_PATH at its CUDA agent; the agent's N lines become the
nvtx_ranges rows, the report's gpu.nvtx_ranges table and slices on the
thread's track in trace.json. No GPU is needed: NVTX loads the agent at the
program's first NVTX call (SONDE_CUDA_FORCE=1 lets the cuda probe run
without a driver). The program writes its own CLOCK_MONOTONIC readings
around each range, which the recorded ones must match. Skipped where the
NVTX headers or the agent were missing at build time."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import SONDE, check, db, main, run_profile_clocked, skip, workload  # noqa: E402

AGENT = os.path.join(os.path.dirname(os.path.abspath(SONDE)), "libsonde_cuda.so")
PROGRAM = workload("nvtx_ranges")

if not os.path.exists(AGENT):
    skip("libsonde_cuda.so was not built (no CUPTI headers at configure time)")
if not os.path.exists(PROGRAM):
    skip("the nvtx_ranges workload was not built (no nvtx3/nvToolsExt.h at configure time)")

_runs = {}


def profiled(name="nvtx", env=None):
    if name not in _runs:
        env_run = {k: v for k, v in os.environ.items() if k not in
                   ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "SONDE_CUDA_AGENT")}
        env_run["SONDE_CUDA_FORCE"] = "1"
        env_run.update(env or {})
        p, d, r, measured = run_profile_clocked(name, [PROGRAM], env_run)
        _runs[name] = (p, d, r, measured)
    return _runs[name]


def rows():
    conn = db(profiled()[1])
    try:
        cur = conn.execute("SELECT name, domain, type, tid, depth, closed, start_ns, end_ns"
                           " FROM nvtx_ranges")
        keys = [c[0] for c in cur.description]
        return {r[0]: dict(zip(keys, r)) for r in cur.fetchall()}
    finally:
        conn.close()


@check("every range and the mark of the program is a row, with its type and domain")
def _():
    got = rows()
    want = {"step": ("push", ""), "forward": ("push", ""), "backward": ("push", ""),
            "checkpoint": ("mark", ""), "prefetch": ("range", ""), "read": ("push", "io"),
            "left open": ("push", "")}
    assert {n: (r["type"], r["domain"]) for n, r in got.items()} == want, got


@check("push ranges nest: forward and backward at depth 1 inside step, on the main thread")
def _():
    got = rows()
    step, fwd, bwd = got["step"], got["forward"], got["backward"]
    assert step["depth"] == 0 and fwd["depth"] == 1 and bwd["depth"] == 1, got
    for inner in (fwd, bwd):
        assert step["start_ns"] <= inner["start_ns"] <= inner["end_ns"] <= step["end_ns"], got
        assert inner["tid"] == step["tid"], got
    assert fwd["end_ns"] <= got["checkpoint"]["start_ns"] <= bwd["start_ns"], got
    assert got["checkpoint"]["start_ns"] == got["checkpoint"]["end_ns"], got


@check("the worker's range is on its own thread, and prefetch (started on main, ended by the "
       "worker) belongs to main")
def _():
    got = rows()
    assert got["read"]["tid"] != got["step"]["tid"] and got["read"]["depth"] == 0, got
    assert got["prefetch"]["tid"] == got["step"]["tid"], got


@check("each range starts and ends on sonde's clock while the program's NVTX calls ran")
def _():
    got, measured = rows(), profiled()[3]
    conn = db(profiled()[1])
    try:
        (start,), = conn.execute("SELECT value FROM meta WHERE key = 'start_mono_ns'")
    finally:
        conn.close()
    assert set(measured) == set(got) - {"left open"}, measured
    for name, (a, b, c, d) in measured.items():
        r = got[name]
        s, e = r["start_ns"] + int(start), r["end_ns"] + int(start)
        assert a <= s <= b and c <= e <= d, (name, r, [a - s, b - s, c - e, d - e])
    assert got["forward"]["end_ns"] - got["forward"]["start_ns"] >= 40e6, got


@check("a range still open at exit is kept, closed 0, ending at the exit")
def _():
    got = rows()
    lo = got["left open"]
    assert lo["closed"] == 0 and lo["end_ns"] >= lo["start_ns"] + 4_000_000, lo
    assert all(r["closed"] == 1 for n, r in got.items() if n != "left open"), got


@check("report.json lists the ranges by total time, report.md shows them")
def _():
    p, d, r, measured = profiled()
    table = r["gpu"]["nvtx_ranges"]
    names = [x["name"] for x in table]
    # By total time, most first: which range leads depends on the load (the
    # work is CPU time; prefetch waits on another thread).
    totals = [x["total_s"] for x in table]
    assert totals == sorted(totals, reverse=True) and "checkpoint" not in names, table
    read = [x for x in table if x["name"] == "read"][0]
    assert read["domain"] == "io" and read["count"] == 1 and read["threads"] == 1, read
    t = measured["read"]
    assert (t[2] - t[1]) / 1e9 <= read["total_s"] <= (t[3] - t[0]) / 1e9, (read, t)
    with open(os.path.join(d, "report.md")) as f:
        md = f.read()
    assert "NVTX ranges" in md and "| step | default | 1 |" in md, md[-3000:]


@check("without GPU work every range launched none: zero GPU time, no share")
def _():
    r = profiled()[2]
    for x in r["gpu"]["nvtx_ranges"]:
        assert x["gpu_kernel_s"] == 0 and x["kernels"] == 0 and x["gpu_pct"] is None, x
    assert r["gpu"]["nvtx_launches"]["inside"]["kernels"] == 0, r["gpu"]["nvtx_launches"]


@check("trace.json puts the ranges on the thread's track")
def _():
    p, d, r, _ = profiled()
    with open(os.path.join(d, "trace.json")) as f:
        events = json.load(f)["traceEvents"]
    nvtx = {e["name"]: e for e in events if e.get("cat") == "nvtx"}
    got = rows()
    assert set(nvtx) == set(got), nvtx.keys()
    assert nvtx["read"]["tid"] == got["read"]["tid"] and nvtx["read"]["args"]["domain"] == "io"
    assert abs(nvtx["forward"]["dur"] * 1000 - (got["forward"]["end_ns"] -
                                                  got["forward"]["start_ns"])) < 1000, nvtx


@check("Part B names NVTX_INJECTION64_PATH among the environment sonde set")
def _():
    p, d, r, _ = profiled()
    texts = json.dumps(r.get("changelog"))
    assert "NVTX_INJECTION64_PATH=" in texts, texts[:2000]


@check("a NVTX_INJECTION64_PATH of the user's is left alone and the report says so")
def _():
    p, d, r, _ = profiled("nvtx-taken", {"NVTX_INJECTION64_PATH": "/nonexistent/other-tool.so"})
    conn = db(d)
    try:
        n = conn.execute("SELECT COUNT(*) FROM nvtx_ranges").fetchone()[0]
    finally:
        conn.close()
    assert n == 0, n
    notes = [x["text"] for x in r["notes"]]
    assert any("NVTX_INJECTION64_PATH is already set to /nonexistent/other-tool.so" in x
               for x in notes), notes


main()
