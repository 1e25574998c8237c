"""cpu probe under load: with two busy loops beside it on the machine's cores,
a native program whose CPU time splits between three functions (cpu_split:
it measures the split itself with the thread's CPU clock) is attributed within
3 points at 1000 Hz and 5 at 99 Hz (median of 3 runs; bench/accuracy.py runs
5), and no sample of the busy loops is charged to it: a late drain never
invents or misattributes samples. 1000 Hz is the case that failed while the
per-CPU timer ran exactly every 1 ms, in step with the scheduler's tick:
samples stood for 95% to 114% of the CPU time and one function got up to 7.7
points too many (perf_choose_timer_period_ns)."""
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import cpu_common as cc  # noqa: E402

RUNS = 3
# rate, CPU seconds, points. The CPU seconds give about 2800 and 750 samples.
# Fewer samples (900 and 370, 1 and 4 s) put the median of 3 over the bound
# in about one loaded round in three.
CASES = (("1000", "3.0", 3.0), ("99", "8.0", 5.0))
FUNCS = ("checksum_block", "decode_block", "score_block")

t = cc.Checks()


def truth(out):
    """The split cpu_split measured, in percent, from its JSON line."""
    with open(os.path.join(out, "output.log"), errors="replace") as f:
        m = re.search(r"\{\"shares\".*\}", f.read())
    if not m:
        return None
    shares = json.loads(m.group(0))["shares"]
    return [100.0 * shares[f] for f in FUNCS]


def one_run(name, rate, seconds, busy_pids):
    out = cc.run(name, "cpu_split", seconds, sonde_args=("-r", rate))
    want = truth(out)
    samples = cc.stacks(out)
    leader = int(cc.meta(out, "leader_pid"))
    counts = dict.fromkeys(FUNCS, 0)
    strangers = 0
    for pid, _, st in samples:
        if pid != leader or pid in busy_pids:
            strangers += 1
            continue
        fns = set(cc.functions(st))
        for f in FUNCS:
            if f in fns:
                counts[f] += 1
    n = sum(counts.values())
    if not want or not n:
        return None, strangers, n
    got = [100.0 * counts[f] / n for f in FUNCS]
    err = max(abs(g - w) for g, w in zip(got, want))
    with open(os.path.join(out, "report.json")) as f:
        cov = (json.load(f).get("coverage") or {}).get("coverage_pct") or 100.0
    print("%s: truth %s, sampled %s (%d samples, coverage %.0f%%): off by %.1f points"
          % (name, ["%.1f" % w for w in want], ["%.1f" % g for g in got], n, cov, err))
    return err, strangers, n


def main():
    busy = [subprocess.Popen([os.path.join(cc.WORKLOADS, "cpu_spin"), "900"])
            for _ in range(2)]
    try:
        busy_pids = {p.pid for p in busy}
        for rate, seconds, points in CASES:
            errs, strangers = [], 0
            for i in range(RUNS):
                err, s, n = one_run("cpu_split_%s_%d" % (rate, i), rate, seconds, busy_pids)
                strangers += s
                if err is not None:
                    errs.append(err)
            t.check("at %s Hz every run measured its split and was sampled" % rate,
                    len(errs) == RUNS, errs)
            med = statistics.median(errs) if errs else None
            t.check("at %s Hz under load the split is within %.0f points (median of %d)"
                    % (rate, points, RUNS), med is not None and med <= points, med)
            t.check("at %s Hz no sample of another process is charged to the target" % rate,
                    strangers == 0, strangers)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    t.finish()


if __name__ == "__main__":
    main()
