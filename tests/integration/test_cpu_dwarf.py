"""cpu probe: a program built -O2 -fomit-frame-pointer still gets full stacks
main -> nofp_caller -> nofp_leaf with --call-graph dwarf, and auto picks dwarf."""
import cpu_common as cc

t = cc.Checks()
for mode in ("dwarf", "auto"):
    out = cc.run("cpu_dwarf_" + mode, "cpu_nofp", "120", sonde_args=("--call-graph", mode))
    samples = cc.stacks(out)
    t.check("%s: the run has cpu samples" % mode, len(samples) > 20, len(samples))
    t.check("%s: dwarf unwinding is used" % mode, cc.meta(out, "cpu_call_graph") == "dwarf",
            cc.meta(out, "cpu_call_graph_reason"))
    leaf = [st for _, _, st in samples if "nofp_leaf" in cc.functions(st)]
    t.check("%s: most samples are in the leaf" % mode, len(leaf) > 0.7 * len(samples),
            "%d of %d" % (len(leaf), len(samples)))
    full = [st for st in leaf
            if cc.has_chain(cc.functions(st), ["main", "nofp_caller", "nofp_leaf"])]
    t.check("%s: the leaf's stacks read main -> nofp_caller -> nofp_leaf" % mode,
            len(full) >= 0.9 * len(leaf), "%d of %d" % (len(full), len(leaf)))
out = cc.run("cpu_dwarf_fp", "cpu_nofp", "60", sonde_args=("--call-graph", "fp"))
t.check("fp mode is what was asked", cc.meta(out, "cpu_call_graph") == "fp")
t.finish()
