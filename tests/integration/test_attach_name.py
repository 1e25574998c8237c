"""sonde attach NAME: a process found by its name or its command line."""
import contextlib
import json
import os
import secrets
import subprocess
import sys

from sonde_test import check, main, scratch, sonde

# Eleven characters: a whole comm (the kernel keeps 15).
TAG = "sdn" + secrets.token_hex(4)
SLEEPER = "import time; print('ready', flush=True); time.sleep(600)"


@contextlib.contextmanager
def sleepers(*suffixes):
    """One Python per suffix, started through a link named TAG (so its comm is
    TAG) with the argument TAG-suffix; each is waited for (it said 'ready'),
    and killed when the check ends."""
    d = scratch("attach-name")
    exe = os.path.join(d, TAG)
    os.symlink(os.path.realpath(sys.executable), exe)
    procs = []
    try:
        for s in suffixes:
            p = subprocess.Popen([exe, "-c", SLEEPER, "%s-%s" % (TAG, s)],
                                 stdout=subprocess.PIPE, text=True)
            procs.append(p)
            assert p.stdout.readline().strip() == "ready", "the sleeper did not start"
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=60)


@check("attach by a part of one command line follows that process and leaves it running")
def _():
    with sleepers("one", "two") as (one, two):
        d = os.path.join(scratch("attach-name-one"), "run")
        p = sonde("attach", "-q", "-d", "0.5", "-o", d, TAG + "-one", timeout=300)
        assert p.returncode == 0, p.stderr
        with open(os.path.join(d, "report.json")) as f:
            t = json.load(f)["target"]
        assert one.pid in t["pids"] and two.pid not in t["pids"], (one.pid, t["pids"])
        assert one.poll() is None, "the attached process did not survive"


@check("a name two processes share is refused without a terminal, listing both PIDs")
def _():
    with sleepers("one", "two") as (one, two):
        p = sonde("attach", "-q", "-d", "0.5", "-o",
                  os.path.join(scratch("attach-name-two"), "run"), TAG, timeout=300)
        assert p.returncode == 2, (p.returncode, p.stderr)
        err = p.stderr.strip()
        assert err.count("\n") == 0, "not one line: %r" % err
        assert "2 processes match '%s'" % TAG in err and "give a PID" in err, err
        assert str(one.pid) in err and str(two.pid) in err, err


@check("a name nothing matches is a clear error, and sonde never matches itself")
def _():
    # sonde's own command line holds the name: it must not count.
    p = sonde("attach", "-d", "0.5", TAG + "-nobody", timeout=300)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "no process matches '%s-nobody'" % TAG in p.stderr, p.stderr


if __name__ == "__main__":
    main()
