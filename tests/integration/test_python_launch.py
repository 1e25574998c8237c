"""A Python that sonde launches is sampled from its first Python code on, on
every CPython 3.8-3.13 found: a script whose first 0.2 s is a busy function
shows it in about its share of the samples (at least a fifth of what its
wall time next to the 0.6 s function after it would give), not one or two
samples late. (A machine so loaded that sonde records fewer than 20 samples
of the 0.6 s cannot tell: said, not failed.)
Env: SONDE, SONDE_TEST_TMP. Exit 77 when no CPython 3.8-3.13 is found."""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EARLY = os.path.join(HERE, "..", "workloads", "py_early.py")

sys.path.insert(0, HERE)
from sonde_test import per_cpython  # noqa: E402
from python_samples import python_samples  # noqa: E402


def check_one(sonde, tmp, label, minor, exe):
    run_dir = os.path.join(tmp, "early-%s" % label.replace(" ", "_").replace("/", "_"))
    shutil.rmtree(run_dir, ignore_errors=True)
    proc = subprocess.run([sonde, "run", "-q", "-o", run_dir, "-r", "499", "--probes",
                           "proc,python", "--", exe, EARLY],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        return ["sonde run exited %d: %s" % (proc.returncode, proc.stderr.strip()[-500:])]
    samples = python_samples(run_dir)
    leaves = [path[-1][0] for _, _, path, _, _ in samples]
    early, later = leaves.count("early"), leaves.count("later")
    # early() runs a third as long as later(): a fifth of that is the bar.
    if later < 20:
        print("note %s: only %d samples of later(), too few to judge the start"
              % (label, later))
        return []
    if early < later / 15.0:
        return ["early() in %d samples, later() in %d: the start was missed"
                % (early, later)]
    return []


if __name__ == "__main__":
    sys.exit(per_cpython(check_one, "the first 0.2 s of the script is sampled"))
