"""cuda probe: what the CUDA agent writes becomes the gpu_* rows of
docs/gpu.md, with times on the run's clock. No GPU is needed: with
SONDE_CUDA_FORCE=1 the probe runs without a driver, and the command plays
the agent, writing a cuda-PID.txt of every kind of line (src/probes/gpu_wire.h)
into $SONDE_CUDA_DIR, plus a forked child whose CUPTI was taken. Without a
driver (no SONDE_CUDA_FORCE) the run goes on and the report says, in one
line, that the GPU side is not recorded."""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, db, main, run_profile  # noqa: E402

AGENT_STANDIN = os.path.abspath(__file__)  # any readable file: no CUDA program loads it

PLAYER = r"""
import os, sys, time
d = os.environ["SONDE_CUDA_DIR"]
if os.environ.get("CUDA_INJECTION64_PATH") != sys.argv[1]:
    sys.exit("CUDA_INJECTION64_PATH is %r" % os.environ.get("CUDA_INJECTION64_PATH"))
def write(lines):
    with open(os.path.join(d, "cuda-%d.txt" % os.getpid()), "w") as f:
        f.write("".join("\t".join(str(x) for x in l) + "\n" for l in lines))
t = time.monotonic_ns()
child = os.fork()
if child == 0:
    write([("V", 1, os.getpid(), 130001),
           ("Q", "CUPTI is taken by another profiler in this process (test)")])
    os._exit(0)
os.waitpid(child, 0)
write([("V", 1, os.getpid(), 130001),
       ("D", 0, 132, 85899345920, 9, 0, "NVIDIA H100 80GB HBM3"),
       ("K", t + 1000, t + 5000, 0, 7, 9, 1, 2, 3, 4, 5, 6, 32, 0, 128, "_Z3addPfS_i"),
       ("M", t + 6000, t + 8000, 0, 7, 10, 4096, 1, -1, 0, "HtoD", "pinned", "device"),
       ("S", t + 9000, t + 9500, 0, 7, 11, 512),
       ("A", t + 100, t + 900, 4242, 9, 0, "cudaLaunchKernel"),
       ("Y", t + 10000, t + 12000, 7, 13, "stream"),
       ("G", t + 200, 0, 140000000000, 1048576, 14, "alloc", "device"),
       ("X", "records_dropped", 3),
       ("K", "not a number"),
       ("Q" + "x" * 9000,)])
print(t)
"""

_runs = {}


def ingest_run():
    if "ingest" not in _runs:
        os.environ["SONDE_CUDA_FORCE"] = "1"
        os.environ["SONDE_CUDA_AGENT"] = AGENT_STANDIN
        os.environ.pop("CUDA_INJECTION64_PATH", None)
        try:
            p, d, r = run_profile("cuda-ingest", [sys.executable, "-c", PLAYER, AGENT_STANDIN])
        finally:
            del os.environ["SONDE_CUDA_FORCE"]
            del os.environ["SONDE_CUDA_AGENT"]
        assert p.returncode == 0, (p.returncode, p.stderr[-1500:])
        _runs["ingest"] = (p, d, r)
    return _runs["ingest"]


def rows(sql):
    conn = db(ingest_run()[1])
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def pid_of_parent():
    return [r[0] for r in rows("SELECT pid FROM gpu_processes WHERE status = 'ok'")][0]


@check("the probe ran and pointed CUDA_INJECTION64_PATH at the agent")
def _():
    assert rows("SELECT status FROM probes WHERE name = 'cuda'") == [("on",)], \
        rows("SELECT * FROM probes WHERE name = 'cuda'")


@check("a kernel's row holds its numbers, its name and times relative to the run")
def _():
    got = rows("SELECT device, stream, corr, start_ns, end_ns, name, grid_x, grid_y, grid_z,"
               " block_x, block_y, block_z, registers, smem_static, smem_dynamic"
               " FROM gpu_kernels")
    assert len(got) == 1, got
    k = got[0]
    assert k[:3] == (0, 7, 9) and k[5:] == ("_Z3addPfS_i", 1, 2, 3, 4, 5, 6, 32, 0, 128), k
    assert 0 < k[3] < 120 * 10**9 and k[4] - k[3] == 4000, k


@check("copies, memsets, API calls, syncs and allocations keep their fields and the same clock")
def _():
    (k_start,), = rows("SELECT start_ns FROM gpu_kernels")
    t = k_start - 1000  # the player's time.monotonic_ns(), on the run's clock
    assert rows("SELECT device, stream, corr, start_ns, end_ns, bytes, async, src_device,"
                " dst_device, kind, src_kind, dst_kind FROM gpu_copies") == \
        [(0, 7, 10, t + 6000, t + 8000, 4096, 1, -1, 0, "HtoD", "pinned", "device")]
    assert rows("SELECT device, stream, corr, start_ns, end_ns, bytes FROM gpu_memsets") == \
        [(0, 7, 11, t + 9000, t + 9500, 512)]
    assert rows("SELECT tid, corr, start_ns, end_ns, ret, name FROM gpu_api") == \
        [(4242, 9, t + 100, t + 900, 0, "cudaLaunchKernel")]
    assert rows("SELECT stream, corr, start_ns, end_ns, type FROM gpu_syncs") == \
        [(7, 13, t + 10000, t + 12000, "stream")]
    assert rows("SELECT device, t_ns, address, bytes, corr, op, kind FROM gpu_memory") == \
        [(0, t + 200, 140000000000, 1048576, 14, "alloc", "device")]


@check("the device is stored once per process with its name")
def _():
    assert rows("SELECT pid, device, name, sm_count, mem_bytes, cc_major, cc_minor"
                " FROM gpu_devices") == \
        [(pid_of_parent(), 0, "NVIDIA H100 80GB HBM3", 132, 85899345920, 9, 0)]


@check("each process has a row: ok with its dropped records and bad lines, or the Q reason")
def _():
    got = sorted(rows("SELECT cupti_version, status, records_dropped, bad_lines"
                      " FROM gpu_processes"))
    assert got == [(130001, "CUPTI is taken by another profiler in this process (test)", 0, 0),
                   (130001, "ok", 3, 2)], got


@check("the report says which process could not use CUPTI and that records were dropped")
def _():
    notes = [n["text"] for n in ingest_run()[2]["notes"]]
    assert any("CUPTI is taken by another profiler" in n for n in notes), notes
    assert any("dropped 3 GPU activity records" in n for n in notes), notes


def driver_here():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


@check("without an NVIDIA driver the run succeeds, quietly, and the report says so in one line")
def _():
    if driver_here():
        print("note: libcuda.so.1 loads here: the no-driver line cannot be shown; not checked")
        return
    for var in ("SONDE_CUDA_FORCE", "CUDA_INJECTION64_PATH"):
        os.environ.pop(var, None)
    p, d, r = run_profile("cuda-nodriver", ["/bin/sh", "-c", "exit 0"])
    assert p.returncode == 0 and p.stderr == "", (p.returncode, p.stderr)
    line = "no NVIDIA driver here (libcuda.so.1 not found): the GPU side is not recorded"
    cuda = [x for x in r["probes"] if x["name"] == "cuda"]
    assert cuda == [{"name": "cuda", "status": "unavailable", "reason": line}], cuda
    with open(os.path.join(d, "report.md")) as f:
        assert line in f.read()
    conn = db(d)
    try:
        tables = conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'gpu_%'").fetchall()
    finally:
        conn.close()
    assert tables == [], tables


main()
