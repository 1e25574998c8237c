"""py_gil: two CPU-bound threads that fight over the GIL ("cruncher-1",
"cruncher-2") and one thread that sleeps nearly all the time ("sleeper");
the main thread joins them. Runs about SECONDS seconds (default 1.5).
Usage: python py_gil.py [SECONDS]"""
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
stop = threading.Event()


def crunch():
    acc = 0
    while not stop.is_set():
        for i in range(20000): acc += i * i % 7  # HOT: both threads run this line
    return acc


def nap():
    while not stop.is_set():
        time.sleep(0.05)  # WAIT: the sleeper waits here


threads = [threading.Thread(target=crunch, name=f"cruncher-{k}") for k in (1, 2)]
threads.append(threading.Thread(target=nap, name="sleeper"))
for t in threads:
    t.start()
time.sleep(SECONDS)
stop.set()
for t in threads:
    t.join()
