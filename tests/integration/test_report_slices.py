"""Slices of a run (tests/workloads/two_stages: stage_alpha in the launched
process, then stage_beta in a forked child, each a phase its output marks):
`sonde report DIR --from/--to`, `--pid` and `--during PHASE` write the same
views for the slice only, leave the run's own report alone and say which
slice it is; `sonde export DIR --format NAME` writes folded stacks that
honour the same filter; bad windows, unknown pids and phases and formats get
one clear line."""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, db, main, run_profile, scratch, sonde, workload  # noqa: E402

_, RUN, REPORT = run_profile("slices", [workload("two_stages"), "1.5"], expect_rc=0)


def stage_samples():
    """{function: (pids, first_s, last_s, count)} of the stage functions' CPU samples."""
    con = db(RUN)
    rows = con.execute(
        "SELECT f.function, s.pid, s.t_ns FROM samples s JOIN stack_nodes n ON n.id = s.node"
        " JOIN frames f ON f.id = n.frame WHERE s.source IN ('cpu', 'mixed')"
        " AND f.function IN ('stage_alpha', 'stage_beta')").fetchall()
    con.close()
    out = {}
    for fn, pid, t in rows:
        pids, first, last, n = out.get(fn, (set(), t, t, 0))
        out[fn] = (pids | {pid}, min(first, t), max(last, t), n + 1)
    return {fn: (pids, first / 1e9, last / 1e9, n) for fn, (pids, first, last, n) in out.items()}


STAGES = stage_samples()


def stages_ok():
    if set(STAGES) != {"stage_alpha", "stage_beta"} or min(v[3] for v in STAGES.values()) < 3:
        raise AssertionError("the run did not sample both stages: %r" % STAGES)


def boundary_s():
    """Between alpha's last sample and beta's first: a window edge no sample crosses."""
    stages_ok()
    return (STAGES["stage_alpha"][2] + STAGES["stage_beta"][1]) / 2


def read_json(path):
    with open(path) as f:
        return json.load(f)


def hot_functions(report):
    return {h.get("function") for h in report.get("hotspots") or []}


def slice_report(*args):
    out = os.path.join(scratch("slice-out"), "s")
    p = sonde("report", "-q", RUN, "-o", out, *args)
    if p.returncode != 0:
        raise AssertionError("sonde report %s: exit %d: %s" % (args, p.returncode, p.stderr))
    return out, read_json(os.path.join(out, "report.json"))


@check("the run samples stage_alpha in the launched process and stage_beta in its child")
def _():
    stages_ok()
    leader = REPORT["target"]["pids"][0]
    assert STAGES["stage_alpha"][0] == {leader}, STAGES
    assert leader not in STAGES["stage_beta"][0] and len(STAGES["stage_beta"][0]) == 1, STAGES


@check("a window over the first stage reports stage_alpha and not stage_beta, and says so")
def _():
    edge = boundary_s()
    out, r = slice_report("--to", "%.3f" % edge)
    hot = hot_functions(r)
    assert "stage_alpha" in hot and "stage_beta" not in hot, hot
    assert abs(r["slice"]["to_s"] - round(edge, 3)) < 0.002 and r["slice"]["from_s"] == 0, r["slice"]
    assert 0 < r["target"]["wall_s"] <= edge + 0.001, r["target"]
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    assert "**A slice of the run**: from 0.000 s to" in md, md[:400]
    assert "stage_beta" not in md and "stage_alpha" in md


@check("a window over the second stage reports stage_beta only, with times from its start")
def _():
    edge = boundary_s()
    _, r = slice_report("--from", "%.3f" % edge)
    hot = hot_functions(r)
    assert "stage_beta" in hot and "stage_alpha" not in hot, hot
    assert r["target"]["wall_s"] < REPORT["target"]["wall_s"], (r["target"], REPORT["target"])
    assert all(p.get("start_s", 0) >= 0 for p in r.get("processes") or []), r.get("processes")


@check("a pid's report holds that process only, through the same views as the run's")
def _():
    stages_ok()
    child = next(iter(STAGES["stage_beta"][0]))
    out, r = slice_report("--pid", str(child))
    hot = hot_functions(r)
    assert "stage_beta" in hot and "stage_alpha" not in hot, hot
    assert r["target"]["pids"] == [child], r["target"]
    assert r["slice"]["pid"] == child and "from_s" not in r["slice"], r["slice"]
    files = set(os.listdir(out))
    run_files = set(os.listdir(RUN)) - {"profile.db", "slices"}
    assert {"report.md", "report.json", "stacks.folded"} <= files, files
    assert files <= run_files, (files, run_files)
    # components group several processes: a one-process slice has none
    assert set(REPORT) - {"artifacts", "components"} <= set(r), set(REPORT) - set(r)
    assert "profile.db" not in r["artifacts"], r["artifacts"]


@check("without -o a slice goes to DIR/slices/NAME and the run's own report is left as it was")
def _():
    with open(os.path.join(RUN, "report.md"), "rb") as f:
        before = f.read()
    p = sonde("report", "-q", RUN, "--from", "0.5")
    assert p.returncode == 0, p.stderr
    made = glob.glob(os.path.join(RUN, "slices", "*", "report.json"))
    assert [os.path.basename(os.path.dirname(m)) for m in made] == ["0.5s-end"], made
    with open(os.path.join(RUN, "report.md"), "rb") as f:
        assert f.read() == before
    p = sonde("report", "-q", RUN, "--pid", str(REPORT["target"]["pids"][0]), "-o", RUN)
    assert p.returncode == 1 and "holds a recording" in p.stderr, p.stderr


def folded(*args):
    out = os.path.join(scratch("export"), "stacks.folded")
    p = sonde("export", RUN, "--format", "folded", "-o", out, *args)
    if p.returncode != 0:
        raise AssertionError("sonde export %s: exit %d: %s" % (args, p.returncode, p.stderr))
    with open(out) as f:
        return f.read()


@check("sonde export --format folded writes stacks that honour the window and the pid")
def _():
    edge = boundary_s()
    whole = folded()
    assert "stage_alpha" in whole and "stage_beta" in whole
    late = folded("--from", "%.3f" % edge)
    assert "stage_beta" in late and "stage_alpha" not in late, late[:500]
    leader = folded("--pid", str(REPORT["target"]["pids"][0]))
    assert "stage_alpha" in leader and "stage_beta" not in leader, leader[:500]
    for line in late.splitlines():
        stack, count = line.rsplit(" ", 1)
        assert stack and int(count) > 0, line


@check("--during names a phase: its report and its folded stacks hold that stage only")
def _():
    stages_ok()
    names = [p["name"] for p in REPORT.get("phases") or []]
    assert names == ["alpha", "beta"], names
    out, r = slice_report("--during", "alpha")
    hot = hot_functions(r)
    assert "stage_alpha" in hot and "stage_beta" not in hot, hot
    alpha = REPORT["phases"][0]
    assert r["slice"]["phase"] == "alpha", r["slice"]
    assert abs(r["slice"]["from_s"] - alpha["start_s"]) < 0.001, (r["slice"], alpha)
    with open(os.path.join(out, "report.md")) as f:
        assert "**A slice of the run**: phase alpha, from" in f.read()
    late = folded("--during", "beta#1")
    assert "stage_beta" in late and "stage_alpha" not in late, late[:500]
    p = sonde("report", "-q", RUN, "--during", "beta")
    assert p.returncode == 0, p.stderr
    assert os.path.exists(os.path.join(RUN, "slices", "during_beta", "report.json"))


@check("every export format is listed by --format help and a near miss is named")
def _():
    p = sonde("export", "--format", "help")
    assert p.returncode == 0
    for name in ("folded", "svg", "trace"):
        assert "\n  %s " % name in p.stdout, p.stdout
    p = sonde("export", RUN, "--format", "foldd")
    assert p.returncode == 2 and "did you mean 'folded'" in p.stderr, p.stderr
    out = os.path.join(scratch("export-trace"), "t.json")
    p = sonde("export", RUN, "-f", "trace", "--to", "%.3f" % boundary_s(), "-o", out)
    assert p.returncode == 0, p.stderr
    assert read_json(out)["traceEvents"], "an empty trace"


@check("a bad window, an unknown pid and a missing recording each get one line")
def _():
    cases = [
        (["--from", "1000"], "past the run's end"),
        (["--from", "2", "--to", "1"], "empty window"),
        (["--from", "-1"], "0 or more"),
        (["--pid", "1"], "pid 1 was not recorded (recorded: %d" % min(REPORT["target"]["pids"])),
        (["--during", "alhpa"], "no phase of that name (did you mean 'alpha'?); its phases: "
         "'alpha', 'beta'"),
        (["--during", "alpha#2"], "'alpha' ran 1 time"),
        (["--during", "alpha", "--from", "1"], "give it without --from and --to"),
    ]
    for args, says in cases:
        p = sonde("report", "-q", RUN, *args)
        assert p.returncode in (1, 2) and says in p.stderr, (args, p.returncode, p.stderr)
        assert p.stderr.count("\n") == 1, p.stderr
    empty = scratch("no-recording")
    p = sonde("export", empty, "-f", "folded", "--to", "1")
    assert p.returncode == 1 and "profile.db" in p.stderr, p.stderr


main()
