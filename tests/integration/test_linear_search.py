"""A search in a loop (tests/workloads/py_dedupe.py, a contact-list cleaner
that keeps the first row of each e-mail address): in planted mode the
addresses seen are kept in a list, so `email not in self.seen` scans it for
every row; the report's first finding is cpu.linear_search at that line of
Deduper.unique, advising a set. In fixed mode (a set) there is no such
finding. On the oldest and newest pyenv CPython (the scan is CPython's
list_contains, named from libpython's symbols)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, line_of, main, pyenv_oldest_newest, run_profile, skip  # noqa: E402,E501

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "..", "workloads", "py_dedupe.py")
ROWS = "20000"

TRIED, _ = pyenv_oldest_newest()


def findings(label, exe, mode):
    p, _, r = run_profile("dedupe-%s-%s" % (label.replace(" ", "_"), mode),
                          [exe, JOB, ROWS, mode])
    assert p.returncode == 0 and r, p.stderr[-600:]
    return r["findings"]


@check("a list searched for every row is the first finding, cpu.linear_search at the search's "
       "line of Deduper.unique, advising a set; with a set there is none")
def _():
    if not TRIED:
        skip("no pyenv CPython here")
    want = "py_dedupe.py:Deduper.unique:%d" % line_of(JOB, "if email not in self.seen:")
    for label, exe in TRIED:
        fs = findings(label, exe, "planted")
        assert fs and fs[0]["id"] == "cpu.linear_search", (label, [(f["id"], f["location"])
                                                                    for f in fs])
        assert fs[0]["location"].endswith(want), (label, fs[0]["location"], want)
        assert "set" in fs[0]["next_step"] and "list_contains" in fs[0]["next_step"], \
            fs[0]["next_step"]
        fixed = findings(label, exe, "fixed")
        assert not [f for f in fixed if f["id"] == "cpu.linear_search"], \
            (label, [(f["id"], f["location"]) for f in fixed])


main()
