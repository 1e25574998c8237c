"""cpu probe options: --rate takes 1 to 20000 Hz, --call-graph takes fp, dwarf,
dwarf,BYTES or auto; bad values are refused before anything runs, good ones
are recorded."""
import os
import shutil
import subprocess
import cpu_common as cc

t = cc.Checks()


def sonde(*args):
    return subprocess.run([cc.SONDE, "run", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)


for bad in (("-r", "0"), ("-r", "20001"), ("--rate", "fast"), ("--call-graph", "lbr"),
            ("--call-graph", "dwarf,12"), ("--call-graph", "dwarf,")):
    p = sonde("-q", *bad, "--", "true")
    t.check("%s %s is refused with a message" % bad,
            p.returncode == 2 and bad[1] in p.stderr, p.stderr)

out = cc.run("cpu_options_dwarf", "cpu_nofp", "5",
             sonde_args=("-r", "4000", "--call-graph", "dwarf,8192"))
t.check("--rate 4000 is recorded", cc.meta(out, "cpu_rate_hz") == 4000)
t.check("dwarf,8192 is recorded", cc.meta(out, "cpu_call_graph") == "dwarf" and
        cc.meta(out, "cpu_stack_dump_bytes") == 8192)
out = cc.run("cpu_options_fp", "cpu_nofp", "5", sonde_args=("--call-graph", "fp"))
t.check("fp is recorded", cc.meta(out, "cpu_call_graph") == "fp")
t.check("the default rate is 99 Hz", cc.meta(out, "cpu_rate_hz") == 99)
t.finish()
