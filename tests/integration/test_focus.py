"""--focus: a dimension measured deeper and put first in the report."""
import os

from sonde_test import check, main, run_profile, sonde, workload


def probe_status(report, name):
    return {p["name"]: p["status"] for p in report["probes"]}.get(name)


@check("--focus memory turns the allocation tracker on and the report leads with memory")
def _():
    p, d, r = run_profile("focus-memory", [workload("alloc_churn")], "--focus", "memory",
                          expect_rc=0)
    assert r["focus"]["dimensions"] == ["memory"] and r["focus"]["asked"], r["focus"]
    assert probe_status(r, "alloc") == "on", r["probes"]
    assert "heap" in r["memory"], sorted(r["memory"])
    with open(os.path.join(d, "report.md")) as f:
        md = f.read()
    assert "Focus: memory (asked with --focus)" in md, md[:600]
    # memory's section comes before the findings and the CPU section
    part_a = md[md.index("# Part A"):]
    assert part_a.index("## Memory") < part_a.index("## CPU"), part_a[:800]


@check("without --focus the report says what sonde chose to measure and why")
def _():
    p, d, r = run_profile("focus-none", [workload("alloc_churn")], expect_rc=0)
    f = r["focus"]
    assert f["dimensions"] == [] and not f["asked"], f
    whats = [c["what"] for c in f["choices"]]
    assert any(w.startswith("native stacks sampled at 99 Hz") for w in whats), whats
    assert "heap allocations not tracked (RSS only)" in whats, whats
    assert probe_status(r, "alloc") == "off", r["probes"]
    with open(os.path.join(d, "report.md")) as f:
        md = f.read()
    assert "Focus: none asked" in md and "What sonde measured, and why:" in md, md[:800]


@check("--focus cpu raises the default sampling rate, and -r still wins")
def _():
    _, _, r = run_profile("focus-cpu", [workload("alloc_churn")], "--focus", "cpu,interconnect",
                          expect_rc=0)
    assert r["focus"]["dimensions"] == ["cpu", "gpu"], r["focus"]
    assert any(c["what"].startswith("native stacks sampled at 499 Hz")
               for c in r["focus"]["choices"]), r["focus"]["choices"]
    _, _, r = run_profile("focus-cpu-r", [workload("alloc_churn")], "--focus", "cpu", "-r", "50",
                          expect_rc=0)
    assert any(c["what"].startswith("native stacks sampled at 50 Hz")
               for c in r["focus"]["choices"]), r["focus"]["choices"]


@check("an unknown focus name is a one-line error naming the nearest valid one")
def _():
    p = sonde("run", "--focus", "memroy", "--", "true")
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.count("\n") == 1 and "did you mean 'memory'?" in p.stderr, p.stderr
    p = sonde("attach", "--focus", "gpu,disk", "1")
    assert p.returncode == 2 and "'disk' is not a dimension" in p.stderr, p.stderr


if __name__ == "__main__":
    main()
