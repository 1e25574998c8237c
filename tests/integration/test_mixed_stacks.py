"""One picture: Python stacks with the native frames below them ("mixed")."""
import os
import shutil

from sonde_test import check, db, main, run_profile, skip

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "py_native.py")
PYTHON = shutil.which("python3")


def stacks(d, source):
    """[(frames outermost first as (function, kind))] per sample of source."""
    con = db(d)
    nodes = {i: (p, f) for i, p, f in con.execute("SELECT id, parent, frame FROM stack_nodes")}
    frames = {i: (fn, k) for i, fn, k in con.execute("SELECT id, function, kind FROM frames")}
    out = []
    for (node,) in con.execute("SELECT node FROM samples WHERE source = ?", (source,)):
        path = []
        while node in nodes and len(path) < 4096:
            parent, frame = nodes[node]
            path.append(frames.get(frame, ("?", None)))
            node = parent
        out.append(path[::-1])
    return out


if not PYTHON:
    skip("no python3 on PATH")

_, RUN, REPORT = run_profile("mixed", [PYTHON, WORKLOAD, "1.5"], expect_rc=0)
PROBES = {p["name"]: p["status"] for p in REPORT["probes"]}
if PROBES.get("cpu") != "on" or PROBES.get("python") != "on":
    skip(f"needs the cpu and python probes, got {PROBES}")


@check("mixed samples exist and the hotspots are computed from them")
def _():
    assert stacks(RUN, "mixed"), "no mixed samples"
    assert REPORT["hotspots_source"]["source"] == "mixed", REPORT["hotspots_source"]


@check("time inside the C extension shows as native frames under the Python function that called it")
def _():
    under = [s for s in stacks(RUN, "mixed") if any(f == "hashing" for f, _ in s)]
    assert under, "no mixed sample under hashing"
    native_leaf = [s for s in under if s[-1][1] in ("native", "inlined", "kernel")]
    assert len(native_leaf) >= 0.5 * len(under), \
        f"{len(native_leaf)} of {len(under)} samples under hashing end in native code"
    # the Python frame comes before the native ones: never interpreter frames between
    s = native_leaf[0]
    i = max(k for k, (f, _) in enumerate(s) if f == "hashing")
    assert all(k in ("native", "inlined", "kernel") for _, k in s[i + 1:]), s


@check("pure Python time stays on the Python function, with no interpreter frames")
def _():
    pure = [s for s in stacks(RUN, "mixed") if s and s[-1][0] == "pure"]
    assert pure, "no sample ends in pure"
    names = {f for s in pure for f, _ in s}
    assert not any(n.startswith("_PyEval") for n in names), names


@check("the hottest function is named as Python code or its native callee, not the interpreter loop")
def _():
    top = REPORT["hotspots"][0]["function"]
    assert not top.startswith("_PyEval"), REPORT["hotspots"][:3]


if __name__ == "__main__":
    main()
