#!/usr/bin/env python3
"""Golden outputs: `sonde report DIR` on each fixed recording in
tests/golden/CASE/recording.sql renders report.md and the terminal summary
exactly as tests/golden/CASE/report.md and terminal.txt say, after the
normaliser of tests/golden/golden.py (paths, pids, addresses, dates, the
version). No sampling happens here, so the views are the same on a loaded
machine. When a change to the views is meant, run tests/golden/update and
review its diff."""
import difflib
import os
import sys

import sonde_test as st

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden"))
import golden  # noqa: E402

SCRATCH = st.scratch("golden")
RENDERED = {}  # case: {view: text}


def same_as_expected(case, name):
    if case not in RENDERED:
        RENDERED[case] = golden.views_render(os.path.abspath(st.SONDE),
                                             os.path.join(SCRATCH, case), case)
    with open(os.path.join(golden.case_dir(case), name)) as f:
        want = f.read()
    got = RENDERED[case][name]
    if want != got:
        where = f"tests/golden/{case}/{name}"
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            where, f"rendered {name}"))
        print(diff, end="" if diff.endswith("\n") else "\n")
        raise AssertionError(f"{name} differs from {where} (diff above); if the change is "
                             f"meant, run tests/golden/update {case} and review its diff")


def case_checks(case):
    what = golden.CASES[case][0]
    st.check(f"{case} ({what}): report.md is as tests/golden/{case}/report.md says")(
        lambda: same_as_expected(case, "report.md"))
    st.check(f"{case}: the terminal summary is as tests/golden/{case}/terminal.txt says")(
        lambda: same_as_expected(case, "terminal.txt"))


for c in golden.CASES:
    case_checks(c)


@st.check("the normaliser replaces paths, pids, addresses, dates and the version")
def normaliser_replaces_what_varies():
    text = ("run /tmp/x/run/report.md pid 4242 tid 4243 at 0x7f12ab34cd00 on 2026-11-27 "
            "01:02:03 by sonde 0.1.0 from /usr/lib/python3.11/json/decoder.py:12 in 4242.5 s, "
            "pid 4242.")
    got = golden.normalise(text, "/tmp/x/run", [4243, 4242], "0.1.0")
    want = ("run <RUN>/report.md pid <PID> tid <PID> at <ADDR> on <DATE> <TIME> by sonde "
            "<VERSION> from <PATH>/decoder.py:12 in 4242.5 s, pid <PID>.")
    assert got == want, got


if __name__ == "__main__":
    st.main()
