"""sonde run -a: every process of the machine, the busiest first."""
import errno
import json
import os
import subprocess

from sonde_test import check, main, scratch, skip, sonde

WORKLOADS = os.environ.get("SONDE_WORKLOADS", "")
SPLIT = os.path.join(WORKLOADS, "cpu_split")
STAGES = ("checksum_block", "decode_block", "score_block")


def may_read_every_process():
    try:
        os.kill(1, 0)
    except OSError as e:
        return e.errno != errno.EPERM
    return True


if not may_read_every_process():
    skip("sonde run -a reads every process of the machine, which needs root here")
if not os.access(SPLIT, os.X_OK):
    skip("the cpu_split workload is not built (%s)" % SPLIT)


@check("a busy process sonde did not start is followed, sampled in its own functions, "
       "listed by CPU time with the busiest first, and left running; sonde is not in it")
def _():
    d = os.path.join(scratch("whole-machine"), "run")
    # Started by the test, not by sonde: 120 s of CPU, killed at the end.
    busy = subprocess.Popen([SPLIT, "120"], stdout=subprocess.DEVNULL)
    try:
        p = sonde("run", "-a", "-q", "-d", "2", "-o", d, timeout=600)
        assert p.returncode == 0, p.stderr
        assert busy.poll() is None, "the followed process did not survive"
    finally:
        busy.kill()
        busy.wait(timeout=60)
    with open(os.path.join(d, "report.json")) as f:
        r = json.load(f)
    t = r["target"]
    assert t.get("whole_machine") is True, t
    assert busy.pid in t["pids"], (busy.pid, t["pids"])
    mine = [q for q in r["processes"] if d in (q["command"] or "")]
    assert not mine, "sonde followed itself: %r" % mine
    # In microseconds: equal times summed from other user and system parts
    # differ in the last bit as floats (0.35 and 0.35000000000000003).
    cpu = [round((q["user_s"] or 0) + (q["sys_s"] or 0), 6) for q in r["processes"]]
    assert cpu == sorted(cpu, reverse=True), "not the busiest first: %r" % cpu[:10]
    split = [q for q in r["processes"] if q["pid"] == busy.pid][0]
    assert (split["user_s"] or 0) > 0, split
    funcs = {h["function"]: h["samples"] for h in r["hotspots"]}
    assert any(funcs.get(s, 0) > 0 for s in STAGES), \
        "no sample in cpu_split's functions: %r" % sorted(funcs)[:20]
    with open(os.path.join(d, "report.md")) as f:
        md = f.read()
    assert md.startswith("# sonde report: the whole machine"), md[:200]
    assert "The busiest first" in md, "no processes table for the machine"
    gaps = [g["id"] for g in r.get("observability_gaps", [])]
    assert "gap.no_phases" not in gaps and "gap.thread_names" not in gaps, gaps


@check("-a with a command, or with what needs a launched process, is one clear line")
def _():
    out = scratch("whole-machine-bad")
    for args, said in ((["-a", "--", "true"], "give no command"),
                       (["-a", "--memory", "-d", "1"], "--memory does not go with -a"),
                       (["-a", "--repeat", "3", "-d", "1"], "--repeat does not go with -a")):
        p = sonde("run", *args[:1], "-o", os.path.join(out, "run"), *args[1:], timeout=120)
        err = p.stderr.strip()
        assert p.returncode == 2, (args, p.returncode, err)
        assert err.count("\n") == 0 and said in err, (args, err)
    p = sonde("attach", "-a", "1", timeout=120)
    assert p.returncode == 2 and "sonde run -a" in p.stderr, p.stderr
    assert not os.path.exists(os.path.join(out, "run")), "a refused run left a directory"


main()
