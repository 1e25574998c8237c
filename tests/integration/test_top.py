"""`sonde top PID` on a terminal (a pty here): the screen shows the process's
hot Python function, `q` ends it with the terminal as it was (main screen,
cursor, echo and line mode back), the process keeps running, and nothing is
left in TMPDIR; with standard output not a terminal it refuses in one line.
`sonde run --live` shows the same view while the command runs, its output
held in output.log.
Workload: py_spin_threads.py (one thread computing in crunch())."""
import errno
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import fcntl
import time

from sonde_test import SONDE, check, main, scratch, skip, sonde, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
SPIN = os.path.join(HERE, "..", "workloads", "py_spin_threads.py")
PYTHON = shutil.which("python3")
if not PYTHON:
    skip("no python3 on PATH")


def start_target():
    p = subprocess.Popen([PYTHON, SPIN, "1", "600"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL)
    wait_for(lambda: len(os.listdir("/proc/%d/task" % p.pid)) >= 2, "the crunch thread")
    return p


def read_until(fd, proc, want, deadline_s):
    """What the pty printed until want appears in it (or the deadline)."""
    out, end = b"", time.monotonic() + deadline_s
    while want not in out and time.monotonic() < end and proc.poll() is None:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                out += os.read(fd, 65536)
            except OSError as e:
                if e.errno != errno.EIO:
                    raise
                break
    return out


@check("on a terminal the screen shows the hot Python function, q restores the terminal, "
       "the process keeps running and nothing is left on disk")
def _():
    target = start_target()
    tmp = scratch("top-tmp")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    before = termios.tcgetattr(slave)
    env = dict(os.environ, TMPDIR=tmp)
    t0 = time.monotonic()
    top = subprocess.Popen([os.path.abspath(SONDE), "top", str(target.pid)], stdin=slave,
                           stdout=slave, stderr=slave, env=env, start_new_session=True)
    try:
        shown = read_until(master, top, b"crunch (py_spin_threads.py", 120)
        assert b"crunch (py_spin_threads.py" in shown, shown[-2000:]
        print("hot function on screen after %.1f s" % (time.monotonic() - t0))
        assert b"\x1b[?1049h" in shown and b"RUNNING" in shown, shown[:500]
        os.write(master, b"s")  # sort by total time
        shown = read_until(master, top, b"TOTAL   self", 60)
        assert b"TOTAL   self" in shown, shown[-1000:]
        os.write(master, b"p")  # pause
        shown = read_until(master, top, b"[paused]", 60)
        assert b"[paused]" in shown, shown[-1000:]
        os.write(master, b"q")
        rest = read_until(master, top, b"\x1b[?1049l", 120)
        assert top.wait(timeout=120) == 0
        assert b"\x1b[?1049l" in rest and b"\x1b[?25h" in rest, rest[-300:]
        after = termios.tcgetattr(slave)
        assert after[3] & (termios.ICANON | termios.ECHO) == \
            before[3] & (termios.ICANON | termios.ECHO), (before[3], after[3])
        assert target.poll() is None, "the process was stopped"
        assert os.listdir(tmp) == [], os.listdir(tmp)
    finally:
        if top.poll() is None:
            os.killpg(top.pid, signal.SIGKILL)
            top.wait()
        target.kill()
        target.wait()
        os.close(master)
        os.close(slave)


@check("sonde run --live shows the live view instead of the command's output, which goes to "
       "output.log; q closes the view, the run goes on and ends with its summary")
def _():
    tmp = scratch("run-live")
    run = os.path.join(tmp, "run")
    script = ("import runpy, sys; print('held-line-42', flush=True); "
              "sys.argv = [%r, '1', '600']; runpy.run_path(%r, run_name='__main__')"
              % (SPIN, SPIN))
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    def controlling_terminal():
        # as in a shell: the pty is sonde's controlling terminal, its group the
        # foreground one (a plain run hands it to the command; --live keeps it)
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    live = subprocess.Popen([os.path.abspath(SONDE), "run", "--live", "-o", run, "--",
                             PYTHON, "-c", script], stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True, preexec_fn=controlling_terminal)
    try:
        shown = read_until(master, live, b"crunch (py_spin_threads.py", 120)
        assert b"crunch (py_spin_threads.py" in shown and b"sonde run: " in shown, shown[-2000:]
        assert b"\x1b[?1049h" in shown, shown[:300]
        os.write(master, b"q")
        closed = read_until(master, live, b"live view closed", 60)
        assert b"\x1b[?1049l" in closed and b"live view closed" in closed, closed[-500:]
        live.send_signal(signal.SIGINT)  # Ctrl-C: the command stops, the report is written
        rest = read_until(master, live, b"report: ", 300)
        assert live.wait(timeout=300) in (0, 130), live.returncode
        assert b"held-line-42" not in shown + closed + rest, "the command's output was shown"
        with open(os.path.join(run, "output.log"), errors="replace") as f:
            assert "held-line-42" in f.read()
        assert b"report: " in rest, rest[-1000:]
    finally:
        if live.poll() is None:
            os.killpg(live.pid, signal.SIGKILL)
            live.wait()
        os.close(master)
        os.close(slave)


@check("sonde run --live refuses in one line when standard output is not a terminal")
def _():
    p = sonde("run", "--live", "--", PYTHON, "-c", "pass")
    assert p.returncode == 2 and "terminal" in p.stderr, (p.returncode, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


@check("with standard output not a terminal sonde top refuses in one line")
def _():
    target = start_target()
    try:
        p = sonde("top", str(target.pid))
        assert p.returncode == 2, (p.returncode, p.stderr)
        assert "terminal" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
        p = sonde("top", "999999999")
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    finally:
        target.kill()
        target.wait()


main()
