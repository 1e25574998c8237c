"""A toy probe, a toy derive pass and a toy exporter (tests/toys/), each one
new file plus one line in its registry (src/probes/probe_list.h,
src/derive/pass_list.h, src/render/exporter_list.h), built into a sonde of
their own against the build's libsonde_core.a: the probe runs and fills its
table, the pass derives from it, the exporter writes its file and is listed
by --format help, and `--help` lists the probe and its option, which the
run's parser takes. Nothing else is touched,
which is what docs/development.md's walkthrough promises. Exit 77 when the
build's compile and link lines cannot be read (a build not made by CMake's
Makefile generator)."""
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys

from sonde_test import SONDE, WORKLOADS, check, main, scratch, skip

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SRC = os.path.join(ROOT, "src")
TOYS = os.path.join(ROOT, "tests", "toys")
BUILD = os.path.dirname(os.path.abspath(SONDE))
FLAGS = os.path.join(BUILD, "CMakeFiles", "sonde.dir", "flags.make")
LINK = os.path.join(BUILD, "CMakeFiles", "sonde.dir", "link.txt")

# (registry folder, registry file, its table's source, the toy's line, the toy)
REGISTRIES = [
    ("probes", "probe_list.h", "probes.c", "PROBE(toy)", "toy_probe.c"),
    ("derive", "pass_list.h", "passes.c", "DERIVE_PASS(toy)", "toy_pass.c"),
    ("render", "exporter_list.h", "exporters.c", "EXPORTER(toy)", "toy_exporter.c"),
]

if not (os.path.exists(FLAGS) and os.path.exists(LINK)
        and os.path.exists(os.path.join(BUILD, "libsonde_core.a"))):
    skip("no CMake compile and link lines for sonde beside %s" % SONDE)


def build_toys():
    """Builds the sonde with the three toys; returns its path."""
    work = scratch("toys")
    flags = {}
    with open(FLAGS) as f:
        for line in f:
            m = re.match(r"(C_DEFINES|C_INCLUDES|C_FLAGS) = (.*)", line)
            if m:
                flags[m.group(1)] = shlex.split(m.group(2))
    with open(LINK) as f:
        link = shlex.split(f.read())
    cc = link[0]
    objs = []
    for folder, listing, table, line, toy in REGISTRIES:
        d = os.path.join(work, folder)
        os.makedirs(d, exist_ok=True)
        shutil.copy(os.path.join(SRC, folder, table), d)
        with open(os.path.join(SRC, folder, listing)) as f:
            text = f.read()
        with open(os.path.join(d, listing), "w") as f:
            f.write(text + line + "\n")  # the one registry line
        for src in (os.path.join(d, table), os.path.join(TOYS, toy)):
            obj = os.path.join(work, folder + "_" + os.path.basename(src) + ".o")
            cmd = [cc, *flags.get("C_DEFINES", []), *flags.get("C_INCLUDES", []),
                   *flags.get("C_FLAGS", []), "-I", SRC, "-I", os.path.join(SRC, folder),
                   "-c", src, "-o", obj]
            p = subprocess.run(cmd, capture_output=True, text=True)
            assert p.returncode == 0, "%s\n%s" % (" ".join(cmd), p.stderr[-3000:])
            objs.append(obj)
    out = os.path.join(work, "sonde-toys")
    at = link.index("-o")
    cmd = link[:at] + objs + ["-o", out] + link[at + 2:]
    p = subprocess.run(cmd, cwd=BUILD, capture_output=True, text=True)
    assert p.returncode == 0, "%s\n%s" % (" ".join(cmd), p.stderr[-3000:])
    return out, work


TOY = {}


def toy_sonde():
    if not TOY:
        TOY["exe"], TOY["work"] = build_toys()
    return TOY["exe"], TOY["work"]


def toy_run():
    """The toy sonde run on a program that forks a child; returns its run dir."""
    if "run" not in TOY:
        exe, work = toy_sonde()
        run = os.path.join(work, "run")
        p = subprocess.run([exe, "run", "-q", "-o", run, "--probes", "proc,toy",
                            "--toy-label", "mine", "--",
                            os.path.join(WORKLOADS, "cpu_fork")],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        TOY["run"] = run
    return TOY["run"]


@check("the toy probe, pass and exporter build into a sonde with one registry line each")
def _():
    exe, _ = toy_sonde()
    assert os.access(exe, os.X_OK)


@check("the toy probe is listed by --help and runs: its table holds a reading per interval")
def _():
    exe, _ = toy_sonde()
    p = subprocess.run([exe, "run", "--help"], capture_output=True, text=True)
    assert re.search(r"^\s+toy\s+the target's live processes", p.stdout, re.M), p.stdout
    con = sqlite3.connect(os.path.join(toy_run(), "profile.db"))
    status = con.execute("SELECT status FROM probes WHERE name = 'toy'").fetchone()
    ticks = con.execute("SELECT count(*), max(processes) FROM toy_ticks").fetchone()
    con.close()
    assert status == ("on",), status
    assert ticks[0] >= 2 and ticks[1] >= 1, ticks


@check("the toy probe's option is in --help and the run's parser: its value reaches the "
       "probe, a bad one is refused by the probe's own check")
def _():
    exe, _ = toy_sonde()
    p = subprocess.run([exe, "run", "--help"], capture_output=True, text=True)
    assert re.search(r"^\s+--toy-label TEXT\s+the toy probe's label", p.stdout, re.M), p.stdout
    p = subprocess.run([SONDE, "run", "--help"], capture_output=True, text=True)
    assert "--toy-label" not in p.stdout
    con = sqlite3.connect(os.path.join(toy_run(), "profile.db"))
    labels = con.execute("SELECT DISTINCT label FROM toy_ticks").fetchall()
    con.close()
    assert labels == [("mine",)], labels
    p = subprocess.run([exe, "run", "--toy-label", "x" * 40, "--", "true"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "is not 1 to 32 characters" in p.stderr, (p.returncode,
                                                                          p.stderr)


@check("the toy derive pass ran after the run: meta.toy_max_processes is the table's most")
def _():
    con = sqlite3.connect(os.path.join(toy_run(), "profile.db"))
    most = con.execute("SELECT max(processes) FROM toy_ticks").fetchone()[0]
    meta = con.execute("SELECT value FROM meta WHERE key = 'toy_max_processes'").fetchone()
    con.close()
    assert meta and int(meta[0]) == most, (meta, most)


@check("the toy exporter is a format of sonde export, and writes a line per process")
def _():
    exe, work = toy_sonde()
    p = subprocess.run([exe, "export", "--format", "help"], capture_output=True, text=True)
    assert re.search(r"^\s+toy\s+the run's processes", p.stdout + p.stderr, re.M), p.stdout
    out = os.path.join(work, "toy.txt")
    p = subprocess.run([exe, "export", toy_run(), "--format", "toy", "-o", out],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    with open(out) as f:
        lines = f.read().splitlines()
    con = sqlite3.connect(os.path.join(toy_run(), "profile.db"))
    pids = {r[0] for r in con.execute("SELECT pid FROM processes")}
    con.close()
    assert {int(line.split()[0]) for line in lines} == pids, (lines, pids)
    assert any("cpu_fork" in line for line in lines), lines


def sources():
    for folder, _, files in os.walk(SRC):
        for name in files:
            if name.endswith((".c", ".h")):
                path = os.path.join(folder, name)
                with open(path, errors="replace") as f:
                    yield os.path.relpath(path, ROOT), f.read()


@check("every probe, derive pass, exporter, analysis and run-directory renderer of src/ is "
       "wired by its registry line, and nowhere else")
def _():
    kinds = [("probe_ops", "probe", "probes", "probe_list.h", "PROBE", "probe_table"),
             ("derive_pass", "derive", "derive", "pass_list.h", "DERIVE_PASS", "derive_table"),
             ("exporter", "export", "render", "exporter_list.h", "EXPORTER", "export_table"),
             ("analysis_ops", "analysis", "analysis", "analysis_list.h", "ANALYSIS",
              "analysis_table"),
             ("renderer", "render", "render", "renderer_list.h", "RENDERER", "render_table")]
    files = dict(sources())
    for struct, prefix, folder, listing, macro, table in kinds:
        defined = set()
        for path, text in files.items():
            defined |= set(re.findall(r"^const struct %s %s_(\w+) = " % (struct, prefix), text,
                                      re.M))
            # The registries declare through their macro; a declaration written
            # out is a component reached from somewhere else.
            assert not re.search(r"^extern const struct %s %s_" % (struct, prefix), text,
                                 re.M), f"{path} declares a {struct} itself"
        with open(os.path.join(SRC, folder, listing)) as f:
            listed = set(re.findall(r"^%s\((\w+)\)" % macro, f.read(), re.M))
        if struct == "renderer":
            # a renderer is a run directory's file (listed) or an export
            # format's writer, reached through its exporter in its own file
            exported = {n for n in defined
                        if any(re.search(r"\.renderer = &render_%s\b" % n, t)
                               for t in files.values())}
            assert listed <= defined and defined - listed <= exported, (
                listing, sorted(listed - defined), sorted(defined - listed - exported))
        else:
            assert defined == listed, (listing, sorted(defined ^ listed))
        owners = [p for p, t in files.items()
                  if re.search(r"\b%s\[\] = \{" % table, t)]
        assert len(owners) == 1, (table, owners)


@check("every probe option is declared by its probe only: no getopt table of src/cli names it")
def _():
    files = dict(sources())
    owned = set()
    for path, text in files.items():
        if path.startswith(os.path.join("src", "probes")):
            owned |= set(re.findall(r'\{ \.name = "([a-z-]+)", ', text))
    assert {"rate", "memory", "log", "function", "interval"} <= owned, sorted(owned)
    # a probe's short name is its own: none twice, none of the session's
    shorts = []
    for path, text in files.items():
        if path.startswith(os.path.join("src", "probes")):
            shorts += re.findall(r"\.short_name = '(.)'", text)
    assert len(shorts) == len(set(shorts)) and not set(shorts) & set("odaqvh"), shorts
    for path, text in files.items():
        if path.startswith(os.path.join("src", "cli")):
            hand = set(re.findall(r'^\s*\{ "([a-z-]+)", \w+_argument', text, re.M))
            assert not hand & owned, (path, sorted(hand & owned))
    p = subprocess.run([SONDE, "run", "--help"], capture_output=True, text=True)
    for name in owned - {"toy-label"}:
        assert re.search(r"^\s+(-\w, )?--%s\b" % name, p.stdout, re.M), name


@check("every finding id an analysis declares is documented in docs/, and no analysis adds "
       "a finding it does not declare")
def _():
    files = dict(sources())
    declared = {}
    for path, text in files.items():
        for m in re.finditer(r"static const char \*const (\w+)_findings\[\] = \{(.*?)\};",
                             text, re.S):
            for fid in re.findall(r'"([a-z_]+\.[a-z_]+)"', m.group(2)):
                declared.setdefault(fid, []).append(path)
    assert len(declared) >= 40, sorted(declared)
    docs = ""
    for name in os.listdir(os.path.join(ROOT, "docs")):
        if name.endswith(".md"):
            with open(os.path.join(ROOT, "docs", name)) as f:
                docs += f.read()
    missing = [fid for fid in declared if "`%s`" % fid not in docs]
    assert not missing, missing
    # An id written in an analysis file but in no list is a finding made
    # outside the registry (report_build stops a debug build on it).
    for path, text in files.items():
        if not path.startswith(os.path.join("src", "analysis")):
            continue
        for fid in re.findall(r'\.id = "([a-z_]+\.[a-z_]+)"', text):
            assert fid in declared, (path, fid)


def declared_writes(*folders):
    """What the probes and derive passes of these folders declare they write
    ("table" or "samples:SOURCE"), and the tables the recorder and session
    make for everybody."""
    writes, core = set(), set()
    for folder in folders:
        for name in os.listdir(folder):
            if not name.endswith(".c"):
                continue
            with open(os.path.join(folder, name), errors="replace") as f:
                text = f.read()
            for m in re.finditer(r"static const char \*const \w+_writes\[\] = \{(.*?)\};",
                                 text, re.S):
                writes |= set(re.findall(r'"([a-z_]+(?::[a-z_]+)?)"', m.group(1)))
    for folder in ("record", "session"):
        for name in os.listdir(os.path.join(SRC, folder)):
            with open(os.path.join(SRC, folder, name), errors="replace") as f:
                core |= set(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", f.read()))
    return writes, core


def undeclared(run, writes, core):
    con = sqlite3.connect(os.path.join(run, "profile.db"))
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                                        " AND name NOT LIKE 'sqlite%'")}
    sources = {r[0] for r in con.execute("SELECT DISTINCT source FROM samples")} \
        if "samples" in tables else set()
    con.close()
    plain = {w for w in writes if ":" not in w}
    return (sorted(t for t in tables if t not in plain | core),
            sorted(s for s in sources if "samples:" + s not in writes))


@check("every table of a recording is declared by the probe or derive pass that writes it, "
       "or is the recorder's own")
def _():
    writes, core = declared_writes(os.path.join(SRC, "probes"), os.path.join(SRC, "derive"))
    assert {"samples:cpu", "samples:python", "samples:mixed", "proc_samples"} <= writes, writes
    work = scratch("writes")
    log = os.path.join(work, "app.log")
    script = os.path.join(ROOT, "tests", "workloads", "py_page_cache.py")
    run = os.path.join(work, "run")
    p = subprocess.run([SONDE, "run", "-q", "-o", run, "--memory", "--focus", "io", "--log", log,
                        "--function", script + ":Renderer.render", "--",
                        sys.executable, script, "--mode", "bounded", "3000"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    con = sqlite3.connect(os.path.join(run, "profile.db"))
    on = {r[0] for r in con.execute("SELECT name FROM probes WHERE status = 'on'")}
    con.close()
    assert {"alloc", "python", "syscalls", "logfile", "pyfunction"} <= on, on
    assert undeclared(run, writes, core) == ([], []), undeclared(run, writes, core)
    # The toy's table is the toy probe's declaration, not the real sonde's.
    assert undeclared(toy_run(), writes, core)[0] == ["toy_ticks"]
    writes, core = declared_writes(os.path.join(SRC, "probes"), os.path.join(SRC, "derive"), TOYS)
    assert undeclared(toy_run(), writes, core) == ([], [])


@check("the real sonde knows none of the toys")
def _():
    p = subprocess.run([SONDE, "export", toy_run(), "--format", "toy"],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "not an export format" in p.stderr, p.stderr
    p = subprocess.run([SONDE, "run", "--help"], capture_output=True, text=True)
    assert not re.search(r"^\s+toy\s", p.stdout, re.M)


main()
