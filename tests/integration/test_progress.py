"""The status line of `sonde run` on a terminal: on stderr, it shows the
elapsed time, the samples so far and the RSS, and is erased before each of
the command's lines and before sonde's own, so no line of either shares a
terminal line with it; with stderr not a terminal there is none of it."""
import errno
import os
import pty
import re
import subprocess

from sonde_test import SONDE, check, main, scratch, sonde, workload

ERASE = "\r\x1b[K"
SCRIPT = ("i=0; while [ $i -lt 40 ]; do j=0; while [ $j -lt 3000 ]; do j=$((j+1)); done; "
          "echo \"line $i\"; i=$((i+1)); done; " + workload("cpu_spin"))


def run_on_pty():
    d = os.path.join(scratch("progress"), "run")
    master, slave = pty.openpty()
    p = subprocess.Popen([os.path.abspath(SONDE), "run", "-o", d, "--", "sh", "-c", SCRIPT],
                         stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    raw = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError as e:
            if e.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        raw += chunk
    os.close(master)
    assert p.wait(timeout=300) == 0
    return raw.decode("utf-8", "replace")


RAW = run_on_pty()
# What stands on each terminal line once drawn: the text after its last erase.
LINES = [seg.rstrip("\r").rsplit(ERASE, 1)[-1] for seg in RAW.split("\n")]


@check("on a terminal the status line shows the elapsed time, the samples and the RSS")
def _():
    status = re.findall(r"sonde: \d+\.\d s, \d+ samples(?:, RSS [\d.]+ \w+)?", RAW)
    assert status, RAW[:500]
    assert (ERASE + status[0]) in RAW, RAW[:500]


@check("each of the command's lines and sonde's summary stand alone on their terminal line")
def _():
    for i in range(40):
        assert ("line %d" % i) in LINES, ("line %d" % i, [x for x in LINES if "line" in x][:5])
    mixed = [x for x in LINES if re.search(r"samples.*line \d|line \d+.*sonde: \d", x)]
    assert not mixed, mixed
    assert any(x.startswith("sonde: exit code 0 after ") for x in LINES), LINES[-20:]
    # Nothing of the status line is left at the end.
    assert not re.search(r"sonde: \d+\.\d s, \d+ samples", RAW.rsplit(ERASE, 1)[-1]), RAW[-300:]


@check("with stderr not a terminal there is no status line and no terminal control")
def _():
    d = os.path.join(scratch("progress-pipe"), "run")
    p = sonde("run", "-o", d, "--", "sh", "-c", SCRIPT)
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stderr and "\r" not in p.stderr, repr(p.stderr[:300])
    assert not re.search(r"sonde: \d+\.\d s, \d+ samples", p.stderr), p.stderr[:300]


main()
