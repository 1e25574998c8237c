"""callgraph.svg (Graphviz lays out sonde's call graph) in a run directory:
valid SVG naming the program's functions, a hostile function name shown as
text; `sonde export --format dot` the graph itself; without Graphviz the run
goes on with no callgraph.svg and no complaint, and the export says why in
one line. Workload: a Python program with a function renamed
<img src=x onerror=alert(1)>."""
import os
import shutil
import sys
import xml.dom.minidom

from sonde_test import check, env_set, main, run_profile, scratch, skip, sonde

PYTHON = shutil.which("python3")
if not PYTHON:
    skip("no python3 on PATH")
EVIL = "<img src=x onerror=alert(1)>"
SCRIPT = """
def crunch(n):
    t = 0
    for i in range(n):
        t += i * i
    return t
def evil(n):
    return crunch(n)
names = {"co_name": %r}
if hasattr(evil.__code__, "co_qualname"):  # 3.11+ names frames by their qualname
    names["co_qualname"] = names["co_name"]
evil.__code__ = evil.__code__.replace(**names)
for _ in range(40):
    evil(100000)
""" % EVIL
HAVE_DOT = shutil.which("dot") is not None


def profile(name, env=None):
    with env_set(env or {}):
        return run_profile(name, [PYTHON, "-c", SCRIPT], "-r", "499", expect_rc=0)


@check("the run directory has callgraph.svg, valid SVG with the program's functions and the "
       "hostile name as text")
def _():
    if not HAVE_DOT:
        print("skipped: Graphviz's dot is not installed (scripts/setup installs it)")
        return
    p, d, r = profile("callgraph")
    path = os.path.join(d, "callgraph.svg")
    assert os.path.exists(path) and "callgraph.svg" in r["artifacts"], os.listdir(d)
    with open(path) as f:
        text = f.read()
    doc = xml.dom.minidom.parseString(text)  # well-formed: nothing raw got in
    shown = " ".join(t.firstChild.data for t in doc.getElementsByTagName("text") if t.firstChild)
    assert "crunch" in shown and EVIL in shown, shown[:500]
    assert "<img" not in text, "a raw tag in the SVG"
    dot = sonde("export", d, "--format", "dot", "-o", "-")
    assert dot.returncode == 0 and dot.stdout.startswith("digraph callgraph {"), dot.stderr
    assert "crunch" in dot.stdout


@check("without Graphviz the run has no callgraph.svg and says nothing; the export says why")
def _():
    env = {"SONDE_DOT": "/nonexistent/dot"}
    p, d, r = profile("callgraph-nodot", env)
    assert not os.path.exists(os.path.join(d, "callgraph.svg")), os.listdir(d)
    assert "callgraph" not in p.stderr and "Graphviz" not in p.stderr, p.stderr
    out = os.path.join(scratch("callgraph-export"), "cg.svg")
    with env_set(env):
        e = sonde("export", d, "--format", "callgraph", "-o", out)
    assert e.returncode == 1 and "Graphviz" in e.stderr, e.stderr
    assert len(e.stderr.strip().splitlines()) == 1 and not os.path.exists(out), e.stderr


main()
