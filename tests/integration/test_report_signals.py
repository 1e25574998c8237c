"""Signals while sonde writes the report: one more Ctrl-C (or SIGTERM) is
ignored and the report is complete; the next aborts, saying that
`sonde report DIR` recovers it, and that command does."""
import json
import os
import signal
import subprocess
import sys
import time

from sonde_test import SONDE, check, main, scratch, sonde

# Enough output that writing output.log takes a moment even on a fast machine.
LINES = 400000
TARGET = "import sys\nw = sys.stdout.write\nfor i in range(%d):\n    w('line %%d\\n' %% i)\n" % LINES


def start(name):
    d = os.path.join(scratch(name), "run")
    p = subprocess.Popen([os.path.abspath(SONDE), "run", "-q", "-o", d, "--", sys.executable,
                          "-c", TARGET], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    return p, d


def wait_for_report_phase(p, d, deadline_s=240):
    """Returns once a renderer's temporary (or output.log) is in d: the session is
    over and the report is being written. False if sonde ended first."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and p.poll() is None:
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            names = []
        if any(n.startswith(".output.log") or n == "output.log" for n in names):
            return True
        time.sleep(0.002)
    return False


def complete_report(d):
    try:
        with open(os.path.join(d, "report.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def signals_during_report(name, *sigs):
    """Runs the target under sonde, sends sigs (20 ms apart) once the report is
    being written; returns (sonde's exit code, its stderr, the run directory)."""
    p, d = start(name)
    try:
        assert wait_for_report_phase(p, d), "sonde ended before the report phase was seen"
        for i, sig in enumerate(sigs):
            if i:
                time.sleep(0.02)
            p.send_signal(sig)
        _, err = p.communicate(timeout=240)
    finally:
        if p.poll() is None:
            p.kill()
    return p.returncode, err, d


@check("a signal while the report is written is ignored: sonde says so and the report is "
       "complete")
def _():
    rc, err, d = signals_during_report("sig-once", signal.SIGINT)
    assert rc == 0, (rc, err)
    assert "one more signal aborts" in err, err
    r = complete_report(d)
    assert r and r["target"]["exit_code"] == 0, r and r.get("target")


@check("a second signal while the report is written aborts, naming `sonde report DIR`, which "
       "then writes the report")
def _():
    rc, err, d = signals_during_report("sig-twice", signal.SIGTERM, signal.SIGTERM)
    if rc == 0:
        # Both signals landed after the last file was written: nothing to check.
        print("note: the report was done before the second signal landed")
        return
    assert rc == 128 + signal.SIGTERM, (rc, err)
    assert "sonde report %s" % d in err, err
    q = sonde("report", "-q", d, timeout=240)
    assert q.returncode == 0, q.stderr
    left = [n for n in os.listdir(d) if n.startswith(".")]
    assert not left, "temporaries of the aborted report are still there: %s" % left
    r = complete_report(d)
    assert r and r["target"]["exit_code"] == 0, r and r.get("target")


main()
