"""py_records: allocation-heavy but ordinary Python, timing itself (bench/memory_overhead.py).

Builds records as dicts, groups them into lists by key, joins strings and
keeps a summary: the allocations of everyday Python. argv[1]: rounds
(default 6). Prints elapsed_s=."""
import sys
import time


def make_records(n, seed):
    out = []
    for i in range(n):
        k = (i * 7919 + seed) % 97
        out.append({"id": i, "key": "k%d" % k, "value": i * 0.5, "tags": [k, i % 5]})
    return out


def group(records):
    groups = {}
    for r in records:
        groups.setdefault(r["key"], []).append(r)
    return groups


def summarize(groups):
    return {k: (len(v), sum(r["value"] for r in v), ",".join(str(r["id"]) for r in v[:20]))
            for k, v in groups.items()}


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    t0 = time.monotonic()
    total = 0
    for r in range(rounds):
        summary = summarize(group(make_records(50000, r)))
        total += sum(n for n, _, _ in summary.values())
    t1 = time.monotonic()
    print("records", total)
    print("elapsed_s=%.6f" % (t1 - t0))


if __name__ == "__main__":
    main()
