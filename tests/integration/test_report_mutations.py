"""`sonde report` survives a damaged or hostile profile.db: a real recording
(sonde run --memory on a CPython with threads, or on a native program when no
CPython is installed) gets SQL-level mutations (db_mutations.py: rows deleted
or duplicated, tables dropped, ids dangling, stacks cyclic, numbers huge or
negative, NULLs, text and blobs where numbers belong), and each is reported on
under the sanitizers: exit 0 with a valid report.json, or exit 1 with one-line
errors; never a crash or a sanitizer report.

SONDE_MUTATIONS=N tries N mutations spread over every table (default 30, plus
those that once found a bug); SONDE_MUTATIONS=all tries every one (thousands:
for a long run by hand)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import db_mutations  # noqa: E402
from sonde_test import SONDE, check, cpythons, main, run_profile, scratch, workload  # noqa: E402

# Mutations that once crashed `sonde report` or tripped a sanitizer: always tried.
FOUND_BUGS = [
    "samples.node: ids dangling",
    "stack_nodes: every node its own parent",
    "stack_nodes: parents form cycles",
    "stack_nodes: a 5000-deep chain",
    "frames.function: long text in every row",
    "offcpu_states.ns: huge real in every row",
    "offcpu_states.ns: huge negative real in every row",
    "alloc_sites.leaked_bytes: int64 max in every row",
    "proc_samples.rss_bytes: int64 max in every row",
    "proc_samples.rss_bytes: int64 min in every row",
    "samples.t_ns: int64 min in every third row",
    "samples.t_ns: int64 max in every row",
    "every table emptied",
]


def recording():
    python = next((exe for _, _, exe, _ in reversed(cpythons()) if exe), None)
    if python:
        cmd = [python, os.path.join(HERE, "..", "workloads", "py_gil.py"), "1"]
    else:
        cmd = [workload("cpu_threads")]
    p, d, _ = run_profile("mutate-src", cmd, "--memory")
    path = os.path.join(d, "profile.db")
    assert os.path.exists(path), f"no recording: {p.stderr}"
    return path


def chosen(every):
    want = os.environ.get("SONDE_MUTATIONS", "30")
    if want == "all":
        return every
    n = max(1, int(want))
    names = {name for name, _ in every}
    picked = [m for m in every if m[0] in FOUND_BUGS]
    stride = max(1, len(every) // n)
    picked += [m for i, m in enumerate(every) if i % stride == 0 and m[0] not in FOUND_BUGS]
    missing = [b for b in FOUND_BUGS if b not in names]
    if missing:
        print("note: this recording has no " + "; ".join(missing))
    return picked


@check("every mutation of a real recording is reported cleanly: a report or a one-line error, never a crash or a sanitizer report")
def _():
    src = recording()
    work = scratch("mutations")
    every = db_mutations.mutations(src)
    tried = chosen(every)
    problems = []
    for name, sqls in tried:
        p = db_mutations.try_one(os.path.abspath(SONDE), src, work, name, sqls)
        if p:
            problems.append(f"{name}: {p}")
    print(f"{len(tried)} of {len(every)} mutations tried")
    assert not problems, f"{len(problems)} of {len(tried)} failed:\n" + "\n".join(problems)


if __name__ == "__main__":
    main()
