"""Threads of every CPython 3.8-3.13 found that wait for the GIL at a
loop's jump back (an instruction without a line of its own in 3.10+, where
co_lines() says None) are shown on a line, the one before it, as the line
last executed: no python sample of the loop has no line.
Env: SONDE, SONDE_TEST_TMP. Exit 77 when no CPython 3.8-3.13 is found."""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LOOPS = os.path.join(HERE, "..", "workloads", "py_loop_threads.py")

sys.path.insert(0, HERE)
from sonde_test import per_cpython  # noqa: E402
from python_samples import python_samples  # noqa: E402


def check_one(sonde, tmp, label, minor, exe):
    run_dir = os.path.join(tmp, "lines-%s" % label.replace(" ", "_").replace("/", "_"))
    shutil.rmtree(run_dir, ignore_errors=True)
    proc = subprocess.run([sonde, "run", "-q", "-o", run_dir, "--probes", "proc,python", "--",
                           exe, LOOPS, "2", "3"], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        return ["sonde run exited %d: %s" % (proc.returncode, proc.stderr.strip()[-500:])]
    leaves = [path[-1] for _, _, path, _, _ in python_samples(run_dir)
              if path[-1][0].endswith("loop")]
    if len(leaves) < 10:
        return ["only %d samples in loop()" % len(leaves)]
    lineless = sum(1 for _, line in leaves if not line)
    if lineless:
        return ["%d of %d samples in loop() have no line" % (lineless, len(leaves))]
    return []


if __name__ == "__main__":
    sys.exit(per_cpython(check_one, "every sample of the loop is on a line"))
