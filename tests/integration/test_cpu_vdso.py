"""cpu probe: time spent in the vDSO (clock_gettime) is named and, with dwarf
unwinding, still attributed to its caller main."""
import cpu_common as cc

t = cc.Checks()
out = cc.run("cpu_vdso", "cpu_vdso", sonde_args=("--call-graph", "dwarf"))
samples = cc.stacks(out)
vdso = [st for _, _, st in samples if any(f[3] == "[vdso]" for f in st)]
if not vdso:
    cc.skip("no sample landed in the vDSO (the clock source may need a system call here)")
t.check("[vdso] frames are named", all(not f[0].startswith("[vdso]+") for st in vdso
                                       for f in st if f[3] == "[vdso]"),
        {f[0] for st in vdso for f in st if f[3] == "[vdso]"})
t.check("vDSO samples unwind to main",
        sum("main" in cc.functions(st) for st in vdso) >= 0.8 * len(vdso),
        "%d of %d" % (sum("main" in cc.functions(st) for st in vdso), len(vdso)))
t.finish()
