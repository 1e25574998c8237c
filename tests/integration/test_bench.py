"""sonde bench: identical commands are not called different, a batched Python
loop is found faster than a per-element one with a CI that excludes 1, and
bad options are refused with one line."""
import json
import os
import sys
import sonde_test as st

HERE = os.path.dirname(os.path.abspath(__file__))
SUM = os.path.join(HERE, "..", "workloads", "py_bench_sum.py")
PY = sys.executable


@st.check("two identical commands give 'no significant difference' in at least 19 of 20 benches")
def identical():
    # The same command for A and B, printing a number drawn from one fixed
    # pseudo-random sequence (awk's rand() seeded by a shared counter), so the
    # 20 benches see the noise of identical variants, the same every time:
    # the verdict is tested, not this machine's load.
    d = st.scratch("bench-identical")
    counter = os.path.join(d, "n")
    with open(counter, "w") as f:
        f.write("0\n")
    draw = ("n=$(cat %s); echo $((n + 1)) > %s; "
            "awk -v n=$n 'BEGIN { srand(n); printf \"T: %%.4f ms\\n\", 10 + rand() }'"
            % (counter, counter))
    same = 0
    verdicts = []
    for _ in range(20):
        p = st.sonde("bench", "-n", "8", "--metric", "T: {float} ms", "--",
                     "sh", "-c", draw, "--vs", "sh", "-c", draw)
        assert p.returncode == 0, p.stderr
        line = [ln for ln in p.stdout.splitlines() if "=>" in ln][0]
        verdicts.append(line)
        same += "no significant difference" in line
    assert same >= 19, "%d of 20: %s" % (same, verdicts)
    # And on the wall time of a real command, once.
    p = st.sonde("bench", "-n", "8", "--", "sh", "-c", ":", "--vs", "sh", "-c", ":")
    assert p.returncode == 0 and "=>" in p.stdout, p.stderr


@st.check("a batched sum of squares is faster than a per-element loop, CI above 1")
def batched_faster():
    d = st.scratch("bench")
    js = os.path.join(d, "b.json")
    md = os.path.join(d, "b.md")
    p = st.sonde("bench", "-n", "10", "--json", js, "--markdown", md, "--",
                 PY, "-I", "-S", SUM, "loop", "--vs", PY, "-I", "-S", SUM, "batched",
                 timeout=300)
    assert p.returncode == 0, p.stderr
    assert "B is faster than A by" in p.stdout, p.stdout
    with open(js) as f:
        r = json.load(f)
    b = r["rows"][0]["variants"][1]["versus_a"]
    assert b["significant"] and b["ci95_lo"] > 1, b
    assert len(r["rows"][0]["variants"][0]["runs"]) == 10
    with open(md) as f:
        assert "B is faster than A" in f.read()


@st.check("--metric compares the printed number and --param gives one row per value")
def metric_and_param():
    p = st.sonde("bench", "-n", "3", "-w", "0", "--metric", "T: {float} ms",
                 "--param", "k=1,2", "--", "sh", "-c", "echo T: {k} ms",
                 "--vs", "sh", "-c", "echo T: {k}.0 ms")
    assert p.returncode == 0, p.stderr
    assert "k=1" in p.stdout and "k=2" in p.stdout, p.stdout
    assert "median 2 " in p.stdout, p.stdout


@st.check("bad options and failing commands are refused with one clear line")
def bad_input():
    for args, word in ((["-n", "1", "--", "true"], "--runs"),
                       (["--", "true", "--vs"], "--vs"),
                       (["true"], "'--'"),
                       (["--metric", "no hole", "--", "true"], "{float}"),
                       (["--param", "x", "--", "true"], "NAME=V1"),
                       (["--bogus", "--", "true"], "--help")):
        p = st.sonde("bench", *args)
        assert p.returncode == 2 and word in p.stderr, (args, p.returncode, p.stderr)
        assert p.stderr.count("\n") == 1, p.stderr
    p = st.sonde("bench", "-n", "2", "--", "false")
    assert p.returncode == 1 and "exited with status 1" in p.stderr, p.stderr
    p = st.sonde("bench", "--metric", "X {float}", "-n", "2", "--", "true")
    assert p.returncode == 1 and "matches --metric" in p.stderr, p.stderr
    p = st.sonde("bench", "--help")
    assert p.returncode == 0 and "--vs" in p.stdout


st.main()
