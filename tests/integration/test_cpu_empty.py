"""cpu probe: a target that exits at once (no sample, maybe not even an exec
seen) leaves the run intact: the exit status passes through and the probe's
counters are recorded."""
import os
import shutil
import sqlite3
import subprocess
import cpu_common as cc

t = cc.Checks()
out = os.path.join(cc.TMP, "cpu_empty")
shutil.rmtree(out, ignore_errors=True)
os.makedirs(cc.TMP, exist_ok=True)
proc = subprocess.run([cc.SONDE, "run", "-q", "-o", out, "--", "/bin/sh", "-c", "exit 3"],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
t.check("the target's exit status passes through", proc.returncode == 3,
        "%d %s" % (proc.returncode, proc.stderr))
t.check("nothing is printed on stderr", proc.stderr == "", proc.stderr)
db = sqlite3.connect(os.path.join(out, "profile.db"))
status = db.execute("SELECT status FROM probes WHERE name='cpu'").fetchone()
db.close()
if status and status[0] == "on":
    t.check("the sample count is recorded", cc.meta(out, "cpu_samples") is not None)
    t.check("nothing was lost", int(cc.meta(out, "cpu_lost_records")) == 0)
t.finish()
