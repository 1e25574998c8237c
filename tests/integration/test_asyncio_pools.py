"""Connection-pool exhaustion with real HTTP clients: a price-refresh job
written the usual way (tests/workloads/py_price_service.py: logging, a client
class owning an aiohttp ClientSession or an httpx AsyncClient with a pool of
4, a service class that gathers 240 requests) against a local HTTP backend
that this test starts outside the profiled process. The asyncio agent times
each request that queues for a connection; sonde names the fan-out that
queued them, with the pool's limit, the tasks waiting at once, and the total
and p95 wait. With the pool sized and the fan-out bounded (--mode fixed),
there is no such finding. aiohttp and httpx come from Debian
(python3-aiohttp, python3-httpx), so the job runs on /usr/bin/python3.11;
a library that is missing is skipped with its reason."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, main, run_profile, skip, wait_for  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SERVICE = os.path.join(HERE, "..", "workloads", "py_price_service.py")
PYTHON = "/usr/bin/python3.11"
NAMES = {"aiohttp": "aiohttp connector (limit=4)", "httpx": "httpx pool (max_connections=4)"}

if not os.access(PYTHON, os.X_OK):
    skip(PYTHON + " is not installed (Debian's python3.11 carries python3-aiohttp and "
         "python3-httpx)")
clients = []
for lib in ("aiohttp", "httpx"):
    probe = subprocess.run([PYTHON, "-c", "import " + lib], capture_output=True, text=True)
    if probe.returncode == 0:
        clients.append(lib)
    else:
        print("skip %s: not importable by %s (apt-get install python3-%s)" % (lib, PYTHON, lib))
if not clients:
    skip("neither aiohttp nor httpx is importable by " + PYTHON)

_backend = {}
_runs = {}


def backend_url():
    """The backend, started once for every run of this test."""
    if "url" not in _backend:
        proc = subprocess.Popen([PYTHON, SERVICE, "--serve"], stdout=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True)
        _backend["proc"] = proc
        _backend["url"] = wait_for(lambda: proc.stdout.readline().strip(),
                                   "the backend's URL")
    return _backend["url"]


def profile(lib, mode):
    key = (lib, mode)
    if key not in _runs:
        p, d, r = run_profile("aio-pool-%s-%s" % (lib, mode),
                              [PYTHON, SERVICE, "--client", lib, "--mode", mode,
                               "--backend", backend_url()])
        assert p.returncode == 0 and r, (p.returncode, p.stderr[-1500:])
        _runs[key] = r
    return _runs[key]


def exhausted(r):
    return [f for f in r["findings"] + r.get("more_findings", [])
            if f["id"] == "asyncio.pool_exhausted"
            or any(a["id"] == "asyncio.pool_exhausted" for a in f.get("also") or [])]


for lib in clients:
    @check(f"{lib}: 240 requests gathered on a pool of 4 connections are pool exhaustion "
           "at PriceRefresher.refresh_all, with the pool's limit, the waiting tasks and "
           "the waits")
    def _(lib=lib):
        r = profile(lib, "planted")
        found = exhausted(r)
        assert found, [f["id"] + ": " + f["title"] for f in r["findings"]]
        f = found[0]
        assert "py_price_service.py:PriceRefresher.refresh_all:" in f["location"], f["location"]
        assert "pool of 4" in f["title"] and "refresh" in f["title"], f["title"]
        assert NAMES[lib] in f["evidence"], f["evidence"]
        assert "PriceClient.__init__" in f["evidence"] and "p95" in f["evidence"], f["evidence"]
        assert "Semaphore(4)" in f["next_step"], f["next_step"]
        pools = [p for p in r["asyncio"]["pools"] if p["kind"] == lib]
        assert pools, r["asyncio"]["pools"]
        p = pools[0]
        # 240 requests, 4 at a time: all but the first few queue, most at once.
        assert p["slots"] == 4 and p["in_flight_max"] == 4, p
        assert p["tasks_waiting"] >= 200 and p["peak_waiting"] >= 150, p
        assert "PriceRefresher.refresh_all" in p["fanout_at"], p
        assert 0 < p["p95_wait_s"] <= p["wait_s"], p
        # 60 rounds of a 30 ms round trip at the least; never more than the phase.
        refresh = [ph for ph in r["phases"] if ph["name"] == "refresh"]
        assert refresh, [ph["name"] for ph in r["phases"]]
        assert 1.0 <= p["waiting_span_s"] <= refresh[0]["duration_s"] + 0.05, \
            (p, refresh[0]["duration_s"])
        assert f["impact"]["seconds"] <= refresh[0]["duration_s"] + 0.05, f["impact"]

    @check(f"{lib}: with the pool sized to the concurrency wanted and the fan-out bounded "
           "by a Semaphore of its size, no pool is exhausted")
    def _(lib=lib):
        r = profile(lib, "fixed")
        assert not exhausted(r), [f["title"] for f in exhausted(r)]
        assert not [f for f in r["findings"] if f["id"] == "asyncio.unbounded_fanout"], \
            r["findings"]
        # The job's own Semaphore(32) is what its tasks waited on: a limit of its own.
        own = [p for p in r["asyncio"].get("pools", []) if p["kind"] == "semaphore"]
        assert all(p["own_limit"] for p in own), own


try:
    main()
finally:
    if "proc" in _backend:
        _backend["proc"].kill()
        _backend["proc"].wait()
