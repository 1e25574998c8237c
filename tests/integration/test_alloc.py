#!/usr/bin/env python3
"""The allocation tracker finds the leak, the peak and the temporaries of
alloc_known, in full and sampled mode, through fork+exec and threads, and says
clearly when a statically linked target cannot be tracked.

Environment: SONDE (the binary), SONDE_WORKLOADS (built workloads),
SONDE_TEST_TMP (scratch). Exit 77 to skip, with the reason printed."""
import json
import os
import shutil
import subprocess
import sys

from sonde_test import Checks

SONDE = os.environ.get("SONDE")
WORKLOADS = os.environ.get("SONDE_WORKLOADS")
TMP = os.environ.get("SONDE_TEST_TMP", "/tmp/sonde-test-runs")

# Ground truth from tests/workloads/alloc_known.c.
KIB = 1024
LEAK_BYTES = 256 * 16 * KIB
BIG_BYTES = 32 * KIB * KIB
TEMP_COUNT = 200000
EXEC_CHILD_LEAK = 512 * KIB
THREAD_LEAK = 4 * 256 * KIB

CHECKS = Checks()
check = CHECKS.check


def run(name, opts, argv):
    out = os.path.join(TMP, "alloc-" + name)
    shutil.rmtree(out, ignore_errors=True)
    cmd = [SONDE, "run", "-q", "-o", out] + opts + ["--"] + argv
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    return p.returncode, report, md


def sites(report):
    return report.get("memory", {}).get("heap", {}).get("top_sites", [])


def site_by(report, function, key, stack_has=None):
    """The site of `function` with the largest `key`."""
    best = None
    for s in sites(report):
        if s["function"] != function:
            continue
        if stack_has and stack_has not in s["stack"]:
            continue
        if best is None or s[key] > best[key]:
            best = s
    return best


def top_by(report, key):
    ss = sites(report)
    return max(ss, key=lambda s: s[key]) if ss else None


def within(value, truth, pct):
    return value is not None and abs(value - truth) <= truth * pct / 100.0


def finding(report, diagnosis_word, location_word):
    for f in report.get("findings", []):
        if diagnosis_word.lower() in f["diagnosis"].lower() and location_word in f["location"]:
            return f
    return None


def test_full():
    rc, r, md = run("full", ["--memory=full"], [os.path.join(WORKLOADS, "alloc_known")])
    check("full: the command exits 0 under the tracker", rc == 0, f"rc={rc}")
    heap = r.get("memory", {}).get("heap")
    check("full: report.json has memory.heap", heap is not None)
    if not heap:
        return
    leak = top_by(r, "leaked_bytes")
    check("full: the largest leak is in leak_some", leak and leak["function"] == "leak_some",
          leak and leak["location"])
    check("full: leak_some's leak is within 10% of 4 MiB",
          leak and within(leak["leaked_bytes"], LEAK_BYTES, 10), leak and leak["leaked_bytes"])
    check("full: total leaked bytes within 10% of the truth",
          within(heap["leaked_bytes"], LEAK_BYTES, 10), heap["leaked_bytes"])
    peak = top_by(r, "peak_bytes")
    check("full: big_transient is the dominant peak contributor",
          peak and peak["function"] == "big_transient", peak and peak["location"])
    check("full: the heap peak is the 32 MiB buffer plus the leak so far (within 10%)",
          within(heap["peak_bytes"], BIG_BYTES + LEAK_BYTES, 10), heap["peak_bytes"])
    temp = top_by(r, "temporary_allocations")
    check("full: make_temporaries is the temporaries site",
          temp and temp["function"] == "make_temporaries", temp and temp["location"])
    check("full: its temporaries are counted within 1%",
          temp and within(temp["temporary_allocations"], TEMP_COUNT, 1),
          temp and temp["temporary_allocations"])
    check("full: a leak finding names leak_some", finding(r, "leak", "leak_some") is not None)
    check("full: a peak finding names big_transient",
          finding(r, "peak contributor", "big_transient") is not None)
    check("full: a churn finding names make_temporaries",
          finding(r, "churn", "make_temporaries") is not None)
    check("full: report.md has the heap table", "### Heap" in md and "leak_some" in md)
    cl = " ".join(c["what"] for c in r.get("changelog", []))
    check("full: LD_PRELOAD is in the changelog, and a C program's run wraps no CPython "
          "allocators and leaves PYTHONMALLOC alone",
          "LD_PRELOAD=" in cl and "PYTHONMALLOC" not in cl
          and not any(c["change"] == "wrapped" for c in r.get("changelog", [])))
    check("full: heap is no longer listed as not measured",
          "heap" not in r.get("not_measured", {}))


def test_sampled():
    # 16 KiB mean: each 16 KiB leak is sampled with p = 0.63, so the 4 MiB
    # estimate has a relative error of about 5% (one standard deviation).
    rc, r, _ = run("sampled", ["--memory", "--memory-interval", "16k"],
                   [os.path.join(WORKLOADS, "alloc_known")])
    check("sampled: the command exits 0", rc == 0)
    heap = r.get("memory", {}).get("heap", {})
    check("sampled: the report says the figures are estimates", heap.get("estimated") is True)
    leak = top_by(r, "leaked_bytes")
    check("sampled: the largest leak is in leak_some", leak and leak["function"] == "leak_some")
    check("sampled: leak_some's leak within 30% of 4 MiB",
          leak and within(leak["leaked_bytes"], LEAK_BYTES, 30), leak and leak["leaked_bytes"])
    peak = top_by(r, "peak_bytes")
    check("sampled: big_transient is the dominant peak contributor",
          peak and peak["function"] == "big_transient")
    temp = top_by(r, "temporary_allocations")
    check("sampled: make_temporaries is the temporaries site (within 30%)",
          temp and temp["function"] == "make_temporaries"
          and within(temp["temporary_allocations"], TEMP_COUNT, 30),
          temp and (temp["function"], temp["temporary_allocations"]))
    # The default interval (512 KiB) still sees the 32 MiB buffer for sure.
    rc, r, _ = run("sampled-default", ["--memory"], [os.path.join(WORKLOADS, "alloc_known")])
    peak = top_by(r, "peak_bytes")
    check("sampled default: exits 0 and big_transient dominates the peak",
          rc == 0 and peak and peak["function"] == "big_transient")


def test_fork_exec():
    rc, r, _ = run("fork-exec", ["--memory=full"],
                   [os.path.join(WORKLOADS, "alloc_known"), "fork-exec"])
    check("fork-exec: the command exits 0", rc == 0, f"rc={rc}")
    heap = r.get("memory", {}).get("heap", {})
    check("fork-exec: three process images were tracked (parent, fork child, exec'd child)",
          heap.get("processes", 0) >= 3, heap.get("processes"))
    pids = {s["pid"] for s in sites(r) if s["leaked_bytes"] > 0}
    child = [s for s in sites(r) if s["function"] == "leak_some"
             and within(s["leaked_bytes"], EXEC_CHILD_LEAK, 10)]
    check("fork-exec: the exec'd child's 512 KiB leak is found in its own process",
          len(child) == 1 and len(pids) >= 2, [(s["location"], s["pid"], s["leaked_bytes"])
                                                for s in sites(r)])
    leak = site_by(r, "leak_some", "leaked_bytes")
    check("fork-exec: the parent's leak is still within 10%",
          leak and within(leak["leaked_bytes"], LEAK_BYTES, 10))


def test_threads():
    rc, r, _ = run("threads", ["--memory=full"],
                   [os.path.join(WORKLOADS, "alloc_known"), "threads"])
    check("threads: the command exits 0", rc == 0, f"rc={rc}")
    tl = site_by(r, "thread_leak", "leaked_bytes")
    check("threads: thread_leak's leak (4 x 256 KiB) within 10%",
          tl and within(tl["leaked_bytes"], THREAD_LEAK, 10), tl and tl["leaked_bytes"])
    temp = sum(s["temporary_allocations"] for s in sites(r)
               if s["function"] == "make_temporaries")
    check("threads: temporaries of all five threads counted within 1%",
          within(temp, 5 * TEMP_COUNT, 1), temp)


def test_crash():
    rc, r, _ = run("crash", ["--memory=full"], [os.path.join(WORKLOADS, "alloc_known"), "crash"])
    check("crash: sonde passes on the target's death by SIGABRT", rc == 128 + 6, f"rc={rc}")
    leak = site_by(r, "leak_some", "leaked_bytes")
    check("crash: what was flushed before the crash is reported (the leak, within 10%)",
          leak and within(leak["leaked_bytes"], LEAK_BYTES, 10), leak and leak["leaked_bytes"])


def test_static():
    path = os.path.join(WORKLOADS, "alloc_known_static")
    if not os.path.exists(path):
        print("skip: static: no alloc_known_static (no static libc on this machine)")
        return
    rc, r, _ = run("static", ["--memory=full"], [path])
    check("static: the command still runs and exits 0", rc == 0, f"rc={rc}")
    reason = r.get("not_measured", {}).get("heap", "")
    check("static: the report says why the heap was not measured", "statically linked" in reason,
          reason)


def test_python():
    # The agent wraps CPython's allocators: 100 bytearrays of
    # 100 KB held together are the peak, allocated in bytearray's resize.
    code = "keep = [bytearray(100000) for i in range(100)]; print(len(keep))"
    rc, r, _ = run("python", ["--memory=full"], [sys.executable, "-c", code])
    check("python: the interpreter runs under the tracker", rc == 0, f"rc={rc}")
    # Python call sites split the bytearrays' native site by the Python stack
    # at the allocation: sum every site below bytearray.
    held = sum(s["peak_bytes"] for s in sites(r) if "bytearray" in " ".join(s["stack"]).lower())
    check("python: the bytearrays are the peak (about 10 MB)", held >= 9_000_000,
          [(s["location"], s["peak_bytes"]) for s in sites(r)][:4])


def pyenv_python3():
    """The pyenv python3 (its default version), else None."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for pyenv in ("pyenv", os.path.join(root, "bin", "pyenv")):
        try:
            p = subprocess.run([pyenv, "which", "python3"], capture_output=True, text=True,
                               timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            continue
        path = p.stdout.strip()
        if p.returncode == 0 and os.path.exists(path):
            return path
    return None


def function_lines(path, name):
    """The line numbers of function `name` in the Python file at path."""
    import ast
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return range(node.lineno, node.end_lineno + 1)
    return range(0)


def test_python_sites():
    # py_build.py holds ~150 MB of bytes objects built in build_table: the peak
    # site is that Python function and a line inside it (the agent reads the
    # Python stack in-process even when the python probe samples too;
    # test_alloc_pystack.py checks every version and the fallback).
    py = pyenv_python3()
    if not py:
        print("skip: python sites: no pyenv python3 on this machine")
        return
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads",
                          "py_build.py")
    rc, r, md = run("python-sites", ["--memory"], [py, script])
    probes = {p["name"]: p for p in r.get("probes", [])}
    if probes.get("python", {}).get("status") != "on":
        print("skip: python sites: the python probe is not on (%s)"
              % probes.get("python", {}).get("reason"))
        return
    check("python sites: the script runs under the tracker", rc == 0, f"rc={rc}")
    lines = function_lines(script, "build_table")
    peak = top_by(r, "peak_bytes")
    ps = (peak or {}).get("python_site") or {}
    check("python sites: the top peak site is build_table, at a line inside it",
          ps.get("function") == "build_table" and ps.get("line") in lines
          and peak["function"] == "build_table" and ps.get("method") == "in-process stack",
          peak and (peak["location"], ps))
    held = sum(s["peak_bytes"] for s in sites(r)
               if (s.get("python_site") or {}).get("function") == "build_table")
    check("python sites: build_table's sites hold most of its ~150 MB at the peak",
          held >= 110_000_000, held)
    finding = [f for f in r.get("findings", []) if f["dimension"] == "memory"
               and "heap peak" in f["title"]]
    loc = finding[0]["location"] if finding else ""
    check("python sites: the peak finding names build_table:line",
          finding and "build_table" in finding[0]["title"]
          and any(loc.endswith("build_table:%d" % n) for n in lines), finding and
          (finding[0]["title"], loc))


def test_frame_pointers():
    # alloc_churn keeps frame pointers: the agent walks them (and appends the
    # thread's start frames learnt from one DWARF unwind); every allocation
    # gets the same full stack, so they all make one site.
    path = os.path.join(WORKLOADS, "alloc_churn")
    rc, r, _ = run("fp", ["--memory=full"], [path, "0.2"])
    check("frame pointers: the churn runs under the tracker", rc == 0, f"rc={rc}")
    changes = json.dumps(r.get("changelog", []))
    check("frame pointers: the changelog says the agent walks them",
          "SONDE_ALLOC_FP_EXE" in changes, changes[:300])
    churn = site_by(r, "make_block", "allocations")
    stack = churn["stack"] if churn else []
    check("frame pointers: one site holds all 200 000 allocations, main -> churn -> make_block",
          churn and churn["allocations"] == 200000
          and stack[-3:] == ["main", "churn", "make_block"]
          and "__libc_start_main" in " ".join(stack),
          churn and (churn["allocations"], stack))


def main():
    if not SONDE or not WORKLOADS:
        print("skip: SONDE and SONDE_WORKLOADS must be set (run through ctest)")
        return 77
    if not os.path.exists(os.path.join(os.path.dirname(SONDE), "libsonde_alloc.so")):
        print("skip: libsonde_alloc.so was not built next to sonde")
        return 77
    os.makedirs(TMP, exist_ok=True)
    test_full()
    test_sampled()
    test_fork_exec()
    test_threads()
    test_crash()
    test_static()
    test_python()
    test_python_sites()
    test_frame_pointers()
    return CHECKS.tally()


if __name__ == "__main__":
    sys.exit(main())
