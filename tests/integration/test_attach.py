"""sonde attach: follow a running process, leave it unharmed."""
import json
import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import time

from sonde_test import check, main, scratch, sonde, workload


def load(d):
    with open(os.path.join(d, "report.json")) as f:
        return json.load(f)


def attached(d):
    """True once sonde recorded that it follows the process (its signal
    handling is in place by then)."""
    try:
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(d, "profile.db"), uri=True,
                             timeout=1)
        try:
            return bool(db.execute("SELECT 1 FROM meta WHERE key = 'attached'").fetchone())
        finally:
            db.close()
    except sqlite3.Error:
        return False


@contextlib.contextmanager
def spinning(seconds=600):
    """cpu_spin, running (its /proc/PID/stat says so: waited for, never a
    fixed time) for far longer than any attach on a loaded machine; killed
    when the check ends."""
    target = subprocess.Popen([workload("cpu_spin"), str(seconds)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open("/proc/%d/stat" % target.pid) as f:
                if f.read().split(") ")[-1][0] == "R":
                    break
            time.sleep(0.01)
        yield target
    finally:
        target.kill()
        target.wait(timeout=60)


@check("attach with -d detaches and the process keeps running, not stopped")
def _():
    # Long enough that any machine's load ends sonde before it: the test stops it.
    with spinning() as target:
        d = os.path.join(scratch("attach-d"), "run")
        p = sonde("attach", "-q", "-d", "0.8", "-o", d, str(target.pid))
        assert p.returncode == 0, p.stderr
        assert target.poll() is None, "the target did not survive the detach"
        with open("/proc/%d/stat" % target.pid) as f:
            assert f.read().split(") ")[-1][0] not in "Tt", "the target was left stopped"
        r = load(d)
        t = r["target"]
        assert t["attached"] and not t["target_exited"] and t["stopped_by_duration"], t
        assert t["wall_s"] >= 0.8, t  # -d is honest: sampled for the whole of it
        # counted from the attach, not from the process start
        assert r["cpu"]["user_s"] <= t["wall_s"] + 0.05, r["cpu"]
        # It spins, but a loaded machine may give it little of the 0.8 s.
        assert r["cpu"]["user_s"] > 0, r["cpu"]


@check("attach picks the call graph from the attached process's executable, as run does from "
       "the command: a program without frame pointers is unwound with DWARF, whole stacks")
def _():
    target = subprocess.Popen([workload("cpu_nofp"), "1000000"], stdout=subprocess.DEVNULL)
    try:
        d = os.path.join(scratch("attach-nofp"), "run")
        p = sonde("attach", "-q", "-d", "1", "-o", d, str(target.pid))
        assert p.returncode == 0, p.stderr
        db = sqlite3.connect(os.path.join(d, "profile.db"))
        meta = dict(db.execute("SELECT key, value FROM meta"))
        db.close()
        assert meta.get("cpu_call_graph") == "dwarf", meta.get("cpu_call_graph_reason")
        assert "cpu_nofp omits frame pointers" in meta.get("cpu_call_graph_reason", ""), meta
        r = load(d)
        leaf = [h for h in r["hotspots"] if h["function"] == "nofp_leaf"]
        assert leaf and leaf[0]["total_pct"] > 50, r["hotspots"][:3]
        # Whole stacks: the leaf's callers are found too.
        caller = [h for h in r["hotspots"] if h["function"] == "nofp_caller"]
        assert caller and caller[0]["total_pct"] > 50, r["hotspots"][:5]
    finally:
        target.kill()
        target.wait(timeout=60)


@check("-d counts from when sampling starts: the process is followed for all of it after its first reading")
def _():
    with spinning() as target:
        d = os.path.join(scratch("attach-d-honest"), "run")
        p = sonde("attach", "-q", "-d", "1", "-o", d, str(target.pid))
        assert p.returncode == 0, p.stderr
        db = sqlite3.connect(os.path.join(d, "profile.db"))
        first = db.execute("SELECT min(t_ns) FROM proc_samples").fetchone()[0]
        detach = db.execute("SELECT t_ns FROM notes WHERE text LIKE 'duration of%'").fetchone()
        db.close()
        assert first is not None and detach, (first, detach)
        assert detach[0] - first >= 1000000000, \
            "detached %.3f s after the first reading, -d 1" % ((detach[0] - first) / 1e9)


@check("options may follow the PID: attach PID -d 1 -q -o DIR")
def _():
    with spinning() as target:
        d = os.path.join(scratch("attach-after"), "run")
        p = sonde("attach", str(target.pid), "-d", "0.5", "-q", "-o", d)
        assert p.returncode == 0, p.stderr
        assert load(d)["target"]["stopped_by_duration"], load(d)["target"]
        p = sonde("attach", str(target.pid), "-d", "0.5", "12345")
        assert p.returncode == 2 and "one process only" in p.stderr, p.stderr


@check("attach ends when the process exits")
def _():
    target = subprocess.Popen(["sleep", "600"])
    try:
        d = os.path.join(scratch("attach-exit"), "run")
        p = subprocess.Popen([os.path.abspath(os.environ.get("SONDE", "build/sonde")),
                              "attach", "-q", "-o", d, "--pid", str(target.pid)])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not attached(d) and p.poll() is None:
            time.sleep(0.02)
        target.kill()
        target.wait()
        assert p.wait(timeout=300) == 0, "sonde exited %s" % p.returncode
        assert load(d)["target"]["target_exited"] is True
    finally:
        target.kill()
        target.wait()


@check("attach 1 is refused without --all, with the real reason, and never tells root to run as root")
def _():
    p = sonde("attach", "-d", "1", "-o", os.path.join(scratch("attach-init"), "run"), "1")
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1 and "--all" in p.stderr, p.stderr
    if os.geteuid() == 0:
        p = sonde("attach", "--all", "--probes", "python", "-q", "-d", "0.5", "-o",
                  os.path.join(scratch("attach-init-all"), "run"), "1", timeout=300)
        assert p.returncode == 0, p.stderr
        assert "run sonde as" not in p.stderr and "or as root" not in p.stderr, p.stderr


@check("a process whose tree holds another user's session is refused without --all and followed with it")
def _():
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("      (not checked: needs root and setpriv to start another user's process)")
        return
    # A child of another user (nobody) in its own session, as sshd or su would start.
    target = subprocess.Popen(["sh", "-c", "setpriv --reuid=65534 --regid=65534 --clear-groups "
                               "setsid sleep 600 & echo started; wait"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline().strip() == "started"
        deadline = time.monotonic() + 60
        # Until the child is sleep, in a session of its own, as nobody: setpriv
        # changes the user before setsid makes the session.
        while time.monotonic() < deadline and not any(
                own_session_as_nobody(c) for c in children(target.pid)):
            time.sleep(0.01)
        d = os.path.join(scratch("attach-other-user"), "run")
        p = sonde("attach", "-q", "-d", "0.5", "-o", d, str(target.pid))
        assert p.returncode == 2, (p.returncode, p.stderr)
        assert "other users" in p.stderr and "nobody" in p.stderr and "--all" in p.stderr, \
            p.stderr
        p = sonde("attach", "--all", "-q", "-d", "0.5", "-o", d, str(target.pid))
        assert p.returncode == 0, p.stderr
    finally:
        for c in children(target.pid):
            os.kill(int(c), signal.SIGKILL)
        target.kill()
        target.wait(timeout=60)


def own_session_as_nobody(pid):
    """1 when pid runs sleep as nobody and leads its own session."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            stat = f.read()
        uid = os.stat("/proc/%s" % pid).st_uid
    except OSError:
        return False
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    session = int(stat[stat.rindex(")") + 2:].split()[3])
    return uid == 65534 and comm == "sleep" and session == int(pid)


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return f.read().split()
    except OSError:
        return []


@check("Ctrl-C detaches without signalling the process")
def _():
    target = subprocess.Popen(["sleep", "600"])
    try:
        d = os.path.join(scratch("attach-int"), "run")
        p = subprocess.Popen([os.path.abspath(os.environ.get("SONDE", "build/sonde")),
                              "attach", "-q", "-o", d, str(target.pid)])
        # SIGINT once sonde follows the process, not after a guessed delay.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not attached(d) and p.poll() is None:
            time.sleep(0.02)
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=300) == 0, "sonde exited %s" % p.returncode
        assert target.poll() is None, "SIGINT reached the attached process"
        assert load(d)["target"]["interrupted"] is True
    finally:
        target.kill()
        target.wait()


@check("attach to a process that does not exist is a one-line error")
def _():
    p = sonde("attach", "-o", os.path.join(scratch("attach-none"), "run"), "4000000")
    assert p.returncode == 2, p.returncode
    assert len(p.stderr.strip().splitlines()) == 1 and "4000000" in p.stderr, p.stderr
    # Not digits: a name, which nothing matches.
    p = sonde("attach", "notapid")
    assert p.returncode == 2 and "no process matches 'notapid'" in p.stderr, p.stderr


if __name__ == "__main__":
    main()
