"""Shared helpers for sonde's end-to-end tests: run build/sonde on workloads,
read report.json and profile.db, and report each check by its sentence."""
import contextlib
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

SONDE = os.environ.get("SONDE", "build/sonde")
WORKLOADS = os.environ.get("SONDE_WORKLOADS", "build/workloads")
TMP_ROOT = os.environ.get("SONDE_TEST_TMP", tempfile.gettempdir())

_results = []


def workload(name):
    return os.path.join(WORKLOADS, name)


def scratch(name):
    """A fresh, empty directory for one test."""
    os.makedirs(TMP_ROOT, exist_ok=True)
    d = tempfile.mkdtemp(prefix=name + "-", dir=TMP_ROOT)
    return d


def sonde(*args, cwd=None, timeout=120, stdin=subprocess.DEVNULL):
    """Runs sonde; returns CompletedProcess with text stdout/stderr."""
    return subprocess.run([os.path.abspath(SONDE) if os.sep in SONDE else SONDE, *args],
                          cwd=cwd, timeout=timeout, stdin=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, errors="replace")


@contextlib.contextmanager
def env_set(env):
    """os.environ with env's variables set for the block, as they were after."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_profile(name, command, *options, expect_rc=None):
    """sonde run -q -o DIR OPTIONS -- COMMAND; returns (proc, dir, report)."""
    d = os.path.join(scratch(name), "run")
    p = sonde("run", "-q", "-o", d, *options, "--", *command)
    if expect_rc is not None and p.returncode != expect_rc:
        raise AssertionError(f"exit code {p.returncode}, expected {expect_rc}; stderr: {p.stderr}")
    report = None
    path = os.path.join(d, "report.json")
    if os.path.exists(path):
        with open(path) as f:
            report = json.load(f)
    return p, d, report


def run_profile_clocked(name, command, env):
    """run_profile() of command plus one argument, a file where the program
    writes its own clock readings around each region ("name a b c d" lines),
    with sonde's environment set to env for the run. Returns (proc, dir,
    report, {name: [a, b, c, d]}); the run must succeed."""
    own = os.path.join(scratch(name), "own.txt")
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        p, d, r = run_profile(name, command + [own])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert p.returncode == 0, (p.returncode, p.stderr[-1500:])
    measured = {}
    with open(own) as f:
        for line in f:
            n, *t = line.rsplit(" ", 4)
            measured[n] = [int(x) for x in t]
    return p, d, r, measured


def fsync_ms(directory):
    """What an fsync of a small append costs in directory, in ms (median of
    20): near 0 where the file system does not wait for a disk (tmpfs)."""
    import time
    fd, path = tempfile.mkstemp(dir=directory)
    times = []
    try:
        for _ in range(20):
            os.write(fd, b"x" * 64)
            t = time.perf_counter()
            os.fsync(fd)
            times.append(time.perf_counter() - t)
    finally:
        os.close(fd)
        os.unlink(path)
    return sorted(times)[len(times) // 2] * 1e3


def pyenv_root():
    try:
        out = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=20)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return os.path.expanduser("~/.pyenv")


def cpythons():
    """Every CPython sonde supports, to test each: the newest pyenv 3.8 to 3.13
    and Debian's static, stripped /usr/bin/python3.11, as (label, minor, path,
    None), or (label, minor, None, why) for one that is not installed."""
    root = pyenv_root()
    found = []
    for minor in range(8, 14):
        dirs = sorted(glob.glob(os.path.join(root, "versions", "3.%d.*" % minor)),
                      key=lambda d: [int(x) if x.isdigit() else 0
                                     for x in os.path.basename(d).split(".")])
        exe = os.path.join(dirs[-1], "bin", "python3") if dirs else None
        if exe and os.access(exe, os.X_OK):
            found.append(("pyenv " + os.path.basename(dirs[-1]), minor, exe, None))
        else:
            found.append(("pyenv 3.%d" % minor, minor, None,
                          "no 3.%d under %s/versions" % (minor, root)))
    if os.access("/usr/bin/python3.11", os.X_OK):
        found.append(("debian /usr/bin/python3.11", 11, "/usr/bin/python3.11", None))
    else:
        found.append(("debian python3.11", 11, None, "/usr/bin/python3.11 is not installed"))
    return found


def printed(proc, key):
    """The value of the target's "key=value" line on its stdout, or None."""
    for line in proc.stdout.splitlines():
        if line.startswith(key + "="):
            return line.split("=", 1)[1]
    return None


def cpython_exes():
    """([(label, path)] of the CPythons of cpythons() installed here, [why] of
    those missing)."""
    every = cpythons()
    return ([(label, exe) for label, _, exe, _ in every if exe],
            [why for _, _, exe, why in every if not exe])


def pyenv_oldest_newest():
    """([(label, path)] of the oldest and the newest pyenv CPython 3.8-3.13
    here (one when only one is, none when none is), [why] of those missing):
    where a check on every version would take too long."""
    pythons, missing = cpython_exes()
    pythons = [(label, exe) for label, exe in pythons if "pyenv" in label]
    return ([pythons[0], pythons[-1]] if len(pythons) > 1 else pythons), missing


def line_of(path, text):
    """The number of the first line of path that holds text."""
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise AssertionError("no line with %r in %s" % (text, path))


def main_with_agent_and_cpythons(pythons, missing):
    """main() for a test of the allocation agent on CPythons: skips when the
    agent is not built next to sonde or no CPython is installed."""
    if not os.path.exists(os.path.join(os.path.dirname(os.path.abspath(
            os.environ.get("SONDE", "build/sonde"))), "libsonde_alloc.so")):
        skip("libsonde_alloc.so was not built next to sonde")
    if not pythons:
        skip("no CPython 3.8-3.13 here: " + "; ".join(missing))
    for reason in missing:
        print("skip: " + reason)
    return main()


def per_cpython(check_one, ok_sentence):
    """Runs check_one(sonde, tmp, label, minor, exe) -> list of problems on
    every CPython of cpythons(); prints a FAIL line per problem, or ok with
    ok_sentence; returns the exit code (77 when sonde or every Python is
    missing)."""
    sonde_bin = os.environ.get("SONDE")
    if not sonde_bin or not os.access(sonde_bin, os.X_OK):
        print("SKIP: SONDE is not set to the sonde binary")
        return 77
    tmp = os.environ.get("SONDE_TEST_TMP") or "/tmp/sonde-test"
    os.makedirs(tmp, exist_ok=True)
    tested = failed = 0
    for label, minor, exe, reason in cpythons():
        if not exe:
            print("skip %s: %s" % (label, reason))
            continue
        tested += 1
        problems = check_one(sonde_bin, tmp, label, minor, exe)
        for p in problems:
            print("FAIL %s: %s" % (label, p))
        if problems:
            failed += 1
        else:
            print("ok   %s: %s" % (label, ok_sentence))
    if not tested:
        print("SKIP: no CPython 3.8-3.13 found (pyenv root %s, /usr/bin/python3.11)"
              % pyenv_root())
        return 77
    print("%d passed, %d failed" % (tested - failed, failed))
    return 1 if failed else 0


def wait_for(predicate, what, deadline_s=90.0, every_s=0.05):
    """Polls predicate() until it returns something true and returns that;
    raises AssertionError naming `what` after deadline_s. Tests wait on
    events this way, never on a sleep sized for a quiet machine."""
    import time
    end = time.monotonic() + deadline_s
    while True:
        try:
            got = predicate()
        except (OSError, sqlite3.Error):
            got = None
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"waited {deadline_s:.0f} s for {what}")
        time.sleep(every_s)


def children_named(pid, comm):
    """Pids of pid's children whose command name is comm."""
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            for c in f.read().split():
                try:
                    with open(f"/proc/{c}/comm") as g:
                        if g.read().strip() == comm:
                            out.append(int(c))
                except OSError:
                    pass
    return out


def db(run_dir):
    """A connection to run_dir's recording that never creates it: a poll that
    came before sonde made profile.db must not plant an empty file there."""
    path = os.path.join(run_dir, "profile.db")
    if not os.path.exists(path):
        raise sqlite3.OperationalError(f"no {path} yet")
    return sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=10)


def probe_status(run_dir, name):
    """(status, reason) of probe name in run_dir's recording, or None."""
    conn = db(run_dir)
    try:
        return conn.execute("SELECT status, reason FROM probes WHERE name = ?",
                            (name,)).fetchone()
    finally:
        conn.close()


def check(sentence):
    """Decorator: registers a test named by the sentence it checks."""
    def wrap(fn):
        _results.append((sentence, fn))
        return fn
    return wrap


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(77)


class Checks:
    """Claims checked in line, for a script that runs its steps in order
    (cpu_common's tests, test_alloc): check(sentence, cond, detail) prints each
    claim as ok or FAIL (with the detail), tally() prints "N passed, M failed"
    and returns the exit status, finish() exits with it. main() reports the
    @check tests through one of these."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, sentence, cond, detail=""):
        if cond:
            self.passed += 1
            print(f"ok:   {sentence}")
        else:
            self.failed += 1
            print(f"FAIL: {sentence}" + ("" if detail == "" else f"\n      {detail}"))
        return bool(cond)

    def tally(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0

    def finish(self):
        sys.exit(self.tally())


def main():
    checks = Checks()
    for sentence, fn in _results:
        try:
            fn()
        except Exception as e:  # a failed check, with its reason
            checks.check(sentence, False, f"{type(e).__name__}: {e}")
        else:
            checks.check(sentence, True)
    checks.finish()
