"""py_split: a small log-report job whose CPU time splits between three
functions, the way a batch job is written: each batch of lines is parsed
(parse_batch), folded into running totals (tally) and a summary is rendered
(render), all called in turn, about 1 ms each, for SECONDS of CPU time. The job
times its stages with time.thread_time(), the ground truth: its last line is
JSON {"shares": {"parse_batch": s, "tally": s, "render": s}, "cpu_s": ...}
(shares of the CPU time spent in the three).
Usage: python py_split.py [SECONDS]   (default 3)"""
import json
import random
import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
HOSTS = ["web-%02d" % i for i in range(24)]
PATHS = ["/", "/login", "/api/items", "/api/items/42", "/static/app.js", "/search"]


def make_lines(rng, n):
    return ["%s,%s,%d,%.3f,%d" % (rng.choice(HOSTS), rng.choice(PATHS), rng.choice((200, 200, 304, 404, 500)),
                                  rng.random() * 2.0, rng.randrange(100, 90000)) for _ in range(n)]


def parse_batch(lines):
    records = []
    for line in lines:
        host, path, status, seconds, size = line.split(",")
        records.append((host, path.rstrip("/") or "/", int(status), float(seconds), int(size)))
    return records


def tally(records, totals):
    for host, path, status, seconds, size in records:
        t = totals.get((host, path))
        if t is None:
            t = totals[(host, path)] = [0, 0, 0.0, 0]
        t[0] += 1
        t[1] += status >= 500
        t[2] += seconds
        t[3] += size


def render(totals):
    rows = sorted(totals.items(), key=lambda kv: kv[1][2], reverse=True)[:100]
    return "\n".join("%-8s %-16s %6d %4d %9.3f %10d" % (h, p, n, e, s, b)
                     for (h, p), (n, e, s, b) in rows)


def main():
    rng = random.Random(7)
    batches = [make_lines(rng, 1000) for _ in range(8)]
    totals, spent = {}, {"parse_batch": 0.0, "tally": 0.0, "render": 0.0}
    clock = time.thread_time
    start = clock()
    i = 0
    while clock() - start < SECONDS:
        t0 = clock()
        records = parse_batch(batches[i % len(batches)])
        t1 = clock()
        tally(records, totals)
        t2 = clock()
        summary = render(totals)
        t3 = clock()
        spent["parse_batch"] += t1 - t0
        spent["tally"] += t2 - t1
        spent["render"] += t3 - t2
        # The batch's records are freed here, outside the timed stages: freed
        # at the next `records = parse_batch(...)`, the thousands of objects
        # would go to parse_batch's time while its frame is gone.
        del records
        i += 1
    total = sum(spent.values())
    print("%d batches, summary of %d lines" % (i, summary.count("\n") + 1))
    print(json.dumps({"shares": {k: v / total for k, v in spent.items()}, "cpu_s": total}))


if __name__ == "__main__":
    main()
