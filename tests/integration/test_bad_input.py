"""Bad input gets one clear line on stderr and a non-zero exit, never a crash."""
import os

from sonde_test import check, main, scratch, sonde


def one_line_error(p, *words):
    assert p.returncode != 0, "exit code 0 on bad input"
    assert p.returncode < 126, f"exit code {p.returncode} looks like a crash"
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got: {p.stderr!r}"
    assert lines[0].startswith("sonde: "), lines[0]
    for w in words:
        assert w in lines[0], f"{w!r} not in {lines[0]!r}"


@check("no command is a one-line error")
def _():
    one_line_error(sonde("run"), "no command")
    one_line_error(sonde("run", "--"), "no command")


@check("an unknown option is a one-line error naming it")
def _():
    one_line_error(sonde("run", "--frobnicate", "--", "true"), "--frobnicate")
    one_line_error(sonde("run", "-Z", "--", "true"), "-Z")


@check("an unknown subcommand is a one-line error")
def _():
    one_line_error(sonde("runn"), "runn")


@check("an unknown probe in --probes is a one-line error naming the nearest probe, and nothing runs")
def _():
    d = os.path.join(scratch("probes"), "run")
    p = sonde("run", "-q", "-o", d, "--probes", "proc,cpuu", "--", "true")
    one_line_error(p, "'cpuu'", "did you mean 'cpu'")
    assert not os.path.exists(os.path.join(d, "profile.db")), "a run was recorded"
    one_line_error(sonde("run", "--probes", "pyhton", "--", "true"), "did you mean 'python'")
    one_line_error(sonde("run", "--probes", "zzzzzz", "--", "true"), "'zzzzzz'", "proc")
    for empty in ("", "cpu,", ",cpu", "cpu,,proc"):
        one_line_error(sonde("run", "--probes", empty, "--", "true"), "empty")
    assert sonde("run", "-q", "-o", d, "--probes", "proc,cpu", "--", "true").returncode == 0


@check("an unknown option, subcommand or missing value names the nearest valid one")
def _():
    one_line_error(sonde("run", "--qiet", "--", "true"), "--qiet", "did you mean --quiet")
    one_line_error(sonde("run", "--probe-s", "cpu", "--", "true"), "did you mean --probes")
    one_line_error(sonde("report", "--qiet", "x"), "did you mean --quiet")
    one_line_error(sonde("dump", "--wiat", "1", "1"), "did you mean --wait")
    one_line_error(sonde("runn"), "did you mean 'run'")
    one_line_error(sonde("run", "--grace"), "--grace", "needs a value")
    one_line_error(sonde("dump", "-w"), "-w", "needs a value")


@check("-d that is not a number is a one-line error")
def _():
    for bad in ("abc", "-1", "0", "1x", "", "nan"):
        one_line_error(sonde("run", "-d", bad, "--", "true"), "-d")


@check("-o naming an existing file is refused")
def _():
    f = os.path.join(scratch("ofile"), "afile")
    open(f, "w").close()
    one_line_error(sonde("run", "-o", f, "--", "true"), "not a directory")


@check("-o under a path that cannot be created is refused")
def _():
    one_line_error(sonde("run", "-o", "/proc/sonde-cannot-be-here/x", "--", "true"), "/proc")


@check("an existing run directory is not overwritten without --force")
def _():
    d = os.path.join(scratch("again"), "run")
    assert sonde("run", "-q", "-o", d, "--", "true").returncode == 0
    before = os.path.getmtime(os.path.join(d, "report.json"))
    one_line_error(sonde("run", "-q", "-o", d, "--", "true"), "--force")
    assert os.path.getmtime(os.path.join(d, "report.json")) == before
    p = sonde("run", "-q", "--force", "-o", d, "--", "true")
    assert p.returncode == 0, p.stderr


@check("--force leaves files that are not sonde's alone")
def _():
    d = os.path.join(scratch("mine"), "run")
    os.makedirs(d)
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("mine")
    assert sonde("run", "-q", "--force", "-o", d, "--", "true").returncode == 0
    with open(os.path.join(d, "notes.txt")) as f:
        assert f.read() == "mine"


@check("a directory that is not executable as a command is a one-line error (126)")
def _():
    p = sonde("run", "-q", "-o", os.path.join(scratch("dir"), "r"), "--", "/tmp")
    assert p.returncode == 126, p.returncode
    assert len(p.stderr.strip().splitlines()) == 1


@check("sonde report on a directory without a recording is a one-line error")
def _():
    one_line_error(sonde("report", scratch("empty")), "profile.db")
    one_line_error(sonde("report"), "report")


@check("sonde report on a file that is not a sonde recording is a one-line error")
def _():
    d = scratch("garbage")
    with open(os.path.join(d, "profile.db"), "wb") as f:
        f.write(b"\x00garbage" * 100)
    one_line_error(sonde("report", d))


@check("--help explains the options and exits 0")
def _():
    p = sonde("run", "--help")
    assert p.returncode == 0
    for opt in ("-o", "-d", "--quiet", "--force", "--interval"):
        assert opt in p.stdout, opt
    assert sonde("--help").returncode == 0
    assert "sonde" in sonde("--version").stdout


if __name__ == "__main__":
    main()
