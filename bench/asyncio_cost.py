#!/usr/bin/env python3
"""What the asyncio agent costs a Python program, without sonde around it.

Two programs, each run with the agent (PYTHONPATH=src/agents/asyncio,
SONDE_ASYNCIO_DIR set, as `sonde run` does) and without, interleaved, REPEAT
times each; the median CPU time of asyncio.run() (getrusage) and its wall
time, as ratios of agent-on to agent-off measured in the same session:

- small: 10 000 tasks, each `await asyncio.sleep(0.001)` and about 20 us of
  arithmetic, gathered 1000 at a time: the loop is CPU-bound, so this is the
  agent's cost per task laid bare;
- service: 10 000 tasks at most 200 at a time (an asyncio.Semaphore), each
  awaiting two simulated round trips of 5-20 ms and doing about 50 us of
  work: what an I/O-bound async service looks like.

Numbers, not pass/fail: record them in docs/performance.md.

--against DIR adds another agent directory (an older checkout's
src/agents/asyncio) to the same interleaved runs: a change's effect measured
against its baseline.

usage: bench/asyncio_cost.py [--repeat N] [--python PATH ...] [--against DIR]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AGENT = os.path.join(ROOT, "src", "agents", "asyncio")

PROGRAMS = {
    "small": r'''
import asyncio, resource, time

def arith():
    x = 0
    for i in range(600):
        x += i * i
    return x

async def one():
    await asyncio.sleep(0.001)
    return arith()

async def main():
    for _ in range(10):
        await asyncio.gather(*(one() for _ in range(1000)))
''',
    "service": r'''
import asyncio, random, resource, time

rng = random.Random(1)

def work():
    x = 0
    for i in range(1500):
        x += i * i
    return x

async def call(sem, delays):
    async with sem:
        await asyncio.sleep(delays[0])
        work()
        await asyncio.sleep(delays[1])

async def main():
    sem = asyncio.Semaphore(200)
    jobs = [(rng.uniform(0.005, 0.02), rng.uniform(0.005, 0.02)) for _ in range(10000)]
    await asyncio.gather(*(call(sem, d) for d in jobs))
''',
}

FOOTER = r'''
r0 = resource.getrusage(resource.RUSAGE_SELF)
w0 = time.perf_counter()
asyncio.run(main())
w1 = time.perf_counter()
r1 = resource.getrusage(resource.RUSAGE_SELF)
print("%.6f %.6f" % (w1 - w0, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)))
'''


def run(python, path, agent):
    """(wall, cpu) of one run; agent: its directory, None for none."""
    env = dict(os.environ)
    out = None
    if agent:
        out = tempfile.mkdtemp(prefix="sonde-aio-bench-")
        env["PYTHONPATH"] = agent + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["SONDE_ASYNCIO_DIR"] = out
    p = subprocess.run([python, path], capture_output=True, text=True, env=env)
    if out:
        shutil.rmtree(out, ignore_errors=True)
    if p.returncode != 0:
        raise SystemExit(p.stderr[-800:])
    wall, cpu = map(float, p.stdout.split()[-2:])
    return wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--python", action="append")
    ap.add_argument("--against", help="another agent directory, measured alike")
    a = ap.parse_args()
    agents = [None, AGENT] + ([os.path.abspath(a.against)] if a.against else [])
    pythons = a.python or [sys.executable]
    tmp = tempfile.mkdtemp(prefix="sonde-aio-bench-prog-")
    try:
        for python in pythons:
            for name, body in PROGRAMS.items():
                path = os.path.join(tmp, name + ".py")
                with open(path, "w") as f:
                    f.write(body + FOOTER)
                got = {agent: [] for agent in agents}
                for _ in range(a.repeat):
                    for agent in agents:
                        got[agent].append(run(python, path, agent))
                off_cpu = statistics.median(c for _, c in got[None])
                off_wall = statistics.median(w for w, _ in got[None])
                for agent in agents[1:]:
                    on_cpu = statistics.median(c for _, c in got[agent])
                    on_wall = statistics.median(w for w, _ in got[agent])
                    print("%s %-8s %s CPU %.3f s -> %.3f s (x%.3f); wall %.3f s -> %.3f s (x%.3f)"
                          % (python, name, "this" if agent == AGENT else "against", off_cpu,
                             on_cpu, on_cpu / off_cpu, off_wall, on_wall, on_wall / off_wall))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
