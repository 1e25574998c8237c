"""The asyncio agent (src/agents/asyncio: sitecustomize.py and the
_sonde_asyncio*.py modules), tested without sonde: small programs run on every CPython
3.8-3.13 found (the newest pyenv patch of each minor, and Debian's
/usr/bin/python3.11) with PYTHONPATH naming the agent's directory and
SONDE_ASYNCIO_DIR a fresh directory, and the aio-<pid>.txt files they leave
are read back: every line well formed (V first; N before the id's first use;
task ids 1, 2, 3...), and the records each program should cause are there:
tasks with their creation site and end, retry sleeps, semaphore and lock
waits, event-loop lag, one file per forked child, none without asyncio, the
task cap counted, a file already in the way left alone. The user's own
sitecustomize (and Debian's) still runs; programs that raise, are cancelled,
interrupted, run loops in several threads, run in debug mode or with their
own task factory, or lose tasks (asyncio's "Task exception was never
retrieved", "Task was destroyed but it is pending!") print the same and exit
the same with the agent as without.
Pythons 2.7, 3.6 and 3.7 start cleanly with the hook and record nothing.
Env: SONDE_TEST_TMP (optional). Exit 77 when no CPython 3.8-3.13 is found."""
import glob
import os
import re
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from sonde_test import check, cpythons, main, pyenv_root, scratch, skip  # noqa: E402

AGENT = os.path.normpath(os.path.join(HERE, "..", "..", "src", "agents", "asyncio"))
MS = 1000000

# Record kind -> number of fields after the kind, and which of them are
# integers.
FIELDS = {"V": 3, "N": 4, "T": 5, "E": 3, "L": 3, "R": 5, "W": 7, "P": 4, "X": 2}
INTS = {"V": (0, 1), "N": (0, 3), "T": (0, 1, 2, 3, 4), "E": (0, 1),
        "L": (0, 1, 2), "R": (0, 1, 2, 4), "W": (0, 1, 2, 3, 5, 6), "P": (0, 1, 2, 3),
        "X": (1,)}

PYTHONS = [(label, minor, exe) for label, minor, exe, _ in cpythons() if exe]
MISSING = [why for _, _, exe, why in cpythons() if not exe]


class Records:
    """One aio-<pid>.txt, checked for form as it is read."""

    def __init__(self, path):
        self.path = path
        self.pid = int(os.path.basename(path)[4:-4])
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
        assert text.endswith("\n"), "%s does not end with a newline" % path
        self.lines = [line.split("\t") for line in text[:-1].split("\n")]
        self.names = {}      # location id -> (function, file, line)
        self.tasks = {}      # task id -> (t_ns, site, coro, tid)
        self.ends = {}       # task id -> (t_ns, state)
        self.pools = {}      # pool id -> (slots, site, caller)
        self.by_kind = {}
        for n, f in enumerate(self.lines):
            where = "%s line %d %r" % (os.path.basename(path), n + 1, f)
            kind, rest = f[0], f[1:]
            assert kind in FIELDS, "unknown record: " + where
            assert len(rest) == FIELDS[kind], "wrong field count: " + where
            for i in INTS[kind]:
                # W's in_flight is -1 when unknown
                digits = rest[i][1:] if (kind, i) == ("W", 6) and rest[i] == "-1" else rest[i]
                assert digits.isdigit(), "not a decimal integer: " + where
                rest[i] = int(rest[i])
            assert (kind == "V") == (n == 0), "V must be the first line only: " + where
            self.by_kind.setdefault(kind, []).append(rest)
            if kind == "V":
                assert rest[0] == 1 and rest[1] == self.pid, "V names another pid: " + where
            elif kind == "N":
                assert rest[0] == len(self.names) + 1, "location ids not 1, 2, 3...: " + where
                self.names[rest[0]] = (rest[1], rest[2], rest[3])
            elif kind == "T":
                # Threads number their tasks from one counter and may write
                # them in another order: ids are unique, none skipped.
                assert rest[0] not in self.tasks, "task id used twice: " + where
                for loc in (rest[2], rest[3]):
                    assert loc == 0 or loc in self.names, "location used before its N: " + where
                self.tasks[rest[0]] = tuple(rest[1:])
            elif kind == "E":
                assert rest[0] in self.tasks, "E of a task with no T before it: " + where
                assert rest[0] not in self.ends, "second E for a task: " + where
                assert rest[1] >= self.tasks[rest[0]][0], "E before its T: " + where
                self.ends[rest[0]] = (rest[1], rest[2])
            elif kind == "R":
                assert rest[1] == 0 or rest[1] in self.names, "R site before its N: " + where
                assert rest[4] == 0 or rest[4] in self.tasks, "R of an unknown task: " + where
            elif kind == "W":
                assert rest[2] == 0 or rest[2] in self.names, "W site before its N: " + where
                assert rest[3] == 0 or rest[3] in self.tasks, "W of an unknown task: " + where
                assert rest[4] in ("lock", "semaphore", "aiohttp", "httpx"), "W kind: " + where
                assert rest[5] == 0 or rest[5] in self.pools, "W pool before its P: " + where
                assert rest[4] == "semaphore" or rest[5] == 0, "W pool of a lock: " + where
            elif kind == "P":
                assert rest[0] == len(self.pools) + 1, "pool ids not 1, 2, 3...: " + where
                for loc in (rest[2], rest[3]):
                    assert loc == 0 or loc in self.names, "P site before its N: " + where
                self.pools[rest[0]] = tuple(rest[1:])
            for s in rest:
                if isinstance(s, str):
                    assert len(s) <= 300 and "\r" not in s, "string field: " + where
        assert sorted(self.tasks) == list(range(1, len(self.tasks) + 1)), \
            "task ids not 1, 2, 3... in %s" % path

    def get(self, kind):
        return self.by_kind.get(kind, [])

    def name(self, loc):
        return self.names.get(loc, ("", "", 0))

    def counters(self):
        return {name: count for name, count in self.get("X")}


def base_env():
    env = dict(os.environ)
    for name in ("PYTHONPATH", "SONDE_ASYNCIO_DIR", "PYTHONHOME", "PYTHONSTARTUP",
                 "PYTHONASYNCIODEBUG", "PYTHONDEVMODE", "PYTHONWARNINGS", "PYTHONINSPECT"):
        env.pop(name, None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run(exe, source, tag, agent=True, path_after=(), timeout=120, parse=True, env_extra=None):
    """Runs source as prog.py in a scratch directory, with the agent's
    directory first on PYTHONPATH (and path_after after it) and
    SONDE_ASYNCIO_DIR a fresh directory, or with neither; returns (proc,
    prog path, {pid: Records}), or (proc, prog path, the directory) when not
    parse."""
    d = scratch("aio-" + tag)
    prog = os.path.join(d, "prog.py")
    with open(prog, "w") as f:
        f.write(textwrap.dedent(source))
    out = os.path.join(d, "out")
    os.mkdir(out)
    env = base_env()
    path = ([AGENT] if agent else []) + list(path_after)
    if path:
        env["PYTHONPATH"] = os.pathsep.join(path)
    if agent:
        env["SONDE_ASYNCIO_DIR"] = out
    env.update(env_extra or {})
    p = subprocess.run([exe, prog], cwd=d, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                       universal_newlines=True, errors="replace")
    if not parse:
        return p, prog, out
    files = {}
    for name in sorted(os.listdir(out)):
        assert name.startswith("aio-") and name.endswith(".txt"), "stray file " + name
        r = Records(os.path.join(out, name))
        files[r.pid] = r
    return p, prog, files


def one_file(p, files):
    assert p.returncode == 0, "exit %d: %s" % (p.returncode, p.stderr[-800:])
    assert len(files) == 1, "%d files, expected one" % len(files)
    return list(files.values())[0]


def each_python(fn):
    """Runs fn(label, minor, exe) on every CPython found; prints a line per
    Python; raises with every Python's problem."""
    problems = []
    for label, minor, exe in PYTHONS:
        try:
            fn(label, minor, exe)
        except Exception as e:  # this Python's problem, reported with the others
            problems.append("%s: %s" % (label, e))
            print("      FAIL %s: %s" % (label, e))
        else:
            print("      ok   %s" % label)
    if problems:
        raise AssertionError("; ".join(problems))


GATHER = """
    import asyncio

    class Fetcher:
        async def one(self, i):
            await asyncio.sleep(0.001)
            return i

        async def fetch_all(self):
            return await asyncio.gather(*[self.one(i) for i in range(50)])

        async def spawn(self):
            tasks = [asyncio.create_task(self.one(i)) for i in range(3)]
            return [await t for t in tasks]

    async def fails():
        raise KeyError("x")

    async def main():
        print(sum(await Fetcher().fetch_all()), sum(await Fetcher().spawn()))
        t = asyncio.ensure_future(fails())
        try:
            await t
        except KeyError:
            pass
        s = asyncio.ensure_future(asyncio.sleep(10))
        await asyncio.sleep(0)
        s.cancel()
        await asyncio.gather(s, return_exceptions=True)

    asyncio.run(main())
"""


@check("a gather of 50 tasks made in Fetcher.fetch_all gives 50 T lines whose site names "
       "Fetcher.fetch_all in the program and whose coroutine is Fetcher.one, each with an E ok; "
       "tasks made in a list comprehension name the method around it; a failed task ends "
       "with its exception's name, a cancelled one with cancelled")
def _():
    def one(label, minor, exe):
        p, prog, files = run(exe, GATHER, "gather")
        r = one_file(p, files)
        assert p.stdout.split() == ["1225", "3"], p.stdout
        made = [(tid, t) for tid, t in r.tasks.items()
                if r.name(t[1])[:2] == ("Fetcher.fetch_all", prog)]
        assert len(made) == 50, "%d tasks from Fetcher.fetch_all in %s" % (len(made), r.names)
        for tid, (t_ns, site, coro, thread) in made:
            assert r.name(coro)[:2] == ("Fetcher.one", prog), r.name(coro)
            assert r.name(site)[2] == 10, "site line %d" % r.name(site)[2]
            assert r.ends.get(tid, (0, ""))[1] == "ok", (tid, r.ends.get(tid))
        assert thread == p_native(r), "T thread %d" % thread
        # A comprehension's frame is not the site: the method around it is.
        spawned = [t for t in r.tasks.values() if r.name(t[1])[0] == "Fetcher.spawn"]
        assert len(spawned) == 3 and r.name(spawned[0][1])[2] == 13, \
            (spawned, r.names)
        states = sorted(state for tid, (_, state) in r.ends.items()
                        if tid not in dict(made))
        assert "KeyError" in states and "cancelled" in states, states
        assert r.counters() == {"tasks_dropped": 0, "write_errors": 0}, r.counters()
    each_python(one)


def p_native(r):
    """The thread id of the main task (the first T) of a single-threaded run."""
    return r.tasks[1][3]


RETRY = """
    import asyncio, threading

    class Client:
        async def fetch(self):
            for attempt in range(3):
                try:
                    raise ValueError("not yet")
                except ValueError:
                    await asyncio.sleep(0.01)
            try:
                raise KeyError("k")
            except KeyError:
                await asyncio.sleep(0)          # sleep(0): no record
            await asyncio.sleep(0.01)           # no exception: no record
            return "done"

    async def plain():
        await asyncio.sleep(0.01)

    async def main():
        print(await Client().fetch())

    asyncio.run(main())
    try:
        raise RuntimeError("outside any task")
    except RuntimeError:
        asyncio.run(plain())                    # not the task's exception: no record
"""


@check("a retry loop (except ValueError: await asyncio.sleep(0.01)) gives one R line per "
       "retry: delay 10000000 ns, exc ValueError, the retrying method as site, the main task; "
       "sleep(0), sleep outside except, and an exception handled outside the task give none")
def _():
    def one(label, minor, exe):
        p, prog, files = run(exe, RETRY, "retry")
        r = one_file(p, files)
        assert p.stdout.split() == ["done"], p.stdout
        retries = r.get("R")
        assert len(retries) == 3, retries
        main_task = [tid for tid, t in r.tasks.items() if r.name(t[2])[0] == "main"]
        assert len(main_task) == 1, r.names
        for t_ns, site, delay, exc, task in retries:
            assert delay == 10 * MS, delay
            assert exc == "ValueError", exc
            assert r.name(site) == ("Client.fetch", prog, 10), r.name(site)
            assert task == main_task[0], (task, main_task)
    each_python(one)


WAITS = """
    import asyncio

    async def worker(sem):
        async with sem:
            await asyncio.sleep(0.05)

    async def locker(lock):
        async with lock:
            await asyncio.sleep(0.03)

    async def lock_waiter(lock):
        await lock.acquire()

    async def main():
        sem = asyncio.Semaphore(2)
        await asyncio.gather(*(worker(sem) for _ in range(6)))
        lock = asyncio.Lock()
        await asyncio.gather(*(locker(lock) for _ in range(3)))
        await lock.acquire()
        waiter = asyncio.create_task(lock_waiter(lock))
        await asyncio.sleep(0.05)
        waiter.cancel()
        try:
            await waiter
        except asyncio.CancelledError:
            print("cancelled")
        lock.release()
        async with lock:
            pass                                # free: no record

    asyncio.run(main())
"""


@check("a Semaphore(2) shared by 6 tasks gives 4 W semaphore lines at the worker's "
       "`async with`, naming one pool: a P line with 2 slots made in main, both taken as each "
       "wait began; a Lock shared by 3 gives 2 W lock lines; a lock wait cut by cancellation "
       "gives a W line too, and its task ends cancelled")
def _():
    def one(label, minor, exe):
        p, prog, files = run(exe, WAITS, "waits")
        r = one_file(p, files)
        assert p.stdout.split() == ["cancelled"], p.stdout
        waits = r.get("W")
        sem = [w for w in waits if w[4] == "semaphore"]
        lock = [w for w in waits if w[4] == "lock"]
        assert len(sem) == 4, sem
        assert len(r.get("P")) == 1 and r.pools[1][0] == 2, r.get("P")
        assert r.name(r.pools[1][1])[0] == "main", r.name(r.pools[1][1])
        for t0, wait, site, task, _, pool, in_flight in sem:
            assert pool == 1 and in_flight == 2, sem
            assert r.name(site) == ("worker", prog, 5), r.name(site)
            assert r.name(r.tasks[task][2])[0] == "worker", r.tasks.get(task)
            assert 20 * MS <= wait <= 5000 * MS, wait
        assert len(lock) == 3 and all(w[6] == 1 for w in lock), lock
        by_site = sorted(r.name(w[2])[0] for w in lock)
        assert by_site == ["lock_waiter", "locker", "locker"], by_site
        cut = [w for w in lock if r.name(w[2])[0] == "lock_waiter"][0]
        assert cut[1] >= 30 * MS, cut
        assert r.ends[cut[3]][1] == "cancelled", r.ends.get(cut[3])
    each_python(one)


LAG = """
    import asyncio, threading, time

    async def main():
        await asyncio.sleep(0.1)
        time.sleep(0.3)                         # blocks the loop
        await asyncio.sleep(0.1)
        print(threading.get_native_id())

    asyncio.run(main())
"""


@check("a coroutine that blocks the loop in time.sleep(0.3) gives an L line of at least "
       "200 ms late, with the loop thread's id")
def _():
    def one(label, minor, exe):
        p, prog, files = run(exe, LAG, "lag")
        r = one_file(p, files)
        late = [x for x in r.get("L") if x[2] >= 200 * MS]
        assert late, r.get("L")
        assert late[0][0] == int(p.stdout.split()[0]), (late, p.stdout)
        assert late[0][2] < 10000 * MS, late
    each_python(one)


SHOW_SITECUSTOMIZE = """
    import os, sys
    m = sys.modules.get("sitecustomize")
    print(getattr(m, "__file__", None))
    print(getattr(m, "USER_MARK", None), os.environ.get("USER_SITECUSTOMIZE_RAN"))
    import asyncio
    asyncio.run(asyncio.sleep(0))
"""


@check("the user's sitecustomize later on PYTHONPATH still runs as `sitecustomize` "
       "(Debian's when there is none); one that raises is reported as without the agent")
def _():
    user = scratch("aio-usersite")
    with open(os.path.join(user, "sitecustomize.py"), "w") as f:
        f.write("import os\nUSER_MARK = 'user'\nos.environ['USER_SITECUSTOMIZE_RAN'] = '1'\n")
    broken = scratch("aio-brokensite")
    with open(os.path.join(broken, "sitecustomize.py"), "w") as f:
        f.write("BROKEN = 1\nraise RuntimeError('sitecustomize boom')\n")

    def one(label, minor, exe):
        p, prog, files = run(exe, SHOW_SITECUSTOMIZE, "usersite", path_after=[user])
        one_file(p, files)
        assert p.stdout.split() == [os.path.join(user, "sitecustomize.py"), "user", "1"], \
            p.stdout
        p, prog, files = run(exe, SHOW_SITECUSTOMIZE, "nousersite")
        one_file(p, files)
        shown = p.stdout.split()[0]
        if exe == "/usr/bin/python3.11":
            assert os.path.realpath(shown) == "/etc/python3.11/sitecustomize.py", shown
        else:
            assert shown == os.path.join(AGENT, "sitecustomize.py"), shown
        with_agent = run(exe, SHOW_SITECUSTOMIZE, "brokensite", path_after=[broken])[0]
        without = run(exe, SHOW_SITECUSTOMIZE, "brokensite-off", agent=False,
                      path_after=[broken])[0]
        assert "sitecustomize boom" in without.stderr, without.stderr
        same(with_agent, without)
    each_python(one)


FORK = """
    import asyncio, os

    async def parent_pending():
        await asyncio.sleep(0.001)

    async def child_step(i):
        await asyncio.sleep(0.001)
        return i

    async def child_main():
        return sum(await asyncio.gather(*(child_step(i) for i in range(4))))

    asyncio.run(asyncio.sleep(0.001))
    loop = asyncio.new_event_loop()
    pending = loop.create_task(parent_pending())   # buffered when the child forks
    pid = os.fork()
    if pid == 0:
        asyncio.run(child_main())
        os._exit(0)
    os.waitpid(pid, 0)
    loop.run_until_complete(pending)
    loop.close()
    print(os.getpid(), pid)
"""


@check("a forked child that uses asyncio writes its own aio-<childpid>.txt with its own "
       "ids from 1, and none of the parent's records")
def _():
    def one(label, minor, exe):
        p, prog, files = run(exe, FORK, "fork")
        assert p.returncode == 0, p.stderr[-800:]
        parent, child = (int(x) for x in p.stdout.split())
        assert sorted(files) == sorted([parent, child]), (sorted(files), parent, child)
        c, par = files[child], files[parent]
        coros = sorted(c.name(t[2])[0] for t in c.tasks.values())
        assert coros == sorted(["child_main"] + ["child_step"] * 4 + coro_tail(c)), coros
        assert 1 in c.tasks and all(c.ends.get(t, (0, ""))[1] == "ok" for t in c.tasks), c.ends
        names = set(n[0] for n in par.names.values())
        assert "parent_pending" in names and "child_step" not in names, names
        assert "parent_pending" not in set(n[0] for n in c.names.values()), c.names
    each_python(one)


def coro_tail(r):
    """asyncio.run's own tasks at its end (shutdown_asyncgens, and on 3.9+
    shutdown_default_executor), as recorded."""
    return sorted(r.name(t[2])[0] for t in r.tasks.values()
                  if r.name(t[2])[1].endswith("base_events.py"))


@check("a program that never imports asyncio creates no file; one that imports it and runs "
       "no loop creates none either")
def _():
    def one(label, minor, exe):
        p, prog, files = run(exe, "print('hello')\n", "noasyncio")
        assert p.returncode == 0 and p.stdout == "hello\n" and not p.stderr, (p.stdout, p.stderr)
        assert not files, sorted(files)
        p, prog, files = run(exe, "import asyncio\nprint('idle')\n", "idleasyncio")
        assert p.returncode == 0 and p.stdout == "idle\n" and not p.stderr, (p.stdout, p.stderr)
        assert not files, sorted(files)
    each_python(one)


CAPPED = """
    import asyncio, _sonde_asyncio_tasks

    _sonde_asyncio_tasks._MAX_TASKS = 4         # the cap is 2 000 000

    async def step(i):
        await asyncio.sleep(0.001)

    async def main():
        await asyncio.gather(*(step(i) for i in range(10)))

    asyncio.run(main())
"""

TAKEN = """
    import asyncio, os

    where = os.path.join(os.environ["SONDE_ASYNCIO_DIR"], "aio-%d.txt" % os.getpid())
    if os.environ.get("AS_LINK"):
        os.symlink(os.path.join(os.path.dirname(where), "target"), where)
    else:
        with open(where, "w") as f:
            f.write("not the agent's\\n")

    async def main():
        await asyncio.gather(*(asyncio.sleep(0.001) for _ in range(3)))
        print("done")

    asyncio.run(main())
"""


@check("tasks past the cap are not recorded but counted in X tasks_dropped; a file or a "
       "symlink already at aio-<pid>.txt is left alone and the program runs as usual")
def _():
    def one(label, minor, exe):
        p, prog, files = run(exe, CAPPED, "capped")
        r = one_file(p, files)
        assert len(r.tasks) == 4 and len(r.ends) == 4, (r.tasks, r.ends)
        # main, 10 steps and asyncio.run's own 1 or 2 tasks at its end
        dropped = r.counters().get("tasks_dropped")
        assert dropped in (8, 9), r.get("X")
        p, prog, out = run(exe, TAKEN, "taken", parse=False)
        assert (p.returncode, p.stdout, p.stderr) == (0, "done\n", ""), (p.stdout, p.stderr)
        names = os.listdir(out)
        assert len(names) == 1, names
        with open(os.path.join(out, names[0])) as f:
            assert f.read() == "not the agent's\n"
        p, prog, out = run(exe, TAKEN, "taken-link", parse=False, env_extra={"AS_LINK": "1"})
        assert (p.returncode, p.stdout, p.stderr) == (0, "done\n", ""), (p.stdout, p.stderr)
        names = os.listdir(out)
        assert len(names) == 1 and os.path.islink(os.path.join(out, names[0])), names
        assert not os.path.exists(os.path.join(out, "target")), "the symlink was followed"
    each_python(one)


def same(a, b):
    """The two runs exited the same and printed the same."""
    assert a.returncode == b.returncode, "exit %d with the agent, %d without; stderr %r" % (
        a.returncode, b.returncode, a.stderr[-800:])
    for what, x, y in (("stdout", a.stdout, b.stdout), ("stderr", a.stderr, b.stderr)):
        xs, ys = x.split("\n"), y.split("\n")
        for i in range(max(len(xs), len(ys))):
            if i >= len(xs) or i >= len(ys) or xs[i] != ys[i]:
                raise AssertionError(
                    "%s line %d differs: with the agent %r, without %r (with: %r)" % (
                        what, i + 1, xs[i] if i < len(xs) else None,
                        ys[i] if i < len(ys) else None, "\n".join(xs[max(0, i - 3):i + 3])))


BEHAVIOUR = {
    "raises": """
        import asyncio

        async def lost():
            raise KeyError("never retrieved")

        async def boom():
            raise ValueError("boom")

        async def main():
            t = asyncio.create_task(lost())
            await asyncio.sleep(0.01)
            print(t.get_name(), asyncio.iscoroutinefunction(asyncio.sleep))
            del t                               # logs "Task exception was never retrieved"
            await boom()

        asyncio.run(main())
    """,
    "bad-argument": """
        import asyncio

        async def main():
            asyncio.get_running_loop().create_task(42)

        asyncio.run(main())
    """,
    "timeout": """
        import asyncio

        async def sleeper():
            await asyncio.sleep(10)

        asyncio.run(asyncio.wait_for(sleeper(), 0.05))
    """,
    "cancelled": """
        import asyncio

        async def main():
            asyncio.current_task().cancel()
            await asyncio.sleep(1)

        asyncio.run(main())
    """,
    "interrupted": """
        import asyncio, signal

        async def main():
            await asyncio.sleep(0.01)
            signal.raise_signal(signal.SIGINT)
            await asyncio.sleep(5)

        asyncio.run(main())
    """,
    "exit-code": """
        import asyncio, sys

        async def main():
            await asyncio.sleep(0.001)
            sys.exit(3)

        asyncio.run(main())
    """,
    "threads": """
        import asyncio, threading

        results = {}

        async def work(i):
            await asyncio.sleep(0.01 * i)
            inner = asyncio.create_task(asyncio.sleep(0.001, result=i))
            return await inner * 2

        def runner(i):
            results[i] = asyncio.run(work(i))

        threads = [threading.Thread(target=runner, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(sorted(results.items()))
    """,
    "debug-mode": """
        import asyncio

        async def lost():
            raise KeyError("never retrieved")

        def made_deeper(n):
            if n:
                return made_deeper(n - 1)
            return asyncio.ensure_future(lost())

        async def main():
            t = asyncio.ensure_future(lost())
            u = asyncio.get_running_loop().create_task(lost())
            v = made_deeper(3)
            await asyncio.sleep(0.01)
            del t, u, v                         # logged with where each was created

        asyncio.run(main(), debug=True)
    """,
    "own-factory": """
        import asyncio

        async def step(i):
            await asyncio.sleep(0.001)
            return i

        async def main():
            loop = asyncio.get_running_loop()
            factory = getattr(asyncio, "eager_task_factory", None)   # 3.12+
            if factory is None:
                def factory(loop, coro, **kwargs):
                    return asyncio.Task(coro, loop=loop, **kwargs)
            loop.set_task_factory(factory)
            tasks = [asyncio.create_task(step(i)) for i in range(5)]
            print(sum(await asyncio.gather(*tasks)), loop.get_task_factory() is factory,
                  [t.get_name() for t in tasks][:2])

        asyncio.run(main())
    """,
    "lock-timeout": """
        import asyncio

        async def main():
            lock = asyncio.Lock()
            await lock.acquire()
            await asyncio.wait_for(lock.acquire(), 0.05)

        asyncio.run(main())
    """,
    "lost": """
        import asyncio, gc

        async def lost():
            raise KeyError("never retrieved")

        async def forever():
            await asyncio.get_running_loop().create_future()

        async def main():
            asyncio.ensure_future(lost())       # nobody holds it: logged as it goes
            t = asyncio.ensure_future(forever())
            await asyncio.sleep(0.01)
            del t
            gc.collect()                        # "Task was destroyed but it is pending!"
            await asyncio.sleep(0.01)
            print("done")

        asyncio.run(main())
    """,
}


@check("programs that raise, pass a bad argument, time out, are cancelled, interrupted, "
       "sys.exit, run asyncio.run in 4 threads, run in debug mode or with their own task "
       "factory, or lose tasks (a failed one nobody holds, a pending one collected) print "
       "the same and exit the same with the agent as without (tracebacks included), and "
       "their records are well formed; a lost task ends with its exception's name or "
       "destroyed")
def _():
    def one(label, minor, exe):
        for name, source in BEHAVIOUR.items():
            with_agent, prog, files = run(exe, source, name)
            without = run(exe, source, name + "-off", agent=False)[0]
            # The program's path differs between the two scratch directories.
            with_agent.stderr = normalise_dir(with_agent.stderr, name)
            without.stderr = normalise_dir(without.stderr, name + "-off")
            if name == "bad-argument" and minor < 11:
                # Before 3.11 a bare `raise` cannot take the wrapper's frame
                # out of the traceback: the same but for those two lines.
                with_agent.stderr = drop_agent_frames(with_agent.stderr)
            if name == "lock-timeout" and minor < 11:
                with_agent.stderr = drop_agent_frames(with_agent.stderr)
            if name == "lost":
                # A pending task's repr names its wakeup by address before
                # 3.12, and its coroutine as running or done as the garbage
                # collector happened to finalize them, with or without the
                # agent.
                for proc in (with_agent, without):
                    proc.stderr = re.sub("0x[0-9a-f]+", "0x?", proc.stderr)
                    proc.stderr = re.sub(r"coro=<(\w+)\(\) [^>]*>", r"coro=<\1()>",
                                         proc.stderr)
            try:
                same(with_agent, without)
            except AssertionError as e:
                raise AssertionError("%s: %s" % (name, e))
            assert len(files) == 1, "%s: %d files" % (name, len(files))
            if name == "own-factory":
                r = list(files.values())[0]
                steps = [tid for tid, t in r.tasks.items() if r.name(t[2])[0] == "step"]
                assert len(steps) == 5 and all(r.ends.get(t, (0, ""))[1] == "ok"
                                               for t in steps), (name, r.tasks, r.ends)
            if name == "lost":
                r = list(files.values())[0]
                ends = dict((r.name(t[2])[0], r.ends.get(tid, (0, ""))[1])
                            for tid, t in r.tasks.items())
                assert ends.get("lost") == "KeyError" and ends.get("forever") == "destroyed", \
                    (name, ends)
                assert "Task exception was never retrieved" in without.stderr, without.stderr
                assert "Task was destroyed but it is pending!" in without.stderr, without.stderr
            if name == "threads":
                r = list(files.values())[0]
                threads = set(t[3] for t in r.tasks.values())
                assert len(threads) == 4, "%s: T threads %s" % (name, threads)
                assert len(r.ends) == len(r.tasks), "%s: %d T, %d E" % (
                    name, len(r.tasks), len(r.ends))
    each_python(one)


def normalise_dir(text, tag):
    """The scratch directory's name in a traceback, made comparable."""
    out = []
    for line in text.split("\n"):
        at = line.find("/aio-" + tag + "-")
        while at >= 0:
            end = line.find("/prog.py", at)
            if end < 0:
                break
            line = line[:at] + "/DIR" + line[end:]
            at = line.find("/aio-" + tag + "-")
        out.append(line)
    return "\n".join(out)


def drop_agent_frames(text):
    """A traceback without the entries of the agent's own files."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i].startswith('  File "') and re.search(r'/_sonde_asyncio(_\w+)?\.py"', lines[i]):
            i += 1
            while i < len(lines) and lines[i].startswith("    "):
                i += 1
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def old_pythons():
    """The newest pyenv 2.7, 3.6 and 3.7, as (label, exe)."""
    found = []
    root = pyenv_root()
    for minor in ("2.7", "3.6", "3.7"):
        dirs = sorted(glob.glob(os.path.join(root, "versions", minor + ".*")),
                      key=lambda d: [int(x) if x.isdigit() else 0
                                     for x in os.path.basename(d).split(".")])
        exe = None
        for d in reversed(dirs):
            for name in ("python3", "python2", "python"):
                if os.access(os.path.join(d, "bin", name), os.X_OK):
                    exe = os.path.join(d, "bin", name)
                    break
            if exe:
                break
        if exe:
            found.append(("pyenv " + os.path.basename(os.path.dirname(os.path.dirname(exe))),
                          exe))
        else:
            print("      skip pyenv %s: not installed under %s/versions" % (minor, root))
    return found


OLD = """
    import sys
    m = sys.modules.get("sitecustomize")
    print(getattr(m, "USER_MARK", None))
    if sys.version_info >= (3, 6):
        import asyncio
        loop = asyncio.new_event_loop()
        loop.run_until_complete(asyncio.sleep(0.001))
        loop.close()
    print("ran")
"""


@check("Pythons older than 3.8 (2.7, 3.6, 3.7) start cleanly with the hook on PYTHONPATH, "
       "still run the user's sitecustomize, and record nothing")
def _():
    user = scratch("aio-oldsite")
    with open(os.path.join(user, "sitecustomize.py"), "w") as f:
        f.write("USER_MARK = 'user'\n")
    problems = []
    for label, exe in old_pythons():
        print("      skip recording on %s: the agent records on 3.8+ only" % label)
        p, prog, files = run(exe, OLD, "old", path_after=[user])
        if p.returncode != 0 or p.stderr or p.stdout.split() != ["user", "ran"] or files:
            problems.append("%s: exit %d, stdout %r, stderr %r, files %s" % (
                label, p.returncode, p.stdout, p.stderr[-500:], sorted(files)))
            print("      FAIL " + problems[-1])
        else:
            print("      ok   %s" % label)
    assert not problems, "; ".join(problems)


if __name__ == "__main__":
    if not PYTHONS:
        skip("no CPython 3.8-3.13 found (pyenv root %s, /usr/bin/python3.11): %s"
             % (pyenv_root(), "; ".join(MISSING)))
    for why in MISSING:
        print("skip: " + why)
    main()
