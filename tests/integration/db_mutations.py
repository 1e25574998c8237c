"""SQL-level mutations of a recording (profile.db), for the tests that check
`sonde report` survives a damaged or hostile file: rows deleted, tables
dropped, ids left dangling, stacks made cyclic, numbers made huge or negative,
NULLs, text and blobs where numbers belong.

mutations(path) lists (name, [sql, ...]) for the recording at path; apply()
writes one into a copy. Run as a script to try every mutation of a recording:
    python3 db_mutations.py SONDE profile.db [WORKDIR]
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

INT64_MAX = 2**63 - 1
INT64_MIN = -2**63

# What a column is set to: SQL literals.
VALUES = [
    ("NULL", "NULL"),
    ("zero", "0"),
    ("minus one", "-1"),
    ("int64 max", str(INT64_MAX)),
    ("int64 min", str(INT64_MIN)),
    ("huge real", "1e308"),
    ("huge negative real", "-1e308"),
    ("real past int64", "1e19"),
    ("text with escapes", "'x\x1b[2J\x07\r\ny'"),
    ("long text", "printf('%.*c', 20000, 'A')"),  # past STACK_NAME_MAX
    ("blob", "x'00ff00fe'"),
]
# Columns that hold ids of rows elsewhere (or of processes and threads).
ID_COLUMNS = {"id", "node", "parent", "frame", "pid", "tid", "ppid"}


def tables(con):
    return [r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " ORDER BY name")]


def columns(con, table):
    return [r[1] for r in con.execute(f"PRAGMA table_info('{table}')")]


def mutations(path):
    """Every mutation for the recording at path, in a fixed order."""
    con = sqlite3.connect(path)
    out = []
    try:
        for t in tables(con):
            q = f'"{t}"'
            out.append((f"{t}: every row deleted", [f"DELETE FROM {q}"]))
            out.append((f"{t}: every other row deleted", [f"DELETE FROM {q} WHERE rowid % 2 = 0"]))
            out.append((f"{t}: table dropped", [f"DROP TABLE {q}"]))
            out.append((f"{t}: rows duplicated", [f"INSERT OR IGNORE INTO {q} SELECT * FROM {q}"]))
            for c in columns(con, t):
                qc = f'"{c}"'
                for vname, v in VALUES:
                    out.append((f"{t}.{c}: {vname} in every row", [f"UPDATE {q} SET {qc} = {v}"]))
                out.append((f"{t}.{c}: {VALUES[3][0]} in every third row",
                            [f"UPDATE {q} SET {qc} = {INT64_MAX} WHERE rowid % 3 = 0"]))
                if c in ID_COLUMNS:
                    out.append((f"{t}.{c}: ids dangling", [f"UPDATE OR IGNORE {q} SET {qc} = {qc} + 1000003"]))
                    out.append((f"{t}.{c}: one value in every row", [f"UPDATE OR IGNORE {q} SET {qc} = 7"]))
            if t == "stack_nodes":
                out.append(("stack_nodes: every node its own parent", ["UPDATE stack_nodes SET parent = id"]))
                out.append(("stack_nodes: parents form cycles",
                            ["UPDATE stack_nodes SET parent = (SELECT MIN(id) FROM stack_nodes) + (id % 3)"]))
                out.append(("stack_nodes: a 5000-deep chain",
                            ["WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 5000)"
                             " INSERT INTO stack_nodes(id, parent, frame) SELECT 9000000 + i,"
                             " CASE WHEN i = 1 THEN 0 ELSE 9000000 + i - 1 END,"
                             " (SELECT MIN(id) FROM frames) FROM k",
                             "UPDATE samples SET node = 9005000"]))
        if "meta" in tables(con):
            for (key,) in con.execute("SELECT key FROM meta ORDER BY key").fetchall():
                k = key.replace("'", "''")
                out.append((f"meta {key}: deleted", [f"DELETE FROM meta WHERE key = '{k}'"]))
                for vname, v in VALUES:
                    out.append((f"meta {key}: {vname}", [f"UPDATE meta SET value = {v} WHERE key = '{k}'"]))
        out.append(("every table emptied", [f"DELETE FROM \"{t}\"" for t in tables(con) if t != "meta"]))
    finally:
        con.close()
    return out


def apply(src, dst_dir, sqls):
    """A copy of the recording src in dst_dir (profile.db) with sqls applied.
    A statement SQLite refuses (a dropped table's update) is skipped."""
    os.makedirs(dst_dir, exist_ok=True)
    dst = os.path.join(dst_dir, "profile.db")
    for side in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(dst + side):
            os.unlink(dst + side)
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    con = sqlite3.connect(dst)
    try:
        for sql in sqls:
            try:
                con.execute(sql)
            except sqlite3.Error:
                pass
        con.commit()
    finally:
        con.close()
    return dst


SANITIZER_WORDS = ("runtime error", "AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer")


def problem(proc, run_dir):
    """None when `sonde report` took the mutated recording cleanly: exit 0
    with a parsable report.json, or exit 1 with one-line errors; else what
    went wrong."""
    err = proc.stderr
    for w in SANITIZER_WORDS:
        if w in err:
            return "sanitizer: " + err.strip()[-1500:]
    if proc.returncode not in (0, 1):
        return f"exit code {proc.returncode}: {err.strip()[-1500:]}"
    lines = [line for line in err.splitlines() if line.strip()]
    if proc.returncode == 1 and (not lines or not all(line.startswith("sonde: ") for line in lines)):
        return f"exit 1 without a clear error: {err.strip()[-500:]!r}"
    if proc.returncode == 0:
        import json
        try:
            with open(os.path.join(run_dir, "report.json")) as f:
                json.load(f)
        except (OSError, ValueError) as e:
            return f"exit 0 but report.json unreadable: {e}"
    return None


def report(sonde, run_dir, timeout=120):
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    return subprocess.run([sonde, "report", "-q", run_dir], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          errors="replace", timeout=timeout, env=env)


def try_one(sonde, src, work, name, sqls):
    """Applies one mutation and runs `sonde report`; returns a problem or None."""
    d = os.path.join(work, "m")
    shutil.rmtree(d, ignore_errors=True)
    apply(src, d, sqls)
    try:
        return problem(report(sonde, d), d)
    except subprocess.TimeoutExpired:
        return "sonde report did not finish in 120 s"


if __name__ == "__main__":
    sonde, src = sys.argv[1], sys.argv[2]
    work = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix="mutate-")
    bad = 0
    ms = mutations(src)
    for i, (name, sqls) in enumerate(ms):
        p = try_one(sonde, src, work, name, sqls)
        if p:
            bad += 1
            print(f"FAIL {name}: {p}", flush=True)
    print(f"{len(ms) - bad} of {len(ms)} mutations reported cleanly")
    sys.exit(1 if bad else 0)
