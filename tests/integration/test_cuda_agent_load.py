"""The CUDA agent (build/libsonde_cuda.so) loads and returns on a machine
without an NVIDIA driver, the way the driver would call it
(tests/workloads/cuda_inject_load.c): it never crashes nor prints on the
program's stdout, and its file says in a Q line why CUPTI cannot start.
Skipped where the agent was not built (no CUPTI headers) and where a driver
is present (there the agent would really start CUPTI: that needs a GPU
test)."""
import ctypes
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import SONDE, check, main, scratch, skip, workload  # noqa: E402

AGENT = os.path.join(os.path.dirname(os.path.abspath(SONDE)), "libsonde_cuda.so")
LOADER = workload("cuda_inject_load")

if not os.path.exists(AGENT):
    skip("libsonde_cuda.so was not built (no CUPTI headers at configure time)")
try:
    ctypes.CDLL("libcuda.so.1")
    skip("an NVIDIA driver is here: the agent would start CUPTI for real (a GPU test's job)")
except OSError:
    pass


def load(**env):
    d = scratch("cuda-load")
    e = {k: v for k, v in os.environ.items() if not k.startswith(("SONDE_CU", "CUDA_"))}
    e.update({k: v.replace("DIR", d) for k, v in env.items()})
    p = subprocess.run([LOADER, AGENT], env=e, capture_output=True, text=True, timeout=60)
    files = {}
    for path in glob.glob(os.path.join(d, "*")):
        with open(path) as f:
            files[os.path.basename(path)] = f.read()
    return p, files


@check("with SONDE_CUDA_DIR set, InitializeInjection returns 1 and writes V then a Q line "
       "saying there is no driver")
def _():
    p, files = load(SONDE_CUDA_DIR="DIR")
    assert p.returncode == 0 and p.stdout == "returned 1\n" and p.stderr == "", p
    assert len(files) == 1, files
    (name, text), = files.items()
    lines = text.splitlines()
    assert len(lines) == 2, lines
    v = lines[0].split("\t")
    assert v[:2] == ["V", "1"] and name == "cuda-%s.txt" % v[2] and int(v[3]) >= 130000, (name, v)
    assert lines[1].startswith("Q\tCUPTI cannot start: no NVIDIA driver in this process"), lines


@check("a missing libcupti is said in the Q line, naming SONDE_CUPTI_LIB")
def _():
    p, files = load(SONDE_CUDA_DIR="DIR", SONDE_CUPTI_LIB="DIR/no-such-libcupti.so")
    assert p.returncode == 0 and p.stdout == "returned 1\n" and p.stderr == "", p
    lines = next(iter(files.values())).splitlines()
    assert lines[0].endswith("\t0") and "was not found (set SONDE_CUPTI_LIB" in lines[1], lines


@check("without SONDE_CUDA_DIR the agent does nothing and says nothing")
def _():
    p, files = load()
    assert p.returncode == 0 and p.stdout == "returned 1\n" and p.stderr == "", p
    assert files == {}, files


@check("an agent directory that cannot be written costs one sonde-cuda: line on stderr")
def _():
    p, files = load(SONDE_CUDA_DIR="DIR/missing")
    assert p.returncode == 0 and p.stdout == "returned 1\n", p
    assert p.stderr.startswith("sonde-cuda: ") and p.stderr.count("\n") == 1, p.stderr


main()
