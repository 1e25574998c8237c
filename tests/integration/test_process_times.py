"""Process rows tell each process's life on the run's clock, from the kernel:
in a shell loop of short-lived commands no process ends before it starts,
and a child that sleeps 1 s lives at least 1 s (start from its /proc start
time, end from its exit record)."""
import os
import sqlite3

from sonde_test import check, main, run_profile


def rows(d):
    db = sqlite3.connect(os.path.join(d, "profile.db"))
    try:
        return db.execute("SELECT pid, start_ns, end_ns, command FROM processes").fetchall()
    finally:
        db.close()


@check("in a shell loop of short-lived commands no process ends before it starts")
def _():
    p, d, _ = run_profile("proc-times-loop", ["sh", "-c",
                          "for i in $(seq 40); do ls / >/dev/null; done"])
    assert p.returncode == 0, p.stderr
    r = rows(d)
    assert len(r) >= 2, r
    bad = [x for x in r if x[2] is not None and x[2] < x[1]]
    assert not bad, "%d of %d rows end before they start: %r" % (len(bad), len(r), bad[:5])
    assert all(x[1] >= 0 for x in r), r


@check("a child that sleeps 1 s lives at least 1 s in its row")
def _():
    p, d, _ = run_profile("proc-times-sleep", ["sh", "-c", "sleep 1; true"])
    assert p.returncode == 0, p.stderr
    sleeps = [x for x in rows(d) if x[3] and "sleep" in x[3] and not x[3].startswith("sh ")]
    assert sleeps, rows(d)
    for pid, start, end, cmd in sleeps:
        assert end is not None and end - start >= 990000000, (pid, start, end, cmd)


if __name__ == "__main__":
    main()
