"""`sonde run --format LIST` writes the exports into the run directory, the
same as `sonde export` writes them afterwards; `--json` prints report.json as
the last line of standard output, after the command's own output; a bad
format name is refused before anything runs. Workload: cpu_spin."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfetto_reader import read_perfetto  # noqa: E402
from pprof_reader import read_pprof  # noqa: E402
from sonde_test import check, main, run_profile, scratch, sonde, workload  # noqa: E402

P, RUN, REPORT = run_profile("run-formats", ["sh", "-c", "echo first line; exec " +
                                             workload("cpu_spin")],
                             "--format", "pprof,speedscope,chrome,perfetto", "--json", expect_rc=0)


def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


@check("--format writes each export into the run directory, as sonde export writes it")
def _():
    for name, file in (("pprof", "profile.pb.gz"), ("speedscope", "speedscope.json"),
                       ("chrome", "trace.json"), ("perfetto", "trace.perfetto-trace")):
        path = os.path.join(RUN, file)
        assert os.path.isfile(path), (name, os.listdir(RUN))
        out = os.path.join(scratch("run-formats-" + name), file)
        p = sonde("export", RUN, "--format", name, "-o", out, "-q")
        assert p.returncode == 0, p.stderr
        if name == "pprof":
            assert read_pprof(read(path))["samples"] == read_pprof(read(out))["samples"]
        elif name == "perfetto":
            assert read_perfetto(read(path)) == read_perfetto(read(out)), name
        else:
            assert json.loads(read(path)) == json.loads(read(out)), name
    assert read_pprof(read(os.path.join(RUN, "profile.pb.gz")))["samples"], "no samples"


@check("--json prints report.json as one line, the last of stdout, after the command's output")
def _():
    lines = P.stdout.splitlines()
    assert lines[0] == "first line", lines[:2]
    assert json.loads(lines[-1]) == REPORT, lines[-1][:200]
    assert len(lines) == 2, len(lines)


@check("an unknown --format name is refused in one line naming the near one, and nothing runs")
def _():
    d = os.path.join(scratch("run-formats-bad"), "run")
    for bad, said in (("pprf", "did you mean 'pprof'"), ("pprof,", "an empty name")):
        p = sonde("run", "-o", d, "--format", bad, "--", "true")
        assert p.returncode == 2, (bad, p.returncode, p.stderr)
        assert said in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert not os.path.exists(d), os.listdir(d)


main()
