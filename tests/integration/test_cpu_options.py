"""cpu probe options: --rate takes 1 to 20000 Hz, --call-graph takes fp, dwarf,
dwarf,BYTES or auto; bad values are refused before anything runs, good ones
are recorded."""
import json
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
# 4000 Hz puts its samples on four places of the tick's 1 ms grid: its
# period is stretched by 1/256 (250 976 ns, 3984 Hz), and the report says so.
t.check("--rate 4000 samples every 250 976 ns, out of step with the tick",
        cc.meta(out, "cpu_rate_hz") == 3984 and cc.meta(out, "cpu_period_ns") == 250976,
        (cc.meta(out, "cpu_rate_hz"), cc.meta(out, "cpu_period_ns")))
with open(os.path.join(out, "report.json")) as f:
    notes = [n.get("text", "") for n in json.load(f).get("notes", [])]
t.check("the report says why 4000 Hz became 3984 Hz",
        any("3984 Hz, not 4000" in n for n in notes), notes)
t.check("dwarf,8192 is recorded", cc.meta(out, "cpu_call_graph") == "dwarf" and
        cc.meta(out, "cpu_stack_dump_bytes") == 8192)
out = cc.run("cpu_options_fp", "cpu_nofp", "5", sonde_args=("--call-graph", "fp"))
t.check("fp is recorded", cc.meta(out, "cpu_call_graph") == "fp")
t.check("the default rate is 99 Hz", cc.meta(out, "cpu_rate_hz") == 99)
t.finish()
