"""The Python stacks the allocation agent reads in-process resolve however
late sonde reads them: the agent describes each code object it names
(ALLOC_REC_PYCODE), so sonde does not need the process alive. With the
records read only after the target exited (SONDE_TEST_ALLOC_READ_AT_STOP=1,
as a reader far behind a short program on a loaded machine) and the python
probe off, build_small's small objects (tests/workloads/py_small.py) are
still its Python sites at the heap peak, within 10% of their sizes, on every
CPython installed (pyenv 3.8-3.13, Debian's /usr/bin/python3.11). Before the
descriptions they were native sites (_PyObject_GC_NewVar, resize_compact)
with no Python frame. Exit 77 when no Python is found."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import (check, cpython_exes, main_with_agent_and_cpythons,  # noqa: E402
                        printed, run_profile)

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "workloads", "py_small.py")
OBJECTS = 20000

PYTHONS, MISSING = cpython_exes()


def late_check(label, python):
    @check(f"{label}: with the records read after the target exited, build_small's objects "
           "are still its Python sites at the peak")
    def _():
        os.environ["SONDE_TEST_ALLOC_READ_AT_STOP"] = "1"
        try:
            p, d, r = run_profile("pystack-late", [python, SCRIPT, str(OBJECTS)],
                                  "--memory=full", "--probes", "proc,alloc")
        finally:
            del os.environ["SONDE_TEST_ALLOC_READ_AT_STOP"]
        assert p.returncode == 0 and r, f"rc={p.returncode} {p.stderr[-400:]}"
        truth = int(printed(p, "held_bytes"))
        ss = r.get("memory", {}).get("heap", {}).get("top_sites", [])
        held = sum(s["peak_bytes"] for s in ss if "build_small" in s.get("stack", []))
        assert abs(held - truth) <= 0.10 * truth, \
            (held, truth, [(s["location"], s["peak_bytes"], s.get("stack", [])[:4])
                           for s in ss[:5]])
        named = [s for s in ss if "build_small" in s.get("stack", [])]
        ps = (max(named, key=lambda s: s["peak_bytes"]).get("python_site") or {})
        assert ps.get("method") == "in-process stack", ps


for label, python in PYTHONS:
    late_check(label, python)


if __name__ == "__main__":
    main_with_agent_and_cpythons(PYTHONS, MISSING)
