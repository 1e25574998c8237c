"""Python call sites of the allocation tracker come from the stack the agent
reads inside the target (src/agents/alloc/pystack.c), not from the python
probe's samples: with the python probe off (`--probes proc,alloc`), the heap
peak of tests/workloads/py_build.py is build_table at a line inside it, on
every CPython installed (pyenv 3.8-3.13 and Debian's static, stripped
/usr/bin/python3.11; a missing version is skipped with the reason). An
allocation made with the GIL released (ctypes) names its Python caller; with
the agent's reading switched off the sites fall back to the nearest python
sample and say so; a C program gets no Python frames. Exit 77 when no Python
is found."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import (check, cpython_exes, db, main_with_agent_and_cpythons,  # noqa: E402
                        run_profile, workload)

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "workloads", "py_build.py")
ROWS = 60000  # of 1000 bytes: about 62 MB held by build_table at the peak


PYTHONS, MISSING = cpython_exes()


def build_table_lines():
    import ast
    with open(SCRIPT) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "build_table":
            return range(node.lineno, node.end_lineno + 1)
    return range(0)


def sites(report):
    return report.get("memory", {}).get("heap", {}).get("top_sites", [])


def meta(run_dir, key):
    row = db(run_dir).execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else None


def peak_site_check(label, python):
    @check(f"{label}: with the python probe off, the heap peak is build_table at a line "
           "inside it, read in-process")
    def _():
        p, d, r = run_profile("pystack", [python, SCRIPT, str(ROWS)], "--memory",
                              "--probes", "proc,alloc")
        assert p.returncode == 0 and r, f"rc={p.returncode} {p.stderr[-400:]}"
        ss = sites(r)
        peak = max(ss, key=lambda s: s["peak_bytes"]) if ss else None
        ps = (peak or {}).get("python_site") or {}
        assert ps.get("function") == "build_table" and ps.get("line") in build_table_lines() \
            and ps.get("method") == "in-process stack", peak and (peak["location"], ps)
        # Python frames outermost first, then the interpreter's C frames below.
        assert peak["stack"][:3] == ["<module>", "main", "build_table"] \
            and len(peak["stack"]) > 3, peak["stack"]
        held = sum(s["peak_bytes"] for s in ss
                   if (s.get("python_site") or {}).get("function") == "build_table")
        assert held >= 0.7 * ROWS * 1000, held
        assert (meta(d, "alloc_python_inprocess") or 0) > 0, "no in-process stacks counted"


for label, python in PYTHONS:
    peak_site_check(label, python)


NOGIL = """
import ctypes
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
def grab():
    return [libc.malloc(4 << 20) for _ in range(48)]
keep = grab()
print(len(keep))
# sonde names the frames while the process lives (docs/memory.md): stay a moment.
import time
time.sleep(0.5)
"""
GRAB_LINE = NOGIL.splitlines().index("    return [libc.malloc(4 << 20) for _ in range(48)]") + 1
# Sampled mode records an allocation of n bytes with probability
# 1 - exp(-n / 512 KiB): 4 MiB blocks are all but certain to be recorded (1 -
# e^-8 each), where 1 MiB blocks (0.86 each) left the site's estimate under the
# threshold once in a few hundred runs.


@check("an allocation made with the GIL released (ctypes calling malloc) names its Python caller")
def _():
    if not PYTHONS:
        return
    python = PYTHONS[-1][1]
    p, d, r = run_profile("pystack-nogil", [python, "-c", NOGIL], "--memory",
                          "--probes", "proc,alloc")
    assert p.returncode == 0 and r, f"rc={p.returncode} {p.stderr[-400:]}"
    ss = sites(r)
    peak = max(ss, key=lambda s: s["peak_bytes"]) if ss else None
    ps = (peak or {}).get("python_site") or {}
    # grab, or its list comprehension (its own code object before 3.12).
    assert ps.get("line") == GRAB_LINE and "grab" in peak["stack"] \
        and ps.get("method") == "in-process stack" and peak["peak_bytes"] >= 160 << 20, \
        peak and (peak["location"], ps, peak["peak_bytes"], peak["stack"])


@check("with the agent's reading off, Python sites fall back to the nearest python sample")
def _():
    if not PYTHONS:
        return
    python = PYTHONS[-1][1]
    os.environ["SONDE_ALLOC_PYSTACK"] = "0"
    try:
        p, d, r = run_profile("pystack-fallback", [python, SCRIPT, str(ROWS)], "--memory")
    finally:
        del os.environ["SONDE_ALLOC_PYSTACK"]
    probes = {x["name"]: x for x in r.get("probes", [])} if r else {}
    if probes.get("python", {}).get("status") != "on":
        print("  (the python probe is not on here: %s)" % probes.get("python", {}).get("reason"))
        return
    methods = {(s.get("python_site") or {}).get("method") for s in sites(r)} - {None}
    assert methods == {"nearest python sample"}, methods
    assert meta(d, "alloc_python_inprocess") is None


@check("a C program's allocation sites get no Python frames")
def _():
    p, d, r = run_profile("pystack-native", [workload("alloc_known")], "--memory=full")
    assert p.returncode == 0 and r, f"rc={p.returncode}"
    assert not any(s.get("python_site") for s in sites(r)), sites(r)[:2]
    assert db(d).execute("SELECT count(*) FROM alloc_site_python").fetchone()[0] == 0
    assert meta(d, "alloc_python_inprocess") is None


if __name__ == "__main__":
    main_with_agent_and_cpythons(PYTHONS, MISSING)
