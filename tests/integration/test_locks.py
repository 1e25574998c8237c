"""Lock waits are findings (tests/workloads/py_lock_sleep.py: worker threads
look prices up through a cache that refreshes a stale entry while holding its
lock, calling a slow backend): the finding names the line that waits for the
lock, how long the threads waited, and where the holder was meanwhile (the
backend call, off the CPU: the lock is held across a wait), with Python advice
to make that call outside the `with lock:` block; the same service with the
refresh done outside the lock has no such finding. The same in C
(tests/workloads/lock_sleep.c: a pthread mutex held across the backend's
sleep): the holder is read from the other threads' off-CPU time. A consumer
waiting on an empty queue.SimpleQueue (tests/workloads/py_log_shipper.py) is
not a lock wait."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, main, run_profile, workload  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SERVICE = os.path.join(HERE, "..", "workloads", "py_lock_sleep.py")
SHIPPER = os.path.join(HERE, "..", "workloads", "py_log_shipper.py")


def lock_findings(r):
    found = [f for f in r["findings"] if f["id"] == "concurrency.lock_wait"]
    for f in r["findings"]:
        found += [f for a in f.get("also", []) if a["id"] == "concurrency.lock_wait"]
    return found


@check("a lock held across a slow call: one finding at the waiting line, the holder's call "
       "named, Python advice")
def _():
    p, d, r = run_profile("locks-held", [sys.executable, SERVICE, "3"])
    assert p.returncode == 0 and r, p.stderr[-600:]
    found = lock_findings(r)
    assert len(found) == 1, [(f["id"], f["title"]) for f in r["findings"]]
    f = found[0]
    assert "py_lock_sleep.py:PriceCache.get:" in f["location"], f["location"]
    assert "fetch_prices" in f["evidence"] and "off the CPU" in f["evidence"], f["evidence"]
    assert "held across a wait" in f["diagnosis"], f["diagnosis"]
    assert "with lock:" in f["next_step"] and "fetch_prices" in f["next_step"], f["next_step"]
    holder = r["locks"]["holder"]
    assert "fetch_prices" in holder["location"] and holder["off_cpu_pct"] > 50, holder
    waits = r["locks"]["waits"]
    assert waits[0]["threads"] >= 2 and waits[0]["seconds"] > 0.5, waits
    # The main thread joining the workers is not the run's wait.
    assert not [x for x in r["findings"] if "_wait_for_tstate_lock" in x["location"]
                or "Thread.join" in x["location"]], [x["location"] for x in r["findings"]]


@check("the same service with the slow call outside the lock has no lock finding")
def _():
    p, d, r = run_profile("locks-fixed", [sys.executable, SERVICE, "3", "--fixed"])
    assert p.returncode == 0 and r, p.stderr[-600:]
    assert not lock_findings(r), [(f["id"], f["title"]) for f in r["findings"]]


@check("a consumer thread waiting on an empty queue.SimpleQueue (its get sleeps in a lock "
       "acquire) has no lock finding: it waits for items, not for a holder")
def _():
    p, d, r = run_profile("locks-simplequeue", [sys.executable, SHIPPER, "3"])
    assert p.returncode == 0 and r, p.stderr[-600:]
    assert not lock_findings(r), [(f["id"], f["title"]) for f in r["findings"]]
    # Other short lock waits may be listed (an import's, at start-up); never the get.
    waits = (r.get("locks") or {}).get("waits") or []
    assert not [w for w in waits if "Shipper.run" in w["location"]], waits


@check("C: a pthread mutex held across a slow call is one finding at the waiting function, "
       "the holder's call named from the other threads' off-CPU time; fixed, none")
def _():
    p, d, r = run_profile("locks-c", [workload("lock_sleep"), "3"])
    assert p.returncode == 0 and r, p.stderr[-600:]
    found = lock_findings(r)
    assert len(found) == 1, [(f["id"], f["title"]) for f in r["findings"]]
    f = found[0]
    assert "lock_sleep.c:table_lookup" in f["location"], f["location"]
    assert "backend_fetch" in f["next_step"] and "pthread_mutex_lock" in f["next_step"], \
        f["next_step"]
    p, d, r = run_profile("locks-c-fixed", [workload("lock_sleep"), "3", "fixed"])
    assert p.returncode == 0 and r, p.stderr[-600:]
    assert not lock_findings(r), [(f["id"], f["title"]) for f in r["findings"]]


if __name__ == "__main__":
    main()
