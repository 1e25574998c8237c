"""The allocation agent's temporary files: when sonde is killed during a
--memory run, the target that outlives it removes them and stops writing; a
leftover of a killed run is removed by the next run, and a live run's
directory (its lock held) never is."""
import fcntl
import os
import signal
import subprocess
import time

from sonde_test import SONDE, check, main, scratch, skip, workload

AGENT = os.path.join(os.path.dirname(os.path.abspath(SONDE)), "libsonde_alloc.so")


def agent_dirs(tmp):
    # sonde-alloc-: the name older sondes used, so this test fails on them too.
    return [n for n in os.listdir(tmp) if n.startswith(("sonde-agent-", "sonde-alloc-"))]


def run_env(tmp):
    env = dict(os.environ)
    env["TMPDIR"] = tmp
    return env


@check("after sonde is killed, the target that outlives it stops writing and removes the "
       "agent's files and directory")
def _():
    tmp = scratch("agent-killed")
    run_dir = os.path.join(tmp, "run")
    # Runs for minutes unless killed; allocates all the time.
    p = subprocess.Popen([os.path.abspath(SONDE), "run", "-q", "--memory=full", "-o", run_dir,
                          "--", workload("alloc_churn"), "100000"], env=run_env(tmp),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    target = None
    try:
        end = time.monotonic() + 120
        while time.monotonic() < end and target is None:
            for d in agent_dirs(tmp):
                for f in os.listdir(os.path.join(tmp, d)):
                    if f.isdigit() and os.path.getsize(os.path.join(tmp, d, f)) > 0:
                        target = int(f)
            time.sleep(0.05)
        assert target, "the agent wrote nothing within 120 s"
        p.kill()  # sonde only: the target runs on in its own process group
        p.wait()
        end = time.monotonic() + 60
        while time.monotonic() < end and agent_dirs(tmp):
            time.sleep(0.1)
        assert not agent_dirs(tmp), "still there 60 s after sonde died: %s" % agent_dirs(tmp)
        os.kill(target, 0)  # the target itself is still running: the agent did it
    finally:
        if p.poll() is None:
            p.kill()
        if target:
            try:
                os.kill(target, signal.SIGKILL)
            except ProcessLookupError:
                pass


@check("a leftover agent directory of a killed run is removed by the next --memory run; a "
       "directory whose lock is held (a live run) stays")
def _():
    tmp = scratch("agent-leftover")
    leftover = os.path.join(tmp, "sonde-agent-Xk1lld")
    os.makedirs(leftover)
    with open(os.path.join(leftover, "4242"), "wb") as f:
        f.write(b"\0" * 4096)
    live = os.path.join(tmp, "sonde-agent-L1ve00")
    os.makedirs(live)
    with open(os.path.join(live, "4343"), "wb") as f:
        f.write(b"\0" * 4096)
    fd = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        q = subprocess.run([os.path.abspath(SONDE), "run", "-q", "--memory", "-o",
                            os.path.join(tmp, "run"), "--", "true"], env=run_env(tmp),
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        assert q.returncode == 0, q.stderr
        assert not os.path.exists(leftover), os.listdir(leftover)
        assert os.path.exists(os.path.join(live, "4343")), "a locked directory was touched"
        assert agent_dirs(tmp) == ["sonde-agent-L1ve00"], agent_dirs(tmp)
    finally:
        os.close(fd)


@check("a FIFO the target plants in the agent's directory is refused, and the run still "
       "ends with its report")
def _():
    tmp = scratch("agent-fifo")
    run_dir = os.path.join(tmp, "run")
    # The target makes a FIFO named like a stream file, then allocates (sh does).
    script = 'mkfifo "$SONDE_ALLOC_DIR/999999" && ls "$SONDE_ALLOC_DIR" >/dev/null && sleep 0.3'
    p = subprocess.run([os.path.abspath(SONDE), "run", "-q", "--memory=full", "-o", run_dir,
                        "--", "sh", "-c", script], env=run_env(tmp), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert os.path.exists(os.path.join(run_dir, "report.json")), os.listdir(run_dir)


if not os.path.exists(AGENT):
    skip("libsonde_alloc.so was not built next to sonde")
main()
