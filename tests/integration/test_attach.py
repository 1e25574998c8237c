"""sonde attach: follow a running process, leave it unharmed."""
import json
import os
import signal
import subprocess
import time

from sonde_test import check, main, scratch, sonde, workload


def load(d):
    with open(os.path.join(d, "report.json")) as f:
        return json.load(f)


@check("attach with -d detaches and the process keeps running, then finishes normally")
def _():
    target = subprocess.Popen([workload("cpu_spin"), "2.5"])
    try:
        time.sleep(0.2)
        d = os.path.join(scratch("attach-d"), "run")
        p = sonde("attach", "-q", "-d", "0.8", "-o", d, str(target.pid))
        assert p.returncode == 0, p.stderr
        assert target.poll() is None, "the target did not survive the detach"
        r = load(d)
        t = r["target"]
        assert t["attached"] and not t["target_exited"] and t["stopped_by_duration"], t
        assert 0.6 <= t["wall_s"] <= 2.0, t
        # counted from the attach, not from the process start
        assert r["cpu"]["user_s"] <= t["wall_s"] + 0.05, r["cpu"]
        assert r["cpu"]["user_s"] > 0.1, r["cpu"]
    finally:
        assert target.wait(timeout=10) == 0, "the target did not finish normally"


@check("attach ends when the process exits")
def _():
    target = subprocess.Popen(["sleep", "1"])
    d = os.path.join(scratch("attach-exit"), "run")
    t0 = time.monotonic()
    p = sonde("attach", "-q", "-o", d, "--pid", str(target.pid))
    assert p.returncode == 0, p.stderr
    assert time.monotonic() - t0 < 3
    target.wait()
    assert load(d)["target"]["target_exited"] is True


@check("Ctrl-C detaches without signalling the process")
def _():
    target = subprocess.Popen(["sleep", "5"])
    d = os.path.join(scratch("attach-int"), "run")
    p = subprocess.Popen([os.path.abspath(os.environ.get("SONDE", "build/sonde")), "attach",
                          "-q", "-o", d, str(target.pid)])
    time.sleep(0.6)
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=10) == 0
    assert target.poll() is None, "SIGINT reached the attached process"
    target.kill()
    target.wait()
    assert load(d)["target"]["interrupted"] is True


@check("attach to a process that does not exist is a one-line error")
def _():
    p = sonde("attach", "-o", os.path.join(scratch("attach-none"), "run"), "4000000")
    assert p.returncode == 2, p.returncode
    assert len(p.stderr.strip().splitlines()) == 1 and "4000000" in p.stderr, p.stderr
    p = sonde("attach", "notapid")
    assert p.returncode == 2 and "not a process id" in p.stderr, p.stderr


if __name__ == "__main__":
    main()
