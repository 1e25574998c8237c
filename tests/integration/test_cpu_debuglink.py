"""cpu probe: a stripped binary whose DWARF lives in a separate file found by
.gnu_debuglink is still symbolized with function names, files and lines, and
DWARF-unwound from its .eh_frame."""
import os
import shutil
import subprocess
import cpu_common as cc

objcopy, strip = shutil.which("objcopy"), shutil.which("strip")
if not objcopy or not strip:
    cc.skip("objcopy and strip (binutils) are needed to split debug info")
t = cc.Checks()
work = os.path.join(cc.TMP, "cpu_debuglink_bin")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
prog = os.path.join(work, "cpu_nofp")
shutil.copy(os.path.join(cc.WORKLOADS, "cpu_nofp"), prog)
subprocess.run([objcopy, "--only-keep-debug", prog, prog + ".debug"], check=True)
subprocess.run([strip, "--strip-all", prog], check=True)
subprocess.run([objcopy, "--add-gnu-debuglink=" + prog + ".debug", prog], check=True, cwd=work)
syms = subprocess.run(["nm", prog], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
t.check("the binary has no symbol table left", "nofp_leaf" not in syms.stdout)

cc.WORKLOADS = work
out = cc.run("cpu_debuglink", "cpu_nofp", "80", sonde_args=("--call-graph", "dwarf"))
samples = cc.stacks(out)
frames = [f for _, _, st in samples for f in st if f[0] == "nofp_leaf"]
t.check("the leaf is named from the separate debug file", len(frames) > 10, len(frames))
t.check("its file and line come from the separate debug file",
        frames and all(f[1] and f[1].endswith("cpu_nofp.c") and f[2] > 0 for f in frames))
t.check("the stripped binary still unwinds to main",
        sum(cc.has_chain(cc.functions(st), ["main", "nofp_caller", "nofp_leaf"])
            for _, _, st in samples) >= 0.8 * len(frames))
t.finish()
