"""cpu probe: code in anonymous executable memory is named from the JIT's
/tmp/perf-PID.map, even though the process has exited by symbolization time,
and its caller is found through its frame pointer with either unwinder."""
import os
import cpu_common as cc

t = cc.Checks()
for mode in ("fp", "dwarf"):
    out = cc.run("cpu_jit_" + mode, "cpu_jit", "30", sonde_args=("--call-graph", mode))
    leader = int(cc.meta(out, "leader_pid"))
    mapfile = "/tmp/perf-%d.map" % leader
    try:
        samples = cc.stacks(out)
        leaves = cc.leaf_counts(samples)
        t.check("%s: the run has cpu samples" % mode, len(samples) > 20, len(samples))
        t.check("%s: the JIT function is the top leaf" % mode,
                leaves and leaves.most_common(1)[0][0] == "jit_count_down", dict(leaves))
        modules = {f[3] for _, _, st in samples for f in st if f[0] == "jit_count_down"}
        t.check("%s: its module is the perf map" % mode, modules == {mapfile}, modules)
        jit = [st for _, _, st in samples if "jit_count_down" in cc.functions(st)]
        t.check("%s: main calls the JIT function" % mode,
                sum(cc.has_chain(cc.functions(st), ["main", "jit_count_down"]) for st in jit)
                >= 0.8 * len(jit), len(jit))
    finally:
        if os.path.exists(mapfile):
            os.unlink(mapfile)
t.finish()
