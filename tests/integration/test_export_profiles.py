"""`sonde export DIR --format pprof` and `--format speedscope` write files that
follow their formats' rules, read back here by small readers of our own (a
gzip + protobuf decoder for profile.proto, JSON checks for speedscope's
schema), and hold exactly the samples the flame graph counts: the same
stacks, the same count, per thread, and only those of a window or a thread
when asked. Workload: tests/workloads/py_spin_threads.py (two Python threads
computing), so the stacks mix Python and native frames when both probes ran."""
import collections
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pprof_reader import read_pprof  # noqa: E402
from sonde_test import check, db, main, run_profile, scratch, skip, sonde  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "py_spin_threads.py")
PYTHON = shutil.which("python3")
SCHEMA = "https://www.speedscope.app/file-format-schema.json"

if not PYTHON:
    skip("no python3 on PATH")
_, RUN, REPORT = run_profile("export-profiles", [PYTHON, WORKLOAD, "2", "2"], expect_rc=0)
PROBES = {p["name"]: p["status"] for p in REPORT["probes"]}
if PROBES.get("cpu") != "on":
    skip(f"needs the cpu probe (perf events), got {PROBES}")
SOURCE = REPORT["hotspots_source"]["source"]


# ---- what the recording holds -------------------------------------------------------------

def meta_int(con, key):
    row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else None


def recorded():
    """[(t_ns, pid, tid, stack outermost first as function names)] of the
    samples the flame graph counts, and the sampling period in ns."""
    con = db(RUN)
    nodes = {i: (p, f) for i, p, f in con.execute("SELECT id, parent, frame FROM stack_nodes")}
    names = dict(con.execute("SELECT id, function FROM frames"))
    extra = " AND on_cpu = 1" if SOURCE == "python" else ""
    out = []
    for t, pid, tid, node in con.execute(
            "SELECT t_ns, pid, tid, node FROM samples WHERE source = ?" + extra, (SOURCE,)):
        path = []
        while node in nodes and len(path) < 1024:
            parent, frame = nodes[node]
            path.append(names.get(frame, "[unknown]"))
            node = parent
        # a Python sample whose thread id was not known: tid -1 in the exports
        out.append((t, pid, -1 if tid is None else tid, tuple(reversed(path))))
    hz = meta_int(con, "python_rate_hz" if SOURCE == "python" else "cpu_rate_hz")
    con.close()
    return out, (10**9 + hz // 2) // hz


SAMPLES, PERIOD_NS = recorded()
if len(SAMPLES) < 20:
    raise AssertionError(f"the run has {len(SAMPLES)} {SOURCE} samples: too few to check")


def stacks_of(samples):
    return collections.Counter(s[3] for s in samples)


def export(fmt, *args):
    out = os.path.join(scratch("export-" + fmt), "out")
    p = sonde("export", RUN, "--format", fmt, "-o", out, *args)
    if p.returncode != 0:
        raise AssertionError(f"sonde export {fmt} {args}: exit {p.returncode}: {p.stderr}")
    with open(out, "rb") as f:
        return f.read()


def pprof_stacks(prof):
    """Counter of stacks, outermost first as function names, and {tid: samples}."""
    stacks, per_tid = collections.Counter(), collections.Counter()
    for locs, values, labels in prof["samples"]:
        names = [prof["locations"][lid][1][0][0][0] for lid in locs]  # leaf first
        stacks[tuple(reversed(names))] += values[0]
        per_tid[labels["tid"]] += values[0]
    return stacks, per_tid


PPROF = read_pprof(export("pprof"))


@check("pprof: the profile follows profile.proto's rules (string table, ids, value types)")
def _():
    assert PPROF["sample_types"] == [("samples", "count"), ("cpu", "nanoseconds")], PPROF
    assert PPROF["period_type"] == ("cpu", "nanoseconds"), PPROF["period_type"]
    assert PPROF["period"] == PERIOD_NS, (PPROF["period"], PERIOD_NS)
    assert PPROF["default_sample_type"] == "cpu"
    assert PPROF["time_nanos"] > 1.5e18 and PPROF["duration_nanos"] > 0, PPROF["time_nanos"]
    for _, values, labels in PPROF["samples"]:
        assert values[0] > 0 and values[1] == values[0] * PERIOD_NS, values
        assert isinstance(labels.get("tid"), int) and isinstance(labels.get("pid"), int), labels


@check("pprof: its samples are the recording's, stack for stack, leaf first, per thread")
def _():
    stacks, per_tid = pprof_stacks(PPROF)
    assert sum(stacks.values()) == len(SAMPLES), (sum(stacks.values()), len(SAMPLES))
    assert stacks == stacks_of(SAMPLES), "the stacks differ from the recording's"
    assert per_tid == collections.Counter(s[2] for s in SAMPLES), per_tid
    leaf = collections.Counter(s[3][-1] for s in SAMPLES).most_common(1)[0][0]
    first = collections.Counter()
    for locs, values, _ in PPROF["samples"]:
        first[PPROF["locations"][locs[0]][1][0][0][0]] += values[0]
    assert first.most_common(1)[0][0] == leaf, (first.most_common(3), leaf)


@check("pprof: Python functions name their .py file and native ones their binary, by mapping")
def _():
    files = {fn[1] for fn in PPROF["functions"].values()}
    maps = set(PPROF["mappings"].values())
    if SOURCE == "mixed":
        assert any(f.endswith("py_spin_threads.py") for f in files), files
        assert any(m.endswith("py_spin_threads.py") for m in maps), maps
        crunch = [fn for fn in PPROF["functions"].values() if fn[0] == "crunch"]
        assert crunch and crunch[0][1].endswith("py_spin_threads.py"), crunch
    assert any(m.startswith("/") and not m.endswith(".py") for m in maps), maps


GO = shutil.which("go")
if not GO:
    print("SKIP (one check): no `go` on PATH (Debian's golang-go) to open the profile with"
          " go tool pprof")
else:
    @check("go tool pprof -top opens the profile and its top function is report.json's")
    def _():
        home = scratch("go-home")
        out = os.path.join(home, "profile.pb.gz")
        with open(out, "wb") as f:
            f.write(export("pprof"))
        env = dict(os.environ, HOME=home, GOCACHE=os.path.join(home, "cache"), GOFLAGS="",
                   GOTOOLCHAIN="local", PPROF_TMPDIR=home)
        p = subprocess.run([GO, "tool", "pprof", "-top", out], env=env, text=True,
                           errors="replace", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=300)
        assert p.returncode == 0, p.stderr
        # "flat flat% sum% cum cum% function" rows, the largest flat first.
        rows = [r for r in (ln.split() for ln in p.stdout.splitlines())
                if len(r) >= 6 and r[0] != "flat" and r[1].endswith("%")]
        assert rows, p.stdout
        top_pct, top_fn = float(rows[0][1].rstrip("%")), " ".join(rows[0][5:])
        best = max(h["self_pct"] for h in REPORT["hotspots"])
        names = {h["function"] for h in REPORT["hotspots"] if abs(h["self_pct"] - best) < 0.01}
        assert abs(top_pct - best) < 0.06 and top_fn in names, (rows[:3], best, names)


def read_speedscope(raw):
    """The file, checked against speedscope's schema: [(name, stacks, weights)]."""
    doc = json.loads(raw)
    assert doc["$schema"] == SCHEMA, doc.get("$schema")
    frames = doc["shared"]["frames"]
    for f in frames:
        assert isinstance(f["name"], str) and f["name"], f
        assert isinstance(f.get("file", ""), str), f
        assert isinstance(f.get("line", 1), int) and f.get("line", 1) > 0, f
    profiles = doc["profiles"]
    assert 0 <= doc["activeProfileIndex"] < len(profiles), doc["activeProfileIndex"]
    out = []
    for p in profiles:
        assert p["type"] == "sampled" and p["unit"] == "nanoseconds", p["type"]
        assert len(p["samples"]) == len(p["weights"]), p["name"]
        for stack in p["samples"]:
            assert stack and all(isinstance(i, int) and 0 <= i < len(frames) for i in stack)
        assert all(isinstance(w, int) and w > 0 and w % PERIOD_NS == 0 for w in p["weights"])
        assert p["endValue"] - p["startValue"] == sum(p["weights"]), p["name"]
        stacks = collections.Counter()
        for stack, w in zip(p["samples"], p["weights"]):
            stacks[tuple(frames[i]["name"] for i in stack)] += w // PERIOD_NS
        out.append((p["name"], stacks))
    return out


SPEEDSCOPE = read_speedscope(export("speedscope"))


@check("speedscope: one sampled profile per thread, its stacks the recording's, outermost first")
def _():
    tids = collections.Counter(s[2] for s in SAMPLES)
    assert len(SPEEDSCOPE) == len(tids), ([n for n, _ in SPEEDSCOPE], tids)
    total = collections.Counter()
    for name, stacks in SPEEDSCOPE:
        tid = int(name.rsplit("(tid ", 1)[1].split(",")[0])
        mine = [s for s in SAMPLES if s[2] == tid]
        assert stacks == stacks_of(mine), f"{name}: stacks differ from the recording's"
        total += stacks
    assert sum(total.values()) == len(SAMPLES), (sum(total.values()), len(SAMPLES))
    if SOURCE == "mixed":
        names = [n for n, _ in SPEEDSCOPE]
        assert any(n.startswith("crunch-0 (tid ") for n in names), names


@check("both exports keep only the thread asked for, and only the samples of a window")
def _():
    tid = collections.Counter(s[2] for s in SAMPLES).most_common(1)[0][0]
    stacks, per_tid = pprof_stacks(read_pprof(export("pprof", "--tid", str(tid))))
    assert set(per_tid) == {tid} and stacks == stacks_of([s for s in SAMPLES if s[2] == tid])
    one_thread = read_speedscope(export("speedscope", "--tid", str(tid)))
    assert len(one_thread) == 1 and "tid %d," % tid in one_thread[0][0], one_thread
    # A window edge in a gap between samples, so rounding cannot move one across.
    times = sorted(s[0] for s in SAMPLES)
    mid = len(times) // 2
    while mid + 1 < len(times) and times[mid + 1] - times[mid] < 2_000_000:
        mid += 1
    assert mid + 1 < len(times), "no gap of 2 ms between samples after the middle"
    edge_ms = (times[mid] + times[mid + 1]) // 2 // 1_000_000
    late = [s for s in SAMPLES if s[0] >= edge_ms * 1_000_000]
    assert 0 < len(late) < len(SAMPLES), (len(late), len(SAMPLES))
    stacks, _ = pprof_stacks(read_pprof(export("pprof", "--from", "%.3f" % (edge_ms / 1e3))))
    assert stacks == stacks_of(late), (sum(stacks.values()), len(late))
    window = read_speedscope(export("speedscope", "--from", "%.3f" % (edge_ms / 1e3)))
    assert sum(sum(st.values()) for _, st in window) == len(late)


@check("--format help lists pprof and speedscope")
def _():
    p = sonde("export", "--format", "help")
    assert p.returncode == 0
    for name in ("pprof", "speedscope"):
        assert "\n  %s " % name in p.stdout, p.stdout


main()
