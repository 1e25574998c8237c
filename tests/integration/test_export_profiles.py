"""`sonde export DIR --format pprof` and `--format speedscope` write files that
follow their formats' rules, read back here by small readers of our own (a
gzip + protobuf decoder for profile.proto, JSON checks for speedscope's
schema), and hold exactly the samples the flame graph counts: the same
stacks, the same count, per thread, and only those of a window or a thread
when asked. Workload: tests/workloads/py_spin_threads.py (two Python threads
computing), so the stacks mix Python and native frames when both probes ran."""
import collections
import gzip
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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
        out.append((t, pid, tid, tuple(reversed(path))))
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


# ---- a minimal protobuf reader for profile.proto ------------------------------------------

def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i
        assert shift < 70, "varint longer than 10 bytes"


def fields(buf):
    """{field number: [values]}: ints for varints, bytes for length-delimited."""
    out = collections.defaultdict(list)
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        assert field > 0, "field number 0"
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            v = bytes(buf[i:i + n])
            assert len(v) == n, "a length-delimited field runs past the end"
            i += n
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise AssertionError(f"wire type {wire} of field {field}")
        out[field].append(v)
    return out


def packed(values):
    """A repeated integer field, packed (bytes) or not (ints)."""
    out = []
    for v in values:
        if isinstance(v, bytes):
            i = 0
            while i < len(v):
                x, i = varint(v, i)
                out.append(x)
        else:
            out.append(v)
    return out


def one(f, n, default=0):
    v = f.get(n, [default])
    assert len(v) == 1, f"field {n} repeated"
    return v[0]


def read_pprof(raw):
    """The profile as plain Python values, every rule of profile.proto that a
    reader relies on checked on the way."""
    assert raw[:2] == b"\x1f\x8b", "not gzip"
    top = fields(gzip.decompress(raw))
    strings = [s.decode("utf-8") for s in top[6]]
    assert strings and strings[0] == "", "string_table[0] must be \"\""

    def s(i):
        assert 0 <= i < len(strings), f"string index {i} out of range ({len(strings)})"
        return strings[i]

    def value_type(b):
        f = fields(b)
        return (s(one(f, 1)), s(one(f, 2)))

    mappings, functions, locations = {}, {}, {}
    for b in top[3]:
        f = fields(b)
        mid = one(f, 1)
        assert mid and mid not in mappings, f"mapping id {mid} zero or repeated"
        assert one(f, 7) == 1, "a mapping without has_functions"
        mappings[mid] = s(one(f, 5))
    for b in top[5]:
        f = fields(b)
        fid = one(f, 1)
        assert fid and fid not in functions, f"function id {fid} zero or repeated"
        functions[fid] = (s(one(f, 2)), s(one(f, 4)))
        s(one(f, 3))
    for b in top[4]:
        f = fields(b)
        lid = one(f, 1)
        assert lid and lid not in locations, f"location id {lid} zero or repeated"
        mid = one(f, 2)
        assert mid == 0 or mid in mappings, f"location {lid}: no mapping {mid}"
        lines = [fields(x) for x in f[4]]
        assert lines, f"location {lid} has no line"
        for ln in lines:
            assert one(ln, 1) in functions, f"location {lid}: no function {one(ln, 1)}"
        locations[lid] = (mid, [(functions[one(ln, 1)], one(ln, 2)) for ln in lines])
    sample_types = [value_type(b) for b in top[1]]
    samples = []
    for b in top[2]:
        f = fields(b)
        locs = packed(f[1])
        values = packed(f[2])
        assert locs and all(lid in locations for lid in locs), f"sample refers to {locs}"
        assert len(values) == len(sample_types), (values, sample_types)
        labels = {}
        for lb in f[3]:
            lf = fields(lb)
            labels[s(one(lf, 1))] = s(one(lf, 2)) if one(lf, 2) else one(lf, 3)
        samples.append((locs, values, labels))
    for c in top[13]:
        s(c)
    return {"strings": strings, "sample_types": sample_types, "samples": samples,
            "locations": locations, "mappings": mappings, "functions": functions,
            "period_type": value_type(one(top, 11, b"")), "period": one(top, 12),
            "time_nanos": one(top, 9), "duration_nanos": one(top, 10),
            "default_sample_type": s(one(top, 14))}


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
