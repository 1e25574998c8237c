"""Findings name causes in the program's own code, once: a renderer whose time
goes to the kernel faulting in a fresh 256 MiB canvas every frame
(tests/workloads/frame_render.c) gets one finding, at new_canvas, that joins
the repeated RSS jumps and the page faults, and no finding about memset or a
kernel function; CPU contention is the target's finding only when its own
threads outnumber the cores, and a note about the measurement when the load
came from other processes; the stakes of the findings never add up to more
than the run."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, main, run_profile, workload  # noqa: E402

SYSTEM_WORDS = ("memset", "memcpy", "pvm_", "page_fault", "clear_page", "[kernel", "libc.so")


def busy_loops(n):
    return [subprocess.Popen([workload("cpu_spin"), "600"]) for _ in range(n)]


def stop(procs):
    for p in procs:
        p.kill()
        p.wait()


def stakes_within_wall(r):
    wall = r["target"]["wall_s"]
    total = sum(f["impact"].get("seconds", 0) for f in r["findings"])
    assert total <= wall * 1.001, (total, wall, [f["impact"] for f in r["findings"]])


@check("a program whose time is page faults of a fresh buffer per frame: the top finding "
       "names the allocating function, once, joining its RSS jumps")
def _():
    p, d, r = run_profile("fresh", [workload("frame_render"), "4", "256"])
    assert p.returncode == 0 and r, p.stderr[-600:]
    fs = r["findings"]
    summary = [(f["id"], f["title"], f["location"]) for f in fs]
    assert fs and "new_canvas" in fs[0]["location"], summary
    at = [f for f in fs if "new_canvas" in f["location"]]
    assert len(at) == 1, summary
    ids = {at[0]["id"]} | {a["id"] for a in at[0].get("also", [])}
    assert "cpu.fresh_memory" in ids, summary
    # Every RSS jump is the same cause: none is left apart at another place.
    assert not [f for f in fs if f["id"] == "memory.rss_jump" and f is not at[0]], summary
    for f in fs:
        for word in SYSTEM_WORDS:
            assert word not in f["title"] and word not in f["location"], (word, summary)
    assert "reuse" in at[0]["next_step"], at[0]["next_step"]
    # The leaf view keeps what the CPU ran: the hotspot table still shows memset.
    # (among the first 10: with about 70 samples, the kernel's fault and memcg
    # frames around it reorder under load)
    assert any("memset" in h["function"] for h in r["hotspots"][:10]), r["hotspots"][:10]
    stakes_within_wall(r)


@check("a one-thread program queued behind other processes' busy loops gets a note about "
       "the busy machine, not a contention or off-CPU finding")
def _():
    busy = busy_loops(os.cpu_count() or 2)
    try:
        p, d, r = run_profile("busy", [workload("cpu_spin"), "3"])
    finally:
        stop(busy)
    assert p.returncode == 0 and r, p.stderr[-600:]
    ids = [f["id"] for f in r["findings"]]
    assert "concurrency.cpu_contention" not in ids, r["findings"]
    assert "cpu.off_cpu" not in ids, r["findings"]
    cpu = r["cpu"]
    if cpu["runqueue_wait_s"] > 0.1 * r["target"]["wall_s"]:
        assert "other processes" in cpu.get("contention_note", ""), cpu
    else:
        print(f"  (the machine gave it the CPU: {cpu['runqueue_wait_s']:.2f} s queued; "
              "no note to check)")
    stakes_within_wall(r)


@check("a program running more busy threads than there are cores gets the contention finding")
def _():
    cores = os.cpu_count() or 2
    if cores >= 3:
        print(f"  (skipped: cpu_threads runs 3 threads, this machine has {cores} cores)")
        return
    p, d, r = run_profile("own", [workload("cpu_threads"), "400000000"])
    assert p.returncode == 0 and r, p.stderr[-600:]
    cpu = r["cpu"]
    if cpu["runqueue_wait_s"] <= 0.1 * r["target"]["wall_s"]:
        print(f"  (only {cpu['runqueue_wait_s']:.2f} s queued: too short to judge)")
        return
    ids = [f["id"] for f in r["findings"]]
    assert "concurrency.cpu_contention" in ids, r["findings"]
    assert "contention_note" not in cpu, cpu


POOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads",
                    "py_pool_verify.py")


@check("a multiprocessing pool of 4 workers a core computing at once: the contention "
       "finding names the workers' function and the processes, and sizes the pool in Python "
       "words; a pool of one worker a core has none, nor an idle main thread")
def _():
    cores = os.cpu_count() or 2
    p, d, r = run_profile("pool-big", [sys.executable, POOL, str(4 * cores), str(16 * cores)])
    assert p.returncode == 0 and r, p.stderr[-600:]
    found = [f for f in r["findings"] if f["id"] == "concurrency.cpu_contention"]
    assert found, [(f["id"], f["title"]) for f in r["findings"]]
    f = found[0]
    assert "py_pool_verify.py:verify_block (%d processes)" % (4 * cores) in f["location"], f
    assert "os.cpu_count()" in f["next_step"] and "verify_block" in f["next_step"], f
    p, d, r = run_profile("pool-fit", [sys.executable, POOL, str(cores), str(16 * cores)])
    assert p.returncode == 0 and r, p.stderr[-600:]
    ids = [f["id"] for f in r["findings"]]
    assert "concurrency.cpu_contention" not in ids, r["findings"]
    # The main thread waiting for pool.map's results waits for the workers:
    # its job, not an idle thread.
    assert "concurrency.idle_thread" not in ids, r["findings"]


@check("a Python program whose main thread sleeps in one of its methods: the off-CPU "
       "finding names that method and line, not the interpreter's sleep, with Python advice; "
       "a pyenv shim or shell that started it is never blamed")
def _():
    pipeline = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads",
                            "py_pipeline.py")
    p, d, r = run_profile("py-wait", [sys.executable, pipeline, "--linger", "4"])
    assert p.returncode == 0 and r, p.stderr[-600:]
    waits = [f for f in r["findings"] if f["id"] in ("cpu.off_cpu", "cpu.main_thread_waits")]
    assert waits, [(f["id"], f["title"]) for f in r["findings"]]
    w = waits[0]
    assert "Notify.run" in w["location"] and "py_pipeline.py" in w["location"], w["location"]
    assert "time.sleep" in w["next_step"] or "threading" in w["next_step"], w["next_step"]
    for f in r["findings"]:
        assert "bash" not in f["location"] and "pysleep" not in f["location"], f["location"]


@check("a Python program whose time goes to the standard library's json (Python and its C "
       "accelerator) called from one of its methods: the finding is at that method, says "
       "json.dumps and json.loads take the time, and advises calling them less")
def _():
    undo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads",
                        "py_undo_history.py")
    p, d, r = run_profile("py-json", [sys.executable, undo, "2"])
    assert p.returncode == 0 and r, p.stderr[-600:]
    fs = r["findings"]
    summary = [(f["id"], f["title"], f["location"]) for f in fs]
    top = [f for f in fs if f["id"] == "cpu.hotspot"]
    assert top and "record" in top[0]["location"], summary
    f = top[0]
    # The round trip is most of the program's CPU time: the stake is the
    # method's with the calls it makes (before, json's C code kept most of it).
    cpu_s = r["cpu"]["user_s"] + r["cpu"]["sys_s"]
    assert f["impact"]["seconds"] >= 0.35 * cpu_s, (f["impact"], cpu_s)
    assert "json.dumps" in f["evidence"] and "json.loads" in f["evidence"], f["evidence"]
    assert "call them less often" in f["next_step"], f["next_step"]
    assert "json.dumps" in f["next_step"] or "json.loads" in f["next_step"], f["next_step"]


if __name__ == "__main__":
    main()
