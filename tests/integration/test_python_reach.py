"""Every CPython sonde can see, it reads, on every CPython 3.8-3.13 found:
one in its own PID namespace (`unshare --pid --fork --mount-proc`), sampled
by `sonde run` under its host thread ids with the spinning thread's on-CPU
state read and threading's names, and dumped by `sonde dump` with host ids; and one whose
executable and libpython were deleted after it started (copies, removed),
dumped and attached to with correct stacks and host ids.
Env: SONDE, SONDE_TEST_TMP. Exit 77 when no CPython 3.8-3.13 is found."""
import glob
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
THREADS = os.path.join(HERE, "..", "workloads", "py_threads.py")

sys.path.insert(0, HERE)
from sonde_test import per_cpython  # noqa: E402
from python_samples import python_samples, start_ready  # noqa: E402

UNSHARE = ["unshare", "--pid", "--fork", "--mount-proc"]


def can_unshare():
    try:
        return subprocess.run(UNSHARE + ["true"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def dump_problems(sonde, pid, tids_ok):
    """sonde dump PID of py_threads.py: three threads under ids tids_ok
    accepts, the main one (pid) down to <module>, the spinner's stack."""
    out = subprocess.run([sonde, "dump", str(pid)], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        return ["sonde dump exited %d: %s" % (out.returncode, out.stderr.strip())]
    blocks = out.stdout.split("\n\n")[1:]
    heads = [b.splitlines()[0] for b in blocks if b.strip()]
    tids = [int(h.split()[1]) for h in heads if h.split()[1].isdigit()]
    problems = []
    if len(tids) != 3 or not all(tids_ok(t) for t in tids):
        problems.append("dump: expected three threads under host ids:\n" + out.stdout)
    if not blocks or not blocks[0].startswith("Thread %d " % pid) or "<module> (" not in blocks[0]:
        problems.append("dump: the main thread is not first, under its host id, down "
                        "to <module>:\n" + out.stdout)
    if not any("spinner (" in b for b in blocks):
        problems.append("dump: no spinner thread:\n" + out.stdout)
    return problems


def host_tids(pid):
    return {int(t) for t in os.listdir("/proc/%d/task" % pid)}


def child_of(pid, deadline_s=30):
    """The first child of pid (unshare's forked Python), waiting for it."""
    end = time.time() + deadline_s
    while time.time() < end:
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                kids = f.read().split()
            if kids:
                return int(kids[0])
        except OSError:
            pass
        time.sleep(0.05)
    return None


def namespace_problems(sonde, tmp, label, exe):
    run_dir = os.path.join(tmp, "ns-%s" % label.replace(" ", "_").replace("/", "_"))
    shutil.rmtree(run_dir, ignore_errors=True)
    proc = subprocess.run([sonde, "run", "-q", "-o", run_dir, "--probes", "proc,python", "--"]
                          + UNSHARE + [exe, THREADS, "2"],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        return ["sonde run exited %d: %s" % (proc.returncode, proc.stderr.strip()[-500:])]
    problems = []
    samples = python_samples(run_dir)
    pids = {s[0] for s in samples}
    if len(pids) != 1:
        return ["run: expected the Python's samples under one pid, got %s (%d samples)"
                % (sorted(pids), len(samples))]
    pid = pids.pop()
    if pid < 2:
        return ["run: the Python's pid is the namespace's (%d), not the host's" % pid]
    by_tid = {}
    for _, tid, path, on_cpu, _ in samples:
        names = {f for f, _ in path}
        role = ("main" if tid == pid else "spinner" if "spinner" in names
                else "sleeper" if "sleeper" in names else None)
        if role:
            by_tid.setdefault((role, tid), []).append(on_cpu)
    roles = sorted(r for r, _ in by_tid)
    if roles != ["main", "sleeper", "spinner"]:
        problems.append("run: expected the main, sleeper and spinner threads under host "
                        "tids, got %s" % sorted(by_tid))
        return problems
    if any(tid < 4 for _, tid in by_tid):
        problems.append("run: namespace thread ids recorded: %s" % sorted(by_tid))
    # threading's names are bound to host tids too (_native_id is the
    # namespace's): the main thread is MainThread, not the kernel's name.
    import sqlite3
    db = sqlite3.connect(os.path.join(run_dir, "profile.db"))
    main_name = db.execute("SELECT name FROM threads WHERE pid = ? AND tid = ?",
                           (pid, pid)).fetchone()
    db.close()
    if not main_name or main_name[0] != "MainThread":
        problems.append("run: the main thread in a namespace is named %r, not MainThread"
                        % (main_name,))
    spin = next(v for (r, _), v in by_tid.items() if r == "spinner")
    sleep = next(v for (r, _), v in by_tid.items() if r == "sleeper")
    # A thread's first sample may come before its state could be read.
    if spin.count(None) > 1 or sleep.count(None) > 1:
        problems.append("run: on-CPU state unknown for some samples")
    elif spin.count(1) <= sleep.count(1):
        problems.append("run: the spinning thread is on the CPU in %d samples, the sleeping "
                        "one in %d" % (spin.count(1), sleep.count(1)))
    # sonde dump of a Python in a namespace started outside sonde.
    outer = subprocess.Popen(UNSHARE + [exe, THREADS, "30"], stdout=subprocess.PIPE,
                             text=True)
    try:
        if "ready" not in outer.stdout.readline():
            return problems + ["the Python in a namespace did not start"]
        child = child_of(outer.pid)
        if not child:
            return problems + ["no Python under unshare"]
        problems += dump_problems(sonde, child, lambda t: t in host_tids(child))
    finally:
        outer.kill()
        outer.wait()
    return problems


def deleted_problems(sonde, tmp, label, exe):
    """A copy of exe (and of its libpython, preloaded in place of the
    original), both deleted once the Python runs."""
    d = os.path.join(tmp, "deleted-%s" % label.replace(" ", "_").replace("/", "_"))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    real = os.path.realpath(exe)
    prefix = os.path.dirname(os.path.dirname(real))
    copy = os.path.join(d, os.path.basename(real))
    shutil.copy2(real, copy)
    env = dict(os.environ)
    libs = glob.glob(os.path.join(prefix, "lib", "libpython3*.so.1.0"))
    if libs and prefix != "/usr":
        lib = os.path.join(d, os.path.basename(libs[0]))
        shutil.copy2(libs[0], lib)
        env.update(LD_PRELOAD=lib, PYTHONHOME=prefix)
    proc = start_ready([copy, THREADS, "30"], env=env)
    problems = []
    try:
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        with open("/proc/%d/maps" % proc.pid) as f:
            if "(deleted)" not in f.read():
                return ["the Python's files are not shown deleted in its maps"]
        problems += dump_problems(sonde, proc.pid, lambda t: t in host_tids(proc.pid))
        run_dir = os.path.join(d, "attach")
        att = subprocess.run([sonde, "attach", "-q", "-o", run_dir, "-d", "2", "--probes",
                              "proc,python", str(proc.pid)],
                             capture_output=True, text=True, timeout=300)
        if att.returncode != 0:
            return problems + ["sonde attach exited %d: %s"
                               % (att.returncode, att.stderr.strip()[-500:])]
        samples = python_samples(run_dir, proc.pid)
        tids = host_tids(proc.pid)
        spin = [s for s in samples if any(f == "spinner" for f, _ in s[2])]
        if not spin or any(s[1] not in tids for s in samples):
            problems.append("attach: %d samples, %d of the spinner, tids %s (host: %s)"
                            % (len(samples), len(spin), sorted({s[1] for s in samples}),
                               sorted(tids)))
    finally:
        proc.kill()
        proc.wait()
    return problems


def check_one(sonde, tmp, label, minor, exe):
    problems = deleted_problems(sonde, tmp, label, exe)
    if can_unshare():
        problems += namespace_problems(sonde, tmp, label, exe)
    else:
        print("skip %s in a PID namespace: unshare --pid --fork --mount-proc fails here"
              % label)
    return problems


if __name__ == "__main__":
    sys.exit(per_cpython(check_one, "read in a PID namespace and with its files deleted, "
                         "under host thread ids"))
