"""A thread pool far larger than its work (tests/workloads/py_thumbnailer.py:
a thumbnail service whose hand-rolled pool of 32 workers takes requests from
a queue.Queue, one every 40 ms): concurrency.oversized_pool names the
workers' loop, with at most a few of them ever working at once, and takes in
the CPU that the idle threads' wake-ups cost (Condition.wait); the same
service with 2 workers, or with 16 kept busy by slow fetches, has no such
finding. A pool too small for tasks that wait (tests/workloads/py_price_sync.py:
2 workers sending requests that each wait 20 ms on a service) is
concurrency.undersized_pool where the tasks wait; with 32 workers it is not,
and its workers, waiting on their requests, are not idle threads either."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, cpython_exes, main, run_profile, skip  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SERVICE = os.path.join(HERE, "..", "workloads", "py_thumbnailer.py")
SYNC = os.path.join(HERE, "..", "workloads", "py_price_sync.py")

pythons, missing = cpython_exes()
pythons = [(label, exe) for label, exe in pythons if "pyenv" in label]
if not pythons:
    skip("no pyenv CPython 3.8-3.13: " + "; ".join(missing))
LABEL, EXE = pythons[-1]


def profile(name, *args, script=SERVICE):
    p, d, r = run_profile(name, [EXE, script, *args])
    assert p.returncode == 0 and r, (p.returncode, p.stderr[-1500:])
    return r


def pool_findings(r):
    """The oversized-pool findings, or those they were merged into."""
    return [f for f in r["findings"] if f["id"] == "concurrency.oversized_pool" or
            any(a["id"] == "concurrency.oversized_pool" for a in f.get("also") or [])]


@check(f"{LABEL}: 32 workers for one request at a time are an oversized pool, named at the "
       "workers' loop")
def _():
    r = profile("pool-32")
    f = pool_findings(r)
    assert f, [x["title"] for x in r["findings"]]
    assert "_work" in f[0]["location"], f[0]["location"]
    assert "A pool of 32 threads" in f[0]["title"], f[0]["title"]
    pool = [p for p in r["thread_pools"] if p["threads"] == 32]
    assert pool and pool[0]["peak_working"] <= 8, r["thread_pools"]
    assert "Start about" in f[0]["next_step"], f[0]["next_step"]


@check(f"{LABEL}: the same service with 2 workers has no oversized pool")
def _():
    r = profile("pool-2", "--workers", "2")
    assert not pool_findings(r), [x["title"] for x in r["findings"]]


@check(f"{LABEL}: 16 workers kept busy by slow fetches are not an oversized pool")
def _():
    r = profile("pool-16", "--workers", "16", "--every-ms", "5", "--fetch-ms", "60")
    assert not pool_findings(r), [x["title"] for x in r["findings"]]
    pool = [p for p in r["thread_pools"] if p["threads"] == 16]
    assert pool and pool[0]["peak_working"] > 4, r["thread_pools"]



def undersized(r):
    """The undersized-pool findings, or those they were merged into."""
    return [f for f in r["findings"] if f["id"] == "concurrency.undersized_pool" or
            any(a["id"] == "concurrency.undersized_pool" for a in f.get("also") or [])]


@check(f"{LABEL}: 2 workers for requests that each wait 20 ms on a service are an undersized "
       "pool, named where the tasks wait, advising more workers; 32 workers are not")
def _():
    r = profile("pool-sync-2", script=SYNC)
    f = undersized(r)
    assert f, [(x["id"], x["title"]) for x in r["findings"]]
    assert "py_price_sync.py:PricingClient.get_price" in f[0]["location"], f[0]["location"]
    assert "pool of 2" in f[0]["title"] and "max_workers" in f[0]["next_step"], f[0]
    r = profile("pool-sync-32", "--fixed", script=SYNC)
    assert not undersized(r), [(x["id"], x["title"]) for x in r["findings"]]
    # Its workers wait on their requests, not for work: not idle threads.
    assert not [x for x in r["findings"] if x["id"] == "concurrency.idle_thread"], \
        [(x["id"], x["title"], x["location"]) for x in r["findings"]]


main()
