"""Memory findings name the program's own code: a Python page renderer
(tests/workloads/py_page_cache.py) started through a pyenv shim (a bash
script that runs helpers such as basename, then execs the interpreter), with
--memory, has its heap peak at Renderer.render, and no leak finding at the
interpreter's own bookkeeping (obmalloc's arenas), the C library's buffers
or the shim's processes: what they keep at exit is not the program's leak.
Its cache, never evicted and freed only as the interpreter shuts down, is a
leak until exit at Renderer.render; the same renderer with a bounded cache,
and a site index built up front and served from to the end (a working set),
have no such leak."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import json  # noqa: E402

from sonde_test import check, db, main, pyenv_root, run_profile, skip, sonde  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "workloads", "py_page_cache.py")
SHIM = os.path.join(pyenv_root(), "shims", "python3")
if not os.access(SHIM, os.X_OK):
    skip("no pyenv shim at %s" % SHIM)


def until_exit(r):
    return [f for f in r["findings"] if f["id"] == "memory.leak" and
            "until exit" in f["title"]] + [
        f for f in r["findings"] for a in f.get("also") or []
        if a["id"] == "memory.leak" and "until exit" in a["title"]]


@check("through a pyenv shim: the peak is Renderer.render's, and no leak is blamed on "
       "CPython, libc or the shim")
def _():
    p, d, r = run_profile("page-cache", [SHIM, SCRIPT], "--memory")
    assert p.returncode == 0 and r, (p.returncode, p.stderr[-1500:])
    peak = [f for f in r["findings"] if f["id"] == "memory.peak_site" or
            any(a["id"] == "memory.peak_site" for a in f.get("also") or [])]
    assert peak and "render" in peak[0]["location"], [(f["id"], f["location"])
                                                       for f in r["findings"]]
    for f in r["findings"]:
        if f["id"] == "memory.leak":
            loc = f["location"]
            assert "py_page_cache.py" in loc, "a leak blamed on %s: %s" % (loc, f["title"])
    leak = until_exit(r)
    assert leak and "Renderer.render" in leak[0]["location"], [
        (f["id"], f["title"], f["location"]) for f in r["findings"]]


@check("a 100 ms without an allocation where the work ends (the program off the CPU on a busy "
       "machine) does not hide the leak")
def _():
    p, d, r = run_profile("page-cache-quiet", [SHIM, SCRIPT], "--memory")
    assert p.returncode == 0 and until_exit(r), [(f["id"], f["title"]) for f in r["findings"]]
    # What an older sonde wrote for such a 100 ms: nothing live.
    con = db(d)
    end = con.execute("SELECT MAX(t_ns) FROM samples WHERE source = 'python'").fetchone()[0]
    con.execute("UPDATE alloc_timeline SET allocations = 0, allocated_bytes = 0,"
                " live_bytes = 0 WHERE t_ns = (SELECT MAX(t_ns) FROM alloc_timeline"
                " WHERE t_ns <= ?)", (end,))
    con.commit()
    con.close()
    q = sonde("report", d)
    assert q.returncode == 0, q.stderr
    with open(os.path.join(d, "report.json")) as f:
        r2 = json.load(f)
    leak = until_exit(r2)
    assert leak and "Renderer.render" in leak[0]["location"], [
        (f["id"], f["title"]) for f in r2["findings"]]


for mode, what in (("bounded", "a bounded cache"),
                   ("index", "an index built up front and used to the end")):
    @check(f"{what} is no leak until exit")
    def _(mode=mode):
        p, d, r = run_profile("page-cache-" + mode, [SHIM, SCRIPT, "--mode", mode],
                              "--memory")
        assert p.returncode == 0 and r, (p.returncode, p.stderr[-1500:])
        assert not until_exit(r), [(f["id"], f["title"]) for f in r["findings"]]
        # A kernel-bound run (this one often is: its pages are fresh) is told
        # what to change in Python, never to run another tool.
        for f in r["findings"]:
            # Memory advice at a Python line speaks Python.
            if f["id"].startswith("memory.") and ".py:" in f["location"]:
                assert "on the stack" not in f["next_step"], f
            if f["id"] == "cpu.kernel_bound":
                assert "strace" not in f["next_step"] and "bytearray" in f["next_step"], f


if __name__ == "__main__":
    main()
