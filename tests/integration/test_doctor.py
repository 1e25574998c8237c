"""sonde doctor: what sonde can do on this machine, one fact a line, as text
and as JSON, and usage errors as one line."""
import json
import os
import re

import subprocess

from sonde_test import SONDE, check, main, sonde, workload


def paranoid():
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        return f.read().strip()


@check("doctor exits 0 and starts every line with ok, limited, no or a fix")
def _():
    p = sonde("doctor")
    assert p.returncode == 0, (p.returncode, p.stderr)
    lines = p.stdout.splitlines()
    assert len(lines) > 10, p.stdout
    for line in lines:
        assert re.match(r"(ok|limited|no) +\S|        fix: \S", line), line


@check("doctor prints the kernel release os.uname() gives")
def _():
    p = sonde("doctor")
    assert "kernel %s " % os.uname().release in p.stdout, p.stdout


@check("doctor prints the perf_event_paranoid value /proc/sys/kernel holds")
def _():
    p = sonde("doctor")
    assert "kernel.perf_event_paranoid = %s:" % paranoid() in p.stdout, p.stdout


@check("every Python version doctor lists is an executable of that version")
def _():
    p = sonde("doctor")
    found = re.findall(r"^\S+ +Python (3\.\d+) at (\S+?)(?::|$)", p.stdout, re.M)
    for version, path in found:
        assert os.access(path, os.X_OK), path
        assert os.path.basename(path) == "python" + version, (version, path)


@check("doctor --json parses and holds the same kernel, paranoid level and Pythons")
def _():
    text = sonde("doctor").stdout
    p = sonde("doctor", "--json")
    assert p.returncode == 0, (p.returncode, p.stderr)
    facts = json.loads(p.stdout)["facts"]
    by_key = {}
    for f in facts:
        assert f["status"] in ("ok", "limited", "no"), f
        assert set(f) == {"key", "status", "value", "fact", "fix"}, f
        by_key.setdefault(f["key"], []).append(f)
    assert by_key["kernel"][0]["value"] == os.uname().release, by_key["kernel"]
    assert by_key["perf_event_paranoid"][0]["value"] == paranoid(), by_key["perf_event_paranoid"]
    # Readings that move between the two runs (load, free memory, steal) are not compared.
    for f in facts:
        assert f["key"] in ("load", "memory", "steal") or f["fact"] in text, f
    pythons = [f["value"] for f in by_key.get("python", []) if f["value"]]
    for path in pythons:
        assert os.access(path, os.X_OK), path


@check("doctor with a bad option prints one line and exits 2")
def _():
    p = sonde("doctor", "--no-such-option")
    assert p.returncode == 2, p.returncode
    assert p.stdout == "", p.stdout
    assert len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith("sonde: "), p.stderr


@check("doctor with an operand prints one line and exits 2")
def _():
    p = sonde("doctor", "extra")
    assert p.returncode == 2, p.returncode
    assert len(p.stderr.splitlines()) == 1, p.stderr


if os.path.exists(workload("deny_perf")):
    @check("under a seccomp filter refusing perf_event_open, doctor says no, seccomp, and a fix")
    def _():
        p = subprocess.run([workload("deny_perf"), "ENOSYS", os.path.abspath(SONDE), "doctor"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        assert p.returncode == 0, (p.returncode, p.stderr)
        lines = p.stdout.splitlines()
        at = [i for i, l in enumerate(lines) if "cpu-clock sampling per task" in l]
        assert at and lines[at[0]].startswith("no "), p.stdout
        assert "seccomp" in lines[at[0] + 1] and "fix:" in lines[at[0] + 1], p.stdout
        assert re.search(r"^limited +seccomp: filter", p.stdout, re.M), p.stdout


if __name__ == "__main__":
    main()
