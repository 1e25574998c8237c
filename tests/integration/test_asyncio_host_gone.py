"""The asyncio agent when sonde is gone: sonde holds a lock on the agents'
directory while it reads it; after sonde is killed, a Python that outlives it
stops recording within a few seconds, removes its file and the directory
(no file left growing, not even an unlinked one it still holds), and its
event loop goes on as before (nothing in the agent waits on sonde)."""
import os
import signal
import subprocess
import sys
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import SONDE, check, cpython_exes, main, scratch, skip, wait_for  # noqa: E402

pythons, missing = cpython_exes()
if not pythons:
    skip("no CPython 3.8-3.13: " + "; ".join(missing))
LABEL, EXE = pythons[-1]

# Runs for minutes unless killed: a gather of 50 short tasks after another,
# its loop's progress counted in a file (stdout was sonde's pipe).
PROGRAM = """
    import asyncio, sys, time

    async def step(i):
        await asyncio.sleep(0.001)

    async def main(ticks):
        end = time.monotonic() + 300
        n = 0
        while time.monotonic() < end:
            await asyncio.gather(*(step(i) for i in range(50)))
            n += 1
            if n % 10 == 0:
                with open(ticks, "w") as f:
                    f.write(str(n))

    asyncio.run(main(sys.argv[1]))
"""


def agent_dirs(tmp):
    return [n for n in os.listdir(tmp) if n.startswith("sonde-agent-")]


def aio_files(tmp):
    return [os.path.join(tmp, d, f) for d in agent_dirs(tmp)
            for f in os.listdir(os.path.join(tmp, d)) if f.startswith("aio-")]


def ticks(path):
    try:
        with open(path) as f:
            return int(f.read() or 0)
    except (OSError, ValueError):
        return 0


@check(f"{LABEL}: after sonde is killed, the asyncio agent of the program that outlives it "
       "removes its file and the directory, holds no deleted file open, and the program's "
       "loop runs on")
def _():
    tmp = scratch("aio-host-gone")
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write(textwrap.dedent(PROGRAM))
    count = os.path.join(tmp, "ticks")
    env = dict(os.environ, TMPDIR=tmp)
    p = subprocess.Popen([os.path.abspath(SONDE), "run", "-q", "-o", os.path.join(tmp, "run"),
                          "--", EXE, prog, count], env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    target = None
    try:
        path = wait_for(lambda: [f for f in aio_files(tmp) if os.path.getsize(f) > 0],
                        "the agent's first records")[0]
        target = int(os.path.basename(path)[4:-4])
        p.kill()  # sonde only: the target runs on in its own process group
        p.wait()
        wait_for(lambda: not agent_dirs(tmp), "the agent to remove its directory", 60)
        fds = os.path.join("/proc/%d/fd" % target)
        held = [os.readlink(os.path.join(fds, fd)) for fd in os.listdir(fds)]
        # The agent's files (aio-PID.bin in sonde-agent-*/), not the test's
        # own scratch directory, whose name has "aio-" in it too.
        assert not [h for h in held if os.path.basename(h).startswith("aio-")
                    or "sonde-agent-" in h], held
        # The loop goes on: its count moves on after the agent stopped.
        before = ticks(count)
        wait_for(lambda: ticks(count) >= before + 20, "the program's loop to go on")
        os.kill(target, 0)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if target:
            try:
                os.kill(target, signal.SIGKILL)
            except ProcessLookupError:
                pass


main()
