"""A target of several processes is grouped into components
(tests/workloads/shard_indexer.py: a coordinator process and four indexer
processes started with multiprocessing, one shard holding 85% of the
documents): the indexers are one component named by the function they run,
apart from the coordinator and the launching script; it dominates the CPU,
and its busiest process is the one that indexed the big shard, named with
the program's own function. A one-process target has no components."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, cpython_exes, main, run_profile, skip, workload  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
INDEXER = os.path.abspath(os.path.join(HERE, "..", "workloads", "shard_indexer.py"))

pythons, missing = cpython_exes()
pythons = [(label, exe) for label, exe in pythons if "pyenv" in label]
if not pythons:
    skip("no pyenv CPython 3.8-3.13: " + "; ".join(missing))
LABEL, EXE = pythons[-1]

p, d, r = run_profile("components", [EXE, INDEXER, "--documents", "12000"])
assert p.returncode == 0 and r, (p.returncode, p.stderr[-1500:])
COMP = r.get("components") or {}
BY_NAME = {c["name"]: c for c in COMP.get("list", [])}


@check(f"{LABEL}: the four indexer processes are one component named by their function")
def _():
    c = BY_NAME.get("indexer (shard_indexer.py)")
    assert c, list(BY_NAME)
    assert c["processes"] == 4, c
    assert "coordinate (shard_indexer.py)" in BY_NAME, list(BY_NAME)
    assert BY_NAME["coordinate (shard_indexer.py)"]["processes"] == 1, BY_NAME
    assert "shard_indexer.py" in BY_NAME, list(BY_NAME)


@check(f"{LABEL}: the indexers dominate, and the busiest one is named with its own function")
def _():
    assert COMP["dominant"] == "indexer (shard_indexer.py)", COMP
    c = BY_NAME["indexer (shard_indexer.py)"]
    assert COMP["dominant_cpu_pct"] > 50, COMP
    b = c["busiest"]
    # 85% of the documents: most of the component's CPU, on any load
    assert b["share_pct"] > 50, b
    assert b["file"] == INDEXER, b
    assert b["function"] in ("count_terms", "index_shard", "make_document",
                             "make_document.<locals>.<genexpr>", "<genexpr>"), b
    assert any(f["file"] == INDEXER for f in c["top_functions"]), c["top_functions"]


@check(f"{LABEL}: report.md has the components table with the indexers' row")
def _():
    with open(os.path.join(d, "report.md")) as f:
        md = f.read()
    assert "## Components" in md, md[:2000]
    row = [line for line in md.splitlines() if line.startswith("| indexer (shard_indexer.py) | 4 |")]
    assert row, [line for line in md.splitlines() if line.startswith("| ")][:20]


@check("a one-process target has no components")
def _():
    p1, _, r1 = run_profile("components-one", [workload("demo")])
    assert p1.returncode == 0 and r1, p1.stderr[-1000:]
    assert "components" not in r1, r1.get("components")


main()
