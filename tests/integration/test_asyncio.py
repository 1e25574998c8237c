"""The asyncio patterns of a service written the usual way
(tests/workloads/py_async_pipeline.py: logging, argparse, a class per stage, a
fake client with a connection pool): with its patterns planted, sonde finds
each at the method that has it, with the numbers that were planted, from the
live run and from `sonde report DIR`; with them fixed, none of them. The
asyncio agent goes in through PYTHONPATH and leaves the program's own
sitecustomize working; --no-agent keeps it out. The patterns: an unbounded
gather whose tasks each hold a fresh connection's buffer, a long-tail call,
CPU work and a synchronous client on the loop thread, and a retry storm."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, cpython_exes, main, run_profile, scratch, skip, sonde  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PIPELINE = os.path.join(HERE, "..", "workloads", "py_async_pipeline.py")
PATTERNS = ("asyncio.unbounded_fanout", "asyncio.long_tail", "asyncio.retry_storm",
            "asyncio.loop_blocked", "asyncio.fanout_memory", "asyncio.pool_exhausted")

pythons, missing = cpython_exes()
pythons = [(label, exe) for label, exe in pythons if "pyenv" in label]
if not pythons:
    skip("no pyenv CPython 3.8-3.13: " + "; ".join(missing))
# The oldest and the newest: the agent's hooks differ most between them.
CHOSEN = [pythons[0], pythons[-1]] if len(pythons) > 1 else pythons
_runs = {}


def profile(label, exe, mode):
    key = (label, mode)
    if key not in _runs:
        name = "aio-%s-%s" % (mode, label.split()[-1])
        p, d, r = run_profile(name, [exe, PIPELINE, "--mode", mode])
        assert p.returncode == 0 and r, (p.returncode, p.stderr[-1500:])
        _runs[key] = (p, d, r)
    return _runs[key]


def found(r, pattern, where=""):
    """The finding of this pattern (or the one it was merged into) whose
    location has `where` in it, or None."""
    for f in r["findings"] + r.get("more_findings", []):
        if (f["id"] == pattern or any(a["id"] == pattern for a in f.get("also") or [])) \
                and where in f["location"]:
            return f
    return None


def titles(r):
    return [f["id"] + ": " + f["title"] for f in r["findings"] + r.get("more_findings", [])]


for label, exe in CHOSEN:
    @check(f"{label}: the planted unbounded gather is found at Fetcher.fetch_all")
    def _(label=label, exe=exe):
        r = profile(label, exe, "planted")[2]
        f = found(r, "asyncio.unbounded_fanout", "Fetcher.fetch_all")
        assert f, titles(r)
        assert "py_async_pipeline.py:Fetcher.fetch_all:" in f["location"], f["location"]
        site = [s for s in r["asyncio"]["sites"] if "Fetcher.fetch_all" in s["location"]]
        assert site and site[0]["tasks"] == 1200 and site[0]["peak_working"] >= 1000, site

    @check(f"{label}: the slow mirror is a long tail of SourceClient.fetch holding the fetch "
           "phase for up to 4 s")
    def _(label=label, exe=exe):
        r = profile(label, exe, "planted")[2]
        site = [s for s in r["asyncio"]["sites"] if "Fetcher.fetch_all" in s["location"]]
        if site and site[0]["p95_s"] >= 2.0:
            # Under make check beside busy loops the event loop got so little
            # CPU that the 1199 ordinary fetches took as long as the slow one.
            print(f"note: {label}: the ordinary fetches took {site[0]['p95_s']:.1f} s (p95) on "
                  "this busy machine, half the slow mirror's 4 s: no tail to tell; not checked")
            return
        f = found(r, "asyncio.long_tail")
        assert f, titles(r)
        assert "SourceClient.fetch:" in f["location"], f["location"]
        assert "the phase fetch" in f["title"], f["title"]
        # 4 s planted, less the time the 1199 others took to finish (longer
        # on a busy machine: a tenth of a second quiet, 2 s under make check).
        held = f["impact"].get("unscaled_seconds") or f["impact"]["seconds"]
        assert 1.0 <= held <= 4.1, f

    @check(f"{label}: the fixed-delay retries are a retry storm at Publisher._send_with_retry")
    def _(label=label, exe=exe):
        r = profile(label, exe, "planted")[2]
        f = found(r, "asyncio.retry_storm")
        assert f, titles(r)
        assert "Publisher._send_with_retry:" in f["location"], f["location"]
        assert "SinkUnavailable" in f["title"], f["title"]
        rt = [x for x in r["asyncio"]["retries"] if "_send_with_retry" in x["location"]]
        assert rt and rt[0]["retries"] == 600 and rt[0]["distinct_delays"] == 1, rt
        assert abs(rt[0]["delay_min_s"] - 0.1) < 0.002, rt

    @check(f"{label}: the scoring on the loop thread blocks the event loop, named at "
           "Enricher._score")
    def _(label=label, exe=exe):
        r = profile(label, exe, "planted")[2]
        f = found(r, "asyncio.loop_blocked", "_score")
        assert f, titles(r)
        assert "CPU work" in f["title"], f["title"]
        assert "run_in_executor" in f["next_step"], f["next_step"]

    @check(f"{label}: a fresh connection's receive buffer per fetch is memory that grows "
           "with the fan-out, named where the buffers are allocated")
    def _(label=label, exe=exe):
        r = profile(label, exe, "planted")[2]
        f = found(r, "asyncio.fanout_memory")
        assert f, titles(r)
        # Connection.__init__ (3.11+) or __init__ (the sampler before 3.11)
        # allocates them; without an RSS jump naming it (a short run whose
        # imports and fan-out share a reading), the fan-out at
        # Fetcher.fetch_all, one finding with its unbounded concurrency.
        assert "__init__" in f["location"] or "Fetcher.fetch_all" in f["location"], f["location"]
        title = f["title"] if f["id"] == "asyncio.fanout_memory" else [
            a["title"] for a in f["also"] if a["id"] == "asyncio.fanout_memory"][0]
        m = re.search(r"holds about (\d+) KiB: (\d+) at once", title)
        assert m and 48 <= int(m.group(1)) <= 160 and int(m.group(2)) >= 1000, title

    @check(f"{label}: the synchronous audit client on the loop thread is a blocking call "
           "named at AuditClient.record")
    def _(label=label, exe=exe):
        r = profile(label, exe, "planted")[2]
        # Before 3.11 the sampler names a method without its class.
        f = found(r, "asyncio.loop_blocked", "AuditClient.record") or \
            found(r, "asyncio.loop_blocked", "py_async_pipeline.py:record:")
        assert f, titles(r)
        assert "blocking call" in f["title"], f["title"]
        assert "asyncio.to_thread" in f["next_step"], f["next_step"]

    @check(f"{label}: 200 geocoder lookups gathered on a pool of 2 connections are pool "
           "exhaustion at Geocoder.locate_all, the fan-out, naming GeoClient.__init__ where "
           "the pool is sized, in the geocode phase")
    def _(label=label, exe=exe):
        r = profile(label, exe, "planted")[2]
        f = found(r, "asyncio.pool_exhausted", "Geocoder.locate_all")
        assert f, titles(r)
        assert "py_async_pipeline.py:Geocoder.locate_all:" in f["location"], f["location"]
        assert "pool of 2" in f["title"] and "geocode" in f["title"], f["title"]
        assert "Semaphore(2)" in f["evidence"] and "GeoClient.__init__" in f["evidence"], \
            f["evidence"]
        assert "p95" in f["evidence"] and "Semaphore(2)" in f["next_step"], f
        pools = [p for p in r["asyncio"]["pools"] if "GeoClient.__init__" in p["sized_at"]]
        assert pools and pools[0]["slots"] == 2 and pools[0]["peak_waiting"] >= 150, pools
        assert pools[0]["kind"] == "semaphore" and pools[0]["in_flight_max"] == 2, pools
        # 100 round trips of 20 ms in turn: about 2 s of the run (more on a busy
        # machine), never more than the geocode phase.
        geo = [ph for ph in r["phases"] if ph["name"] == "geocode"]
        assert geo, [ph["name"] for ph in r["phases"]]
        assert 1.0 <= f["impact"]["seconds"] <= geo[0]["duration_s"] + 0.05, \
            (f["impact"], geo[0]["duration_s"])
        # Eight planted patterns: the ranked list keeps 7, the rest stay in the model
        # and are named in report.md.
        more = r.get("more_findings", [])
        assert len(r["findings"]) <= 7 and (len(r["findings"]) == 7 or not more), titles(r)
        if more:
            with open(os.path.join(profile(label, exe, "planted")[1], "report.md")) as md:
                text = md.read()
            assert "Smaller findings" in text and "\n- 8. " in text, more[0]
            assert more[0]["rank"] == 8, more[0]
        # The fetch pool (32 slots, 32 workers over a queue in fixed mode) is no such queue,
        # and is not in planted mode either (the fetches bypass it).
        assert not [f for f in r["findings"] + r.get("more_findings", [])
                    if f["id"] == "asyncio.pool_exhausted" and "SourceClient" in f["evidence"]], \
            titles(r)

    @check(f"{label}: with the patterns fixed, none of them is found")
    def _(label=label, exe=exe):
        r = profile(label, exe, "fixed")[2]
        bad = [p for p in PATTERNS if found(r, p)]
        assert not bad, titles(r)
        assert r["asyncio"]["tasks"] > 200, r["asyncio"]["tasks"]  # 32 fetch workers, 200 sends


@check("sonde report DIR finds the same asyncio findings as the live run")
def _():
    label, exe = CHOSEN[-1]
    _, d, r = profile(label, exe, "planted")
    p = sonde("report", "-q", d)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(d, "report.json")) as f:
        again = json.load(f)
    live = sorted(f["id"] for f in r["findings"] if f["id"].startswith("asyncio."))
    rebuilt = sorted(f["id"] for f in again["findings"] if f["id"].startswith("asyncio."))
    assert live == rebuilt and live, (live, rebuilt)


@check("the program's own sitecustomize still runs under the agent, and --no-agent keeps "
       "the agent out")
def _():
    label, exe = CHOSEN[-1]
    mine = scratch("aio-sitecustomize")
    with open(os.path.join(mine, "sitecustomize.py"), "w") as f:
        f.write("import os\nos.environ['MINE_RAN'] = 'yes'\n")
    prog = ("import os, sys, asyncio\n"
            "async def main():\n    await asyncio.gather(*(asyncio.sleep(0.01) for _ in range(5)))\n"
            "asyncio.run(main())\n"
            "print('mine', os.environ.get('MINE_RAN'), sys.modules['sitecustomize'].__file__)\n")
    env_before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = mine
    try:
        p, d, r = run_profile("aio-own-site", [exe, "-c", prog])
        q, d2, r2 = run_profile("aio-no-agent", [exe, "-c", prog], "--no-agent")
    finally:
        if env_before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = env_before
    for proc in (p, q):
        assert proc.returncode == 0, proc.stderr[-800:]
        assert "mine yes " + os.path.join(mine, "sitecustomize.py") in proc.stdout, proc.stdout
    assert r["asyncio"]["tasks"] >= 5, r.get("asyncio")
    assert "asyncio" not in r2, r2.get("asyncio")


main()
