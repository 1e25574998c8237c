"""cpu probe: the shuffled walk (cache misses) outweighs the ordered walk doing
the same work, with frame-pointer stacks main -> *_walk -> walk, at the default
rate and at 4000 Hz."""
import collections
import cpu_common as cc

t = cc.Checks()
for rate in ("99", "4000"):
    out = cc.run("cpu_hotspot_" + rate, "cpu_walk", sonde_args=("-r", rate))
    samples = cc.stacks(out)
    t.check("at %s Hz the run has cpu samples" % rate, len(samples) > 20, len(samples))
    t.check("cpu_walk keeps frame pointers, so auto picks fp",
            cc.meta(out, "cpu_call_graph") == "fp", cc.meta(out, "cpu_call_graph_reason"))
    callers = collections.Counter()
    for _, _, st in samples:
        fns = cc.functions(st)
        if "walk" in fns:
            i = fns.index("walk")
            callers[fns[i - 1] if i > 0 else "?"] += 1
    t.check("at %s Hz the shuffled walk gets the most samples" % rate,
            callers["shuffled_walk"] > 2 * callers["ordered_walk"], dict(callers))
    full = [st for _, _, st in samples if cc.functions(st)[-2:] == ["shuffled_walk", "walk"]]
    t.check("walk's stacks go through main",
            full and all("main" in cc.functions(st) for st in full), len(full))
    t.check("frames have source lines",
            any(st[-1][1] and st[-1][1].endswith("cpu_walk.c") and st[-1][2] > 0
                for st in full))
    t.check("frames name their module",
            all(st[-1][3] and st[-1][3].endswith("/cpu_walk") for st in full))
    if rate == "4000":
        lost = int(cc.meta(out, "cpu_lost_records") or 0)
        t.check("lost and throttled counts are recorded",
                cc.meta(out, "cpu_throttle_events") is not None and lost >= 0)
        t.check("4000 Hz gives many more samples than the default", len(samples) > 400,
                len(samples))
t.finish()
