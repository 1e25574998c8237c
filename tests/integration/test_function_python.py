"""--function on a Python function: tests/workloads/py_fn_calls.py calls
pyfn_work.Shaper.step (tests/workloads/pyfn/pyfn_work.py, a module it
imports) exactly N times, from run_loop (4 calls in 5) and run_fifth, and
writes the time each call measured itself. sonde's agent wraps step when
the module is imported (the file is not touched) and must count exactly N
calls, report a latency distribution within 10% of the function's own
timing, name both callers, time the CPU, state what timing costs, and name
the slow line (the one that calls squares). Checked on the Python that
sys.monitoring serves (3.12+) and on one that the trace function serves."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import (check, cpython_exes, main, probe_status, run_profile,  # noqa: E402
                        scratch, skip, sonde)

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "workloads", "py_fn_calls.py")
MODULE = os.path.realpath(os.path.join(HERE, "..", "workloads", "pyfn", "pyfn_work.py"))
N = 100
SPEC = MODULE + ":Shaper.step"


def pythons():
    """One CPython of 3.12+ (sys.monitoring) and one before (a trace function)."""
    found, _ = cpython_exes()
    new = old = None
    for label, exe in found:
        minor = int(label.split()[-1].split(".")[1]) if "." in label.split()[-1] else 11
        if minor >= 12 and new is None:
            new = (label, exe)
        if minor < 12 and (old is None or minor > old[2]):
            old = (label, exe, minor)
    return [p[:2] for p in (new, old) if p]


_runs = {}


def profiled(label, exe):
    if label not in _runs:
        own = os.path.join(scratch("pyfn-own"), "own.txt")
        p, d, r = run_profile("function-python", [exe, SCRIPT, str(N), own],
                              "--function", SPEC, "--function", "pyfn_work:Shaper.stpe",
                              "--function", os.path.realpath(SCRIPT) + ":run_fifth")
        with open(own) as f:
            _runs[label] = dict(p=p, d=d, r=r, own=[int(x) for x in f])
    return _runs[label]


def entry(run, spec):
    return next(f for f in run["r"]["functions"] if f["spec"] == spec)


def each(fn):
    """fn(run) on every Python; the first failure names its Python."""
    for label, exe in pythons():
        try:
            fn(profiled(label, exe))
        except AssertionError as e:
            raise AssertionError(f"{label}: {e}")


@check("Shaper.step called N times is reported with exactly N calls, all timed, "
       "wall and CPU")
def _():
    def one(run):
        assert run["p"].returncode == 0 and len(run["own"]) == N, run["p"].stderr
        f = entry(run, SPEC)
        assert f["kind"] == "python" and f["status"] == "measured", f
        assert f["calls"] == N and f["calls_timed"] == N, f
        assert f["function"] == "Shaper.step" and f["file"] == MODULE and f["line"] > 0, f
        assert f["cpu"]["calls"] == N and f["cpu"]["total_s"] <= f["wall"]["total_s"] * 1.05, f
    each(one)


@check("the latency distribution agrees with the function's own timing within 10% "
       "(total and median)")
def _():
    def one(run):
        own = sorted(run["own"])
        wall = entry(run, SPEC)["wall"]
        total = sum(own) / 1e9
        assert abs(wall["total_s"] - total) <= 0.10 * total, (wall, total)
        med = own[N // 2] / 1e9
        assert abs(wall["p50_s"] - med) <= 0.10 * med, (wall, med)
        assert wall["p50_s"] <= wall["p95_s"] <= wall["p99_s"] <= wall["max_s"], wall
    each(one)


@check("the line table names the slow line, the one that calls squares, with most "
       "of the time")
def _():
    def one(run):
        lines = entry(run, SPEC)["lines"]
        top = lines[0]
        assert "squares(n)" in top["text"] and top["pct"] > 80, lines
        assert top["hits"] == N, top
    each(one)


@check("the callers are run_loop (80% of the calls) and run_fifth (20%)")
def _():
    def one(run):
        cs = {c["function"]: c for c in entry(run, SPEC)["callers"]}
        assert set(cs) == {"run_loop", "run_fifth"}, cs
        assert cs["run_loop"]["calls"] == N * 4 // 5 and cs["run_fifth"]["calls"] == N // 5
        assert cs["run_loop"]["file"].endswith("py_fn_calls.py") and cs["run_loop"]["line"]
    each(one)


@check("what timing a call costs is measured and stated in report.md")
def _():
    def one(run):
        f = entry(run, SPEC)
        assert 0 < f["overhead_ns_per_call"] < 1e6, f
        with open(os.path.join(run["d"], "report.md")) as md:
            text = md.read()
        assert "## Functions (--function)" in text and "costs about" in text
    each(one)


@check("a method that is not there is reported not found, naming the nearest one")
def _():
    def one(run):
        f = entry(run, "pyfn_work:Shaper.stpe")
        assert f["status"] == "not_found" and "nearest: Shaper.step" in f["note"], f
        assert "Shaper.stpe" in run["p"].stderr, run["p"].stderr
    each(one)


@check("a function of the main script is wrapped at its first call: every call "
       "counted, all but that first timed")
def _():
    def one(run):
        f = entry(run, os.path.realpath(SCRIPT) + ":run_fifth")
        assert f["status"] == "measured" and f["calls"] == N // 5, f
        assert f["calls_timed"] == N // 5 - 1 and f["wall"]["calls"] == N // 5 - 1, f
    each(one)


@check("--no-agent leaves the program alone and says why the function was not timed")
def _():
    label, exe = pythons()[0]
    own = os.path.join(scratch("pyfn-own"), "own.txt")
    p, d, r = run_profile("function-python-noagent", [exe, SCRIPT, "3", own],
                          "--no-agent", "--function", SPEC)
    assert p.returncode == 0, p.stderr
    st = probe_status(d, "pyfunction")
    assert st == ("unavailable", st[1]) and "--no-agent" in st[1], st


@check("attached, a Python function is not measured and the reason says to use sonde run, "
       "not that the process is no Python")
def _():
    label, exe = pythons()[0]
    target = subprocess.Popen([exe, "-c", "import time\nprint('ready', flush=True)\n"
                               "time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline().strip() == "ready", "the target did not start"
        d = os.path.join(scratch("pyfn-attach"), "run")
        p = sonde("attach", "-q", "-d", "0.5", "-o", d, "--function", SPEC, str(target.pid),
                  timeout=300)
        assert p.returncode == 0, p.stderr
    finally:
        target.kill()
        target.wait(timeout=60)
    with open(os.path.join(d, "report.json")) as f:
        fn = json.load(f)["functions"][0]
    assert fn["status"] == "not_measured", fn
    assert "use 'sonde run'" in fn.get("note", ""), fn


if __name__ == "__main__":
    if not os.path.exists(os.path.join(os.path.dirname(os.path.abspath(
            os.environ.get("SONDE", "build/sonde"))), "asyncio-agent", "_sonde_function.py")):
        skip("the --function agent was not built next to sonde")
    if not pythons():
        skip("no CPython 3.8+ here")
    main()
