#!/usr/bin/env python3
"""Golden outputs: `sonde report DIR` on the fixed recording in
tests/golden/recording.sql renders report.md and the terminal summary exactly
as tests/golden/report.md and terminal.txt say, after the normaliser of
tests/golden/golden.py (paths, pids, addresses, dates, the version). No
sampling happens here, so the views are the same on a loaded machine. When a
change to the views is meant, run tests/golden/update and review its diff."""
import difflib
import os
import sys

import sonde_test as st

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden"))
import golden  # noqa: E402

RUN = os.path.join(st.scratch("golden"), "run")
VIEWS = {}


def expected(name):
    with open(os.path.join(golden.HERE, name)) as f:
        return f.read()


def same_as_expected(name):
    if not VIEWS:
        VIEWS.update(golden.views_render(os.path.abspath(st.SONDE), RUN))
    want, got = expected(name), VIEWS[name]
    if want != got:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            f"tests/golden/{name}", f"rendered {name}"))
        print(diff, end="" if diff.endswith("\n") else "\n")
        raise AssertionError(f"{name} differs from tests/golden/{name} (diff above); if the "
                             "change is meant, run tests/golden/update and review its diff")


@st.check("report.md renders the fixed recording as tests/golden/report.md says")
def report_md_is_golden():
    same_as_expected("report.md")


@st.check("the terminal summary renders the fixed recording as tests/golden/terminal.txt says")
def terminal_is_golden():
    same_as_expected("terminal.txt")


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
    if not os.path.exists(golden.RECORDING):
        st.skip(f"no {golden.RECORDING}")
    st.main()
