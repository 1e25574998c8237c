"""A process per item (tests/workloads/py_checksums.py, a backup manifest
that runs `sha256sum` once per file): the first finding is
cpu.process_per_item at Manifest.add_one's subprocess line, counting the 400
processes, with Python advice to start the tool once for many items; report
key `spawns` lists them. With --batched (one `sha256sum` per 200 files) there
is no such finding. A shell script running `wc` once per file in a loop
(tests/workloads/word_totals.sh) gets the finding at the script, with shell
advice."""
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, line_of, main, run_profile, scratch, skip  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "..", "workloads", "py_checksums.py")
SCRIPT = os.path.join(HERE, "..", "workloads", "word_totals.sh")
FILES = 400


def tree():
    """FILES small files in a few directories."""
    root = os.path.join(scratch("spawns-tree"), "data")
    if not os.path.isdir(root):
        for i in range(FILES):
            d = os.path.join(root, "d%02d" % (i % 8))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "f%04d.txt" % i), "w") as f:
                f.write("record %d\n" % i * (1 + i % 50))
    return root


def findings(name, *extra, command=None):
    p, d, r = run_profile(name, command or [sys.executable, JOB] + list(extra) +
                          [tree(), str(FILES)])
    assert p.returncode == 0 and r, p.stderr[-600:]
    db = sqlite3.connect(os.path.join(d, "profile.db"))
    status = dict(db.execute("SELECT name, status FROM probes").fetchall())
    db.close()
    if status.get("taskstats") != "on":
        skip("taskstats unavailable here: processes that live less than one /proc "
             "interval are not all seen")
    return r


@check("sha256sum run once per file is the first finding, cpu.process_per_item at the "
       "subprocess line of Manifest.add_one, with the count and Python advice; batched, none")
def _():
    r = findings("spawns-each")
    fs = r["findings"]
    said = [(f["id"], f["title"], f["location"]) for f in fs]
    assert fs and fs[0]["id"] == "cpu.process_per_item", said
    f = fs[0]
    want = "py_checksums.py:Manifest.add_one:%d" % line_of(JOB, 'out = subprocess.run(["sha256sum", path]')
    assert f["location"].endswith(want), (f["location"], want)
    # A child seen before its exec may keep the parent's command: nearly all.
    spawns = r["spawns"]
    assert spawns and spawns[0]["command"] == "sha256sum", spawns
    n = spawns[0]["processes"]
    assert 0.95 * FILES <= n <= FILES, spawns
    assert "`sha256sum` %d times" % n in f["title"], f["title"]
    assert "once for many items" in f["next_step"] and "Python" in f["next_step"], f
    r = findings("spawns-batched", "--batched")
    assert not [f for f in r["findings"] if f["id"] == "cpu.process_per_item"], \
        [(f["id"], f["title"]) for f in r["findings"]]
    assert not r["spawns"], r["spawns"]



@check("a shell loop running wc once per file: cpu.process_per_item names the script and "
       "advises handing wc many files at once")
def _():
    r = findings("spawns-shell", command=[SCRIPT, tree()])
    found = [f for f in r["findings"] if f["id"] == "cpu.process_per_item"]
    assert found, [(f["id"], f["title"]) for f in r["findings"]]
    f = found[0]
    assert "word_totals.sh" in f["location"] and "`wc`" in f["title"], f
    assert "xargs" in f["next_step"], f["next_step"]


main()
