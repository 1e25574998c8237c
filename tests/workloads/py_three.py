"""py_three: three CPU-bound functions run one after the other for about
50%, 30% and 20% of the work (by loop counts), each timing itself with
time.process_time(). The last line of output is JSON ground truth:
{"shares": {"Worker.alpha": 0.5, ...}, "hot_line": N, "cpu_s": ...}.
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
    t0 = time.process_time()
    fn(n)
    return time.process_time() - t0


def main():
    w = Worker()
    spent = {"Worker.alpha": 0.0, "Worker.beta": 0.0, "gamma": 0.0}
    # Long phases, each function in one piece: sampling error stays at a few samples.
    spent["Worker.alpha"] += timed(w.alpha, 5 * UNIT)
    spent["Worker.beta"] += timed(w.beta, 3 * UNIT)
    spent["gamma"] += timed(gamma, 2 * UNIT)
    total = sum(spent.values())
    hot = next(i for i, line in enumerate(open(__file__), 1) if "# HOT" in line and "next(" not in line)
    print(json.dumps({"shares": {k: v / total for k, v in spent.items()},
                      "hot_line": hot, "cpu_s": total, "file": __file__}))


if __name__ == "__main__":
    main()
