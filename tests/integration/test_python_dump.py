"""sonde dump PID prints every thread's Python stack of a running CPython
(3.8-3.13), the sleeping thread shown sleeping, main thread first, innermost
frame first, the same when _PyRuntime is found by scanning memory (the
fallback for binaries without .PyRuntime or the symbol); sonde run records the spinning thread on CPU holding the GIL and
the sleeping one neither, each under its own thread id; sonde attach records
them in a running Python that keeps running; a multiprocessing pool's workers
(fork and spawn) are sampled each under its pid; a Python sonde does not support (3.7 and older) is refused with
a message naming its version, by dump and by the run's notes.
Env: SONDE, SONDE_TEST_TMP. Exit 77 when no CPython 3.8-3.13 is found."""
import os
import shutil
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "py_threads.py")

sys.path.insert(0, HERE)
from sonde_test import cpythons, pyenv_root  # noqa: E402


def newest(minor):
    """The newest pyenv CPython 3.minor, or None."""
    return next((exe for label, m, exe, _ in cpythons()
                 if m == minor and exe and label.startswith("pyenv")), None)


def dump_one(sonde, minor, exe):
    problems = []
    proc = subprocess.Popen([exe, WORKLOAD, "3"], stdout=subprocess.PIPE, text=True)
    try:
        proc.stdout.readline()  # "ready"
        out = subprocess.run([sonde, "dump", str(proc.pid)], capture_output=True, text=True,
                             timeout=30)
        # The fallback for binaries with neither .PyRuntime nor _PyRuntime.
        env = dict(os.environ, SONDE_CPYTHON_FORCE_SCAN="1")
        scan = subprocess.run([sonde, "dump", str(proc.pid)], capture_output=True, text=True,
                              timeout=30, env=env)
    finally:
        proc.kill()
        proc.wait()
    if out.returncode != 0:
        return ["sonde dump exited %d: %s" % (out.returncode, out.stderr.strip())]
    if scan.returncode != 0 or "(scan of its writable memory)" not in scan.stdout:
        problems.append("dump with a memory scan for _PyRuntime: exit %d, %s%s"
                        % (scan.returncode, scan.stdout, scan.stderr))
    else:
        slept = [b for b in scan.stdout.split("\n\n") if "sleeper (" in b]
        if [b for b in out.stdout.split("\n\n") if "sleeper (" in b] != slept:
            problems.append("the scan found another stack for the sleeping thread:\n"
                            + scan.stdout)
    text = out.stdout
    if "CPython 3.%d" % minor not in text:
        problems.append("the version 3.%d is not named" % minor)
    blocks = text.split("\n\n")[1:]
    spin = [b for b in blocks if "spinner (" in b]
    sleep = [b for b in blocks if "sleeper (" in b]
    main = [b for b in blocks if "<module> (" in b]
    if len(spin) != 1 or len(sleep) != 1 or len(main) != 1:
        problems.append("expected one main, one sleeper and one spinner thread:\n" + text)
        return problems
    if "holds the GIL" in sleep[0]:
        problems.append("the sleeping thread holds the GIL:\n" + sleep[0])
    if "sleeping" not in sleep[0].splitlines()[0]:
        problems.append("the sleeping thread is not shown sleeping:\n" + sleep[0])
    if not blocks[0].startswith("Thread %d " % proc.pid):
        problems.append("the main thread is not first:\n" + text)
    first = spin[0].splitlines()
    if not first[1].strip().startswith("spinner ("):
        problems.append("the innermost frame is not first:\n" + spin[0])
    # The spinner holds the GIL most of the time; a dump is one instant, so
    # only its frames are checked strictly.
    return problems


def run_threads(sonde, tmp, minor, exe):
    """sonde run on the three threads: per-thread GIL and on-CPU flags."""
    run_dir = os.path.join(tmp, "py-threads-3.%d" % minor)
    shutil.rmtree(run_dir, ignore_errors=True)
    r = subprocess.run([sonde, "run", "-q", "-o", run_dir, "--", exe, WORKLOAD, "1.5"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return ["sonde run exited %d: %s" % (r.returncode, r.stderr.strip())]
    db = sqlite3.connect(os.path.join(run_dir, "profile.db"))
    rows = db.execute(
        "SELECT f.function, s.tid, count(*), sum(s.gil), sum(s.on_cpu = 1) FROM samples s"
        " JOIN stack_nodes n ON n.id = s.node JOIN frames f ON f.id = n.frame"
        " WHERE s.source = 'python' AND f.function IN ('sleeper', 'spinner')"
        " GROUP BY 1, 2").fetchall()
    got = {row[0]: row[1:] for row in rows}
    problems = []
    if set(got) != {"sleeper", "spinner"} or len({v[0] for v in got.values()}) != 2:
        return ["expected sleeper and spinner leaf samples on two threads, got %r" % rows]
    tid, n, gil, on_cpu = got["spinner"]
    # On CPU in a share that depends on the machine's load (a spinner given 8%
    # of a core is on the CPU in 8% of its samples): only "clearly some". A
    # read stands for its own tick only, so a machine that keeps sonde from
    # the CPU leaves fewer samples (20 are enough to tell the two apart).
    if n < 20 or gil is None or gil < 0.8 * n or on_cpu is None or on_cpu < 0.05 * n:
        problems.append("spinner: %d samples, GIL in %s, on CPU in %s" % (n, gil, on_cpu))
    tid, n, gil, on_cpu = got["sleeper"]
    if n < 20 or gil is None or gil > 0.1 * n or on_cpu is None or on_cpu > 0.1 * n:
        problems.append("sleeper: %d samples, GIL in %s, on CPU in %s" % (n, gil, on_cpu))
    named = db.execute("SELECT count(*) FROM threads WHERE tid IN (?, ?)",
                       (got["spinner"][0], got["sleeper"][0])).fetchone()[0]
    if named != 2:
        problems.append("the two threads have no names in the threads table")
    return problems


def attach_threads(sonde, tmp, minor, exe):
    """sonde attach -d 1 to a running Python: its threads' stacks are recorded
    and it keeps running."""
    run_dir = os.path.join(tmp, "py-attach-3.%d" % minor)
    shutil.rmtree(run_dir, ignore_errors=True)
    # Runs far longer than the attach (a loaded machine can take many seconds
    # to start and finish sonde): the test ends it, never a clock.
    proc = subprocess.Popen([exe, WORKLOAD, "600"], stdout=subprocess.PIPE, text=True)
    try:
        proc.stdout.readline()
        r = subprocess.run([sonde, "attach", "-q", "-d", "1", "-o", run_dir, str(proc.pid)],
                           capture_output=True, text=True, timeout=300)
        alive = proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    if r.returncode != 0:
        return ["sonde attach exited %d: %s" % (r.returncode, r.stderr.strip())]
    if not alive:
        return ["the process did not survive sonde attach"]
    db = sqlite3.connect(os.path.join(run_dir, "profile.db"))
    names = {row[0] for row in db.execute(
        "SELECT DISTINCT f.function FROM samples s JOIN stack_nodes n ON n.id = s.node"
        " JOIN frames f ON f.id = n.frame WHERE s.source = 'python'")}
    if not {"sleeper", "spinner"} <= names:
        return ["attach recorded leaf functions %r, not sleeper and spinner" % sorted(names)]
    return []


def run_children(sonde, tmp, minor, exe, method):
    """sonde run follows multiprocessing workers: both workers' stacks are recorded."""
    run_dir = os.path.join(tmp, "py-children-3.%d-%s" % (minor, method))
    shutil.rmtree(run_dir, ignore_errors=True)
    children = os.path.join(HERE, "..", "workloads", "py_children.py")
    # About 1 s per worker: a spawned worker starts a whole interpreter, which
    # sonde finds and opens while it runs; under load half a second was short.
    r = subprocess.run([sonde, "run", "-q", "-o", run_dir, "--", exe, children, method, "1"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return ["sonde run exited %d: %s" % (r.returncode, r.stderr.strip())]
    db = sqlite3.connect(os.path.join(run_dir, "profile.db"))
    leader = int(db.execute("SELECT value FROM meta WHERE key = 'leader_pid'").fetchone()[0])
    pids = [row[0] for row in db.execute(
        "SELECT s.pid FROM samples s JOIN stack_nodes n ON n.id = s.node"
        " JOIN frames f ON f.id = n.frame WHERE s.source = 'python' AND f.function = 'work'"
        " GROUP BY s.pid HAVING count(*) >= 5")]
    if len(pids) != 2 or leader in pids:
        notes = [row[0] for row in db.execute("SELECT text FROM notes WHERE probe = 'python'")]
        return ["%s: expected work() sampled in two worker processes, got pids %r (leader %d);"
                " python notes: %r" % (method, pids, leader, notes)]
    return []


def refuse_unpermitted(sonde, exe):
    """dump of a process sonde may not read says so and what to change."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return None
    if subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "test",
                       "-x", os.path.abspath(sonde)]).returncode != 0:
        print("note: user 65534 cannot reach %s (a private directory above the checkout)"
              % sonde)
        return None
    proc = subprocess.Popen([exe, "-c", "import time; print('ready', flush=True); "
                             "time.sleep(5)"], stdout=subprocess.PIPE, text=True)
    try:
        proc.stdout.readline()
        out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              os.path.abspath(sonde), "dump", str(proc.pid)],
                             capture_output=True, text=True, timeout=30)
    finally:
        proc.kill()
        proc.wait()
    if out.returncode != 1 or "not permitted" not in out.stderr \
            or "ptrace_scope" not in out.stderr:
        return ["dump as another user: exit %d, %r" % (out.returncode, out.stderr)]
    return []


def refuse_old(sonde, tmp):
    for minor in (7, 6):
        exe = newest(minor)
        if not exe:
            continue
        problems = []
        proc = subprocess.Popen([exe, "-c", "import time; print('ready', flush=True); "
                                 "time.sleep(5)"], stdout=subprocess.PIPE, text=True)
        try:
            proc.stdout.readline()
            out = subprocess.run([sonde, "dump", str(proc.pid)], capture_output=True,
                                 text=True, timeout=30)
        finally:
            proc.kill()
            proc.wait()
        if out.returncode != 1 or "CPython 3.%d" % minor not in out.stderr \
                or "not supported" not in out.stderr:
            problems.append("dump of 3.%d: exit %d, %r" % (minor, out.returncode, out.stderr))
        run_dir = os.path.join(tmp, "py-refuse-3.%d" % minor)
        shutil.rmtree(run_dir, ignore_errors=True)
        r = subprocess.run([sonde, "run", "-q", "-o", run_dir, "--", exe, "-c",
                            "import time; time.sleep(0.5)"],
                           capture_output=True, text=True, timeout=60)
        db = sqlite3.connect(os.path.join(run_dir, "profile.db"))
        notes = [n[0] for n in db.execute(
            "SELECT text FROM notes WHERE probe = 'python' AND kind = 'unsupported'")]
        if r.returncode != 0 or not any("CPython 3.%d" % minor in n for n in notes):
            problems.append("run of 3.%d: exit %d, notes %r, stderr %r" % (minor, r.returncode, notes, r.stderr))
        return "3.%d" % minor, problems
    return None, []


def main():
    sonde = os.environ.get("SONDE")
    if not sonde or not os.access(sonde, os.X_OK):
        print("SKIP: SONDE is not set to the sonde binary")
        return 77
    tmp = os.environ.get("SONDE_TEST_TMP") or "/tmp/sonde-test"
    os.makedirs(tmp, exist_ok=True)
    tested = failed = 0
    for minor in range(8, 14):
        exe = newest(minor)
        if not exe:
            print("skip 3.%d: not installed under %s/versions" % (minor, pyenv_root()))
            continue
        tested += 1
        problems = dump_one(sonde, minor, exe) + run_threads(sonde, tmp, minor, exe)
        if minor in (8, 13):  # the oldest and the newest layouts
            problems += attach_threads(sonde, tmp, minor, exe)
            problems += run_children(sonde, tmp, minor, exe, "fork")
            problems += run_children(sonde, tmp, minor, exe, "spawn")
        for p in problems:
            print("FAIL dump 3.%d: %s" % (minor, p))
        if problems:
            failed += 1
        else:
            print("ok   3.%d: dump shows three threads, innermost frame first, main thread "
                  "first, also when _PyRuntime is found by a memory scan; run flags the spinner on CPU with the GIL, the sleeper neither" % minor)
    if not tested:
        print("SKIP: no CPython 3.8-3.13 found under %s" % pyenv_root())
        return 77
    problems = refuse_unpermitted(sonde, newest(13) or newest(12) or newest(8))
    if problems is None:
        print("skip permission check: needs root and setpriv")
    else:
        tested += 1
        for p in problems:
            print("FAIL permission: %s" % p)
        if problems:
            failed += 1
        else:
            print("ok   a process sonde may not read is refused with the setting to change")
    label, problems = refuse_old(sonde, tmp)
    if label is None:
        print("skip refusal check: no CPython 3.6 or 3.7 installed")
    else:
        tested += 1
        for p in problems:
            print("FAIL refuse %s: %s" % (label, p))
        if problems:
            failed += 1
        else:
            print("ok   CPython %s is refused with a message naming its version" % label)
    print("%d passed, %d failed" % (tested - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
