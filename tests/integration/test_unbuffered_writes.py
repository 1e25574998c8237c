"""Writes to an unbuffered stream (tests/workloads/py_csv_export.py, an
export that prints each order as a CSV row to stdout): run with
PYTHONUNBUFFERED=1, as many container images run Python, every piece print()
writes is a write(2) of its own; the report's first finding is
cpu.unbuffered_writes at the print line of CsvExporter.write, saying that
PYTHONUNBUFFERED is set and advising a buffer. Run without it (stdout a pipe,
so Python buffers it), there is no such finding. On the oldest and newest
pyenv CPython (the raw write is CPython's _io_FileIO_write, named from
libpython's symbols)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, line_of, main, pyenv_oldest_newest, run_profile, skip  # noqa: E402,E501

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "..", "workloads", "py_csv_export.py")
ROWS = "120000"

TRIED, _ = pyenv_oldest_newest()


def findings(label, exe, unbuffered):
    saved = os.environ.get("PYTHONUNBUFFERED")
    if unbuffered:
        os.environ["PYTHONUNBUFFERED"] = "1"
    else:
        os.environ.pop("PYTHONUNBUFFERED", None)
    try:
        p, _, r = run_profile("export-%s-%d" % (label.replace(" ", "_"), unbuffered),
                              [exe, JOB, ROWS])
    finally:
        if saved is None:
            os.environ.pop("PYTHONUNBUFFERED", None)
        else:
            os.environ["PYTHONUNBUFFERED"] = saved
    assert p.returncode == 0 and r, p.stderr[-600:]
    return r["findings"]


@check("prints to an unbuffered stdout are the first finding, cpu.unbuffered_writes at the "
       "print line of CsvExporter.write, naming PYTHONUNBUFFERED; buffered, there is none")
def _():
    if not TRIED:
        skip("no pyenv CPython here")
    want = "py_csv_export.py:CsvExporter.write:%d" % line_of(JOB, "print(o.order_id")
    for label, exe in TRIED:
        fs = findings(label, exe, 1)
        said = [(f["id"], f["location"]) for f in fs]
        assert fs and fs[0]["id"] == "cpu.unbuffered_writes", (label, said)
        assert fs[0]["location"].endswith(want), (label, fs[0]["location"], want)
        assert "PYTHONUNBUFFERED is set" in fs[0]["evidence"], fs[0]["evidence"]
        assert "buffer" in fs[0]["next_step"], fs[0]["next_step"]
        fixed = findings(label, exe, 0)
        assert not [f for f in fixed if f["id"] == "cpu.unbuffered_writes"], \
            (label, [(f["id"], f["location"]) for f in fixed])


main()
