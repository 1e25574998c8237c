"""`sonde compare A B` of a run before and after an optimisation
(tests/workloads/cpu_variant: "slow" runs hot_a and hot_b, "fast" a twentieth
of hot_a): hot_a is named first as what changed most and shrank, compare.md
has the function, phase and memory tables, diff.svg is B's flame graph with
hot_a in blue; neither run directory is written; a missing directory or
recording and a damaged database get one clear line, runs of different
programs a warning."""
import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, db, main, run_profile, scratch, skip, sonde, workload  # noqa: E402

_, SLOW, _ = run_profile("compare-slow", [workload("cpu_variant"), "slow"], "-r", "499",
                         expect_rc=0)
_, FAST, _ = run_profile("compare-fast", [workload("cpu_variant"), "fast"], "-r", "499",
                         expect_rc=0)
for run in (SLOW, FAST):
    con = db(run)
    status = con.execute("SELECT status, reason FROM probes WHERE name = 'cpu'").fetchone()
    con.close()
    if not status or status[0] != "on":
        skip("the cpu probe is off here: %s" % (status[1] if status else "not recorded"))
BEFORE = {d: sorted(os.listdir(d)) for d in (SLOW, FAST)}
OUT = os.path.join(scratch("compare-out"), "cmp")
P = sonde("compare", "-o", OUT, SLOW, FAST)
SVG = "{http://www.w3.org/2000/svg}"


def read(path):
    with open(path) as f:
        return f.read()


def one_line_error(p):
    lines = [line for line in p.stderr.splitlines() if line.startswith("sonde:")]
    assert p.returncode != 0, (p.returncode, p.stderr)
    assert len(lines) == 1, p.stderr
    return lines[0]


@check("compare of a run before and after removing a hot function names that function first")
def hot_a_first():
    assert P.returncode == 0, (P.returncode, P.stderr)
    lines = P.stderr.splitlines()
    most = [line for line in lines if line.startswith("what changed most:")]
    assert most and most[0].startswith("what changed most: hot_a shrank"), P.stderr
    top = lines[lines.index("top changes:") + 2].split()
    assert top[-1] == "hot_a" and top[0].startswith("-"), P.stderr


@check("compare.md has the function table with hot_a first, and phases and memory")
def markdown_tables():
    md = read(os.path.join(OUT, "compare.md"))
    assert "**What changed most:** `hot_a` shrank" in md.replace("` hot_a `", "`hot_a`"), md
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    header = rows.index(next(r for r in rows if r.startswith("| function |")))
    assert "Δ total" in rows[header] and "Δ self" in rows[header], rows[header]
    assert rows[header + 1].startswith("| hot_a |"), rows[header + 1]
    # At most the 30 biggest changes: hot_b, which did not change, may be
    # crowded out by the kernel's noise on a loaded machine.
    table = [r for r in rows[header + 2:] if r.count("|") >= 12]
    assert 2 <= len(table) <= 30, len(table)
    assert "## Phases" in md and "## Memory" in md and "| peak RSS |" in md, md


@check("diff.svg is valid XML, B's flame graph, with hot_a in blue")
def diff_svg():
    root = ET.parse(os.path.join(OUT, "diff.svg")).getroot()
    colours = {}
    for g in root.iter(SVG + "g"):
        if g.get("n"):
            colours.setdefault(g.get("n"), []).append(g.get("c"))
    assert "hot_a" in colours, sorted(colours)
    for c in colours["hot_a"]:
        r, g, b = (int(x) for x in c[4:-1].split(","))
        assert b == 255 and r < 255, colours["hot_a"]


@check("neither run directory is written")
def runs_untouched():
    for d, files in BEFORE.items():
        assert sorted(os.listdir(d)) == files, (d, os.listdir(d), files)


@check("without -o the comparison goes to compare-A-B beside B")
def default_output():
    p = sonde("compare", "-q", SLOW, FAST)
    assert p.returncode == 0, p.stderr
    want = os.path.join(os.path.dirname(FAST), "compare-run-run")
    assert os.path.exists(os.path.join(want, "compare.md")), os.listdir(os.path.dirname(FAST))
    assert p.stderr == "", p.stderr


@check("-o into a run directory is refused")
def output_into_run():
    line = one_line_error(sonde("compare", "-q", "-o", SLOW, SLOW, FAST))
    assert "run directory" in line, line
    assert sorted(os.listdir(SLOW)) == BEFORE[SLOW]


@check("a missing directory gets one clear line")
def missing_dir():
    line = one_line_error(sonde("compare", SLOW, "/nonexistent/run"))
    assert "/nonexistent/run is not a run directory" in line, line


@check("a directory without profile.db gets one clear line")
def missing_recording():
    empty = scratch("compare-empty")
    line = one_line_error(sonde("compare", empty, FAST))
    assert "profile.db" in line, line


@check("a damaged database gets one clear line naming it")
def damaged_db():
    bad = os.path.join(scratch("compare-damaged"), "run")
    shutil.copytree(SLOW, bad)
    with open(os.path.join(bad, "profile.db"), "wb") as f:
        f.write(b"this is not a database\n" * 200)
    line = one_line_error(sonde("compare", "-o", os.path.join(bad, "..", "x"), bad, FAST))
    assert "profile.db" in line, line


@check("runs of different programs get a warning, not an error")
def different_programs():
    other = os.path.join(scratch("compare-other"), "run")
    shutil.copytree(FAST, other)
    path = os.path.join(other, "report.json")
    with open(path) as f:
        report = json.load(f)
    report["target"]["command"] = "/usr/bin/another_program --flag"
    with open(path, "w") as f:
        json.dump(report, f)
    p = sonde("compare", "-o", os.path.join(other, "..", "cmp"), SLOW, other)
    assert p.returncode == 0, p.stderr
    assert any(line.startswith("sonde: warning:") and "another_program" in line
               for line in p.stderr.splitlines()), p.stderr


@check("compare needs exactly two directories, and --help describes it")
def usage():
    p = sonde("compare", SLOW)
    assert p.returncode == 2 and "two run directories" in p.stderr, p.stderr
    h = sonde("compare", "--help")
    assert h.returncode == 0 and "usage: sonde compare" in h.stdout, h.stdout
    top = sonde("--help")
    assert "compare" in top.stdout, top.stdout


main()
