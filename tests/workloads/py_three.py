"""py_three: three CPU-bound functions run one after the other for about
50%, 30% and 20% of the work (by loop counts), each timing itself with
time.process_time(). The last line of output is JSON ground truth:
{"shares": {"Worker.alpha": 0.5, ...}, "wall_shares": {...}, "hot_line": N, ...}.
Usage: python py_three.py [SCALE]   (SCALE multiplies the loop counts)"""
import json
import sys
import time

SCALE = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
UNIT = int(1_000_000 * SCALE)


class Worker:
    def alpha(self, n):
        acc = 0
        for i in range(n): acc += i * i % 7  # HOT: the hottest line of the run
        return acc

    def beta(self, n):
        acc = 0
        for i in range(n): acc += i * i % 7
        return acc


def gamma(n):
    acc = 0
    for i in range(n): acc += i * i % 7
    return acc


def timed(fn, n):
    t0, w0 = time.process_time(), time.perf_counter()
    fn(n)
    return time.process_time() - t0, time.perf_counter() - w0


def main():
    w = Worker()
    # Long phases, each function in one piece: sampling error stays at a few samples.
    spent, wall = {}, {}
    for name, fn, n in (("Worker.alpha", w.alpha, 5 * UNIT), ("Worker.beta", w.beta, 3 * UNIT),
                        ("gamma", gamma, 2 * UNIT)):
        spent[name], wall[name] = timed(fn, n)
    total, wall_total = sum(spent.values()), sum(wall.values())
    hot = next(i for i, line in enumerate(open(__file__), 1) if "# HOT" in line and "next(" not in line)
    # shares: of CPU time (process_time), the ground truth; wall_shares: of
    # elapsed time, which is what a wall-clock sampler sees when the machine is busy.
    print(json.dumps({"shares": {k: v / total for k, v in spent.items()},
                      "wall_shares": {k: v / wall_total for k, v in wall.items()},
                      "hot_line": hot, "cpu_s": total, "wall_s": wall_total,
                      "file": __file__}))


if __name__ == "__main__":
    main()
