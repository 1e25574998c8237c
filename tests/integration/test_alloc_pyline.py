"""One Python line is one heap site, whatever native code under it allocated:
in tests/workloads/py_one_line.py a comprehension of bytearrays and a
json.loads each allocate through several native callees, yet memory.heap's
top sites and each RSS jump's allocating sites name each Python line once,
with the native paths kept as evidence (native_paths), and the heap-peak
finding sits at the comprehension's line. Exit 77 without a Python."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, main, run_profile, skip  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "workloads", "py_one_line.py")


def line_of(text):
    with open(SCRIPT) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise AssertionError(text)


def python_lines(sites):
    """(pid, location) of each site with a Python line."""
    return [(s.get("pid"), s["location"]) for s in sites if s.get("python_site")]


RUN = {}


def run():
    if not RUN:
        p, d, r = run_profile("pyline", [sys.executable, SCRIPT, "60000"], "--memory")
        assert p.returncode == 0 and r, f"rc={p.returncode} {p.stderr[-400:]}"
        RUN["r"] = r
    return RUN["r"]


@check("each Python line is one site in memory.heap.top_sites")
def _():
    sites = run()["memory"]["heap"]["top_sites"]
    lines = python_lines(sites)
    assert lines, [s["location"] for s in sites]
    dup = {x for x in lines if lines.count(x) > 1}
    assert not dup, dup


@check("the comprehension's line is one site that keeps its native paths as evidence")
def _():
    sites = run()["memory"]["heap"]["top_sites"]
    want = line_of("bytearray(1000) for _ in range")
    # The line of this file: the interpreter's own modules have a line 10 too
    # (a loaded run listed core.py:<module>:10 among the top sites).
    at = [s for s in sites if (s.get("python_site") or {}).get("line") == want and
          os.path.basename((s.get("python_site") or {}).get("file") or "") == "py_one_line.py"]
    assert len(at) == 1, [(s["location"], s.get("allocated_in")) for s in sites]
    paths = at[0].get("native_paths") or []
    assert len(paths) >= 2, at[0].get("allocated_in")
    assert abs(at[0]["allocated_bytes"] - sum(p["allocated_bytes"] for p in paths)) <= len(paths), \
        paths


@check("an RSS jump's allocating sites name each Python line once")
def _():
    for jump in run()["memory"].get("rss_jumps") or []:
        lines = python_lines(jump.get("allocating") or [])
        assert len(lines) == len(set(lines)), lines


@check("the heap-peak finding is at a Python line of the program, not in a native callee")
def _():
    found = [f for f in run()["findings"] if f.get("id") == "memory.peak_site"
             or "heap peak" in (f.get("title") or "")]
    if not found:
        print("note: no heap-peak finding in this run (the peak was shared)")
        return
    loc = found[0]["location"]
    assert "py_one_line.py" in loc, loc


if __name__ == "__main__":
    if not os.path.exists(SCRIPT):
        skip("no workload py_one_line.py")
    main()
