"""A method is Class.method on every CPython 3.8-3.13 even when its source
cannot be read (tests/workloads/py_source_gone.py removes its copy first):
before 3.11 the class comes from the frame's self (Worker.step, and
Base.spin) or cls (Worker.make), read once per code object; from 3.11 on
from co_qualname. Exit 77 when no CPython 3.8-3.13 is found."""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "py_source_gone.py")

sys.path.insert(0, HERE)
from sonde_test import per_cpython  # noqa: E402

WANT = {"Worker.step", "Worker.make", "Base.spin"}


def check_one(sonde, tmp, label, minor, exe):
    run_dir = os.path.join(tmp, "method-class-%s" % label.replace(" ", "_").replace("/", "_"))
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    copy = os.path.join(run_dir, "gone.py")
    shutil.copy(WORKLOAD, copy)
    out = os.path.join(run_dir, "run")
    r = subprocess.run([sonde, "run", "-q", "-o", out, "--", exe, copy, "remove"],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return ["sonde run exited %d: %s" % (r.returncode, r.stderr.strip()[-500:])]
    if os.path.exists(copy):
        return ["the workload did not remove its source"]
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    names = {h["function"] for h in report.get("hotspots") or []
             if (h.get("file") or "").endswith("gone.py")}
    bare = names & {"step", "make", "spin"}
    if bare:
        return ["methods named without their class: %r (all: %r)" % (sorted(bare), sorted(names))]
    if not names & WANT:
        return ["no method of the workload among the hotspots: %r" % sorted(names)]
    return []


if __name__ == "__main__":
    sys.exit(per_cpython(check_one, "methods are Class.method without their source"))
