"""cpu probe: a library loaded with dlopen after start-up (known only from its
mmap record) is symbolized: zlib's crc32 is the hotspot, called from main."""
import cpu_common as cc

t = cc.Checks()
out = cc.run("cpu_dlopen", "cpu_dlopen", "200")
samples = cc.stacks(out)
in_zlib = [st for _, _, st in samples if st and st[-1][3] and "libz.so" in st[-1][3]]
through_zlib = [st for _, _, st in samples
                       if any(f[3] and "libz.so" in f[3] for f in st)]
t.check("most samples are in zlib", len(through_zlib) > 0.6 * len(samples),
        "%d of %d" % (len(through_zlib), len(samples)))
t.check("zlib frames are named", in_zlib and all(st[-1][0].startswith("crc32") for st in in_zlib),
        {st[-1][0] for st in in_zlib})
t.check("main calls into zlib",
        sum("main" in cc.functions(st) for st in in_zlib) >= 0.8 * len(in_zlib))
t.finish()
