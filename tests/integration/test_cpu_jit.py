"""cpu probe: code in anonymous executable memory is named from the JIT's
/tmp/perf-PID.map, even though the process has exited by symbolization time."""
import os
import cpu_common as cc

t = cc.Checks()
out = cc.run("cpu_jit", "cpu_jit", "30")
leader = int(cc.meta(out, "leader_pid"))
mapfile = "/tmp/perf-%d.map" % leader
try:
    samples = cc.stacks(out)
    leaves = cc.leaf_counts(samples)
    t.check("the run has cpu samples", len(samples) > 20, len(samples))
    t.check("the JIT function is the top leaf",
            leaves and leaves.most_common(1)[0][0] == "jit_count_down", dict(leaves))
    modules = {f[3] for _, _, st in samples for f in st if f[0] == "jit_count_down"}
    t.check("its module is the perf map", modules == {mapfile}, modules)
finally:
    if os.path.exists(mapfile):
        os.unlink(mapfile)
t.finish()
