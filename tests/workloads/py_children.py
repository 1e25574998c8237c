"""py_children: a multiprocessing pool of two worker processes, each running
work() on the CPU (about 1 s each with SCALE 1).
Usage: python py_children.py [START_METHOD [SCALE]]   (fork, spawn, forkserver)"""
import multiprocessing as mp
import sys


def work(n):
    t = 0
    for i in range(n):
        t += i
    return t


if __name__ == "__main__":
    if len(sys.argv) > 1:
        mp.set_start_method(sys.argv[1])
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    with mp.Pool(2) as pool:
        print(sum(pool.map(work, [int(5_000_000 * scale)] * 4, chunksize=2)))
