"""golden: render fixed recordings with `sonde report DIR` and normalise the
views for comparison with the expected files beside this module.

Each case is a folder here (CASES) holding recording.sql (a dump of a real
profile.db) and the expected views. A recording never changes on its own, so
rendering it is deterministic: the figures in report.md and the terminal
summary are kept as they are, and a change in any of them is a change in the
views or the analyses. The normaliser replaces only what differs between
machines, checkouts and re-recordings, the way uftrace's runtest.py does:
paths (the run directory, the source tree, any other absolute path keeps only
its base name), pids, thread ids, addresses, dates and times of day, and the
sonde version. Every view is one (name, file) pair in VIEWS."""
import os
import re
import sqlite3
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RECORDING = "recording.sql"

# name: (what it shows, how tests/golden/update --record makes it: sonde run's
# options and the command, where {build} is the folder of the sonde binary,
# {src} the source tree and {python} the interpreter running update).
CASES = {
    "demo": ("a native program: hotspots, call tree, off-CPU waits, RSS, the sampled heap",
             ("--memory",), ("{build}/workloads/demo",)),
    "pipeline": ("a Python batch job: phases from its log, Python stacks, threads",
                 ("--probes", "proc,python"), ("{python}", "{src}/tests/workloads/py_pipeline.py")),
}

# recording_trim's bound on the samples of one kind (source, on_cpu).
SAMPLES_PER_KIND_MAX = 400

# The source tree's path inside recording.sql: a folder no machine has, so
# nothing the report reads from disk (srcloc's source files) depends on the
# checkout that renders it.
SRC_IN_RECORDING = "/nonexistent/sonde-src"

# (expected file, where the view comes from): the run directory's report.md,
# or sonde report's standard error (the terminal summary).
VIEWS = (("report.md", "report.md"), ("terminal.txt", "stderr"))


def case_dir(case):
    return os.path.join(HERE, case)


def recording_load(sql_path, run_dir):
    """Writes run_dir/profile.db from the SQL text at sql_path."""
    os.makedirs(run_dir, exist_ok=True)
    db_path = os.path.join(run_dir, "profile.db")
    if os.path.exists(db_path):
        os.unlink(db_path)
    db = sqlite3.connect(db_path)
    with open(sql_path) as f:
        db.executescript(f.read())
    db.commit()
    db.close()
    return db_path


def recording_trim(db_path, per_kind_max=SAMPLES_PER_KIND_MAX):
    """Keeps at most per_kind_max samples of each (source, on_cpu), every
    k-th in recording order, then only the stack nodes some table still names
    (with their ancestors) and the frames they name: a recording of a few
    seconds of Python holds thousands of idle threads' samples and a megabyte
    of SQL, and the golden views need its shape, not its bulk."""
    db = sqlite3.connect(db_path)
    kinds = db.execute("SELECT source, on_cpu, count(*) FROM samples GROUP BY 1, 2").fetchall()
    for source, on_cpu, n in kinds:
        if n > per_kind_max:
            every = -(-n // per_kind_max)
            db.execute("DELETE FROM samples WHERE rowid IN (SELECT rowid FROM (SELECT rowid,"
                       " row_number() OVER (ORDER BY rowid) AS k FROM samples WHERE source IS ?"
                       " AND on_cpu IS ?) WHERE k % ? != 0)", (source, on_cpu, every))
    named = set()
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
        cols = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]
        if "node" in cols:
            named.update(r[0] for r in db.execute(f'SELECT DISTINCT node FROM "{table}"'))
    parent = dict(db.execute("SELECT id, parent FROM stack_nodes"))
    keep = set()
    for node in named:
        while node in parent and node not in keep:
            keep.add(node)
            node = parent[node]
    db.execute("CREATE TEMP TABLE kept(id INTEGER PRIMARY KEY)")
    db.executemany("INSERT INTO kept VALUES(?)", ((n,) for n in keep))
    db.execute("DELETE FROM stack_nodes WHERE id NOT IN (SELECT id FROM kept)")
    db.execute("DELETE FROM frames WHERE id NOT IN (SELECT frame FROM stack_nodes)")
    db.commit()
    db.close()


def recording_ids(db_path):
    """The pids and thread ids the recording names, largest first (so that
    replacing them never cuts a longer number)."""
    ids = set()
    db = sqlite3.connect(db_path)
    for table, cols in (("processes", ("pid", "ppid")), ("threads", ("pid", "tid")),
                        ("task_exits", ("pid", "tid", "ppid"))):
        for col in cols:
            try:
                ids.update(r[0] for r in db.execute(f"SELECT DISTINCT {col} FROM {table}")
                           if isinstance(r[0], int) and r[0] > 1)
            except sqlite3.Error:
                pass
    db.close()
    return sorted(ids, reverse=True)


def render(sonde, run_dir):
    """Runs `sonde report run_dir` (UTC, no colour); returns {view: text}."""
    env = dict(os.environ, TZ="UTC", LC_ALL="C", NO_COLOR="1")
    p = subprocess.run([sonde, "report", run_dir], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors="replace", env=env,
                       timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"sonde report exited {p.returncode}: {p.stderr[-2000:]}")
    out = {}
    for name, source in VIEWS:
        if source == "stderr":
            out[name] = p.stderr
        else:
            with open(os.path.join(run_dir, source), errors="replace") as f:
                out[name] = f.read()
    return out


def normalise(text, run_dir, ids, version=None):
    """text with what varies between machines and recordings replaced by
    <RUN>, <SRC>, <PATH>/name, <PID>, <ADDR>, <DATE>, <TIME>, <VERSION>."""
    for d in {os.path.realpath(run_dir), os.path.abspath(run_dir)}:
        text = text.replace(d, "<RUN>")
    text = text.replace(ROOT, "<SRC>").replace(SRC_IN_RECORDING, "<SRC>")
    # Any other absolute path: its folders depend on where it was recorded.
    text = re.sub(r"(?<![\w<>.])/(?:[\w.+~-]+/)+(?=[\w.+~-])", "<PATH>/", text)
    text = re.sub(r"\b0x[0-9a-fA-F]{4,}\b", "<ADDR>", text)
    text = re.sub(r"\b\d{4}-\d{2}-\d{2}(?=\b|T)", "<DATE>", text)
    text = re.sub(r"\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b", "<TIME>", text)
    if version:
        text = re.sub(r"(?<![\w.])" + re.escape(version) + r"(?![\w.])", "<VERSION>", text)
    if ids:
        alt = "|".join(str(i) for i in ids)
        text = re.sub(r"(?<!\w)(?<!\d\.)(?:" + alt + r")(?!\w|\.\d)", "<PID>", text)
    return text


def recording_version(db_path):
    db = sqlite3.connect(db_path)
    try:
        row = db.execute("SELECT value FROM meta WHERE key='sonde_version'").fetchone()
    except sqlite3.Error:
        row = None
    db.close()
    return str(row[0]) if row else None


def views_render(sonde, run_dir, case):
    """Loads the case's recording into run_dir, renders it and returns the
    normalised views, {expected file name: text}."""
    db_path = recording_load(os.path.join(case_dir(case), RECORDING), run_dir)
    ids = recording_ids(db_path)
    version = recording_version(db_path)
    return {name: normalise(text, run_dir, ids, version)
            for name, text in render(sonde, run_dir).items()}
