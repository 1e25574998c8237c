"""CPython's small objects are seen one by one while pymalloc serves them:
the agent wraps the interpreter's object allocators in the process
(PyMem_SetAllocator) instead of setting PYTHONMALLOC=malloc. On every CPython
installed (pyenv 3.8-3.13 and Debian's static /usr/bin/python3.11), the small
tuples, strings and floats build_small holds (tests/workloads/py_small.py)
are its sites at the heap peak, within 10% of their sizes by sys.getsizeof
(counted once: not again as the arenas or the mallocs under pymalloc), the
interpreter runs without PYTHONMALLOC, and the changelog says what was
wrapped. With PYTHONMALLOC set by the user, the agent leaves CPython's
choice alone and the report says so; with -X dev, CPython replaces the
wrappers itself: the report warns and the objects count as their arenas. A
CPython 3.7 (it resets its allocators after the agent's constructor) is not
wrapped. Exit 77 when no Python is found."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import (check, cpython_exes, db, main_with_agent_and_cpythons,  # noqa: E402
                        printed, pyenv_root, run_profile)

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "workloads", "py_small.py")
OBJECTS = 50000  # about 7 MB of small objects

PYTHONS, MISSING = cpython_exes()


def in_build_small(site):
    # build_small, or its list comprehension (a code object of its own before 3.12)
    return "build_small" in site.get("stack", [])


def small_objects_check(label, python):
    @check(f"{label}: build_small's small objects are its sites at the peak, counted once, "
           "with pymalloc left on")
    def _():
        p, d, r = run_profile("pymalloc", [python, SCRIPT, str(OBJECTS)], "--memory=full",
                              "--probes", "proc,alloc")
        assert p.returncode == 0 and r, f"rc={p.returncode} {p.stderr[-400:]}"
        assert printed(p, "pythonmalloc") == "", "PYTHONMALLOC was set for the target"
        truth = int(printed(p, "held_bytes"))
        ss = r.get("memory", {}).get("heap", {}).get("top_sites", [])
        held = sum(s["peak_bytes"] for s in ss if in_build_small(s))
        assert abs(held - truth) <= 0.10 * truth, \
            (held, truth, [(s["location"], s["peak_bytes"]) for s in ss[:5]])
        arenas = [s for s in ss if s.get("kind") == "mmap" and s["peak_bytes"] >= 1 << 20]
        assert not arenas, [(s["location"], s["peak_bytes"]) for s in arenas]
        wrapped = [c for c in r.get("changelog", []) if c.get("change") == "wrapped"]
        assert wrapped and "CPython" in wrapped[0].get("what", ""), r.get("changelog")
        row = db(d).execute("SELECT value FROM meta WHERE key = "
                            "'alloc_python_allocators_wrapped'").fetchone()
        assert row and int(row[0]) >= 1, row


for label, python in PYTHONS:
    small_objects_check(label, python)


@check("with PYTHONMALLOC=malloc set by the user, objects are still seen and the report says "
       "the agent left the allocator alone")
def _():
    if not PYTHONS:
        return
    os.environ["PYTHONMALLOC"] = "malloc"
    try:
        p, d, r = run_profile("pymalloc-user", [PYTHONS[-1][1], SCRIPT, str(OBJECTS)],
                              "--memory=full", "--probes", "proc,alloc")
    finally:
        del os.environ["PYTHONMALLOC"]
    assert p.returncode == 0 and r, f"rc={p.returncode} {p.stderr[-400:]}"
    assert printed(p, "pythonmalloc") == "malloc"
    truth = int(printed(p, "held_bytes"))
    held = build_small_held(r)
    assert abs(held - truth) <= 0.10 * truth, (held, truth)
    assert not [c for c in r.get("changelog", []) if c.get("change") == "wrapped"]
    notes = " ".join(n.get("text", n.get("message", "")) for n in r.get("notes", []))
    assert "PYTHONMALLOC is already malloc" in notes, r.get("notes")


def build_small_held(r):
    ss = r.get("memory", {}).get("heap", {}).get("top_sites", [])
    return sum(s["peak_bytes"] for s in ss if in_build_small(s))


@check("with -X dev, CPython replaces the wrappers: the report warns, and build_small's objects "
       "still count, as their arenas")
def _():
    if not PYTHONS:
        return
    p, d, r = run_profile("pymalloc-xdev", [PYTHONS[-1][1], "-X", "dev", SCRIPT, str(OBJECTS)],
                          "--memory=full", "--probes", "proc,alloc")
    assert p.returncode == 0 and r, f"rc={p.returncode} {p.stderr[-400:]}"
    notes = " ".join(n.get("text", "") for n in r.get("notes", []))
    assert "replaced the wrapped allocators" in notes, r.get("notes")
    truth = int(printed(p, "held_bytes"))
    assert build_small_held(r) >= 0.9 * truth, (build_small_held(r), truth)


@check("CPython 3.7 is not wrapped: no changelog line says so, and its arenas are seen")
def _():
    root = os.path.join(pyenv_root(), "versions")
    old = sorted(v for v in os.listdir(root) if v.startswith("3.7.")) if os.path.isdir(root) else []
    if not old:
        print("  (no pyenv 3.7 here)")
        return
    p, d, r = run_profile("pymalloc-37", [os.path.join(root, old[-1], "bin", "python3"), SCRIPT,
                                          str(OBJECTS)], "--memory=full", "--probes", "proc,alloc")
    assert p.returncode == 0 and r, f"rc={p.returncode} {p.stderr[-400:]}"
    assert not [c for c in r.get("changelog", []) if c.get("change") == "wrapped"]
    # No Python frames before 3.8: the arenas are native mmap sites.
    truth = int(printed(p, "held_bytes"))
    ss = r.get("memory", {}).get("heap", {}).get("top_sites", [])
    arenas = sum(s["peak_bytes"] for s in ss if s.get("kind") == "mmap")
    assert arenas >= 0.9 * truth, (arenas, truth)


if __name__ == "__main__":
    main_with_agent_and_cpythons(PYTHONS, MISSING)
