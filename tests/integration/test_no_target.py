"""With nothing to profile, sonde says what it can profile."""
from sonde_test import check, main, sonde

EXAMPLES = ("sonde run -- python3 train.py", "sonde attach 4242", "sonde attach gunicorn",
            "sonde report profile_output/latest", "sonde run -- ./server")


@check("sonde without arguments fails and shows one example per kind of target")
def _():
    p = sonde()
    assert p.returncode != 0, p.returncode
    for e in EXAMPLES:
        assert e in p.stderr, "%r missing from:\n%s" % (e, p.stderr)


@check("run -- nosuchprog says the command was not found, shows the examples and exits 127")
def _():
    p = sonde("run", "--", "sonde-no-such-program")
    assert p.returncode == 127, (p.returncode, p.stderr)
    first = p.stderr.splitlines()[0]
    assert first == "sonde: sonde-no-such-program: command not found; nothing was profiled", first
    for e in EXAMPLES:
        assert e in p.stderr, "%r missing from:\n%s" % (e, p.stderr)


if __name__ == "__main__":
    main()
