"""A program that a wrapper (a pyenv shim, `sh -c 'exec ...'`, a shell script
that runs it as a child) exec'd or started is reported as itself: the report
names the Python program, says which wrapper started it, sums the wrapper's
own processes in one line, and no hotspot or finding is in the wrapper's shell.
The shim check is skipped, with the reason printed, when no pyenv shim exists.
Env: SONDE, SONDE_TEST_TMP."""
import os
import sys

from sonde_test import check, main, pyenv_root, run_profile, scratch

BURN = """
import time
def burn_in_python(seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += sum(i * i for i in range(200))
    return n
burn_in_python(1.5)
"""


def script(name):
    path = os.path.join(scratch(name), "burn.py")
    with open(path, "w") as f:
        f.write(BURN)
    return path


def shell_modules(report):
    """The hotspots and finding locations that are a shell's."""
    bad = []
    for h in report.get("hotspots") or []:
        mod = os.path.basename(h.get("module") or "")
        if mod in ("bash", "sh", "dash") or h.get("function") in ("make_child", "execute_command"):
            bad.append("hotspot %s in %s" % (h.get("function"), mod))
    for f in report.get("findings") or []:
        loc = f.get("location") or ""
        if "/shims/" in loc or loc.startswith(("bash", "sh:")):
            bad.append("finding %s at %s" % (f.get("title"), loc))
    return bad


def check_wrapped(report, prog_name, launcher_part):
    t = report["target"]
    prog = t.get("program")
    assert prog, "no target.program; target: %r" % {k: t[k] for k in ("command", "pids")}
    assert prog_name in prog["command"], prog
    assert launcher_part in prog["started_through"], prog
    assert prog["wrapper_processes"] >= 1, prog
    bad = shell_modules(report)
    assert not bad, bad
    return prog


@check("a Python started through a pyenv shim is reported as itself, the shim as its wrapper")
def _():
    shim = os.path.join(pyenv_root(), "shims", "python3")
    if not os.access(shim, os.X_OK):
        print("note: no pyenv shim at %s: the shim case is not tested" % shim)
        return
    prog = script("wrap-shim")
    p, d, report = run_profile("wrap-shim", [shim, prog])
    assert p.returncode == 0, p.stderr[-800:]
    got = check_wrapped(report, prog, shim)
    assert "python" in got["command"].split()[0], got
    with open(os.path.join(d, "report.md")) as f:
        title = f.readline()
    assert "started through" in title and shim in title, title


@check("a Python that `sh -c 'exec ...'` exec'd is the program, sh its wrapper")
def _():
    prog = script("wrap-exec")
    p, d, report = run_profile("wrap-exec",
                               ["sh", "-c", "true; exec %s %s" % (sys.executable, prog)])
    assert p.returncode == 0, p.stderr[-800:]
    got = check_wrapped(report, prog, "sh -c")
    assert got["pid"] == min(report["target"]["pids"]) or got["from_s"] > 0, got


@check("a Python that a shell script runs as a child (and waits for) is the program")
def _():
    prog = script("wrap-child")
    sh = os.path.join(os.path.dirname(prog), "run.sh")
    with open(sh, "w") as f:
        f.write("#!/bin/sh\n%s %s\necho done\n" % (sys.executable, prog))
    os.chmod(sh, 0o755)
    p, d, report = run_profile("wrap-child", [sh])
    assert p.returncode == 0, p.stderr[-800:]
    got = check_wrapped(report, prog, sh)
    leader = [x for x in report["processes"] if x.get("leader")]
    assert leader and got["pid"] != leader[0]["pid"], (got, leader)


@check("a Python that a subshell exec's a while after it was first seen is the program, "
       "named by its own command line")
def _():
    # The subshell is seen under the shell's name; its exec comes later than
    # the first readings, and the exit record's name then differs from the
    # one first seen although the command line was read again after the exec.
    prog = script("wrap-late")
    p, d, report = run_profile(
        "wrap-late", ["sh", "-c", "(sleep 0.5; exec %s %s); echo done" % (sys.executable, prog)])
    assert p.returncode == 0, p.stderr[-800:]
    got = check_wrapped(report, prog, "sh -c")
    mine = [x for x in report["processes"] if x["pid"] == got["pid"]]
    assert mine and prog in mine[0]["command"], (got, mine)


@check("a Python launched directly has no wrapper")
def _():
    prog = script("wrap-none")
    p, d, report = run_profile("wrap-none", [sys.executable, prog])
    assert p.returncode == 0, p.stderr[-800:]
    assert "program" not in report["target"], report["target"].get("program")


if __name__ == "__main__":
    main()
