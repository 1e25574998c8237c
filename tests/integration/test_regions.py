"""Regions: the program's own NVTX ranges, and the regions it names with
include/sonde.h or the sonde Python module (python/sonde), are recorded on a
machine without an NVIDIA driver (the nvtx probe: sonde points
NVTX_INJECTION64_PATH at its CUDA agent; SONDE_CUDA_FORCE is not set here)
and become the report's phases when the program's output has no phase
markers. Each program writes its own CLOCK_MONOTONIC readings around each
region, which the phases' times must fall between. Skipped where the agent
(or, for the NVTX program, the nvtx3 headers) was not built, and for Python
where no CPython 3.8-3.13 is installed."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import (SONDE, check, cpython_exes, db, main,  # noqa: E402
                        run_profile_clocked, scratch, skip, workload)

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT = os.path.join(os.path.dirname(os.path.abspath(SONDE)), "libsonde_cuda.so")
NVTX_PROGRAM = workload("nvtx_ranges")
C_PROGRAM = workload("sonde_regions")
PY_PROGRAM = os.path.join(HERE, "..", "workloads", "py_regions.py")
PY_MODULE_DIR = os.path.join(HERE, "..", "..", "python")
SLACK_NS = 2000  # the report's seconds are rounded doubles

if not os.path.exists(AGENT):
    skip("libsonde_cuda.so was not built (no CUPTI headers at configure time)")

_runs = {}


def driverless_env():
    env = {k: v for k, v in os.environ.items()
           if k not in ("SONDE_CUDA_FORCE", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH",
                        "SONDE_CUDA_AGENT")}
    return env


def profiled(name, command, extra_env=None):
    """Runs command under sonde with its clock file as the last argument:
    (proc, dir, report, {name: [a, b, c, d]})."""
    if name not in _runs:
        env = driverless_env()
        env.update(extra_env or {})
        p, d, r, measured = run_profile_clocked(name, command, env)
        _runs[name] = (p, d, r, measured)
    return _runs[name]


def start_mono_ns(d):
    conn = db(d)
    try:
        (start,), = conn.execute("SELECT value FROM meta WHERE key = 'start_mono_ns'")
    finally:
        conn.close()
    return int(start)


def phases_by_name(r):
    return {p["name"]: p for p in r.get("phases") or []}


def within_own_clock(d, phase, t):
    """The phase starts while the opening call ran and ends while the
    closing one did; its duration lies between the two bounds."""
    t0 = start_mono_ns(d)
    s = t0 + phase["start_s"] * 1e9
    e = t0 + phase["end_s"] * 1e9
    assert t[0] - SLACK_NS <= s <= t[1] + SLACK_NS, (phase, [t[0] - s, t[1] - s])
    assert t[2] - SLACK_NS <= e <= t[3] + SLACK_NS, (phase, [t[2] - e, t[3] - e])
    assert (t[2] - t[1] - SLACK_NS) / 1e9 <= phase["duration_s"] <= (t[3] - t[0] + SLACK_NS) / 1e9


def nvtx_run():
    if not os.path.exists(NVTX_PROGRAM):
        skip("the nvtx_ranges workload was not built (no nvtx3/nvToolsExt.h at configure time)")
    return profiled("regions-nvtx", [NVTX_PROGRAM])


@check("without a driver the nvtx probe records NVTX ranges and the GPU note stays "
       "'no NVIDIA driver here'")
def _():
    p, d, r, _ = nvtx_run()
    conn = db(d)
    try:
        status = dict(conn.execute("SELECT name, status FROM probes"))
        reason = dict(conn.execute("SELECT name, reason FROM probes"))
        n = conn.execute("SELECT COUNT(*) FROM nvtx_ranges").fetchone()[0]
    finally:
        conn.close()
    assert status.get("nvtx") == "on", (status, reason)
    assert status.get("cuda") == "unavailable" and "no NVIDIA driver here" in reason["cuda"], \
        (status, reason)
    assert n == 7, n
    assert "no NVIDIA driver here" in (r.get("not_measured") or {}).get("gpu", ""), \
        r.get("not_measured")


@check("the top-level NVTX ranges are the phases, origin nvtx, within the program's clock")
def _():
    p, d, r, measured = nvtx_run()
    ph = phases_by_name(r)
    assert set(ph) == {"step", "prefetch", "io: read", "left open"}, list(ph)
    assert all(x["origin"] == "nvtx" for x in ph.values()), ph
    assert r["phase_markers"]["origin"] == "nvtx", r["phase_markers"]
    for name, key in (("step", "step"), ("prefetch", "prefetch"), ("io: read", "read")):
        within_own_clock(d, ph[name], measured[key])
    assert ph["left open"]["ended_by"] == "run end", ph["left open"]
    assert ph["step"]["tid"] and ph["io: read"]["tid"] != ph["step"]["tid"], ph
    assert ph["prefetch"]["tid"] is None, ph["prefetch"]


@check("Part B lists NVTX_INJECTION64_PATH and report.md titles the phases by NVTX")
def _():
    p, d, r, _ = nvtx_run()
    assert "NVTX_INJECTION64_PATH=" in str(r.get("changelog")), r.get("changelog")
    with open(os.path.join(d, "report.md")) as f:
        md = f.read()
    assert "phases from the program's top-level NVTX ranges" in md, md[:3000]
    assert "| step |" in md, md[:3000]


def c_run():
    if not os.path.exists(C_PROGRAM):
        skip("the sonde_regions workload was not built")
    return profiled("regions-c", [C_PROGRAM])


@check("sonde.h's regions are phases: load and train at the top, parse nested in load is not")
def _():
    p, d, r, measured = c_run()
    ph = phases_by_name(r)
    assert set(ph) == {"load", "train"}, list(ph)
    within_own_clock(d, ph["load"], measured["load"])
    within_own_clock(d, ph["train"], measured["train"])
    conn = db(d)
    try:
        parse = conn.execute("SELECT depth FROM nvtx_ranges WHERE name = 'parse'").fetchall()
    finally:
        conn.close()
    assert parse == [(1,)], parse


@check("a region's top function is the one its thread spent it in")
def _():
    p, d, r, _ = c_run()
    train = phases_by_name(r)["train"]
    if not train["samples"]:
        print("skip: no CPU samples in the train region (perf_event unavailable?)")
        return
    top = train["top_functions"][0]["function"]
    assert top == "spin_ms", train["top_functions"]


@check("sonde.h does nothing and costs nothing visible without sonde")
def _():
    if not os.path.exists(C_PROGRAM):
        print("skip: the sonde_regions workload was not built")
        return
    own = os.path.join(scratch("regions-bare"), "own.txt")
    q = subprocess.run([C_PROGRAM, own], env=driverless_env(), timeout=60)
    assert q.returncode == 0, q.returncode


def python_exe():
    found, missing = cpython_exes()
    if not found:
        return None, "no CPython 3.8-3.13 here: " + "; ".join(missing)
    return found[-1], None


@check("the sonde Python module's regions are phases within the program's clock")
def _():
    exe, why = python_exe()
    if not exe:
        print("skip: " + why)
        return
    label, path = exe
    p, d, r, measured = profiled("regions-py", [path, PY_PROGRAM],
                                 {"PYTHONPATH": os.path.abspath(PY_MODULE_DIR)})
    assert measured["active"][0] == 1, (label, measured)
    ph = phases_by_name(r)
    assert set(ph) == {"prepare", "fit"}, (label, list(ph))
    within_own_clock(d, ph["prepare"], measured["prepare"])
    within_own_clock(d, ph["fit"], measured["fit"])


@check("the sonde Python module imports on every CPython here and does nothing without sonde")
def _():
    found, missing = cpython_exes()
    for reason in missing:
        print("skip: " + reason)
    code = ("import sonde, sys\n"
            "assert not sonde.active\n"
            "with sonde.region('x'):\n    pass\n"
            "f = lambda: 3\n"
            "assert sonde.region('y')(f) is f\n"
            "print('ok')\n")
    env = driverless_env()
    env["PYTHONPATH"] = os.path.abspath(PY_MODULE_DIR)
    for label, path in found:
        q = subprocess.run([path, "-c", code], env=env, capture_output=True, text=True,
                           timeout=60)
        assert q.returncode == 0 and q.stdout.strip() == "ok", (label, q.stderr[-800:])


main()
