"""`sonde run --repeat N`: one family of runs, DIR/1 ... DIR/N and
DIR/repeat.json; `sonde compare` of two families tests each change across
the runs: removing hot_a (tests/workloads/cpu_variant) is significant and
named first, and two families of the same program that differ by noise say
no significant difference."""
import json
import os
import shutil

from sonde_test import check, db, main, scratch, skip, sonde, workload

RUNS = 6


def family(name, variant):
    d = os.path.join(scratch(name), "runs")
    p = sonde("run", "-q", "--repeat", str(RUNS), "-r", "499", "-o", d, "--",
              workload("cpu_variant"), variant, "100", timeout=600)
    assert p.returncode == 0, (p.returncode, p.stderr)
    return d


SLOW = family("repeat-slow", "slow")
con = db(os.path.join(SLOW, "1"))
status = con.execute("SELECT status, reason FROM probes WHERE name = 'cpu'").fetchone()
con.close()
if not status or status[0] != "on":
    skip("the cpu probe is off here: %s" % (status[1] if status else "not recorded"))
FAST = family("repeat-fast", "fast")


@check("--repeat 6 makes DIR/1 ... DIR/6, each a run, and repeat.json describing them")
def _():
    with open(os.path.join(SLOW, "repeat.json")) as f:
        fam = json.load(f)
    assert fam["runs"] == RUNS and fam["requested"] == RUNS, fam
    assert fam["dirs"] == [str(k) for k in range(1, RUNS + 1)], fam
    assert fam["exit_codes"] == [0] * RUNS, fam
    assert len(fam["wall_s"]) == RUNS and all(w > 0 for w in fam["wall_s"]), fam
    assert fam["wall"]["min"] <= fam["wall"]["median"] <= fam["wall"]["max"], fam
    for k in range(1, RUNS + 1):
        with open(os.path.join(SLOW, str(k), "report.json")) as f:
            r = json.load(f)
        assert r["target"]["exit_code"] == 0 and "hygiene" in r, k
    assert not os.path.exists(os.path.join(SLOW, "profile.db"))


@check("compare of two families names the removed hot function first, as significant")
def _():
    out = os.path.join(scratch("repeat-cmp"), "cmp")
    p = sonde("compare", "-o", out, SLOW, FAST)
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert "(%d runs, " % RUNS in p.stderr.splitlines()[0], p.stderr
    most = [line for line in p.stderr.splitlines() if line.startswith("what changed most:")]
    assert most and most[0].startswith("what changed most: hot_a shrank"), p.stderr
    assert "; significant: B/A " in most[0], p.stderr
    with open(os.path.join(out, "compare.md")) as f:
        md = f.read()
    row = next(line for line in md.splitlines() if line.startswith("| hot_a |"))
    assert row.endswith("| significant: B/A " + row.split("significant: B/A ")[1]), row


@check("compare of two families of the same program that differ by noise says no significant "
       "difference")
def _():
    # Four of the same recordings and the first again: the runs differ only as
    # one run of the same program differs from another.
    again = os.path.join(scratch("repeat-again"), "runs")
    os.makedirs(again)
    for k in range(1, RUNS + 1):
        shutil.copytree(os.path.join(SLOW, str(k if k < RUNS else 1)), os.path.join(again, str(k)))
    p = sonde("compare", "-o", os.path.join(scratch("repeat-same"), "cmp"), SLOW, again)
    assert p.returncode == 0, (p.returncode, p.stderr)
    most = [line for line in p.stderr.splitlines() if line.startswith("what changed most:")]
    assert most and most[0].startswith(
        "what changed most: no significant difference across %d and %d runs" % (RUNS, RUNS)), p.stderr


@check("--repeat keeps the command's exit status and records each run's")
def _():
    d = os.path.join(scratch("repeat-exit"), "runs")
    p = sonde("run", "-q", "--repeat", "2", "-o", d, "--", "sh", "-c", "exit 3")
    assert p.returncode == 3, (p.returncode, p.stderr)
    with open(os.path.join(d, "repeat.json")) as f:
        fam = json.load(f)
    assert fam["exit_codes"] == [3, 3] and fam["runs"] == 2, fam


@check("--repeat 0, --repeat x and attach --repeat are usage errors of one line")
def _():
    for args in (["run", "--repeat", "0", "--", "true"], ["run", "--repeat", "x", "--", "true"],
                 ["attach", "--repeat", "2", "-p", "1"]):
        p = sonde(*args)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        assert len(p.stderr.splitlines()) == 1 and "--repeat" in p.stderr, (args, p.stderr)


if __name__ == "__main__":
    main()
