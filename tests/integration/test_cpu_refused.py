"""cpu probe: when perf_event_open is refused (a seccomp filter, as in a
container), the run still succeeds without the probe and says why in one line
naming kernel.perf_event_paranoid and the fix; as an unprivileged user with
perf_event_paranoid <= 2 sampling still works, without kernel frames."""
import os
import shutil
import sqlite3
import subprocess
import cpu_common as cc

t = cc.Checks()
deny = os.path.join(cc.WORKLOADS, "deny_perf")
for err in ("ENOSYS", "EPERM"):
    out = os.path.join(cc.TMP, "cpu_refused_" + err)
    shutil.rmtree(out, ignore_errors=True)
    proc = subprocess.run([deny, err, cc.SONDE, "run", "-q", "-o", out, "--",
                           os.path.join(cc.WORKLOADS, "cpu_nofp"), "5"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    t.check("%s: the run succeeds without the cpu probe" % err, proc.returncode == 0,
            proc.stderr)
    t.check("%s: the target's output is untouched" % err, "cpu_nofp:" in proc.stdout)
    db = sqlite3.connect(os.path.join(out, "profile.db"))
    row = db.execute("SELECT status, reason FROM probes WHERE name='cpu'").fetchone()
    db.close()
    t.check("%s: the probe is recorded as unavailable" % err, row and row[0] == "unavailable",
            row)
    reason = row[1] if row else ""
    t.check("%s: the reason is one line" % err, reason and "\n" not in reason)
    t.check("%s: the reason names perf_event_paranoid and its value" % err,
            "perf_event_paranoid is" in reason, reason)
    t.check("%s: the reason names seccomp and a fix" % err,
            "seccomp" in reason and ("unconfined" in reason or "sysctl" in reason), reason)
    t.check("%s: sonde warns on stderr" % err, "cpu probe off" in proc.stderr, proc.stderr)

try:
    paranoid = int(open("/proc/sys/kernel/perf_event_paranoid").read())
except OSError:
    paranoid = 99
setpriv = shutil.which("setpriv")
def nobody_can_run(*paths):
    """The run as user 65534 needs to reach sonde and the workload (a checkout
    under a private directory, such as one made by mktemp -d, does not allow it)."""
    return all(subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                               "test", "-x", p]).returncode == 0 for p in paths)


nofp = os.path.join(cc.WORKLOADS, "cpu_nofp")
if os.geteuid() == 0 and setpriv and paranoid <= 2 and not nobody_can_run(cc.SONDE, nofp):
    print("note: unprivileged check skipped: user 65534 cannot reach %s (a private directory "
          "above the checkout)" % cc.SONDE)
elif os.geteuid() == 0 and setpriv and paranoid <= 2:
    out = os.path.join(cc.TMP, "cpu_unprivileged")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(cc.TMP, exist_ok=True)
    os.chmod(cc.TMP, 0o1777)
    proc = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                           cc.SONDE, "run", "-q", "-o", out, "--",
                           os.path.join(cc.WORKLOADS, "cpu_nofp"), "60"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    t.check("unprivileged: the run succeeds", proc.returncode == 0, proc.stderr)
    status = None
    if proc.returncode == 0:
        db = sqlite3.connect(os.path.join(out, "profile.db"))
        status = db.execute("SELECT status, reason FROM probes WHERE name='cpu'").fetchone()
        db.close()
        if not status or status[0] != "on":
            print("note: unprivileged sampling is refused here: %s" % (status,))
    if status and status[0] == "on":
        samples = cc.stacks(out)
        t.check("unprivileged: user stacks are sampled",
                any("nofp_leaf" in cc.functions(st) for _, _, st in samples), len(samples))
        t.check("unprivileged: kernel frames are left out",
                cc.meta(out, "cpu_kernel_frames") == 0 and
                not any(f[4] == "kernel" for _, _, st in samples for f in st))
else:
    print("note: unprivileged check skipped (needs root, setpriv and perf_event_paranoid <= 2)")
t.finish()
