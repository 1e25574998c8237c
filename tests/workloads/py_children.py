"""py_children: two multiprocessing worker processes, each running work() on
the CPU (about 1 s each with SCALE 1). Each worker has its own work (a pool
could hand both chunks to whichever worker started first).
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
    workers = [mp.Process(target=work, args=(int(10_000_000 * scale),)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    print(sum(w.exitcode for w in workers))
