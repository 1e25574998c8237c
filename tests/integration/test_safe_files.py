"""Files sonde creates: never a write through a link planted in the run
directory (run -o DIR and report DIR), private by default, --share to let the
umask decide, and a FIFO planted as a JIT's perf map never hangs sonde."""
import os
import stat
import subprocess
import time

from sonde_test import check, db, main, scratch, sonde, workload

# Every name sonde writes in a run directory, and the temporaries older sondes
# used (.NAME.tmp), so a fixed temporary name is caught too.
ARTIFACTS = ["profile.db", "profile.db-wal", "profile.db-shm", "profile.db-journal",
             "report.md", "report.json", "output.log", "flamegraph.svg", "offcpu.svg",
             "memory.svg", "stacks.folded"]
NAMES = ARTIFACTS + [".%s.tmp" % a for a in ARTIFACTS]


def plant(run_dir, victims_dir, names=NAMES, dangling=True):
    """A link at every name: to existing victims, or every other one dangling.
    Returns {victim path: its content, or None when it must not come to exist}."""
    victims = {}
    for i, name in enumerate(names):
        target = os.path.join(victims_dir, "victim-%d" % i)
        if i % 2 or not dangling:
            with open(target, "w") as f:
                f.write("victim %d\n" % i)
            victims[target] = "victim %d\n" % i
        else:
            victims[target] = None
        os.symlink(target, os.path.join(run_dir, name))
    return victims


def untouched(victims):
    bad = []
    for path, content in victims.items():
        if content is None:
            if os.path.lexists(path):
                bad.append(path + " was created")
        else:
            with open(path) as f:
                if f.read() != content:
                    bad.append(path + " was overwritten")
    return bad


def fresh(name):
    """(run directory, not created; victims directory, created) for one test."""
    base = scratch(name)
    os.makedirs(os.path.join(base, "victims"))
    return os.path.join(base, "run"), os.path.join(base, "victims")


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


@check("run -o DIR --force with a link planted at every name sonde writes: no write goes "
       "through any of them, and the report is written")
def _():
    run_dir, victims_dir = fresh("planted-run")
    os.makedirs(run_dir)
    victims = plant(run_dir, victims_dir)
    p = sonde("run", "-q", "-o", run_dir, "--force", "--", "echo", "hello")
    assert p.returncode == 0, p.stderr
    assert not untouched(victims), untouched(victims)
    for name in ("profile.db", "report.md", "report.json", "output.log"):
        assert stat.S_ISREG(os.lstat(os.path.join(run_dir, name)).st_mode), name


@check("run -o DIR with a dangling profile.db link: refused as an earlier run, and no file "
       "appears at the link's target")
def _():
    base = scratch("dangling-db")
    run_dir = os.path.join(base, "run")
    os.makedirs(run_dir)
    target = os.path.join(base, "created-by-sonde")
    os.symlink(target, os.path.join(run_dir, "profile.db"))
    p = sonde("run", "-q", "-o", run_dir, "--", "true")
    assert not os.path.lexists(target), "sonde created the link's target"
    assert p.returncode == 2 and "already holds" in p.stderr, (p.returncode, p.stderr)


@check("sonde report DIR with links planted at every name it writes: no write goes through "
       "them, and each artifact is a regular file again")
def _():
    run_dir, victims_dir = fresh("planted-report")
    p = sonde("run", "-q", "-o", run_dir, "--", "echo", "hello")
    assert p.returncode == 0, p.stderr
    written = [n for n in ARTIFACTS if n != "profile.db" and os.path.exists(
        os.path.join(run_dir, n))]
    for n in written:
        os.unlink(os.path.join(run_dir, n))
    victims = plant(run_dir, victims_dir, [n for n in NAMES if not n.startswith("profile.db")],
                    dangling=False)
    p = sonde("report", "-q", run_dir)
    assert p.returncode == 0, p.stderr
    assert not untouched(victims), untouched(victims)
    for n in written:
        assert stat.S_ISREG(os.lstat(os.path.join(run_dir, n)).st_mode), n


@check("sonde report refuses a profile.db that is a link, and writes nothing")
def _():
    base = scratch("report-db-link")
    run_dir = os.path.join(base, "run")
    p = sonde("run", "-q", "-o", run_dir, "--", "true")
    assert p.returncode == 0, p.stderr
    os.rename(os.path.join(run_dir, "profile.db"), os.path.join(base, "elsewhere.db"))
    os.symlink(os.path.join(base, "elsewhere.db"), os.path.join(run_dir, "profile.db"))
    os.unlink(os.path.join(run_dir, "report.json"))
    p = sonde("report", "-q", run_dir)
    assert p.returncode != 0 and "link" in p.stderr, (p.returncode, p.stderr)
    assert not os.path.exists(os.path.join(run_dir, "report.json"))


@check("outputs are private by default (0600 files, 0700 directories) whatever the umask")
def _():
    old = os.umask(0o022)
    try:
        base = scratch("private")
        run_dir = os.path.join(base, "run")
        p = sonde("run", "-q", "-o", run_dir, "--", "true")
        assert p.returncode == 0, p.stderr
        assert mode(run_dir) == 0o700, oct(mode(run_dir))
        files = os.listdir(run_dir)
        assert files and all(mode(os.path.join(run_dir, f)) == 0o600 for f in files), \
            [(f, oct(mode(os.path.join(run_dir, f)))) for f in files]
        p = sonde("run", "-q", "--", "true", cwd=base)
        assert p.returncode == 0, p.stderr
        latest = os.path.join(base, "profile_output", "latest")
        assert os.path.islink(latest)
        assert mode(os.path.join(base, "profile_output")) == 0o700
        assert mode(os.path.realpath(latest)) == 0o700
    finally:
        os.umask(old)


@check("with --share the umask decides (0644/0755 under umask 022), and sonde report keeps "
       "the run's permissions")
def _():
    old = os.umask(0o022)
    try:
        base = scratch("shared")
        run_dir = os.path.join(base, "run")
        p = sonde("run", "-q", "--share", "-o", run_dir, "--", "true")
        assert p.returncode == 0, p.stderr
        assert mode(run_dir) == 0o755, oct(mode(run_dir))
        files = os.listdir(run_dir)
        assert files and all(mode(os.path.join(run_dir, f)) == 0o644 for f in files), \
            [(f, oct(mode(os.path.join(run_dir, f)))) for f in files]
        os.unlink(os.path.join(run_dir, "report.md"))
        p = sonde("report", "-q", run_dir)
        assert p.returncode == 0, p.stderr
        assert mode(os.path.join(run_dir, "report.md")) == 0o644
    finally:
        os.umask(old)


@check("a profile_output link owned by another user is not followed")
def _():
    if os.geteuid() != 0:
        return  # only root can make a link owned by someone else
    base = scratch("foreign-base")
    elsewhere = os.path.join(base, "elsewhere")
    os.makedirs(elsewhere)
    os.symlink(elsewhere, os.path.join(base, "profile_output"))
    os.lchown(os.path.join(base, "profile_output"), 65534, 65534)
    p = sonde("run", "-q", "--", "true", cwd=base)
    assert p.returncode == 2 and "another user" in p.stderr, (p.returncode, p.stderr)
    assert os.listdir(elsewhere) == [], os.listdir(elsewhere)


@check("a FIFO planted as the target's /tmp/perf-PID.map is refused with a note: sonde "
       "finishes and writes its report")
def _():
    base = scratch("perfmap-fifo")
    run_dir = os.path.join(base, "run")
    pidfile = os.path.join(base, "pid")
    # The target plants the FIFO at its own pid, then runs code so the cpu probe
    # has samples to symbolize (the map is read when the process goes).
    script = ('echo $$ > %s; mkfifo /tmp/perf-$$.map; exec %s 1'
              % (pidfile, workload("cpu_spin")))
    try:
        p = sonde("run", "-q", "-o", run_dir, "--", "sh", "-c", script, timeout=120)
    except subprocess.TimeoutExpired:
        raise AssertionError("sonde blocked on the FIFO")
    finally:
        if os.path.exists(pidfile):
            with open(pidfile) as f:
                fifo = "/tmp/perf-%s.map" % f.read().strip()
            if os.path.exists(fifo):
                os.unlink(fifo)
    assert p.returncode == 0, p.stderr
    assert os.path.exists(os.path.join(run_dir, "report.json"))
    row = db(run_dir).execute("SELECT status FROM probes WHERE name = 'cpu'").fetchone()
    if row and row[0] == "on":
        assert "not a regular file" in p.stderr, p.stderr


main()
