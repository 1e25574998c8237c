"""Names from the target never reach a terminal raw: on a Python whose function,
file and thread names carry terminal escapes (tests/workloads/py_hostile_names.py),
`sonde dump` and the summary of `sonde run` print them escaped (\\x1b) and
shortened, report.md and stacks.folded hold them escaped, and report.json keeps
them as they are. Runs the newest CPython found."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pprof_reader import read_pprof  # noqa: E402
from sonde_test import SONDE, check, cpythons, main, run_profile, skip, sonde  # noqa: E402

WORKLOAD = os.path.join(HERE, "..", "workloads", "py_hostile_names.py")
PYTHON = next((exe for _, _, exe, _ in reversed(cpythons()) if exe), None)
if not PYTHON:
    skip("no CPython 3.8-3.13 found (pyenv versions or /usr/bin/python3.11)")


def raw_controls(text):
    """Control characters other than the line feeds that end lines."""
    return [hex(ord(c)) for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) < 0xa0]


@check("sonde dump prints hostile function, file and thread names escaped, each line bounded")
def _():
    proc = subprocess.Popen([PYTHON, WORKLOAD, "30"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        out = subprocess.run([os.path.abspath(SONDE), "dump", str(proc.pid)], capture_output=True,
                             text=True, errors="replace", timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert out.returncode == 0, out.stderr
    assert not raw_controls(out.stdout + out.stderr), raw_controls(out.stdout + out.stderr)
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J\\x0d" in out.stdout, out.stdout[:2000]
    assert "/tmp/evil\\x1b[31m\\x0d\\x0afile.py" in out.stdout, out.stdout[:2000]
    assert "fake_frame" not in [ln.strip().split(" ")[0] for ln in out.stdout.splitlines()]
    longest = max(len(ln) for ln in out.stdout.splitlines())
    assert longest < 600, f"a line of {longest} characters"
    assert "long_xxx" in out.stdout and "\u2026" in out.stdout  # shortened, not dropped


@check("sonde run's summary, report.md and stacks.folded hold no raw control character; report.json, the pprof and speedscope exports keep the names")
def _():
    p, d, r = run_profile("hostile", [PYTHON, WORKLOAD, "2"], "--mode", "wall", expect_rc=0)
    assert not raw_controls(p.stderr), (raw_controls(p.stderr), p.stderr[-3000:])
    # stacks.folded writes ';' (its frame separator) as ':'.
    for name, shown in (("report.md", "evil\\x1b]0;pwned"), ("stacks.folded", "evil\\x1b]0:pwned")):
        with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
            text = f.read()
        assert not raw_controls(text), (name, raw_controls(text)[:10])
        assert shown in text, f"{name} does not show the escaped name"
    with open(os.path.join(d, "stacks.folded")) as f:
        for line in f:
            assert line.rstrip("\n").rsplit(" ", 1)[1].isdigit(), line[:200]
    names = json.dumps(r)
    assert "evil\\u001b]0;pwned\\u0007" in names, "report.json lost the raw name"
    funcs = [h["function"] for h in r["hotspots"]]
    assert any(f.startswith("evil\x1b]0;pwned\x07") for f in funcs), funcs[:10]
    assert max(len(f) for f in funcs) >= 1000, "the long name is not kept in report.json"
    # The exports hold names as data (protobuf strings, JSON strings): kept whole.
    for fmt in ("pprof", "speedscope"):
        out = os.path.join(d, "export-" + fmt)
        e = sonde("export", d, "-f", fmt, "-o", out)
        assert e.returncode == 0, (fmt, e.stderr)
        with open(out, "rb") as f:
            raw = f.read()
        if fmt == "pprof":
            funcs = [fn[0] for fn in read_pprof(raw)["functions"].values()]
        else:
            funcs = [fr["name"] for fr in json.loads(raw)["shared"]["frames"]]
        assert any(f.startswith("evil\x1b]0;pwned\x07") for f in funcs), (fmt, funcs[:10])
        assert max(len(f) for f in funcs) >= 1000, f"the long name is not kept in {fmt}"


if __name__ == "__main__":
    main()
